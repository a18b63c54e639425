//! Batches and their tasks: creation by import, settings, who may work on them, and
//! what each person may see of them.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::types::Json;
use uuid::Uuid;

use super::{StoreError, StoreResult, read, transaction, write};
use verdict_core::batch::{Batch, NewBatch};
use verdict_core::import::NewTask;
use verdict_core::lifecycle::{BatchState, Outcome};
use verdict_core::qualification::Qualification;
use verdict_core::role::Role;
use verdict_core::routing::{RouteBy, Routing, route_key};
use verdict_core::rubric::Classification;

/// The SQL condition (on a batch `b`, with the user's id as `$1`) for the batches a
/// person of `role` may see as that role: as a rater the open ones opened to them (or to
/// everyone), as a lead the ones they lead (or that every lead leads), as an admin all;
/// never a deleted one (see [`crate::corrections`]).
/// The app's access checks (which re-export it) and every query that lists or opens
/// batches use it; it lives in the store so the store needs nothing above it.
pub fn batch_filter(role: Role) -> &'static str {
    match role {
        Role::Rater => {
            "(b.deleted_at IS NULL AND b.state = 'open' AND (NOT b.raters_restricted OR EXISTS (
                 SELECT 1 FROM batch_members m
                 WHERE m.batch_id = b.id AND m.user_id = $1 AND m.role = 'rater')))"
        }
        Role::Lead => {
            "(b.deleted_at IS NULL AND (NOT b.leads_restricted OR EXISTS (
                 SELECT 1 FROM batch_members m
                 WHERE m.batch_id = b.id AND m.user_id = $1 AND m.role = 'lead')))"
        }
        // Still names $1, so every role binds the same arguments.
        Role::Admin => "(b.deleted_at IS NULL AND (b.id IS NOT NULL OR $1 IS NULL))",
    }
}

/// A batch as its row holds it (see [`Batch`]).
#[derive(sqlx::FromRow)]
pub(crate) struct BatchRow {
    id: Uuid,
    name: String,
    rubric: String,
    rubric_version: i32,
    overlap: i32,
    max_overlap: Option<i32>,
    escalate: Option<String>,
    randomize: bool,
    #[sqlx(try_from = "String")]
    state: BatchState,
    lease_minutes: i32,
    min_explanation_len: i32,
    classifications: Json<Vec<Classification>>,
    raters_restricted: bool,
    leads_restricted: bool,
    created_at: DateTime<Utc>,
    gold_rate: f64,
    review_first_below: Option<f64>,
    has_gold: bool,
    raters_see_external_ids: bool,
    bradley_terry_prior: f64,
    final_method: String,
    route_by: Option<String>,
    #[sqlx(try_from = "String")]
    routing: Routing,
    routed_since: Option<DateTime<Utc>>,
    qualify_tasks: Option<i32>,
    qualify_pass: f64,
    qualify_tries: i32,
    qualify_reveal: bool,
}

impl From<BatchRow> for Batch {
    fn from(row: BatchRow) -> Self {
        Batch {
            id: row.id,
            name: row.name,
            rubric: row.rubric,
            rubric_version: row.rubric_version,
            overlap: row.overlap,
            max_overlap: row.max_overlap,
            escalate: row.escalate,
            randomize: row.randomize,
            state: row.state,
            lease_minutes: row.lease_minutes,
            min_explanation_len: row.min_explanation_len,
            classifications: row.classifications.0,
            raters_restricted: row.raters_restricted,
            leads_restricted: row.leads_restricted,
            created_at: row.created_at,
            gold_rate: row.gold_rate,
            review_first_below: row.review_first_below,
            has_gold: row.has_gold,
            raters_see_external_ids: row.raters_see_external_ids,
            bradley_terry_prior: row.bradley_terry_prior,
            // Written only from checked settings (the column's check holds it too).
            final_method: verdict_core::batch::FinalMethod::parse(&row.final_method)
                .unwrap_or_default(),
            // Written only from a checked route.
            route_by: row.route_by.and_then(|r| RouteBy::parse(&r).ok()),
            routing: row.routing,
            routed_since: row.routed_since,
            // Written only from checked settings (the columns' checks hold them too).
            qualification: row.qualify_tasks.map(|tasks| Qualification {
                tasks,
                pass_mark: row.qualify_pass,
                tries: row.qualify_tries,
                reveal: row.qualify_reveal,
            }),
        }
    }
}

