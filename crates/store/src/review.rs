//! What leads read and decide: the review queue, reviews, a task's ratings side by side,
//! and the rows behind metrics and exports.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use sqlx::types::Json;
use uuid::Uuid;

use super::assignments::RELEASE_SLOT;
use super::page::{Cursor, Page};
use super::ratings::{RATING_COLUMNS, RatingRow, insert_history};
use super::scan::{self, columns};
use super::webhooks::{completion_event, rating_event, subscribed};
use super::{PoolRef, StoreResult, read, transaction};
use verdict_core::evidence::Evidence;
use verdict_core::gold::Grade;
use verdict_core::lifecycle::{
    Decision, Outcome, RaterKind, Refusal, SkipReason, Standing, Status,
};
use verdict_core::metrics::RatingFacts;
use verdict_core::rating::Rating;
use verdict_core::rubric::TaskAnswers;

/// How far a reader of a batch's ratings got (see [`Store::ratings_mark`]). A number the
/// store makes, never input: it is written into the statement that reads on from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatingsMark(i64);

/// What a batch's ratings come to in two numbers that move whenever any of them changes
/// (see [`Store::ratings_fingerprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatingsFingerprint(i64, i64);

impl RatingsFingerprint {
    /// How many ratings the batch has, of every kind (an upper bound on those a read of
    /// its figures finds).
    pub fn count(self) -> usize {
        usize::try_from(self.0).unwrap_or(0)
    }
}

/// A rating in the review queue, with what the queue's filters and summaries read.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct QueueRow {
    pub rating_id: Uuid,
    pub batch_id: Uuid,
    pub batch_name: String,
    pub task_id: Uuid,
    pub external_id: String,
    pub rater: String,
    #[sqlx(try_from = "String")]
    pub outcome: Outcome,
    #[sqlx(try_from = "String")]
    pub status: Status,
    pub submitted_at: Option<DateTime<Utc>>,
    pub version: i32,
    /// Canonical orientation.
    pub answers: Json<TaskAnswers>,
    /// Held for review first.
    pub review_first: bool,
}

/// Which ratings the review queue holds: always finished ones in batches the lead
/// leads, never the lead's own, never skips.
#[derive(Debug, Clone)]
pub struct QueueFilter {
    pub batch: Option<Uuid>,
    /// A rater's username.
    pub rater: Option<String>,
    pub outcome: Option<Outcome>,
    pub status: Status,
    /// Only ratings whose rater confirmed this warning (by id), or any warning.
    pub warning: Option<WarningFilter>,
    /// Only ratings held for review first.
    pub review_first: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarningFilter {
    Any,
    /// A warning's id: lower-case letters, digits and dashes (checked by the caller).
    Id(String),
}

impl QueueFilter {
    /// The LIKE pattern over the ratings' confirmed warnings (a JSON list of ids, read
    /// as text on both databases): any quoted id, or this one.
    fn warning_pattern(&self) -> Option<String> {
        self.warning.as_ref().map(|w| match w {
            WarningFilter::Any => "%\"%".to_owned(),
            WarningFilter::Id(id) => format!("%\"{id}\"%"),
        })
    }
}

/// Another rating of a task in the queue, to compare a queued rating with.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Peer {
    pub task_id: Uuid,
    pub rating_id: Uuid,
    #[sqlx(try_from = "String")]
    pub rater_kind: RaterKind,
    pub gold: bool,
    pub review_first: bool,
    /// Its task withdrawn (see [`crate::corrections`]).
    pub withdrawn: bool,
    /// Of an earlier version of its task, since corrected.
    pub stale: bool,
    #[sqlx(try_from = "String")]
    pub outcome: Outcome,
    #[sqlx(try_from = "String")]
    pub status: Status,
    pub answers: Json<TaskAnswers>,
}

