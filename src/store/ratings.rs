//! Ratings: drafts, submissions, skips, out-of-scope marks and revisions, each change
//! kept in the rating's history.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::types::Json;
use uuid::Uuid;

use super::assignments::{ASSIGNMENT_COLUMNS, Assignment, RELEASE_SLOT, TASK_NUMBER};
use super::page::{Cursor, Page};
use super::{StoreResult, read, transaction, write};
use verdict_core::access;
use verdict_core::evidence::Evidence;
use verdict_core::gold::Grade;
use verdict_core::lifecycle::{self, AssignmentState, Outcome, Refusal, SkipReason, Status};
use verdict_core::rubric::TaskAnswers;

/// A rating as stored: answers in the task's canonical orientation.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Rating {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub task_id: Uuid,
    pub batch_id: Uuid,
    pub rater_id: Uuid,
    #[sqlx(try_from = "String")]
    pub outcome: Outcome,
    #[sqlx(try_from = "String")]
    pub status: Status,
    pub answers: Json<TaskAnswers>,
    #[sqlx(try_from = "super::NullableName")]
    pub skip_reason: Option<SkipReason>,
    /// The skip note, or why the task is out of scope.
    pub note: Option<String>,
    pub time_spent_s: i32,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub reviewed_at: Option<DateTime<Utc>>,
    pub review_comment: Option<String>,
    /// The ids of the rubric's warnings the answers met, which the rater confirmed.
    pub confirmed_warnings: Json<Vec<String>>,
    /// Code the rater ran in the browser (canonical orientation).
    pub evidence: Option<Json<Evidence>>,
    /// The last review's comments on single answers, by answer path (canonical).
    pub review_fields: Json<BTreeMap<String, String>>,
    /// How a rating of a gold task did against its expected answers.
    pub gold_grade: Option<Json<Grade>>,
    /// Held for review first: it counts in no metric until a lead accepts it.
    pub review_first: bool,
}

pub(crate) const RATING_COLUMNS: &str = "r.id, r.assignment_id, r.task_id, r.batch_id, r.rater_id, r.outcome, r.status, \
     r.answers, r.skip_reason, r.note, r.time_spent_s, r.version, r.created_at, r.updated_at, \
     r.submitted_at, r.reviewed_at, r.review_comment, r.confirmed_warnings, r.evidence, r.review_fields, \
     r.gold_grade, r.review_first";

/// What a rating keeps beside its answers, sent with a submission or a draft.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// The ids of the warnings the answers meet, confirmed by the rater (a submission's).
    pub confirmed_warnings: Vec<String>,
    /// The code the rater ran, canonical; `None` keeps what is stored, an empty one
    /// clears it.
    pub evidence: Option<Evidence>,
    /// A submission's grade, when its task is gold.
    pub gold_grade: Option<Grade>,
    /// A submission held for review first (its rater's gold accuracy is low).
    pub review_first: bool,
}

impl Extras {
    /// Whether `evidence` is given (else the stored one is kept), and what to store.
    fn evidence(&self) -> (bool, Option<Json<&Evidence>>) {
        match &self.evidence {
            None => (false, None),
            Some(e) if e.is_empty() => (true, None),
            Some(e) => (true, Some(Json(e))),
        }
    }
}

/// What a rater finishes an assignment with.
#[derive(Debug, Clone)]
pub enum Finish {
    Rated {
        answers: TaskAnswers,
    },
    Skipped {
        reason: SkipReason,
        note: Option<String>,
    },
    OutOfScope {
        answers: TaskAnswers,
        explanation: String,
    },
}

impl Finish {
    /// The answers, skip reason and note it stores.
    fn parts(&self) -> (TaskAnswers, Option<&'static str>, Option<String>) {
        match self {
            Finish::Rated { answers } => (answers.clone(), None, None),
            Finish::Skipped { reason, note } => {
                (TaskAnswers::default(), Some(reason.as_str()), note.clone())
            }
            Finish::OutOfScope {
                answers,
                explanation,
            } => (answers.clone(), None, Some(explanation.clone())),
        }
    }

    pub fn outcome(&self) -> Outcome {
        match self {
            Finish::Rated { .. } => Outcome::Rated,
            Finish::Skipped { .. } => Outcome::Skipped,
            Finish::OutOfScope { .. } => Outcome::OutOfScope,
        }
    }
}

/// A rating's row in a rater's history, with the task it belongs to.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HistoryRow {
    #[sqlx(flatten)]
    pub rating: Rating,
    /// The task's external id, until [`HistoryRow::shown_to`] names it as its rater may
    /// see it.
    pub external_id: String,
    pub batch_name: String,
    /// The task's number among its rater's tasks of the batch (see `TASK_NUMBER`).
    task_number: i64,
    raters_see_external_ids: bool,
}

