//! Gold tasks: their expected answers, the batch's gold settings, and the grades of
//! their ratings.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use super::assignments::TASK_NUMBER;
use super::{StoreResult, read, write};
use verdict_core::gold::{Expected, Grade};
use verdict_core::qualification::Qualification;
use verdict_core::rubric::Answers;

/// A graded rating of a gold task, as the batch's figures read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Graded {
    pub rater: String,
    pub grade: Json<Grade>,
    pub submitted_at: Option<DateTime<Utc>>,
}

/// Ratings of gold tasks are graded once submitted; drafts are not.
const GRADED: &str = "r.gold_grade IS NOT NULL AND r.status <> 'draft' AND r.rater_kind = 'human'";

impl super::Store {
    /// The expected answers of a gold task; `None` for any other task.
    pub async fn gold_expected(&self, task_id: Uuid) -> StoreResult<Option<Expected>> {
        let row: Option<(Json<Expected>,)> = read!(self, |pool| {
            sqlx::query_as("SELECT expected FROM gold_tasks WHERE task_id = $1")
                .bind(task_id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(|(expected,)| expected.0))
    }

    /// The expected answers of each of a batch's gold tasks, by task.
    pub async fn gold_expectations(&self, batch_id: Uuid) -> StoreResult<Vec<(Uuid, Expected)>> {
        let rows: Vec<(Uuid, Json<Expected>)> = read!(self, |pool| {
            sqlx::query_as("SELECT task_id, expected FROM gold_tasks WHERE batch_id = $1")
                .bind(batch_id)
                .fetch_all(pool)
                .await
        })?;
        Ok(rows
            .into_iter()
            .map(|(task, expected)| (task, expected.0))
            .collect())
    }

    /// How many gold tasks a batch holds.
    pub async fn gold_count(&self, batch_id: Uuid) -> StoreResult<i64> {
        let (count,): (i64,) = read!(self, |pool| {
            sqlx::query_as("SELECT COUNT(*) FROM gold_tasks WHERE batch_id = $1")
                .bind(batch_id)
                .fetch_one(pool)
                .await
        })?;
        Ok(count)
    }

    /// The grades of a rater's latest `limit` graded gold ratings in a batch, newest
    /// first.
    pub async fn recent_gold(
        &self,
        batch_id: Uuid,
        rater_id: Uuid,
        limit: i64,
    ) -> StoreResult<Vec<Grade>> {
        let sql = format!(
            "SELECT r.gold_grade FROM ratings r
             WHERE r.batch_id = $1 AND r.rater_id = $2 AND {GRADED}
             ORDER BY r.submitted_at DESC, r.id DESC LIMIT $3"
        );
        let rows: Vec<(Json<Grade>,)> = read!(self, |pool| {
            sqlx::query_as(&sql)
                .bind(batch_id)
                .bind(rater_id)
                .bind(limit)
                .fetch_all(pool)
                .await
        })?;
        Ok(rows.into_iter().map(|(grade,)| grade.0).collect())
    }

    /// Every graded gold rating of a batch, by rater and then oldest first.
    pub async fn gold_grades(&self, batch_id: Uuid) -> StoreResult<Vec<Graded>> {
        let sql = format!(
            "SELECT u.username AS rater, r.gold_grade AS grade, r.submitted_at
             FROM ratings r JOIN users u ON u.id = r.rater_id
             WHERE r.batch_id = $1 AND {GRADED}
             ORDER BY u.username, r.submitted_at, r.id"
        );
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, Graded>(&sql)
                .bind(batch_id)
                .fetch_all(pool)
                .await
        })?)
    }

    /// How many of a batch's submitted ratings wait for review first.
    pub async fn held_count(&self, batch_id: Uuid) -> StoreResult<i64> {
        let (count,): (i64,) = read!(self, |pool| {
            sqlx::query_as(
                "SELECT COUNT(*) FROM ratings r
                 WHERE r.batch_id = $1 AND r.review_first = TRUE AND r.status = 'submitted'",
            )
            .bind(batch_id)
            .fetch_one(pool)
            .await
        })?;
        Ok(count)
    }

    /// Sets a batch's gold rate, review-first threshold and qualification.
    pub async fn set_gold_settings(
        &self,
        batch_id: Uuid,
        gold_rate: f64,
        review_first_below: Option<f64>,
        qualification: Option<Qualification>,
    ) -> StoreResult<()> {
        let q = qualification.as_ref();
        write!(self, |pool| {
            sqlx::query(
                "UPDATE batches SET gold_rate = $2, review_first_below = $3, updated_at = $4,
                    qualify_tasks = $5, qualify_pass = COALESCE($6, qualify_pass),
                    qualify_tries = COALESCE($7, qualify_tries),
                    qualify_reveal = COALESCE($8, qualify_reveal)
                 WHERE id = $1",
            )
            .bind(batch_id)
            .bind(gold_rate)
            .bind(review_first_below)
            .bind(Utc::now())
            .bind(q.map(|q| q.tasks))
            .bind(q.map(|q| q.pass_mark))
            .bind(q.map(|q| q.tries))
            .bind(q.map(|q| q.reveal))
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        Ok(())
    }

    /// A rater's graded gold ratings of a batch, oldest first, with what a qualification
    /// shows of each once its try is over.
    pub async fn gold_results(
        &self,
        batch_id: Uuid,
        rater_id: Uuid,
    ) -> StoreResult<Vec<GoldResult>> {
        let sql = format!(
            "SELECT t.external_id, {TASK_NUMBER} AS task_number, r.answers,
                    r.gold_grade AS grade, g.expected, g.explanation,
                    (SELECT h.after FROM rating_history h WHERE h.rating_id = r.id
                     ORDER BY h.at, h.id LIMIT 1) AS first_sent
             FROM ratings r JOIN tasks t ON t.id = r.task_id JOIN gold_tasks g ON g.task_id = r.task_id
                  JOIN assignments a ON a.id = r.assignment_id
             WHERE r.batch_id = $1 AND r.rater_id = $2 AND {GRADED}
             ORDER BY r.submitted_at, r.id"
        );
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, GoldResult>(&sql)
                .bind(batch_id)
                .bind(rater_id)
                .fetch_all(pool)
                .await
        })?)
    }
}

/// A graded rating of a gold task, with the task's expected answers and their
/// explanation.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GoldResult {
    pub external_id: String,
    /// The task's number among its rater's tasks of the batch (see [`TASK_NUMBER`]): how a
    /// rater who is not shown external ids knows it.
    pub task_number: i64,
    /// As they stand now, in the task's own orientation.
    pub answers: Json<Answers>,
    /// Given when the rating was first sent: a gold rating keeps that grade, whatever
    /// revisions came after.
    pub grade: Json<Grade>,
    pub expected: Json<Expected>,
    pub explanation: Option<String>,
    /// The rating as it was first sent (its first history entry).
    first_sent: Option<Json<serde_json::Value>>,
}

impl GoldResult {
    /// The answers that were graded: those of the rating as first sent (the answers now,
    /// for a rating with no history).
    pub fn graded_answers(&self) -> Answers {
        self.first_sent
            .as_ref()
            .and_then(|Json(first)| first.get("answers"))
            .and_then(|answers| serde_json::from_value(answers.clone()).ok())
            .unwrap_or_else(|| self.answers.0.clone())
    }
}