/// One rater's rating of a task, for the side-by-side view.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TaskRating {
    pub rating_id: Uuid,
    pub rater: String,
    #[sqlx(try_from = "String")]
    pub rater_kind: RaterKind,
    pub gold: bool,
    pub review_first: bool,
    /// Its task withdrawn (see [`crate::corrections`]).
    pub withdrawn: bool,
    /// Of an earlier version of its task, since corrected.
    pub stale: bool,
    #[sqlx(try_from = "String")]
    pub outcome: Outcome,
    #[sqlx(try_from = "String")]
    pub status: Status,
    pub swapped: bool,
    pub answers: Json<TaskAnswers>,
    pub note: Option<String>,
    pub time_spent_s: i32,
}

/// What a lead says with a decision: on the rating as a whole, and on single answers
/// (by path, canonical).
#[derive(Debug, Clone, Copy)]
pub struct ReviewNote<'a> {
    pub comment: Option<&'a str>,
    pub field_comments: &'a BTreeMap<String, String>,
}

/// A finished rating of a batch, for comparing the raters of each task.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BatchRating {
    pub external_id: String,
    #[sqlx(try_from = "String")]
    pub rater_kind: RaterKind,
    pub gold: bool,
    pub review_first: bool,
    /// Its task withdrawn (see [`crate::corrections`]).
    pub withdrawn: bool,
    /// Of an earlier version of its task, since corrected.
    pub stale: bool,
    #[sqlx(try_from = "String")]
    pub outcome: Outcome,
    #[sqlx(try_from = "String")]
    pub status: Status,
    /// Canonical orientation.
    pub answers: Json<TaskAnswers>,
}

columns! {
    /// A rating as exported: everything about it, answers in canonical orientation.
    #[derive(Debug, Clone)]
    pub struct ExportRow {
        pub rating_id: Uuid = "r.id",
        pub batch: String = "b.name",
        pub external_id: String = "r.external_id",
        pub rater: String = "u.username",
        #[sqlx(try_from = "String")]
        pub outcome: Outcome = "r.outcome",
        #[sqlx(try_from = "String")]
        pub status: Status = "r.status",
        pub swapped: bool = "r.swapped",
        pub model_a: Option<String> = "r.model_a",
        pub model_b: Option<String> = "r.model_b",
        pub answers: Json<TaskAnswers> = "r.answers",
        #[sqlx(try_from = "super::NullableName")]
        pub skip_reason: Option<SkipReason> = "r.skip_reason",
        pub note: Option<String> = "r.note",
        pub time_spent_s: i32 = "r.time_spent_s",
        pub version: i32 = "r.version",
        pub created_at: DateTime<Utc> = "r.created_at",
        pub submitted_at: Option<DateTime<Utc>> = "r.submitted_at",
        pub reviewed_at: Option<DateTime<Utc>> = "r.reviewed_at",
        pub review_comment: Option<String> = "r.review_comment",
        /// A person's rating, or an LLM judge's.
        #[sqlx(try_from = "String")]
        pub rater_kind: RaterKind = "r.rater_kind",
        /// The rubric's warnings the rater confirmed.
        pub confirmed_warnings: Json<Vec<String>> = "r.confirmed_warnings",
        /// Code the rater ran in the browser (canonical).
        pub evidence: Option<Json<Evidence>> = "r.evidence",
        /// The last review's comments on single answers, by path (canonical).
        pub review_fields: Json<BTreeMap<String, String>> = "r.review_fields",
        /// A rating of a gold task, and how it did against the expected answers.
        pub gold: bool = "r.gold",
        pub gold_grade: Option<Json<Grade>> = "r.gold_grade",
        /// Held for review first.
        pub review_first: bool = "r.review_first",
        /// Its task withdrawn: out of the metrics while it is.
        pub withdrawn: bool = "r.withdrawn",
        /// Of an earlier version of its task, since corrected: out of the metrics.
        pub stale: bool = "r.stale",
        /// A judge's rating: the run it came from (always the run standing for the judge:
        /// the export holds no other judge rating).
        pub judge_run: Option<Uuid> = "r.judge_run_id",
    }
}

