//! Corrections: a batch deleted (hidden at once, restorable for the retention, then
//! purged for good), and a task withdrawn or corrected (a new version of its content,
//! its earlier ratings kept but stale).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{StoreResult, read, transaction};

/// Ends task `$task`'s open assignments at `$at` inside the transaction `$tx`, giving
/// their slots back (gold tasks hold none); evaluates to how many it ended. A macro for
/// the reason `emit!` is one: it runs on either backend's transaction.
macro_rules! end_open_assignments {
    ($tx:expr, $task:expr, $at:expr) => {
        async {
            sqlx::query(
                "UPDATE tasks SET claimed = claimed - (SELECT COUNT(*) FROM assignments a
                                                       WHERE a.task_id = tasks.id AND a.state = 'open')
                 WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = tasks.id)",
            )
            .bind($task)
            .execute(&mut *$tx)
            .await?;
            sqlx::query(
                "UPDATE assignments SET state = 'expired', updated_at = $2
                 WHERE task_id = $1 AND state = 'open'",
            )
            .bind($task)
            .bind($at)
            .execute(&mut *$tx)
            .await
            .map(|done| done.rows_affected())
        }
        .await
    };
}

/// A deleted batch, as the list of deleted batches shows it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct DeletedBatch {
    pub id: Uuid,
    pub name: String,
    pub deleted_at: DateTime<Utc>,
    /// Who deleted it (none: the command line, or an account since removed).
    pub deleted_by: Option<String>,
    /// Its tasks and its finished ratings, purged with it.
    pub tasks: i64,
    pub ratings: i64,
}

/// What deleting a batch did.
#[derive(Debug, Clone, PartialEq)]
pub struct Deletion {
    pub name: String,
    /// Open assignments it ended.
    pub ended: u64,
}

/// A task as a correction reads it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TaskContent {
    pub id: Uuid,
    pub external_id: String,
    /// JSON text: a string, or a list of `{role, content}` messages.
    pub prompt: String,
    pub response_a: String,
    pub response_b: String,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    /// JSON text of an object.
    pub metadata: String,
    pub content_hash: String,
    pub version: i32,
    pub withdrawn_at: Option<DateTime<Utc>>,
    pub gold: bool,
}

/// A task's content as a correction replaces it.
#[derive(Debug, Clone)]
pub struct NewContent {
    /// JSON text.
    pub prompt: String,
    pub response_a: String,
    pub response_b: String,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    pub content_hash: String,
}

/// An earlier version of a task, as its history shows it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TaskVersion {
    pub version: i32,
    /// JSON text.
    pub prompt: String,
    pub response_a: String,
    pub response_b: String,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    pub replaced_at: DateTime<Utc>,
    pub replaced_by: Option<String>,
}

/// What withdrawing, putting back or correcting a task changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskChange {
    /// Whether anything changed (a task withdrawn already is not withdrawn again).
    pub changed: bool,
    /// Open assignments it ended.
    pub ended: u64,
    /// Ratings it set aside (withdrawn or stale) or brought back.
    pub ratings: u64,
}

/// Gives every open assignment of batch `$1` (the only parameter) its slot back:
/// `claimed` less the task's open assignments, `is_full` again from the new count, gold
/// tasks aside (they hold no slots). Run before the assignments are ended.
const GIVE_BACK_SLOTS: &str = "UPDATE tasks SET
       claimed = claimed - (SELECT COUNT(*) FROM assignments a
                            WHERE a.task_id = tasks.id AND a.state = 'open'),
       is_full = (tasks.withdrawn_at IS NOT NULL OR claimed - (SELECT COUNT(*) FROM assignments a
                            WHERE a.task_id = tasks.id AND a.state = 'open')
                  >= (SELECT b.overlap FROM batches b WHERE b.id = tasks.batch_id) + extra)
     WHERE batch_id = $1
       AND EXISTS (SELECT 1 FROM assignments a WHERE a.task_id = tasks.id AND a.state = 'open')
       AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = tasks.id)";

