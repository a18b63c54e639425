//! Ratings: drafts, submissions, skips, out-of-scope marks and revisions, each change
//! kept in the rating's history.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use uuid::Uuid;

use super::assignments::{
    ASSIGNMENT_COLUMNS, AssignmentRow, RELEASE_SLOT, TASK_EXTRA, TASK_NUMBER, escalate,
};
use super::page::{Cursor, Page};
use super::webhooks::{completion_event, escalated_event, rating_event, subscribed};
use super::{StoreResult, read, transaction, write};
use verdict_core::access;
use verdict_core::assignment::{Assignment, DraftStep, FinishStep};
use verdict_core::evidence::Evidence;
use verdict_core::gold::Grade;
use verdict_core::lifecycle::{AssignmentState, Outcome, Refusal, SkipReason, Status};
use verdict_core::overlap::Plan;
use verdict_core::rating::{EvidenceChange, Extras, Finish, Rating};
use verdict_core::rubric::TaskAnswers;
use verdict_core::submission::TimeSpent;
use verdict_core::webhook::EventKind;

/// A rating as its row holds it (see [`Rating`]).
#[derive(sqlx::FromRow)]
pub(crate) struct RatingRow {
    id: Uuid,
    assignment_id: Uuid,
    task_id: Uuid,
    batch_id: Uuid,
    rater_id: Uuid,
    #[sqlx(try_from = "String")]
    outcome: Outcome,
    #[sqlx(try_from = "String")]
    status: Status,
    answers: Json<TaskAnswers>,
    #[sqlx(try_from = "super::NullableName")]
    skip_reason: Option<SkipReason>,
    note: Option<String>,
    time_spent_s: i32,
    version: i32,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    submitted_at: Option<DateTime<Utc>>,
    reviewed_at: Option<DateTime<Utc>>,
    review_comment: Option<String>,
    confirmed_warnings: Json<Vec<String>>,
    evidence: Option<Json<Evidence>>,
    review_fields: Json<BTreeMap<String, String>>,
    gold_grade: Option<Json<Grade>>,
    review_first: bool,
    set_aside: bool,
}

impl From<RatingRow> for Rating {
    fn from(row: RatingRow) -> Self {
        Rating {
            id: row.id,
            assignment_id: row.assignment_id,
            task_id: row.task_id,
            batch_id: row.batch_id,
            rater_id: row.rater_id,
            outcome: row.outcome,
            status: row.status,
            answers: row.answers.0,
            skip_reason: row.skip_reason,
            note: row.note,
            time_spent_s: row.time_spent_s,
            version: row.version,
            created_at: row.created_at,
            updated_at: row.updated_at,
            submitted_at: row.submitted_at,
            reviewed_at: row.reviewed_at,
            review_comment: row.review_comment,
            confirmed_warnings: row.confirmed_warnings.0,
            evidence: row.evidence.map(|Json(e)| e),
            review_fields: row.review_fields.0,
            gold_grade: row.gold_grade.map(|Json(g)| g),
            review_first: row.review_first,
            set_aside: row.set_aside,
        }
    }
}

/// How a write binds what [`EvidenceChange`] decided: whether to set the column, and
/// the value to set it to.
pub(crate) fn evidence_binds(extras: &Extras) -> (bool, Option<Json<&Evidence>>) {
    match extras.evidence_change() {
        EvidenceChange::Keep => (false, None),
        EvidenceChange::Set(evidence) => (true, evidence.map(Json)),
    }
}

pub(crate) const RATING_COLUMNS: &str = "r.id, r.assignment_id, r.task_id, r.batch_id, r.rater_id, r.outcome, r.status, \
     r.answers, r.skip_reason, r.note, r.time_spent_s, r.version, r.created_at, r.updated_at, \
     r.submitted_at, r.reviewed_at, r.review_comment, r.confirmed_warnings, r.evidence, r.review_fields, \
     r.gold_grade, r.review_first, (r.withdrawn OR r.stale) AS set_aside";

/// A rating's row in a rater's history, with the task it belongs to.
#[derive(Debug, Clone)]
pub struct HistoryRow {
    pub rating: Rating,
    /// The task's external id, until [`HistoryRow::shown_to`] names it as its rater may
    /// see it.
    pub external_id: String,
    pub batch_name: String,
    /// The task's number among its rater's tasks of the batch (see `TASK_NUMBER`).
    task_number: i64,
    raters_see_external_ids: bool,
}

