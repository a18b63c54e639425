//! Adjudication: the final answer a lead records for a task (see
//! `services::adjudication`), one per task, in the task's own A/B order.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use super::{StoreResult, read, write};
use verdict_core::rubric::TaskAnswers;

/// A task's final answer as recorded.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FinalAnswer {
    pub task_id: Uuid,
    pub external_id: String,
    /// The task's own orientation.
    pub answers: Json<TaskAnswers>,
    /// The rating it started from, if any.
    pub from_rating: Option<Uuid>,
    pub note: Option<String>,
    /// Who recorded it (none: an account since removed).
    pub decided_by: Option<String>,
    pub decided_at: DateTime<Utc>,
}

/// A final answer to record.
#[derive(Debug, Clone, Copy)]
pub struct NewFinal<'a> {
    pub task: Uuid,
    pub batch: Uuid,
    pub answers: &'a TaskAnswers,
    pub from_rating: Option<Uuid>,
    pub note: Option<&'a str>,
    pub by: Uuid,
    pub at: DateTime<Utc>,
}

const COLUMNS: &str = "f.task_id, t.external_id, f.answers, f.from_rating, f.note,
     u.username AS decided_by, f.decided_at
     FROM final_answers f JOIN tasks t ON t.id = f.task_id
     LEFT JOIN users u ON u.id = f.decided_by";

impl super::Store {
    /// Task `task`'s final answer, if a lead recorded one.
    pub async fn final_answer(&self, task: Uuid) -> StoreResult<Option<FinalAnswer>> {
        let sql = format!("SELECT {COLUMNS} WHERE f.task_id = $1");
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, FinalAnswer>(&sql)
                .bind(task)
                .fetch_optional(pool)
                .await
        })?)
    }

    /// Batch `batch`'s final answers, by external id.
    pub async fn final_answers(&self, batch: Uuid) -> StoreResult<Vec<FinalAnswer>> {
        let sql = format!("SELECT {COLUMNS} WHERE f.batch_id = $1 ORDER BY t.external_id");
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, FinalAnswer>(&sql)
                .bind(batch)
                .fetch_all(pool)
                .await
        })?)
    }

    /// Records (or replaces) a task's final answer.
    pub async fn set_final_answer(&self, new: NewFinal<'_>) -> StoreResult<()> {
        write!(self, |pool| {
            sqlx::query(
                "INSERT INTO final_answers (task_id, batch_id, answers, from_rating, note,
                                            decided_by, decided_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (task_id) DO UPDATE SET answers = $3, from_rating = $4, note = $5,
                     decided_by = $6, decided_at = $7",
            )
            .bind(new.task)
            .bind(new.batch)
            .bind(Json(new.answers))
            .bind(new.from_rating)
            .bind(new.note)
            .bind(new.by)
            .bind(new.at)
            .execute(pool)
            .await
            .map(|_| ())
        })?;
        Ok(())
    }

    /// Removes a task's final answer; whether it had one.
    pub async fn remove_final_answer(&self, task: Uuid) -> StoreResult<bool> {
        let removed = write!(self, |pool| {
            sqlx::query("DELETE FROM final_answers WHERE task_id = $1")
                .bind(task)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(removed > 0)
    }

    /// The external ids of batch `batch`'s tasks the final dataset holds, in upload
    /// order: gold and withdrawn tasks left out.
    pub async fn final_tasks(&self, batch: Uuid) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT t.external_id FROM tasks t WHERE t.batch_id = $1 AND t.withdrawn_at IS NULL
                   AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id)
                 ORDER BY t.seq",
            )
            .bind(batch)
            .fetch_all(pool)
            .await
        })?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Whether rating `rating` is one of task `task`'s (a person's, finished).
    pub async fn is_rating_of_task(&self, rating: Uuid, task: Uuid) -> StoreResult<bool> {
        let row: Option<(Uuid,)> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT id FROM ratings WHERE id = $1 AND task_id = $2 AND status <> 'draft'
                   AND rater_kind = 'human'",
            )
            .bind(rating)
            .bind(task)
            .fetch_optional(pool)
            .await
        })?;
        Ok(row.is_some())
    }
}