impl super::Store {
    /// Deletes batch `id` as `by` (none: the command line) at `at`: it leaves every list,
    /// page and metric, and its open assignments end, their slots given back, so that a
    /// restore finds its tasks as they were. `None` when there is no such batch, or it
    /// is deleted already.
    pub async fn delete_batch(
        &self,
        id: Uuid,
        by: Option<Uuid>,
        at: DateTime<Utc>,
    ) -> StoreResult<Option<Deletion>> {
        let deleted = transaction!(self, |tx| {
            let name: Option<(String,)> = sqlx::query_as(
                "UPDATE batches SET deleted_at = $2, deleted_by = $3, updated_at = $2
                 WHERE id = $1 AND deleted_at IS NULL RETURNING name",
            )
            .bind(id)
            .bind(at)
            .bind(by)
            .fetch_optional(&mut *tx)
            .await?;
            match name {
                None => None,
                Some((name,)) => {
                    sqlx::query(GIVE_BACK_SLOTS)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                    let ended = sqlx::query(
                        "UPDATE assignments SET state = 'expired', updated_at = $2
                         WHERE batch_id = $1 AND state = 'open'",
                    )
                    .bind(id)
                    .bind(at)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    Some(Deletion { name, ended })
                }
            }
        });
        Ok(deleted)
    }

    /// Restores batch `id`, deleted no earlier than `since`: its name, or `None` when
    /// there is no such deleted batch (or its retention is over).
    pub async fn restore_batch(
        &self,
        id: Uuid,
        since: DateTime<Utc>,
    ) -> StoreResult<Option<String>> {
        let restored: Option<(String,)> = super::write!(self, |pool| {
            sqlx::query_as(
                "UPDATE batches SET deleted_at = NULL, deleted_by = NULL
                 WHERE id = $1 AND deleted_at IS NOT NULL AND deleted_at >= $2 RETURNING name",
            )
            .bind(id)
            .bind(since)
            .fetch_optional(pool)
            .await
        })?;
        Ok(restored.map(|(name,)| name))
    }