/// A [`HistoryRow`] as the query reads it.
#[derive(sqlx::FromRow)]
struct StoredHistoryRow {
    #[sqlx(flatten)]
    rating: RatingRow,
    external_id: String,
    batch_name: String,
    task_number: i64,
    raters_see_external_ids: bool,
}

impl From<StoredHistoryRow> for HistoryRow {
    fn from(row: StoredHistoryRow) -> Self {
        HistoryRow {
            rating: row.rating.into(),
            external_id: row.external_id,
            batch_name: row.batch_name,
            task_number: row.task_number,
            raters_see_external_ids: row.raters_see_external_ids,
        }
    }
}

impl HistoryRow {
    /// The row with its task named as `viewer` (its rater) may see it
    /// ([`verdict_core::access::task_name`]).
    pub fn shown_to(mut self, viewer: &verdict_core::user::User) -> Self {
        let sees = access::sees_external_ids(viewer.role, self.raters_see_external_ids);
        self.external_id = access::task_name(sees, &self.external_id, self.task_number);
        self
    }
}

/// Reads the rating of an assignment (`$1`).
fn rating_of_assignment_sql() -> String {
    format!("SELECT {RATING_COLUMNS} FROM ratings r WHERE r.assignment_id = $1")
}

impl super::Store {
    /// Reads an assignment (`$1`) and locks it for the rest of the transaction.
    fn locked_assignment_sql(&self) -> String {
        format!(
            "SELECT {ASSIGNMENT_COLUMNS} FROM assignments a WHERE a.id = $1{}",
            self.lock_clause()
        )
    }

