//! What skills routing reads: each batch's skips before and after its routing changed,
//! its open tasks by route key, its allowed raters' skills, and raters' unfamiliar skips
//! by key (see [`verdict_core::routing`]). Gold tasks are left out of each.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::users::skills_of;
use super::{StoreResult, read};
use verdict_core::routing::{SkipFigures, Suggestion};

/// People's finished ratings of a batch's tasks, gold aside (the ratings `r`).
const FINISHED: &str = "r.batch_id = $1 AND r.rater_kind = 'human'
       AND r.status IN ('submitted', 'returned', 'accepted') AND r.submitted_at IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = r.task_id)";

impl super::Store {
    /// The batch's people's finished ratings and their skips, submitted before `since`
    /// and from it on.
    pub async fn skips_around(
        &self,
        batch_id: Uuid,
        since: DateTime<Utc>,
    ) -> StoreResult<(SkipFigures, SkipFigures)> {
        let sql = format!(
            "SELECT r.submitted_at >= $2, r.outcome = 'skipped', r.skip_reason, COUNT(*)
             FROM ratings r WHERE {FINISHED}
             GROUP BY r.submitted_at >= $2, r.outcome = 'skipped', r.skip_reason"
        );
        let rows: Vec<(bool, bool, Option<String>, i64)> = read!(self, |pool| {
            sqlx::query_as(&sql)
                .bind(batch_id)
                .bind(since)
                .fetch_all(pool)
                .await
        })?;
        let of = |after: bool| {
            SkipFigures::of(
                rows.iter()
                    .filter(|row| row.0 == after)
                    .map(|(_, skipped, reason, n)| (*skipped, reason.as_deref(), *n)),
            )
        };
        Ok((of(false), of(true)))
    }

    /// The batch's tasks with room left, per route key (tasks without one aside).
    pub async fn open_tasks_by_key(&self, batch_id: Uuid) -> StoreResult<Vec<(String, i64)>> {
        Ok(read!(self, |pool| {
            sqlx::query_as(
                "SELECT route_key, COUNT(*) FROM tasks
                 WHERE batch_id = $1 AND is_full = FALSE AND route_key IS NOT NULL
                 GROUP BY route_key ORDER BY route_key",
            )
            .bind(batch_id)
            .fetch_all(pool)
            .await
        })?)
    }

    /// Raters who skipped many of the batch's tasks of one key as `reason`, with whether
    /// the key is one of their skills (see [`Suggestion::of`]).
    pub async fn routing_suggestions(
        &self,
        batch_id: Uuid,
        reason: &str,
    ) -> StoreResult<Vec<Suggestion>> {
        let sql = format!(
            "SELECT u.username, u.skills, t.route_key, COUNT(*),
                    SUM(CASE WHEN r.outcome = 'skipped' AND r.skip_reason = $2 THEN 1 ELSE 0 END)
             FROM ratings r JOIN tasks t ON t.id = r.task_id JOIN users u ON u.id = r.rater_id
             WHERE {FINISHED} AND t.route_key IS NOT NULL
             GROUP BY u.username, u.skills, t.route_key"
        );
        let rows: Vec<(String, String, String, i64, i64)> = read!(self, |pool| {
            sqlx::query_as(&sql)
                .bind(batch_id)
                .bind(reason)
                .fetch_all(pool)
                .await
        })?;
        let mut skills = BTreeMap::new();
        let rows: Vec<(String, String, i64, i64)> = rows
            .into_iter()
            .map(|(name, held, key, finished, skipped)| {
                skills
                    .entry(name.clone())
                    .or_insert_with(|| skills_of(&held));
                (name, key, finished, skipped)
            })
            .collect();
        Ok(Suggestion::of(rows, &skills))
    }
}