const BATCH_COLUMNS: &str = "b.id, b.name, b.rubric, b.rubric_version, b.overlap, b.max_overlap, b.escalate, b.randomize, b.state, b.lease_minutes, \
     b.min_explanation_len, b.classifications, b.raters_restricted, b.leads_restricted, b.created_at, \
     b.gold_rate, b.review_first_below, b.raters_see_external_ids, b.bradley_terry_prior, b.final_method, \
     b.route_by, b.routing, b.routed_since, \
     b.qualify_tasks, b.qualify_pass, b.qualify_tries, b.qualify_reveal, \
     EXISTS (SELECT 1 FROM gold_tasks g WHERE g.batch_id = b.id) AS has_gold";

/// How far a batch has come. Skips and drafts are counted apart from completed work.
#[derive(Debug, Clone, Default, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Progress {
    pub tasks: i64,
    /// Tasks with as many completed ratings as the overlap asks for.
    pub tasks_done: i64,
    /// Ratings submitted with outcome `rated` (any review status but draft).
    pub rated: i64,
    pub out_of_scope: i64,
    pub skipped: i64,
    /// Assignments being worked on now.
    pub in_progress: i64,
}

impl Progress {
    /// Tasks done against all of them, as every page says it: `12 of 40 done (30%)`.
    pub fn done(&self) -> String {
        let percent = if self.tasks > 0 {
            self.tasks_done * 100 / self.tasks
        } else {
            0
        };
        format!("{} of {} done ({percent}%)", self.tasks_done, self.tasks)
    }
}

/// A batch as listed, with its progress and, for a rater, their own share.
#[derive(Debug, Clone)]
pub struct BatchSummary {
    pub batch: Batch,
    pub progress: Progress,
    /// Tasks the asking rater completed or skipped.
    pub mine: i64,
}

#[derive(sqlx::FromRow)]
struct BatchSummaryRow {
    #[sqlx(flatten)]
    batch: BatchRow,
    #[sqlx(flatten)]
    progress: Progress,
    mine: i64,
}

impl From<BatchSummaryRow> for BatchSummary {
    fn from(row: BatchSummaryRow) -> Self {
        BatchSummary {
            batch: row.batch.into(),
            progress: row.progress,
            mine: row.mine,
        }
    }
}

/// Who an upload is recorded as in the audit log: its entry is written in the
/// transaction that adds the tasks, so the two are there together or not at all.
#[derive(Debug, Clone)]
pub struct UploadEntry {
    /// The account that uploaded, if an account did.
    pub actor_id: Option<Uuid>,
    /// Who else did (`cli`).
    pub actor_name: Option<&'static str>,
    /// The size of the upload, in bytes.
    pub bytes: usize,
}

/// What an import stored.
#[derive(Debug, Clone)]
pub struct Imported {
    pub batch: Batch,
    pub batch_created: bool,
    pub created: u64,
    pub unchanged: u64,
}

/// Settings to change; `None` leaves one as it is. For `raters`/`leads`, `Some(None)`
/// opens the batch to everyone of that role and `Some(Some(ids))` to those users only.
#[derive(Debug, Clone, Default)]
pub struct BatchChanges {
    pub state: Option<BatchState>,
    pub overlap: Option<i32>,
    pub max_overlap: Option<i32>,
    /// `Some(None)`: the rubric's default rule.
    pub escalate: Option<Option<String>>,
    pub randomize: Option<bool>,
    pub raters_see_external_ids: Option<bool>,
    pub lease_minutes: Option<i32>,
    pub min_explanation_len: Option<i32>,
    pub bradley_terry_prior: Option<f64>,
    pub final_method: Option<verdict_core::batch::FinalMethod>,
    pub classifications: Option<Vec<Classification>>,
    /// `Some(None)`: no routing.
    pub route_by: Option<Option<RouteBy>>,
    pub routing: Option<Routing>,
    pub raters: Option<Option<Vec<Uuid>>>,
    pub leads: Option<Option<Vec<Uuid>>>,
}