/// Where each kind of row stands with the metrics, for [`Standing::counts_in_metrics`]:
/// the one rule every view of a rating applies.
macro_rules! standing {
    ($($row:ty),*) => {$(
        impl $row {
            pub fn standing(&self) -> Standing {
                Standing {
                    kind: self.rater_kind,
                    gold: self.gold,
                    review_first: self.review_first,
                    set_aside: self.withdrawn || self.stale,
                    outcome: self.outcome,
                    status: self.status,
                }
            }

            /// Whether it counts in the batch's metrics ([`Standing::counts_in_metrics`]).
            pub fn counts_in_metrics(&self) -> bool {
                self.standing().counts_in_metrics()
            }
        }
    )*};
}

standing!(ExportRow, Peer, TaskRating, BatchRating);

/// Which ratings an export holds (drafts never).
#[derive(Debug, Clone, Default)]
pub struct ExportFilter {
    pub outcome: Option<Outcome>,
    /// A finished status (drafts are never exported).
    pub status: Option<Status>,
    pub rater: Option<String>,
    pub submitted_since: Option<DateTime<Utc>>,
    pub submitted_until: Option<DateTime<Utc>>,
    /// Only the rows that count in the batch's metrics ([`ExportRow::counts_in_metrics`]).
    pub counted: bool,
}

/// Whether a rating is in its batch's figures: `Standing::in_figures` as the database
/// reads it (the accumulator applies the rest of `Standing::counts_in_metrics` to each
/// row). A macro, so that [`FactsRow`]'s column list can hold it.
macro_rules! in_figures {
    () => {
        "(r.rater_kind = 'human' AND r.gold = FALSE AND r.withdrawn = FALSE AND r.stale = FALSE
          AND (r.review_first = FALSE OR r.status = 'accepted'))"
    };
}

/// Binds a lead and a queue filter to `$1`..`$6` of [`queue_from`], in its order.
macro_rules! bind_queue {
    ($query:expr, $lead:expr, $filter:expr) => {
        $query
            .bind($lead)
            .bind($filter.batch)
            .bind($filter.status.as_str())
            .bind(Outcome::Skipped.as_str())
            .bind($filter.rater.as_deref())
            .bind($filter.outcome.map(|name| name.as_str()))
            .bind($filter.warning_pattern())
    };
}

impl super::Store {
    /// Every rating of the review queue that `filter` keeps, oldest submission first,
    /// in batches `lead` leads (every batch for an admin). The rubric's own filters
    /// (answers, disagreement) and paging are applied over these by the caller.
    pub async fn review_queue(
        &self,
        lead: Uuid,
        role: verdict_core::role::Role,
        filter: &QueueFilter,
    ) -> StoreResult<Vec<QueueRow>> {
        let sql = format!(
            "SELECT r.id AS rating_id, b.id AS batch_id, b.name AS batch_name, r.task_id, t.external_id,
                    u.username AS rater, r.outcome, r.status, r.submitted_at, r.version, r.answers,
                    r.review_first
             {} ORDER BY r.submitted_at, r.id",
            queue_from(role, filter)
        );
        Ok(read!(self, |pool| {
            bind_queue!(sqlx::query_as::<_, QueueRow>(&sql), lead, filter)
                .fetch_all(pool)
                .await
        })?)
    }

    /// Every finished rating (drafts aside) of the tasks that have a rating in the
    /// queue `filter` keeps: what queued ratings are compared with.
    pub async fn review_queue_peers(
        &self,
        lead: Uuid,
        role: verdict_core::role::Role,
        filter: &QueueFilter,
    ) -> StoreResult<Vec<Peer>> {
        let sql = format!(
            "SELECT p.task_id, p.id AS rating_id, p.rater_kind, p.gold, p.review_first, p.withdrawn,
                    p.stale, p.outcome, p.status, p.answers FROM ratings p
             WHERE p.status <> $8 AND p.rater_kind = 'human' AND p.task_id IN (SELECT r.task_id {})",
            queue_from(role, filter)
        );
        Ok(read!(self, |pool| {
            bind_queue!(sqlx::query_as::<_, Peer>(&sql), lead, filter)
                .bind(Status::Draft.as_str())
                .fetch_all(pool)
                .await
        })?)
    }