    pub async fn rating(&self, id: Uuid) -> StoreResult<Option<Rating>> {
        let sql = format!("SELECT {RATING_COLUMNS} FROM ratings r WHERE r.id = $1");
        let row = read!(self, |pool| sqlx::query_as::<_, RatingRow>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Rating::from))
    }

    pub async fn rating_of_assignment(&self, assignment_id: Uuid) -> StoreResult<Option<Rating>> {
        let sql = rating_of_assignment_sql();
        let row = read!(self, |pool| {
            sqlx::query_as::<_, RatingRow>(&sql)
                .bind(assignment_id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(Rating::from))
    }

    /// A page of a rater's ratings, newest first (by when each was started, which never
    /// changes, so a revision does not move a rating between pages), drafts included.
    pub async fn ratings_of_rater(
        &self,
        rater_id: Uuid,
        cursor: Option<Cursor>,
        limit: i64,
    ) -> StoreResult<Page<HistoryRow>> {
        let sql = format!(
            "SELECT {RATING_COLUMNS}, t.external_id, b.name AS batch_name,
                    {TASK_NUMBER} AS task_number, b.raters_see_external_ids
             FROM ratings r JOIN tasks t ON t.id = r.task_id JOIN batches b ON b.id = r.batch_id
               JOIN assignments a ON a.id = r.assignment_id
             WHERE r.rater_id = $1 AND b.deleted_at IS NULL
               AND ($2 IS NULL OR r.created_at < $2 OR (r.created_at = $2 AND r.id < $3))
             ORDER BY r.created_at DESC, r.id DESC LIMIT $4"
        );
        let rows: Vec<HistoryRow> = read!(self, |pool| {
            sqlx::query_as::<_, StoredHistoryRow>(&sql)
                .bind(rater_id)
                .bind(cursor.map(|c| c.at))
                .bind(cursor.map(|c| c.id))
                .bind(limit + 1)
                .fetch_all(pool)
                .await
        })?
        .into_iter()
        .map(HistoryRow::from)
        .collect();
        let (total,): (i64,) = read!(self, |pool| {
            sqlx::query_as("SELECT COUNT(*) FROM ratings WHERE rater_id = $1")
                .bind(rater_id)
                .fetch_one(pool)
                .await
        })?;
        Ok(Page::of(rows, limit, total, |row| Cursor {
            at: row.rating.created_at,
            id: row.rating.id,
        }))
    }

    /// Keeps what the rater has written into a revision so far, beside the rating (see
    /// migration 0006), with the larger of the saved and the given active time. `None`
    /// when the rating may no longer be revised.
    pub async fn save_revision_draft(
        &self,
        rating_id: Uuid,
        draft: &Value,
        time_spent: TimeSpent,
    ) -> StoreResult<Option<DateTime<Utc>>> {
        let now = Utc::now();
        let changed = write!(self, |pool| {
            sqlx::query(
                "UPDATE ratings SET revision_draft = $2,
                     revision_time_s = CASE WHEN revision_time_s IS NULL OR $3 > revision_time_s
                         THEN $3 ELSE revision_time_s END
                 WHERE id = $1 AND status IN ($4, $5)",
            )
            .bind(rating_id)
            .bind(Json(draft))
            .bind(time_spent.seconds())
            .bind(Status::Submitted.as_str())
            .bind(Status::Returned.as_str())
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        Ok((changed == 1).then_some(now))
    }

    /// The revision saved so far, if any, and its active time.
    pub async fn revision_draft(&self, rating_id: Uuid) -> StoreResult<Option<(Value, i32)>> {
        let row: Option<(Option<Json<Value>>, Option<i32>)> = read!(self, |pool| {
            sqlx::query_as("SELECT revision_draft, revision_time_s FROM ratings WHERE id = $1")
                .bind(rating_id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.and_then(|(draft, time)| draft.map(|d| (d.0, time.unwrap_or(0)))))
    }

    /// How many of a rater's ratings a lead returned for revision (the menu shows it).
    pub async fn returned_count(&self, rater_id: Uuid) -> StoreResult<i64> {
        let (count,): (i64,) = read!(self, |pool| {
            sqlx::query_as("SELECT COUNT(*) FROM ratings WHERE rater_id = $1 AND status = $2")
                .bind(rater_id)
                .bind(Status::Returned.as_str())
                .fetch_one(pool)
                .await
        })?;
        Ok(count)
    }

    /// The first `limit` of a rater's returned ratings, the longest waiting first.
    pub async fn returned_ratings(
        &self,
        rater_id: Uuid,
        limit: i64,
    ) -> StoreResult<Vec<HistoryRow>> {
        let sql = format!(
            "SELECT {RATING_COLUMNS}, t.external_id, b.name AS batch_name,
                    {TASK_NUMBER} AS task_number, b.raters_see_external_ids
             FROM ratings r JOIN tasks t ON t.id = r.task_id JOIN batches b ON b.id = r.batch_id
               JOIN assignments a ON a.id = r.assignment_id
             WHERE r.rater_id = $1 AND r.status = $2 AND b.deleted_at IS NULL
             ORDER BY r.updated_at, r.id LIMIT $3"
        );
        let rows = read!(self, |pool| {
            sqlx::query_as::<_, StoredHistoryRow>(&sql)
                .bind(rater_id)
                .bind(Status::Returned.as_str())
                .bind(limit)
                .fetch_all(pool)
                .await
        })?;
        Ok(rows.into_iter().map(HistoryRow::from).collect())
    }

    /// The change history of a rating, oldest first: (action, actor, at, before, after).
    pub async fn rating_history(
        &self,
        rating_id: Uuid,
    ) -> StoreResult<
        Vec<(
            String,
            Option<String>,
            DateTime<Utc>,
            Option<Json<Value>>,
            Json<Value>,
        )>,
    > {
        Ok(read!(self, |pool| {
            sqlx::query_as(
                "SELECT h.action, u.username, h.at, h.before, h.after
                 FROM rating_history h LEFT JOIN users u ON u.id = h.actor_id
                 WHERE h.rating_id = $1 ORDER BY h.at, h.id",
            )
            .bind(rating_id)
            .fetch_all(pool)
            .await
        })?)
    }

    /// Saves a draft of an assignment as [`Assignment::draft_step`] decides: saved with
    /// its lease renewed while it is open; saved and refused once its lease ran out;
    /// refused once it is finished.
    pub async fn save_draft(
        &self,
        assignment_id: Uuid,
        answers: &TaskAnswers,
        extras: &Extras,
        time_spent: TimeSpent,
        lease_until: DateTime<Utc>,
    ) -> StoreResult<Result<Rating, Refusal>> {
        let now = Utc::now();
        let seconds = time_spent.seconds();
        let assignment_sql = self.locked_assignment_sql();
        let rating_sql = rating_of_assignment_sql();
        let outcome = transaction!(self, |tx| {
            let assignment: Assignment = sqlx::query_as::<_, AssignmentRow>(&assignment_sql)
                .bind(assignment_id)
                .fetch_one(&mut *tx)
                .await?
                .into();
            match assignment.draft_step() {
                DraftStep::Refuse(refusal) => Err(refusal),
                DraftStep::SaveAndRefuse => {
                    upsert_draft!(&mut *tx, &assignment, answers, extras, seconds, now)?;
                    Err(Refusal::Expired)
                }
                DraftStep::Save => {
                    upsert_draft!(&mut *tx, &assignment, answers, extras, seconds, now)?;
                    sqlx::query(
                        "UPDATE assignments SET lease_expires_at = $2, updated_at = $3 WHERE id = $1",
                    )
                    .bind(assignment.id)
                    .bind(lease_until)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    let rating = sqlx::query_as::<_, RatingRow>(&rating_sql)
                        .bind(assignment.id)
                        .fetch_one(&mut *tx)
                        .await?;
                    Ok(Rating::from(rating))
                }
            }
        });
        Ok(outcome)
    }

    /// Finishes an assignment as [`Assignment::finish_step`] decides: while it is open,
    /// stores the rating as submitted and closes the assignment, in one transaction (a
    /// skip gives the task's slot back to the pool). Finishing it again with the same
    /// result returns the stored rating (a retried or double-clicked submit stores one
    /// rating).
    pub async fn finish(
        &self,
        assignment_id: Uuid,
        actor: Uuid,
        finish: &Finish,
        extras: &Extras,
        time_spent: TimeSpent,
        plan: &Plan<'_>,
    ) -> StoreResult<Result<Rating, Refusal>> {
        let now = Utc::now();
        let seconds = time_spent.seconds();
        let assignment_sql = self.locked_assignment_sql();
        let extra_sql = TASK_EXTRA.replace("{}", self.no_key_lock_clause());
        let rating_sql = rating_of_assignment_sql();
        let (answers, skip_reason, note) = finish.parts();
        let (evidence_given, evidence) = evidence_binds(extras);
        let outcome = finish.outcome();
        let result = transaction!(self, |tx| {
            let assignment: Assignment = sqlx::query_as::<_, AssignmentRow>(&assignment_sql)
                .bind(assignment_id)
                .fetch_one(&mut *tx)
                .await?
                .into();
            let before = sqlx::query_as::<_, RatingRow>(&rating_sql)
                .bind(assignment.id)
                .fetch_optional(&mut *tx)
                .await?
                .map(Rating::from);
            match assignment.finish_step(before.as_ref(), finish) {
                FinishStep::Refuse(refusal) => Err(refusal),
                FinishStep::AlreadyStored => Ok(before.expect("a repeat has a stored rating")),
                FinishStep::Expired { keep_draft } => {
                    // What the rater wrote is kept where they can read it again.
                    if keep_draft {
                        upsert_draft!(&mut *tx, &assignment, &answers, extras, seconds, now)?;
                    }
                    Err(Refusal::Expired)
                }
                FinishStep::Store => {
                    // The stored rating comes back with the write (RETURNING) rather than
                    // from a read after it: one statement less in the writer's turn.
                    let rating: Rating = sqlx::query_as::<_, RatingRow>(&format!(
                        "INSERT INTO ratings (id, assignment_id, task_id, batch_id, rater_id, outcome, status, answers,
                                              skip_reason, note, time_spent_s, version, created_at, updated_at, submitted_at,
                                              confirmed_warnings, evidence, gold_grade, review_first)
                         VALUES ($1, $2, $3, $4, $5, $6, $12, $7, $8, $9, $10, 1, $11, $11, $11, $13, $14, $16, $17)
                         ON CONFLICT (assignment_id) DO UPDATE
                         SET outcome = excluded.outcome, status = excluded.status, answers = excluded.answers,
                             skip_reason = excluded.skip_reason, note = excluded.note,
                             time_spent_s = CASE WHEN excluded.time_spent_s > ratings.time_spent_s
                                 THEN excluded.time_spent_s ELSE ratings.time_spent_s END,
                             version = ratings.version + 1,
                             updated_at = excluded.updated_at, submitted_at = excluded.submitted_at,
                             confirmed_warnings = excluded.confirmed_warnings,
                             evidence = CASE WHEN $15 THEN excluded.evidence ELSE ratings.evidence END,
                             gold_grade = excluded.gold_grade, review_first = excluded.review_first
                         RETURNING {}",
                        RATING_COLUMNS.replace("r.", "")
                    ))
                    .bind(Uuid::now_v7())
                    .bind(assignment.id)
                    .bind(assignment.task_id)
                    .bind(assignment.batch_id)
                    .bind(assignment.rater_id)
                    .bind(outcome.as_str())
                    .bind(Json(&answers))
                    .bind(skip_reason.map(SkipReason::as_str))
                    .bind(note)
                    .bind(time_spent.seconds())
                    .bind(now)
                    .bind(Status::Submitted.as_str())
                    .bind(Json(&extras.confirmed_warnings))
                    .bind(evidence)
                    .bind(evidence_given)
                    .bind(extras.gold_grade.as_ref().map(Json))
                    .bind(extras.review_first)
                    .fetch_one(&mut *tx)
                    .await?
                    .into();
                    sqlx::query("UPDATE assignments SET state = $2, updated_at = $3 WHERE id = $1")
                        .bind(assignment.id)
                        .bind(AssignmentState::finished_with(outcome).as_str())
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                    if outcome.frees_the_task() {
                        sqlx::query(RELEASE_SLOT)
                            .bind(assignment.task_id)
                            .bind(plan.overlap)
                            .execute(&mut *tx)
                            .await?;
                    }
                    let wanted = subscribed!(tx, assignment.batch_id)?;
                    if !outcome.frees_the_task()
                        && escalate!(tx, &extra_sql, assignment.task_id, plan)?
                    {
                        let (batch, task) = (assignment.batch_id, assignment.task_id);
                        escalated_event!(tx, wanted, batch, task, now)?;
                    }
                    let before = before.filter(|b| !b.status.is_draft());
                    let action = outcome.finish_action();
                    insert_history!(&mut *tx, &rating, actor, action, before.as_ref(), now)?;
                    let submitted = EventKind::RatingSubmitted;
                    rating_event!(tx, wanted, submitted, &rating, now, serde_json::json!({}))?;
                    completion_event!(tx, wanted, assignment.batch_id, now)?;
                    Ok(rating)
                }
            }
        });
        Ok(result)
    }

    /// A rater's revision of their own rating (not yet accepted): new answers, possibly a
    /// new outcome, and back into the review queue if a lead had returned it. Turned into
    /// a skip, its task's slot goes back to the pool. The active time kept is the larger
    /// of the stored and the given.
    pub async fn revise(
        &self,
        rating_id: Uuid,
        actor: Uuid,
        finish: &Finish,
        extras: &Extras,
        time_spent: Option<TimeSpent>,
        plan: &Plan<'_>,
    ) -> StoreResult<Result<Rating, Refusal>> {
        let now = Utc::now();
        let lock = self.lock_clause();
        let extra_sql = TASK_EXTRA.replace("{}", self.no_key_lock_clause());
        let sql = format!("SELECT {RATING_COLUMNS} FROM ratings r WHERE r.id = $1{lock}");
        let (answers, skip_reason, note) = finish.parts();
        let (evidence_given, evidence) = evidence_binds(extras);
        let result = transaction!(self, |tx| {
            let before: Rating = sqlx::query_as::<_, RatingRow>(&sql)
                .bind(rating_id)
                .fetch_one(&mut *tx)
                .await?
                .into();
            if let Err(refusal) = before.check_revise_locked() {
                Err(refusal)
            } else {
                sqlx::query(
                    "UPDATE ratings SET outcome = $2, answers = $3, skip_reason = $4, note = $5,
                         time_spent_s = CASE WHEN $6 > time_spent_s THEN $6 ELSE time_spent_s END,
                         revision_draft = NULL, revision_time_s = NULL,
                         status = $8, version = version + 1, updated_at = $7,
                         confirmed_warnings = $9,
                         evidence = CASE WHEN $11 THEN $10 ELSE evidence END,
                         gold_grade = $12, review_first = $13
                     WHERE id = $1",
                )
                .bind(rating_id)
                .bind(finish.outcome().as_str())
                .bind(Json(&answers))
                .bind(skip_reason.map(SkipReason::as_str))
                .bind(note)
                .bind(time_spent.map(TimeSpent::seconds))
                .bind(now)
                .bind(Status::Submitted.as_str())
                .bind(Json(&extras.confirmed_warnings))
                .bind(evidence)
                .bind(evidence_given)
                .bind(extras.gold_grade.as_ref().map(Json))
                .bind(extras.review_first)
                .execute(&mut *tx)
                .await?;
                if before.revision_frees_the_task(finish) {
                    sqlx::query("UPDATE assignments SET state = $3, updated_at = $2 WHERE id = $1")
                        .bind(before.assignment_id)
                        .bind(now)
                        .bind(AssignmentState::finished_with(finish.outcome()).as_str())
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query(RELEASE_SLOT)
                        .bind(before.task_id)
                        .bind(plan.overlap)
                        .execute(&mut *tx)
                        .await?;
                }
                let wanted = subscribed!(tx, before.batch_id)?;
                // New answers may disagree where the old ones did not.
                if !before.revision_frees_the_task(finish)
                    && escalate!(tx, &extra_sql, before.task_id, plan)?
                {
                    escalated_event!(tx, wanted, before.batch_id, before.task_id, now)?;
                }
                let after: Rating = sqlx::query_as::<_, RatingRow>(&sql.replace(lock, ""))
                    .bind(rating_id)
                    .fetch_one(&mut *tx)
                    .await?
                    .into();
                insert_history!(&mut *tx, &after, actor, "revise", Some(&before), now)?;
                let revised = EventKind::RatingRevised;
                let was = serde_json::json!({"previous_status": before.status});
                rating_event!(tx, wanted, revised, &after, now, was)?;
                completion_event!(tx, wanted, after.batch_id, now)?;
                Ok(after)
            }
        });
        Ok(result)
    }
}

/// Records one change of a rating: who made it, what it was before and after.
/// A macro rather than a function so it runs on whichever backend's transaction it is
/// given without naming sqlx's generic bounds.
macro_rules! insert_history {
    ($tx:expr, $after:expr, $actor:expr, $action:expr, $before:expr, $at:expr) => {
        sqlx::query(
            "INSERT INTO rating_history (id, rating_id, actor_id, action, before, after, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(Uuid::now_v7())
        .bind($after.id)
        .bind($actor)
        .bind($action)
        .bind($before.map(|b: &::verdict_core::rating::Rating| Json(b.snapshot())))
        .bind(Json($after.snapshot()))
        .bind($at)
        .execute($tx)
        .await
    };
}
pub(crate) use insert_history;

/// Stores `answers` as the draft of an assignment's rating, creating the rating if there is
/// none. The active time kept is the larger of the stored and the given: time is never lost
/// to a client that sends less (or none).
macro_rules! upsert_draft {
    ($tx:expr, $assignment:expr, $answers:expr, $extras:expr, $time:expr, $now:expr) => {{
        let (evidence_given, evidence) = $crate::ratings::evidence_binds($extras);
        sqlx::query(
            "INSERT INTO ratings (id, assignment_id, task_id, batch_id, rater_id, outcome, status, answers,
                                  time_spent_s, created_at, updated_at, evidence)
             VALUES ($1, $2, $3, $4, $5, $9, $10, $6, $7, $8, $8, $11)
             ON CONFLICT (assignment_id) DO UPDATE
             SET answers = excluded.answers,
                 time_spent_s = CASE WHEN excluded.time_spent_s > ratings.time_spent_s
                     THEN excluded.time_spent_s ELSE ratings.time_spent_s END,
                 updated_at = excluded.updated_at,
                 evidence = CASE WHEN $12 THEN excluded.evidence ELSE ratings.evidence END
             WHERE ratings.status = $10",
        )
        .bind(Uuid::now_v7())
        .bind($assignment.id)
        .bind($assignment.task_id)
        .bind($assignment.batch_id)
        .bind($assignment.rater_id)
        .bind(Json($answers))
        .bind($time)
        .bind($now)
        .bind(::verdict_core::lifecycle::Outcome::Rated.as_str())
        .bind(::verdict_core::lifecycle::Status::Draft.as_str())
        .bind(&evidence)
        .bind(evidence_given)
        .execute($tx)
        .await
    }};
}
use upsert_draft;