    /// The deleted batches, most recently deleted first.
    pub async fn deleted_batches(&self) -> StoreResult<Vec<DeletedBatch>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, DeletedBatch>(
                "SELECT b.id, b.name, b.deleted_at, u.username AS deleted_by,
                        (SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id) AS tasks,
                        (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id
                           AND r.status <> 'draft') AS ratings
                 FROM batches b LEFT JOIN users u ON u.id = b.deleted_by
                 WHERE b.deleted_at IS NOT NULL ORDER BY b.deleted_at DESC, b.name",
            )
            .fetch_all(pool)
            .await
        })?)
    }

    /// The name of batch `id` if it is deleted (for saying so to whoever still asks
    /// for it, rather than that it never was).
    pub async fn deleted_batch_name(&self, id: Uuid) -> StoreResult<Option<String>> {
        let row: Option<(String,)> = read!(self, |pool| {
            sqlx::query_as("SELECT name FROM batches WHERE id = $1 AND deleted_at IS NOT NULL")
                .bind(id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(|(name,)| name))
    }

    /// The id of the deleted batch named `name`.
    pub async fn deleted_batch_named(&self, name: &str) -> StoreResult<Option<Uuid>> {
        let row: Option<(Uuid,)> = read!(self, |pool| {
            sqlx::query_as("SELECT id FROM batches WHERE name = $1 AND deleted_at IS NOT NULL")
                .bind(name)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(|(id,)| id))
    }

    /// Removes for good the batches deleted before `before` (all deleted ones with
    /// `None`), or only batch `only` among them, with their tasks, ratings and
    /// everything else of theirs. The purged ones' names.
    pub async fn purge_batches(
        &self,
        before: Option<DateTime<Utc>>,
        only: Option<Uuid>,
    ) -> StoreResult<Vec<String>> {
        let purged: Vec<(String,)> = super::write!(self, |pool| {
            sqlx::query_as(
                "DELETE FROM batches WHERE deleted_at IS NOT NULL
                   AND ($1 IS NULL OR deleted_at < $1) AND ($2 IS NULL OR id = $2)
                 RETURNING name",
            )
            .bind(before)
            .bind(only)
            .fetch_all(pool)
            .await
        })?;
        let mut names: Vec<String> = purged.into_iter().map(|(name,)| name).collect();
        names.sort();
        Ok(names)
    }

    /// The statement that locks task `$1`'s row for a correction on PostgreSQL (SQLite's
    /// writes take turns already): a claim's update of the row waits for it, and it for
    /// a claim in flight.
    fn task_lock(&self) -> String {
        format!(
            "SELECT id FROM tasks WHERE id = $1{}",
            self.no_key_lock_clause()
        )
    }

    /// Batch `batch`'s task `external_id` as a correction reads it.
    pub async fn task_to_correct(
        &self,
        batch: Uuid,
        external_id: &str,
    ) -> StoreResult<Option<TaskContent>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, TaskContent>(
                "SELECT t.id, t.external_id, CAST(t.prompt AS TEXT) AS prompt, t.response_a,
                        t.response_b, t.model_a, t.model_b, CAST(t.metadata AS TEXT) AS metadata,
                        t.content_hash, t.version, t.withdrawn_at,
                        EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id) AS gold
                 FROM tasks t WHERE t.batch_id = $1 AND t.external_id = $2",
            )
            .bind(batch)
            .bind(external_id)
            .fetch_optional(pool)
            .await
        })?)
    }

    /// The earlier versions of task `task`, oldest first.
    pub async fn task_versions(&self, task: Uuid) -> StoreResult<Vec<TaskVersion>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, TaskVersion>(
                "SELECT v.version, CAST(v.prompt AS TEXT) AS prompt, v.response_a, v.response_b,
                        v.model_a, v.model_b, v.replaced_at, u.username AS replaced_by
                 FROM task_versions v LEFT JOIN users u ON u.id = v.replaced_by
                 WHERE v.task_id = $1 ORDER BY v.version",
            )
            .bind(task)
            .fetch_all(pool)
            .await
        })?)
    }

    /// Withdraws task `task` (`withdrawn`), or puts it back: withdrawn, it is served to
    /// no one (its open assignments end) and its ratings leave the metrics; put back, it
    /// is served again where it has room and its ratings count as before. Nothing
    /// changes when it is already so.
    pub async fn set_withdrawn(
        &self,
        task: Uuid,
        withdrawn: bool,
        at: DateTime<Utc>,
    ) -> StoreResult<TaskChange> {
        let lock = self.task_lock();
        let change = transaction!(self, |tx| {
            // Taken first, so that a claim of the task in flight is over (and its
            // assignment seen below) or waits until this change is.
            sqlx::query(&lock).bind(task).execute(&mut *tx).await?;
            let flipped = sqlx::query(
                "UPDATE tasks SET withdrawn_at = $2
                 WHERE id = $1 AND (withdrawn_at IS NULL) = $3",
            )
            .bind(task)
            .bind(withdrawn.then_some(at))
            .bind(withdrawn)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if flipped == 0 {
                TaskChange::default()
            } else {
                let ended = if withdrawn {
                    end_open_assignments!(tx, task, at)?
                } else {
                    0
                };
                sqlx::query(
                    "UPDATE tasks SET is_full = (withdrawn_at IS NOT NULL
                        OR claimed >= (SELECT b.overlap FROM batches b WHERE b.id = tasks.batch_id) + extra)
                     WHERE id = $1",
                )
                .bind(task)
                .execute(&mut *tx)
                .await?;
                let ratings = sqlx::query(
                    "UPDATE ratings SET withdrawn = $2 WHERE task_id = $1 AND withdrawn <> $2",
                )
                .bind(task)
                .bind(withdrawn)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                // A task withdrawn may complete its batch; one put back may reopen it.
                let (batch,): (Uuid,) = sqlx::query_as("SELECT batch_id FROM tasks WHERE id = $1")
                    .bind(task)
                    .fetch_one(&mut *tx)
                    .await?;
                let wanted = super::webhooks::subscribed!(tx, batch)?;
                super::webhooks::completion_event!(tx, wanted, batch, at)?;
                TaskChange {
                    changed: true,
                    ended,
                    ratings,
                }
            }
        });
        Ok(change)
    }

    /// Corrects task `task`, at version `version` when read, to `content` as `by`: its
    /// content before is kept as that version, its ratings so far become stale (kept,
    /// out of the metrics), its open assignments end, and it is served again (to raters
    /// who have not had it: a rater rates a task once) until it has its overlap on the
    /// new version. `None` when the
    /// task changed since it was read.
    pub async fn correct_task(
        &self,
        task: Uuid,
        version: i32,
        content: &NewContent,
        by: Option<Uuid>,
        at: DateTime<Utc>,
    ) -> StoreResult<Option<TaskChange>> {
        let lock = self.task_lock();
        let change = transaction!(self, |tx| {
            // As in `set_withdrawn`: no claim of the task runs beside the correction.
            sqlx::query(&lock).bind(task).execute(&mut *tx).await?;
            let kept = sqlx::query(
                "INSERT INTO task_versions (task_id, version, prompt, response_a, response_b,
                                            model_a, model_b, content_hash, replaced_at, replaced_by)
                 SELECT id, version, CAST(prompt AS TEXT), response_a, response_b, model_a,
                        model_b, content_hash, $3, $4
                 FROM tasks WHERE id = $1 AND version = $2",
            )
            .bind(task)
            .bind(version)
            .bind(at)
            .bind(by)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if kept == 0 {
                None
            } else {
                let ended = end_open_assignments!(tx, task, at)?;
                // A final answer answered the earlier version.
                sqlx::query("DELETE FROM final_answers WHERE task_id = $1")
                    .bind(task)
                    .execute(&mut *tx)
                    .await?;
                let ratings = sqlx::query(
                    "UPDATE ratings SET stale = TRUE WHERE task_id = $1 AND stale = FALSE",
                )
                .bind(task)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                // The prompt is stored as the batch's other prompts are: JSON text on
                // SQLite, jsonb on PostgreSQL.
                let prompt = match self.backend() {
                    super::Backend::Postgres => "CAST($2 AS JSONB)",
                    super::Backend::Sqlite => "$2",
                };
                let update = format!(
                    "UPDATE tasks SET prompt = {prompt}, response_a = $3, response_b = $4,
                        model_a = $5, model_b = $6, content_hash = $7, rendered = NULL,
                        version = version + 1, claimed = 0, extra = 0,
                        is_full = (withdrawn_at IS NOT NULL
                           OR (SELECT b.overlap FROM batches b WHERE b.id = tasks.batch_id) <= 0)
                     WHERE id = $1"
                );
                sqlx::query(&update)
                    .bind(task)
                    .bind(&content.prompt)
                    .bind(&content.response_a)
                    .bind(&content.response_b)
                    .bind(&content.model_a)
                    .bind(&content.model_b)
                    .bind(&content.content_hash)
                    .execute(&mut *tx)
                    .await?;
                // A corrected task needs its ratings again: it reopens a completed batch.
                let (batch,): (Uuid,) = sqlx::query_as("SELECT batch_id FROM tasks WHERE id = $1")
                    .bind(task)
                    .fetch_one(&mut *tx)
                    .await?;
                let wanted = super::webhooks::subscribed!(tx, batch)?;
                super::webhooks::completion_event!(tx, wanted, batch, at)?;
                Some(TaskChange {
                    changed: true,
                    ended,
                    ratings,
                })
            }
        });
        Ok(change)
    }
}