    /// A page of the queue `filter` keeps, read by keyset after `cursor`, with how many
    /// ratings come before it: the path for filters the database applies alone.
    pub async fn review_queue_page(
        &self,
        lead: Uuid,
        role: verdict_core::role::Role,
        filter: &QueueFilter,
        cursor: Option<Cursor>,
        limit: i64,
    ) -> StoreResult<(Page<QueueRow>, i64)> {
        let from = queue_from(role, filter);
        let sql = format!(
            "SELECT r.id AS rating_id, b.id AS batch_id, b.name AS batch_name, r.task_id, t.external_id,
                    u.username AS rater, r.outcome, r.status, r.submitted_at, r.version, r.answers,
                    r.review_first
             {from} AND ($8 IS NULL OR r.submitted_at > $8 OR (r.submitted_at = $8 AND r.id > $9))
             ORDER BY r.submitted_at, r.id LIMIT $10"
        );
        let rows = read!(self, |pool| {
            bind_queue!(sqlx::query_as::<_, QueueRow>(&sql), lead, filter)
                .bind(cursor.map(|c| c.at))
                .bind(cursor.map(|c| c.id))
                .bind(limit + 1)
                .fetch_all(pool)
                .await
        })?;
        let count = format!(
            "SELECT COUNT(*) {from}
               AND ($8 IS NULL OR r.submitted_at < $8 OR (r.submitted_at = $8 AND r.id <= $9))"
        );
        let counted = |upto: Option<Cursor>| {
            let count = &count;
            async move {
                let (n,): (i64,) = read!(self, |pool| {
                    bind_queue!(sqlx::query_as(count), lead, filter)
                        .bind(upto.map(|c| c.at))
                        .bind(upto.map(|c| c.id))
                        .fetch_one(pool)
                        .await
                })?;
                StoreResult::Ok(n)
            }
        };
        let total = counted(None).await?;
        let before = match cursor {
            Some(cursor) => counted(Some(cursor)).await?,
            None => 0,
        };
        let page = Page::of(rows, limit, total, |row| Cursor {
            at: row.submitted_at.unwrap_or_default(),
            id: row.rating_id,
        });
        Ok((page, before))
    }