/// Sets the route key of every task of batch `$batch` by `$route` (an
/// `Option<&RouteBy>`; `None` clears them), in the transaction `$tx`. The keys are worked
/// out here, by [`route_key`], not in SQL, so that both backends trim and lower-case them
/// alike (SQLite's `LOWER` knows only ASCII); each distinct key is then one `UPDATE` per
/// [`INSERT_CHUNK`] tasks. A macro for the reason `insert_history!` is one.
macro_rules! route_tasks {
    ($tx:expr, $batch:expr, $route:expr) => {
        async {
            let route: Option<&RouteBy> = $route;
            sqlx::query(
                "UPDATE tasks SET route_key = NULL WHERE batch_id = $1 AND route_key IS NOT NULL",
            )
            .bind($batch)
            .execute(&mut *$tx)
            .await?;
            let Some(route) = route else {
                return Ok::<(), sqlx::Error>(());
            };
            let tasks: Vec<(Uuid, Json<serde_json::Map<String, serde_json::Value>>)> =
                sqlx::query_as("SELECT id, metadata FROM tasks WHERE batch_id = $1")
                    .bind($batch)
                    .fetch_all(&mut *$tx)
                    .await?;
            let mut by_key: std::collections::BTreeMap<String, Vec<Uuid>> = Default::default();
            for (id, Json(metadata)) in tasks {
                if let Some(key) = route_key(metadata.get(route.key())) {
                    by_key.entry(key).or_default().push(id);
                }
            }
            for (key, ids) in by_key {
                for chunk in ids.chunks(INSERT_CHUNK) {
                    let mut update = sqlx::QueryBuilder::new("UPDATE tasks SET route_key = ");
                    update.push_bind(&key).push(" WHERE id IN (");
                    let mut list = update.separated(", ");
                    for id in chunk {
                        list.push_bind(*id);
                    }
                    update.push(")");
                    update.build().execute(&mut *$tx).await?;
                }
            }
            Ok(())
        }
        .await
    };
}

/// Rows a multi-row INSERT carries: 14 columns each, well under both backends' limits.
const INSERT_CHUNK: usize = 500;

/// The progress columns of a batch `b` as a person of `role` sees them. Each count is
/// written so that it reads an index only (`tasks_pool`, `ratings_batch`,
/// `gold_tasks_batch`): listing batches must stay quick however many ratings they hold.
/// A task is done when it is full and nobody holds it open.
///
/// For leads and admins, gold tasks and their ratings are not the batch's work and are
/// taken out (reading only the gold tasks' own ratings). A rater is never to tell a
/// gold task from another, so for them each count treats gold as ordinary work: every
/// task and rating counts, and a gold task is done once it has as many finished
/// ratings as the overlap asks for and nobody holds it open, as another task is.
fn progress_sql(rater: &str, role: Role) -> String {
    if role == Role::Rater {
        return rater_progress_sql(rater);
    }
    // The same count as the batch's own, over gold tasks only.
    let gold_ratings = |statuses: &str, outcome: Outcome, human: &str| {
        format!(
            "(SELECT COUNT(*) FROM gold_tasks g JOIN ratings r ON r.task_id = g.task_id
                WHERE g.batch_id = b.id AND r.status IN ({statuses}) AND r.outcome = '{outcome}'{human})"
        )
    };
    let drafts_too = format!("'draft', {FINISHED}");
    format!(
        "(SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id AND t.withdrawn_at IS NULL)
           - (SELECT COUNT(*) FROM gold_tasks g WHERE g.batch_id = b.id) AS tasks,
         (SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id AND t.is_full = TRUE
              AND t.withdrawn_at IS NULL)
           - (SELECT COUNT(*) FROM gold_tasks g WHERE g.batch_id = b.id)
           - (SELECT COUNT(DISTINCT a.task_id) FROM assignments a JOIN tasks t ON t.id = a.task_id
              WHERE a.batch_id = b.id AND a.state = 'open' AND t.is_full = TRUE
                AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = a.task_id)) AS tasks_done,
         (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id
              AND r.status IN ({FINISHED}) AND r.outcome = 'rated' AND r.rater_kind = 'human')
           - {rated_gold} AS rated,
         (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id
              AND r.status IN ('draft', {FINISHED}) AND r.outcome = 'out_of_scope')
           - {scope_gold} AS out_of_scope,
         (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id
              AND r.status IN ('draft', {FINISHED}) AND r.outcome = 'skipped')
           - {skipped_gold} AS skipped,
         (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = b.id AND a.state = 'open') AS in_progress,
         (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = b.id AND a.rater_id = {rater}
              AND a.state IN ('done', 'skipped')) AS mine",
        rated_gold = gold_ratings(FINISHED, Outcome::Rated, " AND r.rater_kind = 'human'"),
        scope_gold = gold_ratings(&drafts_too, Outcome::OutOfScope, ""),
        skipped_gold = gold_ratings(&drafts_too, Outcome::Skipped, ""),
    )
}

