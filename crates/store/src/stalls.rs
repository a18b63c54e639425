//! What a batch's stalls are read from (see [`verdict_core::stall`]): the people who could
//! rate it, the route keys of its tasks with room, and, for a group of those tasks and
//! the people who could take them, the tasks that need more ratings than those people can
//! still give. Gold tasks are left out of each: they are not handed out by overlap.

use uuid::Uuid;

use super::users::skills_of;
use super::{StoreResult, read};

/// Someone who could rate a batch's tasks: an active person's account allowed on it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: Uuid,
    pub username: String,
    /// As a lead or an admin set them.
    pub skills: Vec<String>,
    /// As they declared them.
    pub declared_skills: Vec<String>,
}

/// Which of a batch's tasks with room a group is.
#[derive(Debug, Clone, Copy)]
pub enum Tasks<'a> {
    /// Every one.
    All,
    /// Those of one route key.
    Key(&'a str),
    /// Those without a route key.
    NoKey,
}

/// A group's stuck tasks: how many, the most ratings one of them is short of beyond what
/// its people can give, and the external ids of the first `limit` in upload order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stuck {
    pub tasks: i64,
    pub short: i64,
    pub first: Vec<String>,
}

impl super::Store {
    /// The people who could rate batch `batch`: active human accounts (leads and admins
    /// rate too), only its raters where the batch is restricted to some.
    pub async fn batch_candidates(&self, batch: Uuid) -> StoreResult<Vec<Candidate>> {
        let rows: Vec<(Uuid, String, String, String)> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT u.id, u.username, u.skills, u.declared_skills FROM users u, batches b
                 WHERE b.id = $1 AND u.kind = 'human' AND u.active = TRUE
                   AND (NOT b.raters_restricted OR EXISTS (
                        SELECT 1 FROM batch_members m
                        WHERE m.batch_id = b.id AND m.user_id = u.id AND m.role = 'rater'))
                 ORDER BY u.username",
            )
            .bind(batch)
            .fetch_all(pool)
            .await
        })?;
        Ok(rows
            .into_iter()
            .map(|(id, username, skills, declared)| Candidate {
                id,
                username,
                skills: skills_of(&skills),
                declared_skills: skills_of(&declared),
            })
            .collect())
    }

    /// The route keys of batch `batch`'s tasks with room (`None` for tasks without one).
    pub async fn open_route_keys(&self, batch: Uuid) -> StoreResult<Vec<Option<String>>> {
        let rows: Vec<(Option<String>,)> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT DISTINCT t.route_key FROM tasks t
                 WHERE t.batch_id = $1 AND t.is_full = FALSE
                   AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id)",
            )
            .bind(batch)
            .fetch_all(pool)
            .await
        })?;
        Ok(rows.into_iter().map(|(key,)| key).collect())
    }

    /// The tasks of `which` in batch `batch` (asked `overlap` ratings each, plus their
    /// extra raters) that need more ratings than `people` can still give: each of them
    /// gives one, unless they have rated, skipped or taken the task already.
    pub async fn stuck_tasks(
        &self,
        batch: Uuid,
        overlap: i32,
        which: Tasks<'_>,
        people: &[Uuid],
        limit: i64,
    ) -> StoreResult<Stuck> {
        // $1 the batch, $2 the overlap, $3 the key if any, then the people, then (for the
        // list of the first) the limit.
        let (key, first_person) = match which {
            Tasks::All => ("", 3),
            Tasks::Key(_) => (" AND t.route_key = $3", 4),
            Tasks::NoKey => (" AND t.route_key IS NULL", 3),
        };
        let limit_at = first_person + people.len();
        // Written in, not bound: a count and numbered placeholders, never input.
        let taken = if people.is_empty() {
            "0".to_owned()
        } else {
            let list: Vec<String> = (first_person..limit_at).map(|i| format!("${i}")).collect();
            format!(
                "(SELECT COUNT(*) FROM assignments a WHERE a.task_id = t.id AND a.rater_id IN ({}))",
                list.join(", ")
            )
        };
        // As a 64-bit number on both databases, whatever PostgreSQL would make of it.
        let short = format!(
            "CAST(($2 + t.extra - t.claimed) - ({} - {taken}) AS BIGINT)",
            people.len()
        );
        let from = format!(
            "FROM tasks t WHERE t.batch_id = $1 AND t.is_full = FALSE{key}
               AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id)
               AND {short} > 0"
        );
        let count_sql = format!("SELECT COUNT(*), COALESCE(MAX({short}), 0) {from}");
        let first_sql = format!("SELECT t.external_id {from} ORDER BY t.seq LIMIT ${limit_at}");
        let (tasks, short, first) = read!(self, |pool| {
            let mut count = sqlx::query_as::<_, (i64, i64)>(&count_sql)
                .bind(batch)
                .bind(overlap);
            let mut ids = sqlx::query_as::<_, (String,)>(&first_sql)
                .bind(batch)
                .bind(overlap);
            if let Tasks::Key(k) = which {
                count = count.bind(k);
                ids = ids.bind(k);
            }
            for person in people {
                count = count.bind(*person);
                ids = ids.bind(*person);
            }
            let (tasks, short) = count.fetch_one(pool).await?;
            let first = if tasks > 0 {
                ids.bind(limit).fetch_all(pool).await?
            } else {
                Vec::new()
            };
            Ok::<_, sqlx::Error>((tasks, short, first))
        })?;
        Ok(Stuck {
            tasks,
            short,
            first: first.into_iter().map(|(id,)| id).collect(),
        })
    }

    /// The open batches a subscription asks `batch.stalled` of (its own or every batch's).
    pub async fn stall_watched_batches(&self) -> StoreResult<Vec<Uuid>> {
        let kind = verdict_core::webhook::EventKind::BatchStalled;
        let rows: Vec<(Uuid,)> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT b.id FROM batches b WHERE b.state = 'open' AND b.deleted_at IS NULL AND EXISTS (
                    SELECT 1 FROM webhooks w
                    WHERE (w.batch_id IS NULL OR w.batch_id = b.id) AND w.stopped_at IS NULL
                      AND w.events LIKE $1)
                 ORDER BY b.created_at",
            )
            .bind(kind.like_pattern())
            .fetch_all(pool)
            .await
        })?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Notes whether batch `batch` is stalled now (`stalled`, its stuck tasks), and when it
    /// was not when last looked at and is now, sends `batch.stalled` with `data` to whoever
    /// subscribed: once per stall, however many instances look. Whether it was sent.
    pub async fn note_stall(
        &self,
        batch: Uuid,
        stalled: i64,
        data: serde_json::Value,
        at: chrono::DateTime<chrono::Utc>,
    ) -> StoreResult<bool> {
        use verdict_core::webhook::{Event, EventKind};
        let sent = super::transaction!(self, |tx| {
            // Set only where it changes, so of two instances looking at once one sends.
            let changed = if stalled > 0 {
                sqlx::query(
                    "UPDATE batches SET stalled_at = $2 WHERE id = $1 AND stalled_at IS NULL",
                )
                .bind(batch)
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected()
            } else {
                sqlx::query(
                    "UPDATE batches SET stalled_at = NULL WHERE id = $1 AND stalled_at IS NOT NULL",
                )
                .bind(batch)
                .execute(&mut *tx)
                .await?;
                0
            };
            if changed == 1 {
                let event = Event::new(EventKind::BatchStalled, batch, at, data);
                super::webhooks::emit!(tx, &event)?;
            }
            changed == 1
        });
        Ok(sent)
    }
}