impl HistoryRow {
    /// The row with its task named as `viewer` (its rater) may see it
    /// ([`verdict_core::access::task_name`]).
    pub fn shown_to(mut self, viewer: &crate::store::users::User) -> Self {
        let sees = access::sees_external_ids(viewer.role, self.raters_see_external_ids);
        self.external_id = access::task_name(sees, &self.external_id, self.task_number);
        self
    }
}

pub(crate) fn snapshot(rating: &Rating) -> Value {
    json!({
        "outcome": rating.outcome, "status": rating.status, "answers": rating.answers.0,
        "skip_reason": rating.skip_reason, "note": rating.note, "time_spent_s": rating.time_spent_s,
        "version": rating.version, "confirmed_warnings": rating.confirmed_warnings.0,
        "evidence": rating.evidence.as_ref().map(|e| &e.0),
        "review_fields": rating.review_fields.0,
    })
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
        Ok(read!(self, |pool| sqlx::query_as::<_, Rating>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?)
    }

    pub async fn rating_of_assignment(&self, assignment_id: Uuid) -> StoreResult<Option<Rating>> {
        let sql = rating_of_assignment_sql();
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, Rating>(&sql)
                .bind(assignment_id)
                .fetch_optional(pool)
                .await
        })?)
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
             WHERE r.rater_id = $1
               AND ($2 IS NULL OR r.created_at < $2 OR (r.created_at = $2 AND r.id < $3))
             ORDER BY r.created_at DESC, r.id DESC LIMIT $4"
        );
        let rows = read!(self, |pool| {
            sqlx::query_as::<_, HistoryRow>(&sql)
                .bind(rater_id)
                .bind(cursor.map(|c| c.at))
                .bind(cursor.map(|c| c.id))
                .bind(limit + 1)
                .fetch_all(pool)
                .await
        })?;
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
        time_spent_s: i32,
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
            .bind(time_spent_s)
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
             WHERE r.rater_id = $1 AND r.status = $2
             ORDER BY r.updated_at, r.id LIMIT $3"
        );
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, HistoryRow>(&sql)
                .bind(rater_id)
                .bind(Status::Returned.as_str())
                .bind(limit)
                .fetch_all(pool)
                .await
        })?)
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

    /// Saves a draft of an open assignment and renews its lease. Refused once the
    /// assignment is finished.
    pub async fn save_draft(
        &self,
        assignment_id: Uuid,
        answers: &TaskAnswers,
        extras: &Extras,
        time_spent_s: i32,
        lease_until: DateTime<Utc>,
    ) -> StoreResult<Result<Rating, Refusal>> {
        let now = Utc::now();
        let assignment_sql = self.locked_assignment_sql();
        let rating_sql = rating_of_assignment_sql();
        let outcome = transaction!(self, |tx| {
            let assignment = sqlx::query_as::<_, Assignment>(&assignment_sql)
                .bind(assignment_id)
                .fetch_one(&mut *tx)
                .await?;
            match assignment.state.check_work() {
                Err(Refusal::Expired) => {
                    upsert_draft!(&mut *tx, &assignment, answers, extras, time_spent_s, now)?;
                    Err(Refusal::Expired)
                }
                Err(refusal) => Err(refusal),
                Ok(()) => {
                    upsert_draft!(&mut *tx, &assignment, answers, extras, time_spent_s, now)?;
                    sqlx::query(
                    "UPDATE assignments SET lease_expires_at = $2, updated_at = $3 WHERE id = $1",
                )
                .bind(assignment.id)
                .bind(lease_until)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                    Ok(sqlx::query_as::<_, Rating>(&rating_sql)
                        .bind(assignment.id)
                        .fetch_one(&mut *tx)
                        .await?)
                }
            }
        });
        Ok(outcome)
    }

    /// Finishes an open assignment: stores the rating as submitted and closes the
    /// assignment, in one transaction. A skip gives the task's slot back to the pool.
    /// Finishing an assignment again with the same result returns the stored rating (a
    /// retried or double-clicked submit stores one rating).
    pub async fn finish(
        &self,
        assignment_id: Uuid,
        actor: Uuid,
        finish: &Finish,
        extras: &Extras,
        time_spent_s: i32,
        overlap: i32,
    ) -> StoreResult<Result<Rating, Refusal>> {
        let now = Utc::now();
        let assignment_sql = self.locked_assignment_sql();
        let rating_sql = rating_of_assignment_sql();
        let (answers, skip_reason, note) = finish.parts();
        let (evidence_given, evidence) = extras.evidence();
        let outcome = finish.outcome();
        let result = transaction!(self, |tx| {
            let assignment = sqlx::query_as::<_, Assignment>(&assignment_sql)
                .bind(assignment_id)
                .fetch_one(&mut *tx)
                .await?;
            let before = sqlx::query_as::<_, Rating>(&rating_sql)
                .bind(assignment.id)
                .fetch_optional(&mut *tx)
                .await?;
            match assignment.state.check_work() {
                Err(Refusal::Expired) => {
                    // What the rater wrote is kept where they can read it again.
                    if outcome.has_answers() {
                        upsert_draft!(&mut *tx, &assignment, &answers, extras, time_spent_s, now)?;
                    }
                    Err(Refusal::Expired)
                }
                Err(refusal) => {
                    let same = before.as_ref().is_some_and(|r| {
                        !r.status.is_draft()
                            && r.outcome == outcome
                            && r.answers.0 == answers
                            && r.note == note
                    });
                    match before {
                        Some(rating) if same => Ok(rating),
                        _ => Err(refusal),
                    }
                }
                Ok(()) => {
                    // The stored rating comes back with the write (RETURNING) rather than from
                    // a read after it: one statement less in the writer's turn.
                    let rating = sqlx::query_as::<_, Rating>(&format!(
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
                .bind(skip_reason)
                .bind(&note)
                .bind(time_spent_s)
                .bind(now)
                .bind(Status::Submitted.as_str())
                .bind(Json(&extras.confirmed_warnings))
                .bind(evidence)
                .bind(evidence_given)
                .bind(extras.gold_grade.as_ref().map(Json))
                .bind(extras.review_first)
                .fetch_one(&mut *tx)
                .await?;
                    sqlx::query("UPDATE assignments SET state = $2, updated_at = $3 WHERE id = $1")
                        .bind(assignment.id)
                        .bind(AssignmentState::finished_with(outcome).as_str())
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                    if outcome.frees_the_task() {
                        sqlx::query(RELEASE_SLOT)
                            .bind(assignment.task_id)
                            .bind(overlap)
                            .execute(&mut *tx)
                            .await?;
                    }
                    let before = before.filter(|b| !b.status.is_draft());
                    let action = outcome.finish_action();
                    insert_history!(&mut *tx, &rating, actor, action, before.as_ref(), now)?;
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
        time_spent_s: Option<i32>,
        overlap: i32,
    ) -> StoreResult<Result<Rating, Refusal>> {
        let now = Utc::now();
        let lock = self.lock_clause();
        let sql = format!("SELECT {RATING_COLUMNS} FROM ratings r WHERE r.id = $1{lock}");
        let (answers, skip_reason, note) = finish.parts();
        let (evidence_given, evidence) = extras.evidence();
        let result = transaction!(self, |tx| {
            let before = sqlx::query_as::<_, Rating>(&sql)
                .bind(rating_id)
                .fetch_one(&mut *tx)
                .await?;
            if let Err(refusal) = lifecycle::check_revise_locked(before.status) {
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
                .bind(skip_reason)
                .bind(&note)
                .bind(time_spent_s)
                .bind(now)
                .bind(Status::Submitted.as_str())
                .bind(Json(&extras.confirmed_warnings))
                .bind(evidence)
                .bind(evidence_given)
                .bind(extras.gold_grade.as_ref().map(Json))
                .bind(extras.review_first)
                .execute(&mut *tx)
                .await?;
                if finish.outcome().frees_the_task() && !before.outcome.frees_the_task() {
                    sqlx::query("UPDATE assignments SET state = $3, updated_at = $2 WHERE id = $1")
                        .bind(before.assignment_id)
                        .bind(now)
                        .bind(AssignmentState::finished_with(finish.outcome()).as_str())
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query(RELEASE_SLOT)
                        .bind(before.task_id)
                        .bind(overlap)
                        .execute(&mut *tx)
                        .await?;
                }
                let after = sqlx::query_as::<_, Rating>(&sql.replace(lock, ""))
                    .bind(rating_id)
                    .fetch_one(&mut *tx)
                    .await?;
                insert_history!(&mut *tx, &after, actor, "revise", Some(&before), now)?;
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
        .bind($before.map(|b: &Rating| Json($crate::store::ratings::snapshot(b))))
        .bind(Json($crate::store::ratings::snapshot($after)))
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
        let (evidence_given, evidence) = $extras.evidence();
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