/// [`progress_sql`] for a rater: gold tasks counted as the tasks they pass for.
fn rater_progress_sql(rater: &str) -> String {
    format!(
        "(SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id AND t.withdrawn_at IS NULL) AS tasks,
         (SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id AND t.is_full = TRUE
              AND t.withdrawn_at IS NULL)
           - (SELECT COUNT(*) FROM gold_tasks g WHERE g.batch_id = b.id)
           - (SELECT COUNT(DISTINCT a.task_id) FROM assignments a JOIN tasks t ON t.id = a.task_id
              WHERE a.batch_id = b.id AND a.state = 'open' AND t.is_full = TRUE
                AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = a.task_id))
           + (SELECT COUNT(*) FROM gold_tasks g WHERE g.batch_id = b.id
                AND (SELECT COUNT(*) FROM ratings r WHERE r.task_id = g.task_id
                       AND r.status IN ('submitted', 'returned', 'accepted')
                       AND r.outcome <> 'skipped' AND r.rater_kind = 'human') >= b.overlap
                AND NOT EXISTS (SELECT 1 FROM assignments a
                                WHERE a.task_id = g.task_id AND a.state = 'open')) AS tasks_done,
         (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id
              AND r.status IN ({FINISHED}) AND r.outcome = 'rated' AND r.rater_kind = 'human') AS rated,
         (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id
              AND r.status IN ('draft', {FINISHED}) AND r.outcome = 'out_of_scope') AS out_of_scope,
         (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id
              AND r.status IN ('draft', {FINISHED}) AND r.outcome = 'skipped') AS skipped,
         (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = b.id AND a.state = 'open') AS in_progress,
         (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = b.id AND a.rater_id = {rater}
              AND a.state IN ('done', 'skipped')) AS mine"
    )
}

/// Every rating status but `draft`, spelled out so that counts can seek the
/// `ratings_batch` index (batch, status, outcome) status by status.
const FINISHED: &str = "'submitted', 'returned', 'accepted', 'rejected'";