    /// Every finished rating (drafts aside) of these tasks.
    pub async fn task_peers(&self, tasks: &[Uuid]) -> StoreResult<Vec<Peer>> {
        if tasks.is_empty() {
            return Ok(vec![]);
        }
        let list = (0..tasks.len())
            .map(|i| format!("${}", i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT p.task_id, p.id AS rating_id, p.rater_kind, p.gold, p.review_first, p.withdrawn,
                    p.stale, p.outcome, p.status, p.answers FROM ratings p
             WHERE p.status <> $1 AND p.rater_kind = 'human' AND p.task_id IN ({list})"
        );
        Ok(read!(self, |pool| {
            let mut query = sqlx::query_as::<_, Peer>(&sql).bind(Status::Draft.as_str());
            for task in tasks {
                query = query.bind(*task);
            }
            query.fetch_all(pool).await
        })?)
    }

    /// Records a lead's decision. `version` must be the rating's current version (409
    /// otherwise). Rejecting gives the task's slot back to the pool so another rater can
    /// rate it; a rejection is final.
    pub async fn review(
        &self,
        rating_id: Uuid,
        reviewer: Uuid,
        decision: Decision,
        note: ReviewNote<'_>,
        version: i32,
        overlap: i32,
    ) -> StoreResult<Result<Rating, Refusal>> {
        let ReviewNote {
            comment,
            field_comments,
        } = note;
        let now = Utc::now();
        let lock = self.lock_clause();
        let locked = format!("SELECT {RATING_COLUMNS} FROM ratings r WHERE r.id = $1{lock}");
        let plain = format!("SELECT {RATING_COLUMNS} FROM ratings r WHERE r.id = $1");
        let status = decision.status();
        let result = transaction!(self, |tx| {
            let before: Rating = sqlx::query_as::<_, RatingRow>(&locked)
                .bind(rating_id)
                .fetch_one(&mut *tx)
                .await?
                .into();
            if let Err(refusal) = before.check_review(version) {
                Err(refusal)
            } else {
                sqlx::query(
                    "UPDATE ratings SET status = $2, reviewed_at = $3, reviewed_by = $4, review_comment = $5,
                         review_fields = $6, version = version + 1, updated_at = $3
                     WHERE id = $1",
                )
                .bind(rating_id)
                .bind(status.as_str())
                .bind(now)
                .bind(reviewer)
                .bind(comment)
                .bind(Json(field_comments))
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO reviews (id, rating_id, reviewer_id, decision, comment, version, at,
                                          field_comments)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(Uuid::now_v7())
                .bind(rating_id)
                .bind(reviewer)
                .bind(decision.as_str())
                .bind(comment)
                .bind(version)
                .bind(now)
                .bind(Json(field_comments))
                .execute(&mut *tx)
                .await?;
                if decision.frees_the_task() {
                    sqlx::query(RELEASE_SLOT)
                        .bind(before.task_id)
                        .bind(overlap)
                        .execute(&mut *tx)
                        .await?;
                }
                let after: Rating = sqlx::query_as::<_, RatingRow>(&plain)
                    .bind(rating_id)
                    .fetch_one(&mut *tx)
                    .await?
                    .into();
                insert_history!(
                    &mut *tx,
                    &after,
                    reviewer,
                    format!("review: {decision}"),
                    Some(&before),
                    now
                )?;
                let reviewed = verdict_core::webhook::EventKind::RatingReviewed;
                let said = serde_json::json!({"decision": decision.as_str(), "comment": comment});
                let wanted = subscribed!(tx, after.batch_id)?;
                rating_event!(tx, wanted, reviewed, &after, now, said)?;
                completion_event!(tx, wanted, after.batch_id, now)?;
                Ok(after)
            }
        });
        Ok(result)
    }

    /// Every rating of a task, drafts aside, with its rater.
    pub async fn task_ratings(&self, task_id: Uuid) -> StoreResult<Vec<TaskRating>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, TaskRating>(
                "SELECT r.id AS rating_id, u.username AS rater, r.rater_kind, r.gold, r.review_first,
                        r.withdrawn, r.stale, r.outcome, r.status, a.swapped, r.answers, r.note, r.time_spent_s
                 FROM ratings r JOIN users u ON u.id = r.rater_id JOIN assignments a ON a.id = r.assignment_id
                 WHERE r.task_id = $1 AND r.status <> $2 AND r.rater_kind = 'human' ORDER BY u.username",
            )
            .bind(task_id)
            .bind(Status::Draft.as_str())
            .fetch_all(pool)
            .await
        })?)
    }

    /// Every finished rating (drafts aside) of the tasks of batch `batch_id` a lead
    /// recorded a final answer for, with its task: one read for the metrics' `vs_final`.
    pub async fn adjudicated_ratings(
        &self,
        batch_id: Uuid,
    ) -> StoreResult<Vec<(Uuid, TaskRating)>> {
        #[derive(sqlx::FromRow)]
        struct Row {
            task_id: Uuid,
            #[sqlx(flatten)]
            rating: TaskRating,
        }
        let rows: Vec<Row> = read!(self, |pool| {
            sqlx::query_as::<_, Row>(
                "SELECT r.task_id, r.id AS rating_id, u.username AS rater, r.rater_kind, r.gold,
                        r.review_first, r.withdrawn, r.stale, r.outcome, r.status, a.swapped,
                        r.answers, r.note, r.time_spent_s
                 FROM ratings r JOIN final_answers f ON f.task_id = r.task_id
                   JOIN users u ON u.id = r.rater_id JOIN assignments a ON a.id = r.assignment_id
                 WHERE f.batch_id = $1 AND r.status <> $2 AND r.rater_kind = 'human'
                 ORDER BY r.task_id, u.username",
            )
            .bind(batch_id)
            .bind(Status::Draft.as_str())
            .fetch_all(pool)
            .await
        })?;
        Ok(rows.into_iter().map(|r| (r.task_id, r.rating)).collect())
    }

    /// Every finished rating of a batch (drafts aside), by task.
    pub async fn batch_ratings(&self, batch_id: Uuid) -> StoreResult<Vec<BatchRating>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, BatchRating>(
                "SELECT t.external_id, r.rater_kind, r.gold, r.review_first, r.withdrawn, r.stale,
                        r.outcome, r.status, r.answers
                 FROM ratings r JOIN tasks t ON t.id = r.task_id
                 WHERE r.batch_id = $1 AND r.status <> $2 AND r.rater_kind = 'human'
                 ORDER BY t.external_id, r.id",
            )
            .bind(batch_id)
            .bind(Status::Draft.as_str())
            .fetch_all(pool)
            .await
        })?)
    }

    /// The task of a batch with this external id.
    pub async fn task_by_external_id(
        &self,
        batch_id: Uuid,
        external_id: &str,
    ) -> StoreResult<Option<Uuid>> {
        let row: Option<(Uuid,)> = read!(self, |pool| {
            sqlx::query_as("SELECT id FROM tasks WHERE batch_id = $1 AND external_id = $2")
                .bind(batch_id)
                .bind(external_id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(|(id,)| id))
    }

    /// Where the ratings stand now, for [`Store::send_ratings`]: the lowest change
    /// number a change committed after it can have, so a read of the ratings changed at
    /// or above the mark misses none of them (and may read some again). On SQLite, one
    /// above the count of rating changes (migration 0013: one writer, so later changes
    /// count higher); on PostgreSQL, the oldest transaction still running (its snapshot's
    /// xmin: every transaction below it had committed, and was read, by then).
    pub async fn ratings_mark(&self) -> StoreResult<RatingsMark> {
        let (mark,): (i64,) = match self.pools() {
            PoolRef::Sqlite { read, .. } => {
                sqlx::query_as("SELECT value + 1 FROM rating_clock")
                    .fetch_one(read)
                    .await?
            }
            PoolRef::Postgres(pool) => {
                sqlx::query_as("SELECT pg_snapshot_xmin(pg_current_snapshot())::TEXT::BIGINT")
                    .fetch_one(pool)
                    .await?
            }
        };
        Ok(RatingsMark(mark))
    }

    /// The batch's ratings counted and their versions summed: every rating's version
    /// goes up by one with each change to it, so the pair moves with any change, and
    /// stays while nothing changes. Reads one number per rating, far less than reading
    /// the ratings.
    pub async fn ratings_fingerprint(&self, batch_id: Uuid) -> StoreResult<RatingsFingerprint> {
        let (count, versions): (i64, i64) = read!(self, |pool| {
            sqlx::query_as(
                "SELECT COUNT(*), CAST(COALESCE(SUM(version), 0) AS BIGINT) FROM ratings WHERE batch_id = $1",
            )
            .bind(batch_id)
            .fetch_one(pool)
            .await
        })?;
        Ok(RatingsFingerprint(count, versions))
    }

    /// Sends the human ratings of a batch, drafts included, to `out` in batches of
    /// rows, as they are read (judges' ratings are measured apart: see
    /// `metrics::judges`). Ratings of gold tasks, and ratings held for review first until
    /// a lead accepts them, are not the batch's figures. Stops early when the receiver is
    /// gone.
    ///
    /// Without `since`, every rating of the batch's figures. With it, every rating of
    /// the batch changed since that mark (some may come again), with
    /// [`RatingFacts::counted`] false for those not in the figures, so that a reader
    /// keeping them can take them out.
    pub async fn send_ratings(
        &self,
        batch_id: Uuid,
        since: Option<RatingsMark>,
        out: &tokio::sync::mpsc::Sender<Vec<RatingFacts>>,
    ) -> StoreResult<()> {
        let select = format!(
            "SELECT {} FROM ratings r JOIN users u ON u.id = r.rater_id WHERE r.batch_id = $1",
            FactsRow::COLUMNS
        );
        // Both backends read the changes at or above the mark (see `ratings_mark`).
        let sql = match since {
            None => format!("{select} AND {}", in_figures!()),
            Some(RatingsMark(mark)) => format!("{select} AND r.changed >= {mark}"),
        };
        if let Some(path) = self.sqlite_path() {
            let mut rows = scan::scan::<FactsRow>(path, sql, vec![scan::uuid(batch_id)]);
            while let Some(batch) = rows.batch().await? {
                let facts = batch.into_iter().map(RatingFacts::from).collect();
                if out.send(facts).await.is_err() {
                    break;
                }
            }
            return Ok(());
        }
        read!(self, |pool| {
            let mut rows = sqlx::query_as::<_, FactsRow>(&sql)
                .bind(batch_id)
                .fetch(pool);
            let mut facts = Vec::with_capacity(scan::BATCH);
            while let Some(row) = rows.try_next().await? {
                facts.push(row.into());
                if facts.len() == scan::BATCH
                    && out
                        .send(std::mem::replace(
                            &mut facts,
                            Vec::with_capacity(scan::BATCH),
                        ))
                        .await
                        .is_err()
                {
                    return Ok(());
                }
            }
            if !facts.is_empty() {
                // A receiver gone by now wants nothing more.
                let _ = out.send(facts).await;
            }
            Ok::<(), sqlx::Error>(())
        })?;
        Ok(())
    }

    /// Turns the batch's ratings that `filter` selects into output, oldest first, one row
    /// at a time: `each` renders a row and may hand back a finished chunk, which is sent
    /// to `out`. Stops early when the receiver is gone. Returns how many rows were read.
    pub async fn export_rows(
        &self,
        batch_id: Uuid,
        filter: &ExportFilter,
        mut each: impl FnMut(ExportRow) -> Option<Vec<u8>> + Send,
        out: &tokio::sync::mpsc::Sender<Vec<u8>>,
    ) -> StoreResult<u64> {
        // The external id, orientation, models and gold flag are the copies kept on the
        // rating (migration 0011): no lookup of each rating's assignment or task.
        let sql = format!(
            "SELECT {} FROM ratings r JOIN batches b ON b.id = r.batch_id JOIN users u ON u.id = r.rater_id
             WHERE r.batch_id = $1 AND r.status <> 'draft'
               AND (r.rater_kind = 'human' OR r.judge_run_id = {})
               AND ($2 IS NULL OR r.outcome = $2) AND ($3 IS NULL OR r.status = $3)
               AND ($4 IS NULL OR u.username = $4)
               AND ($5 IS NULL OR r.submitted_at >= $5) AND ($6 IS NULL OR r.submitted_at < $6)
             ORDER BY r.submitted_at, r.id",
            ExportRow::COLUMNS,
            super::judges::standing_run(
                "(SELECT j.id FROM judges j WHERE j.user_id = r.rater_id)",
                "r.batch_id"
            )
        );
        let mut count = 0u64;
        if let Some(path) = self.sqlite_path() {
            let params = vec![
                scan::uuid(batch_id),
                scan::text(filter.outcome.map(Outcome::as_str)),
                scan::text(filter.status.map(Status::as_str)),
                scan::text(filter.rater.as_deref()),
                scan::time(filter.submitted_since),
                scan::time(filter.submitted_until),
            ];
            let mut rows = scan::scan::<ExportRow>(path, sql, params);
            'rows: while let Some(batch) = rows.batch().await? {
                for row in batch {
                    if filter.counted && !row.counts_in_metrics() {
                        continue;
                    }
                    count += 1;
                    if let Some(chunk) = each(row)
                        && out.send(chunk).await.is_err()
                    {
                        break 'rows;
                    }
                }
            }
            return Ok(count);
        }
        read!(self, |pool| {
            let mut rows = sqlx::query_as::<_, ExportRow>(&sql)
                .bind(batch_id)
                .bind(filter.outcome.map(|name| name.as_str()))
                .bind(filter.status.map(|name| name.as_str()))
                .bind(filter.rater.as_deref())
                .bind(filter.submitted_since)
                .bind(filter.submitted_until)
                .fetch(pool);
            while let Some(row) = rows.try_next().await? {
                if filter.counted && !row.counts_in_metrics() {
                    continue;
                }
                count += 1;
                if let Some(chunk) = each(row)
                    && out.send(chunk).await.is_err()
                {
                    break;
                }
            }
            Ok::<(), sqlx::Error>(())
        })?;
        Ok(count)
    }
}

