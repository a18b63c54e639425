//! What the leads' reports read: people's finished ratings (drafts never, judges never),
//! across the batches someone may see or of one batch.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::batches::batch_filter;
use super::{StoreResult, read};
use verdict_core::lifecycle::{Outcome, RaterKind, SkipReason, Standing, Status};
use verdict_core::role::Role;

/// One person's finished rating as the hours report reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WorkRow {
    pub rating_id: Uuid,
    pub rater: String,
    #[sqlx(try_from = "String")]
    pub outcome: Outcome,
    #[sqlx(try_from = "super::NullableName")]
    pub skip_reason: Option<SkipReason>,
    pub time_spent_s: i32,
    pub submitted_at: DateTime<Utc>,
    pub gold: bool,
}

/// One person's finished rating of a batch as its flags read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FlagRow {
    pub rating_id: Uuid,
    pub rater: String,
    #[sqlx(try_from = "String")]
    pub outcome: Outcome,
    #[sqlx(try_from = "String")]
    pub status: Status,
    pub time_spent_s: i32,
    pub gold: bool,
    pub review_first: bool,
    /// Its task withdrawn, or corrected since (see [`crate::corrections`]).
    pub set_aside: bool,
    /// The answers (canonical orientation), as JSON text.
    pub answers: String,
}

impl FlagRow {
    /// Whether the rating is one of the batch's metrics (the straight-lining figures
    /// read only those).
    pub fn counts_in_metrics(&self) -> bool {
        Standing {
            kind: RaterKind::Human,
            gold: self.gold,
            review_first: self.review_first,
            set_aside: self.set_aside,
            outcome: self.outcome,
            status: self.status,
        }
        .counts_in_metrics()
    }
}

/// The finished ratings of people, submitted in a window.
const FINISHED: &str =
    "r.status <> 'draft' AND r.rater_kind = 'human' AND r.submitted_at IS NOT NULL";

/// Which finished ratings the hours report reads: of one batch or of every batch the
/// reader may see, submitted at or after `from` and before `until`.
#[derive(Debug, Clone, Copy)]
pub struct WorkFilter {
    pub batch: Option<Uuid>,
    pub from: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

impl super::Store {
    /// Finished ratings of people in the batches `user_id` (of `role`) may see, that
    /// `filter` selects, oldest first.
    pub async fn work(
        &self,
        user_id: Uuid,
        role: Role,
        filter: WorkFilter,
    ) -> StoreResult<Vec<WorkRow>> {
        let sql = format!(
            "SELECT r.id AS rating_id, u.username AS rater, r.outcome, r.skip_reason,
                    r.time_spent_s, r.submitted_at, r.gold
             FROM ratings r JOIN batches b ON b.id = r.batch_id JOIN users u ON u.id = r.rater_id
             WHERE {FINISHED} AND {}
               AND ($2 IS NULL OR r.batch_id = $2)
               AND ($3 IS NULL OR r.submitted_at >= $3) AND ($4 IS NULL OR r.submitted_at < $4)
             ORDER BY r.submitted_at, r.id",
            batch_filter(role)
        );
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, WorkRow>(&sql)
                .bind(user_id)
                .bind(filter.batch)
                .bind(filter.from)
                .bind(filter.until)
                .fetch_all(pool)
                .await
        })?)
    }

    /// Every finished rating of people in a batch, with its answers, oldest first.
    pub async fn flag_rows(&self, batch_id: Uuid) -> StoreResult<Vec<FlagRow>> {
        let sql = format!(
            "SELECT r.id AS rating_id, u.username AS rater, r.outcome, r.status,
                    r.time_spent_s, r.gold, r.review_first,
                    (r.withdrawn OR r.stale) AS set_aside, CAST(r.answers AS TEXT) AS answers
             FROM ratings r JOIN users u ON u.id = r.rater_id
             WHERE r.batch_id = $1 AND {FINISHED}
             ORDER BY r.submitted_at, r.id"
        );
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, FlagRow>(&sql)
                .bind(batch_id)
                .fetch_all(pool)
                .await
        })?)
    }
}