impl super::Store {
    pub async fn batch(&self, id: Uuid) -> StoreResult<Option<Batch>> {
        let sql = format!(
            "SELECT {BATCH_COLUMNS} FROM batches b WHERE b.id = $1 AND b.deleted_at IS NULL"
        );
        let row = read!(self, |pool| sqlx::query_as::<_, BatchRow>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Batch::from))
    }

    pub async fn batch_by_name(&self, name: &str) -> StoreResult<Option<Batch>> {
        let sql = format!(
            "SELECT {BATCH_COLUMNS} FROM batches b WHERE b.name = $1 AND b.deleted_at IS NULL"
        );
        let row = read!(self, |pool| sqlx::query_as::<_, BatchRow>(&sql)
            .bind(name)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Batch::from))
    }

    /// Batches this person may see, with progress: as a rater the open ones opened to
    /// them, as a lead the ones they lead, as an admin all of them.
    pub async fn visible_batches(
        &self,
        user_id: Uuid,
        role: Role,
    ) -> StoreResult<Vec<BatchSummary>> {
        let sql = format!(
            "SELECT {BATCH_COLUMNS}, {} FROM batches b WHERE {} ORDER BY b.created_at DESC",
            progress_sql("$1", role),
            batch_filter(role)
        );
        let rows = read!(self, |pool| sqlx::query_as::<_, BatchSummaryRow>(&sql)
            .bind(user_id)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(BatchSummary::from).collect())
    }

    /// One batch with its progress, if this person may see it.
    pub async fn visible_batch(
        &self,
        id: Uuid,
        user_id: Uuid,
        role: Role,
    ) -> StoreResult<Option<BatchSummary>> {
        let sql = format!(
            "SELECT {BATCH_COLUMNS}, {} FROM batches b WHERE b.id = $2 AND {}",
            progress_sql("$1", role),
            batch_filter(role)
        );
        let row = read!(self, |pool| {
            sqlx::query_as::<_, BatchSummaryRow>(&sql)
                .bind(user_id)
                .bind(id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(BatchSummary::from))
    }

    /// Whether the batch is one a person of `role` may see as that role (see
    /// [`batch_filter`]).
    pub async fn batch_matches(
        &self,
        batch_id: Uuid,
        user_id: Uuid,
        role: Role,
    ) -> StoreResult<bool> {
        let sql = format!(
            "SELECT b.id FROM batches b WHERE b.id = $2 AND {}",
            batch_filter(role)
        );
        let row: Option<(Uuid,)> = read!(self, |pool| {
            sqlx::query_as(&sql)
                .bind(user_id)
                .bind(batch_id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.is_some())
    }

    /// How many tasks a batch has, gold tasks aside (as its progress counts them).
    /// Tasks are numbered 1, 2, ... in each batch as they are added and never removed,
    /// so the highest number is their count: one step down an index, where counting
    /// would walk every task.
    pub async fn task_count(&self, batch_id: Uuid) -> StoreResult<i64> {
        let (count,): (i64,) = read!(self, |pool| {
            sqlx::query_as(
                "SELECT (SELECT COALESCE(MAX(seq), 0) FROM tasks WHERE batch_id = $1)
                      - (SELECT COUNT(*) FROM gold_tasks WHERE batch_id = $1)",
            )
            .bind(batch_id)
            .fetch_one(pool)
            .await
        })?;
        Ok(count)
    }

    /// Content hashes of a batch's tasks by external id (for checking a re-upload).
    pub async fn task_hashes(&self, batch_id: Uuid) -> StoreResult<HashMap<String, String>> {
        let rows: Vec<(String, String)> = read!(self, |pool| {
            sqlx::query_as("SELECT external_id, content_hash FROM tasks WHERE batch_id = $1")
                .bind(batch_id)
                .fetch_all(pool)
                .await
        })?;
        Ok(rows.into_iter().collect())
    }

    /// Stores the tasks of an upload in one transaction: the batch named in `new` is
    /// created if it does not exist, tasks whose id it already holds are left alone, the
    /// rest are appended in file order. Either all of it is stored or none.
    ///
    /// The tasks arrive on `tasks` while the caller is still checking the file, and are
    /// stored as they come; once `tasks` ends, `passed` says whether every record passed
    /// its check. If not, nothing is kept and the answer is [`StoreError::Withdrawn`].
    ///
    /// The caller checked the file against the batch as it was (`seen`: the batch's id,
    /// or `None` when there was none). Concurrent uploads to one batch take turns on the
    /// batch's row; if another one created the batch or added one of these ids with other
    /// content since the check, nothing is stored and [`StoreError::Retry`] says to check
    /// again, so that concurrent uploads get the answers they would have got one after
    /// another.
    pub async fn import_tasks(
        &self,
        new: &NewBatch,
        seen: Option<Uuid>,
        mut tasks: tokio::sync::mpsc::Receiver<Vec<NewTask>>,
        passed: impl std::future::Future<Output = bool>,
        entry: Option<&UploadEntry>,
    ) -> StoreResult<Imported> {
        let now = Utc::now();
        let mut created = 0u64;
        let mut unchanged = 0u64;
        // FOR NO KEY UPDATE: imports queue behind each other, while raters' inserts of
        // assignments (which only share-lock the batch's key) go on beside them.
        let batch_sql = format!(
            "SELECT {BATCH_COLUMNS} FROM batches b WHERE b.name = $1{}",
            match self.backend() {
                super::Backend::Postgres => " FOR NO KEY UPDATE",
                super::Backend::Sqlite => "",
            }
        );
        let imported = transaction!(self, |tx| {
            // Waits for a concurrent upload creating the same batch, then does nothing.
            let batch_created = sqlx::query(
                "INSERT INTO batches (id, name, rubric, rubric_version, overlap, randomize, created_by,
                                      created_at, updated_at, raters_see_external_ids, max_overlap,
                                      escalate, route_by, routing, routed_since)
                 VALUES ($1, $2, $3, $8, $4, $5, $6, $7, $7, $9, $10, $11, $12, $13,
                         CASE WHEN $12 IS NULL THEN NULL ELSE $7 END)
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(Uuid::now_v7())
            .bind(&new.name)
            .bind(&new.rubric)
            .bind(new.overlap.unwrap_or(1))
            .bind(new.randomize.unwrap_or(true))
            .bind(new.created_by)
            .bind(now)
            .bind(new.rubric_version)
            .bind(new.raters_see_external_ids.unwrap_or(false))
            .bind(new.max_overlap)
            .bind(&new.escalate)
            .bind(new.route_by.as_ref().map(RouteBy::to_string))
            .bind(new.routing.unwrap_or_default().as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            let batch: Batch = sqlx::query_as::<_, BatchRow>(&batch_sql)
                .bind(&new.name)
                .fetch_one(&mut *tx)
                .await?
                .into();
            let known: HashMap<String, String> = sqlx::query_as::<_, (String, String)>(
                "SELECT external_id, content_hash FROM tasks WHERE batch_id = $1",
            )
            .bind(batch.id)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect();
            let (mut seq,): (i64,) =
                sqlx::query_as("SELECT COALESCE(MAX(seq), 0) FROM tasks WHERE batch_id = $1")
                    .bind(batch.id)
                    .fetch_one(&mut *tx)
                    .await?;
            // Another upload created the batch since the caller looked: fine if the
            // settings agree (the tasks are compared one by one below).
            let mut raced = !batch_created && seen != Some(batch.id) && !new.fits(&batch);
            let mut chunk: Vec<NewTask> = Vec::with_capacity(INSERT_CHUNK);
            let mut last = false;
            while !raced && !last {
                let piece = tasks.recv().await;
                last = piece.is_none();
                let mut piece = piece.unwrap_or_default().into_iter();
                loop {
                    while !raced
                        && chunk.len() < INSERT_CHUNK
                        && let Some(task) = piece.next()
                    {
                        match known.get(&task.external_id) {
                            Some(hash) if *hash == task.content_hash => unchanged += 1,
                            Some(_) => raced = true,
                            None => chunk.push(task),
                        }
                    }
                    if raced || chunk.is_empty() || (chunk.len() < INSERT_CHUNK && !last) {
                        break;
                    }
                    let mut insert = sqlx::QueryBuilder::new(
                        "INSERT INTO tasks (id, batch_id, seq, external_id, prompt, response_a, response_b, \
                         model_a, model_b, metadata, content_hash, created_at, is_full, route_key) ",
                    );
                    // A gold task is stored full, so the pool never hands it out.
                    let mut gold = Vec::new();
                    insert.push_values(chunk.drain(..), |mut row, task| {
                        seq += 1;
                        created += 1;
                        let id = Uuid::now_v7();
                        let is_gold = task.gold.is_some();
                        let key = batch
                            .route_by
                            .as_ref()
                            .and_then(|r| route_key(task.metadata.get(r.key())));
                        if let Some(expected) = task.gold {
                            gold.push((id, expected, task.gold_explanation));
                        }
                        row.push_bind(id)
                            .push_bind(batch.id)
                            .push_bind(seq)
                            .push_bind(task.external_id)
                            .push_bind(Json(task.prompt))
                            .push_bind(task.response_a)
                            .push_bind(task.response_b)
                            .push_bind(task.model_a)
                            .push_bind(task.model_b)
                            .push_bind(Json(task.metadata))
                            .push_bind(task.content_hash)
                            .push_bind(now)
                            .push_bind(is_gold)
                            .push_bind(key);
                    });
                    insert.build().execute(&mut *tx).await?;
                    for (task_id, expected, explanation) in gold {
                        sqlx::query(
                            "INSERT INTO gold_tasks (task_id, batch_id, expected, explanation)
                             VALUES ($1, $2, $3, $4)",
                        )
                        .bind(task_id)
                        .bind(batch.id)
                        .bind(Json(expected))
                        .bind(explanation)
                        .execute(&mut *tx)
                        .await?;
                    }
                }
            }
            if raced {
                // Undoes this transaction's inserts: the caller checks again.
                return Err(StoreError::Retry);
            }
            if !passed.await {
                // A record failed its check after others were stored: none of it is kept.
                return Err(StoreError::Withdrawn);
            }
            if created > 0 && !batch_created {
                sqlx::query("UPDATE batches SET updated_at = $2 WHERE id = $1")
                    .bind(batch.id)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                // New tasks reopen a completed batch.
                let wanted = super::webhooks::subscribed!(tx, batch.id)?;
                super::webhooks::completion_event!(tx, wanted, batch.id, now)?;
            }
            if let Some(entry) = entry {
                let detail = serde_json::json!({
                    "batch_id": batch.id, "created": created, "unchanged": unchanged,
                    "bytes": entry.bytes
                });
                sqlx::query(super::audit::INSERT_ENTRY)
                    .bind(Uuid::now_v7())
                    .bind(entry.actor_id)
                    .bind(entry.actor_name)
                    .bind("batch.upload")
                    .bind(&batch.name)
                    .bind(Json(detail))
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
            }
            Imported {
                batch,
                batch_created,
                created,
                unchanged,
            }
        });
        Ok(imported)
    }

    /// Applies settings changes in one transaction. Changing the overlap re-marks which
    /// tasks still have room.
    pub async fn update_batch(
        &self,
        id: Uuid,
        changes: &BatchChanges,
    ) -> StoreResult<Option<Batch>> {
        let now = Utc::now();
        let found = transaction!(self, |tx| {
            let done = sqlx::query(
                "UPDATE batches SET
                    state = COALESCE($2, state),
                    overlap = COALESCE($3, overlap),
                    randomize = COALESCE($4, randomize),
                    lease_minutes = COALESCE($5, lease_minutes),
                    min_explanation_len = COALESCE($6, min_explanation_len),
                    classifications = COALESCE($7, classifications),
                    updated_at = $8,
                    raters_see_external_ids = COALESCE($9, raters_see_external_ids),
                    bradley_terry_prior = COALESCE($10, bradley_terry_prior),
                    max_overlap = COALESCE($11, max_overlap),
                    escalate = CASE WHEN $12 THEN $13 ELSE escalate END,
                    route_by = CASE WHEN $14 THEN $15 ELSE route_by END,
                    routing = COALESCE($16, routing),
                    final_method = COALESCE($17, final_method),
                    routed_since = CASE WHEN $14 OR $16 IS NOT NULL THEN $8 ELSE routed_since END
                 WHERE id = $1",
            )
            .bind(id)
            .bind(changes.state.map(BatchState::as_str))
            .bind(changes.overlap)
            .bind(changes.randomize)
            .bind(changes.lease_minutes)
            .bind(changes.min_explanation_len)
            .bind(changes.classifications.as_ref().map(Json))
            .bind(now)
            .bind(changes.raters_see_external_ids)
            .bind(changes.bradley_terry_prior)
            .bind(changes.max_overlap)
            .bind(changes.escalate.is_some())
            .bind(changes.escalate.clone().flatten())
            .bind(changes.route_by.is_some())
            .bind(changes.route_by.clone().flatten().map(|r| r.to_string()))
            .bind(changes.routing.map(Routing::as_str))
            .bind(
                changes
                    .final_method
                    .map(verdict_core::batch::FinalMethod::as_str),
            )
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 {
                if let Some(route_by) = &changes.route_by {
                    route_tasks!(tx, id, route_by.as_ref())?;
                }
                if changes.overlap.is_some() || changes.max_overlap.is_some() {
                    // Raters a task gained stay within the new most (a batch that no
                    // longer escalates keeps none); gold tasks stay full: the pool never
                    // hands them out.
                    sqlx::query(
                        "UPDATE tasks SET
                           extra = (SELECT CASE
                                      WHEN b.max_overlap IS NULL OR b.max_overlap <= b.overlap THEN 0
                                      WHEN tasks.extra > b.max_overlap - b.overlap
                                        THEN b.max_overlap - b.overlap
                                      ELSE tasks.extra END
                                    FROM batches b WHERE b.id = $1)
                         WHERE batch_id = $1 AND extra > 0",
                    )
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query(
                        "UPDATE tasks SET is_full = (withdrawn_at IS NOT NULL
                                             OR claimed >= (SELECT b.overlap FROM batches b WHERE b.id = $1) + extra)
                         WHERE batch_id = $1
                           AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = tasks.id)",
                    )
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                }
                for (role, members) in [("rater", &changes.raters), ("lead", &changes.leads)] {
                    let Some(members) = members else { continue };
                    let column = if role == "rater" {
                        "raters_restricted"
                    } else {
                        "leads_restricted"
                    };
                    sqlx::query(&format!("UPDATE batches SET {column} = $2 WHERE id = $1"))
                        .bind(id)
                        .bind(members.is_some())
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query("DELETE FROM batch_members WHERE batch_id = $1 AND role = $2")
                        .bind(id)
                        .bind(role)
                        .execute(&mut *tx)
                        .await?;
                    for user in members.iter().flatten() {
                        sqlx::query("INSERT INTO batch_members (batch_id, user_id, role) VALUES ($1, $2, $3)")
                            .bind(id)
                            .bind(user)
                            .bind(role)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
            }
            done.rows_affected() == 1
        });
        if found {
            self.batch(id).await
        } else {
            Ok(None)
        }
    }

    /// The usernames a batch is restricted to, per role.
    pub async fn batch_members(&self, id: Uuid) -> StoreResult<Vec<(String, String)>> {
        Ok(read!(self, |pool| {
            sqlx::query_as(
                "SELECT m.role, u.username FROM batch_members m JOIN users u ON u.id = m.user_id
                 WHERE m.batch_id = $1 ORDER BY m.role, u.username",
            )
            .bind(id)
            .fetch_all(pool)
            .await
        })?)
    }

    /// The usernames of everyone who rated the batch (drafts included), sorted.
    pub async fn batch_raters(&self, id: Uuid) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT DISTINCT u.username FROM ratings r JOIN users u ON u.id = r.rater_id
                 WHERE r.batch_id = $1 AND r.rater_kind = 'human' ORDER BY u.username",
            )
            .bind(id)
            .fetch_all(pool)
            .await
        })?;
        Ok(rows.into_iter().map(|(name,)| name).collect())
    }

    /// Caches a task's rendered HTML.
    pub async fn set_rendered(
        &self,
        task_id: Uuid,
        rendered: &serde_json::Value,
    ) -> StoreResult<()> {
        write!(self, |pool| {
            sqlx::query("UPDATE tasks SET rendered = $2 WHERE id = $1")
                .bind(task_id)
                .bind(Json(rendered))
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(())
    }
}