/// The ratings of the review queue: `$1` the lead, `$2` a batch or null, `$3` the status,
/// `$4` the skip outcome (never queued), `$5` a rater's name or null, `$6` an outcome or
/// null, `$7` a pattern of confirmed warnings or null, bound in that order by
/// `bind_queue!`; `filter`'s review-first flag is written in (a constant, not input).
fn queue_from(role: verdict_core::role::Role, filter: &QueueFilter) -> String {
    format!(
        "FROM ratings r JOIN batches b ON b.id = r.batch_id JOIN tasks t ON t.id = r.task_id
         JOIN users u ON u.id = r.rater_id
         WHERE r.status = $3 AND r.outcome <> $4 AND r.rater_id <> $1 AND r.rater_kind = 'human'
           AND {} AND ($2 IS NULL OR r.batch_id = $2)
           AND ($5 IS NULL OR u.username = $5) AND ($6 IS NULL OR r.outcome = $6)
           AND ($7 IS NULL OR CAST(r.confirmed_warnings AS TEXT) LIKE $7){}",
        super::batches::batch_filter(role),
        if filter.review_first {
            " AND r.review_first = TRUE"
        } else {
            ""
        }
    )
}

columns! {
    /// A [`RatingFacts`] as the database hands it over (the core's type knows no
    /// database). The orientation, models, lengths and gold flag are the copies kept on
    /// the rating (migration 0011): no lookup of each rating's assignment or task.
    pub(super) struct FactsRow {
        id: Uuid = "r.id",
        task_id: Uuid = "r.task_id",
        rater: String = "u.username",
        #[sqlx(try_from = "String")]
        outcome: Outcome = "r.outcome",
        #[sqlx(try_from = "String")]
        status: Status = "r.status",
        answers: String = "CAST(r.answers AS TEXT)",
        swapped: bool = "r.swapped",
        time_spent_s: i32 = "r.time_spent_s",
        model_a: Option<String> = "r.model_a",
        model_b: Option<String> = "r.model_b",
        len_a: i64 = "r.len_a",
        len_b: i64 = "r.len_b",
        #[sqlx(try_from = "super::NullableName")]
        skip_reason: Option<SkipReason> = "r.skip_reason",
        /// In the batch's figures: always, on a read of the figures alone; on a read of
        /// the changes since a mark, so that a reader can take out those that are not.
        counted: bool = in_figures!(),
    }
}

impl From<FactsRow> for RatingFacts {
    fn from(row: FactsRow) -> Self {
        RatingFacts {
            id: row.id,
            task_id: row.task_id,
            rater: row.rater,
            outcome: row.outcome,
            status: row.status,
            answers: row.answers,
            swapped: row.swapped,
            time_spent_s: row.time_spent_s,
            model_a: row.model_a,
            model_b: row.model_b,
            len_a: row.len_a,
            len_b: row.len_b,
            skip_reason: row.skip_reason,
            counted: row.counted,
        }
    }
}

#[cfg(test)]
mod tests;
