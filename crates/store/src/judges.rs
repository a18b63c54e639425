//! Judges, their runs over batches, every call a run makes, and the ratings of judge
//! accounts.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::types::Json;
use uuid::Uuid;

use super::ratings::{RATING_COLUMNS, RatingRow, insert_history};
use super::webhooks::finished_event;
use super::{StoreError, StoreResult, on_unique, read, transaction, write};
use verdict_core::gold::Grade;
use verdict_core::judge::{Fields, LastError, Params, Plan, Template};
use verdict_core::lifecycle::{CallStatus, Outcome, RaterKind, RunStatus, Status};
use verdict_core::metrics::judges::JudgeCall;
use verdict_core::rating::Rating;
use verdict_core::rubric::{ShownAnswers, TaskAnswers};

/// A judge as stored. The sealed key never leaves the store's callers that make calls.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Judge {
    pub id: Uuid,
    pub name: String,
    /// The judge's account: its ratings are this user's.
    pub user_id: Uuid,
    pub base_url: String,
    pub model: String,
    pub api_key_env: Option<String>,
    pub api_key_sealed: Option<String>,
    pub params: Json<Params>,
    pub concurrency: i32,
    pub requests_per_minute: i32,
    /// Templates by rubric name; a rubric without one uses the built-in.
    pub templates: Json<BTreeMap<String, Template>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const JUDGE_COLUMNS: &str = "id, name, user_id, base_url, model, api_key_env, api_key_sealed, params, \
     concurrency, requests_per_minute, templates, created_at, updated_at";

/// A judge's settings, to create one or to replace them all.
#[derive(Debug, Clone)]
pub struct JudgeSettings {
    pub base_url: String,
    pub model: String,
    pub api_key_env: Option<String>,
    pub api_key_sealed: Option<String>,
    pub params: Params,
    pub concurrency: i32,
    pub requests_per_minute: i32,
    pub templates: BTreeMap<String, Template>,
}

/// A judge run as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Run {
    pub id: Uuid,
    pub judge_id: Uuid,
    pub batch_id: Uuid,
    #[sqlx(try_from = "String")]
    pub status: RunStatus,
    pub plan: Json<Plan>,
    pub tasks: i32,
    pub calls: i32,
    pub worker: Option<String>,
    pub heartbeat_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    /// While a call waits to be asked again, the attempt it waits for; `None` when no
    /// call waits (as far as the run knows: the latest answer cleared it) and once the
    /// run is not running.
    pub retry_attempt: Option<i32>,
    /// The latest error the run met, a [`LastError`] as stored, and when: kept when the
    /// run ends.
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
}

const RUN_COLUMNS: &str = "id, judge_id, batch_id, status, plan, tasks, calls, worker, heartbeat_at, \
     created_at, started_at, finished_at, updated_at, retry_attempt, last_error, last_error_at";

/// How far a run has got: its calls by status, and the tokens they used.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct RunCounts {
    pub answered: i64,
    pub unparsed: i64,
    pub failed: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
}

/// One call, to be stored once it is over.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Call {
    pub id: Uuid,
    pub run_id: Uuid,
    pub task_id: Uuid,
    /// B was shown as "A".
    pub swapped: bool,
    #[sqlx(try_from = "String")]
    pub status: CallStatus,
    pub prompt_sha256: String,
    pub model: String,
    pub params: Json<Value>,
    pub raw_output: Option<String>,
    pub finish_reason: Option<String>,
    pub error: Option<String>,
    /// The start of an endpoint's error reply (admins only read it: it may carry what
    /// the endpoint knows).
    pub error_body: Option<String>,
    /// What became of each answer, by path as the judge was shown them.
    pub fields: Json<Fields>,
    /// What was read, in the orientation the judge was shown.
    pub answers: Json<ShownAnswers>,
    pub prompt_tokens: Option<i32>,
    pub completion_tokens: Option<i32>,
    pub latency_ms: Option<i32>,
    pub attempts: i32,
    pub created_at: DateTime<Utc>,
}

const CALL_COLUMNS: &str = "c.id, c.run_id, c.task_id, c.swapped, c.status, c.prompt_sha256, c.model, c.params, \
     c.raw_output, c.finish_reason, c.error, c.error_body, c.fields, c.answers, c.prompt_tokens, c.completion_tokens, \
     c.latency_ms, c.attempts, c.created_at";

/// A call with the task it asked about, for the calls list.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CallRow {
    #[sqlx(flatten)]
    pub call: Call,
    pub external_id: String,
}

/// What a judge is asked about one task.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TaskContent {
    pub id: Uuid,
    pub prompt: Json<Value>,
    pub response_a: String,
    pub response_b: String,
}

impl super::Store {
    /// Creates a judge and its account (kind `judge`, which never signs in);
    /// `Duplicate("name")` when the name is taken.
    pub async fn create_judge(&self, name: &str, settings: &JudgeSettings) -> StoreResult<Judge> {
        let now = Utc::now();
        let id = Uuid::now_v7();
        let user_id = Uuid::now_v7();
        transaction!(self, |tx| {
            // The account's name cannot clash with a person's (usernames have no ':'),
            // and its password hash is no hash: no password matches it.
            sqlx::query(
                "INSERT INTO users (id, username, password_hash, role, active, kind, created_at, password_changed_at)
                 VALUES ($1, $2, '!', 'rater', FALSE, $3, $4, $4)",
            )
            .bind(user_id)
            .bind(format!("judge:{name}"))
            .bind(RaterKind::Judge.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(|e| on_unique(e, "name"))?;
            sqlx::query(
                "INSERT INTO judges (id, name, user_id, base_url, model, api_key_env, api_key_sealed, params,
                                     concurrency, requests_per_minute, templates, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)",
            )
            .bind(id)
            .bind(name)
            .bind(user_id)
            .bind(&settings.base_url)
            .bind(&settings.model)
            .bind(&settings.api_key_env)
            .bind(&settings.api_key_sealed)
            .bind(Json(&settings.params))
            .bind(settings.concurrency)
            .bind(settings.requests_per_minute)
            .bind(Json(&settings.templates))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(|e| on_unique(e, "name"))?;
        });
        self.judge(id)
            .await?
            .ok_or(StoreError::Db(sqlx::Error::RowNotFound))
    }

    pub async fn judge(&self, id: Uuid) -> StoreResult<Option<Judge>> {
        let sql = format!("SELECT {JUDGE_COLUMNS} FROM judges WHERE id = $1");
        Ok(read!(self, |pool| sqlx::query_as::<_, Judge>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?)
    }

    pub async fn judge_by_name(&self, name: &str) -> StoreResult<Option<Judge>> {
        let sql = format!("SELECT {JUDGE_COLUMNS} FROM judges WHERE name = $1");
        Ok(read!(self, |pool| sqlx::query_as::<_, Judge>(&sql)
            .bind(name)
            .fetch_optional(pool)
            .await)?)
    }

    pub async fn list_judges(&self) -> StoreResult<Vec<Judge>> {
        let sql = format!("SELECT {JUDGE_COLUMNS} FROM judges ORDER BY name");
        Ok(read!(self, |pool| sqlx::query_as::<_, Judge>(&sql)
            .fetch_all(pool)
            .await)?)
    }

    /// Replaces a judge's settings; `None` when there is no such judge.
    pub async fn update_judge(
        &self,
        id: Uuid,
        settings: &JudgeSettings,
    ) -> StoreResult<Option<Judge>> {
        let changed = write!(self, |pool| {
            sqlx::query(
                "UPDATE judges SET base_url = $2, model = $3, api_key_env = $4, api_key_sealed = $5,
                     params = $6, concurrency = $7, requests_per_minute = $8, templates = $9, updated_at = $10
                 WHERE id = $1",
            )
            .bind(id)
            .bind(&settings.base_url)
            .bind(&settings.model)
            .bind(&settings.api_key_env)
            .bind(&settings.api_key_sealed)
            .bind(Json(&settings.params))
            .bind(settings.concurrency)
            .bind(settings.requests_per_minute)
            .bind(Json(&settings.templates))
            .bind(Utc::now())
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        if changed == 0 {
            return Ok(None);
        }
        self.judge(id).await
    }

    /// Starts a run; `Duplicate("run")` when the judge already has an open run over the
    /// batch.
    pub async fn create_run(
        &self,
        judge_id: Uuid,
        batch_id: Uuid,
        plan: &Plan,
        tasks: i32,
        calls: i32,
        created_by: Option<Uuid>,
    ) -> StoreResult<Run> {
        let now = Utc::now();
        let id = Uuid::now_v7();
        write!(self, |pool| {
            sqlx::query(
                "INSERT INTO judge_runs (id, judge_id, batch_id, status, plan, tasks, calls, created_by,
                                         created_at, started_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9)",
            )
            .bind(id)
            .bind(judge_id)
            .bind(batch_id)
            .bind(RunStatus::Running.as_str())
            .bind(Json(plan))
            .bind(tasks)
            .bind(calls)
            .bind(created_by)
            .bind(now)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })
        .map_err(|e| on_unique(e, "run"))?;
        self.run(id)
            .await?
            .ok_or(StoreError::Db(sqlx::Error::RowNotFound))
    }

    pub async fn run(&self, id: Uuid) -> StoreResult<Option<Run>> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM judge_runs WHERE id = $1");
        Ok(read!(self, |pool| sqlx::query_as::<_, Run>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?)
    }

    /// A batch's runs, newest first.
    pub async fn runs_of_batch(&self, batch_id: Uuid) -> StoreResult<Vec<Run>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM judge_runs WHERE batch_id = $1 ORDER BY created_at DESC, id DESC"
        );
        Ok(read!(self, |pool| sqlx::query_as::<_, Run>(&sql)
            .bind(batch_id)
            .fetch_all(pool)
            .await)?)
    }

    /// Moves a run from one of `from` to `to`; false when it was in none of them (it
    /// moved meanwhile, or there is no such run). A run leaving `running` lets go of its
    /// worker, and no call of it waits to be retried any more; a run that is over
    /// records when. `Duplicate("run")` when it would open while its judge has another
    /// open run over the batch.
    pub async fn set_run_status(
        &self,
        id: Uuid,
        from: &[RunStatus],
        to: RunStatus,
    ) -> StoreResult<bool> {
        let now = Utc::now();
        // The names are the enum's own, never input: safe to write into the statement.
        let names: Vec<String> = from.iter().map(|s| format!("'{s}'")).collect();
        let finished = to.is_over().then_some(now);
        let sql = format!(
            "UPDATE judge_runs SET status = $2, updated_at = $3, finished_at = $4,
                 worker = CASE WHEN $2 = 'running' THEN worker ELSE NULL END,
                 retry_attempt = NULL
             WHERE id = $1 AND status IN ({})",
            names.join(", ")
        );
        let changed = (async {
            Ok::<_, StoreError>(transaction!(self, |tx| {
                let changed = sqlx::query(&sql)
                    .bind(id)
                    .bind(to.as_str())
                    .bind(now)
                    .bind(finished)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if changed == 1 && to == RunStatus::Finished {
                    finished_event!(tx, id, now)?;
                }
                changed
            }))
        })
        .await
        .map_err(|e| match e {
            StoreError::Db(e) => on_unique(e, "run"),
            other => other,
        })?;
        Ok(changed == 1)
    }

    /// Takes a running run for `worker`: when nobody works it, this worker already
    /// does, or its worker has said nothing for `lease`. Also the heartbeat: true while
    /// the run is running and this worker's.
    pub async fn claim_run(
        &self,
        id: Uuid,
        worker: &str,
        lease: std::time::Duration,
    ) -> StoreResult<bool> {
        let now = Utc::now();
        let stale = now - chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let changed = write!(self, |pool| {
            sqlx::query(
                "UPDATE judge_runs SET worker = $2, heartbeat_at = $3
                 WHERE id = $1 AND status = $5
                   AND (worker IS NULL OR worker = $2 OR heartbeat_at IS NULL OR heartbeat_at < $4)",
            )
            .bind(id)
            .bind(worker)
            .bind(now)
            .bind(stale)
            .bind(RunStatus::Running.as_str())
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        Ok(changed == 1)
    }

    /// Takes a running run for `worker` from `from`, its worker, whatever its heartbeat
    /// says (`from` is known to be gone); false when the run is not running or is
    /// another's by now.
    pub async fn take_run_from(&self, id: Uuid, worker: &str, from: &str) -> StoreResult<bool> {
        let changed = write!(self, |pool| {
            sqlx::query(
                "UPDATE judge_runs SET worker = $2, heartbeat_at = $3
                 WHERE id = $1 AND status = $4 AND worker = $5",
            )
            .bind(id)
            .bind(worker)
            .bind(Utc::now())
            .bind(RunStatus::Running.as_str())
            .bind(from)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        Ok(changed == 1)
    }

    /// Lets go of a run `worker` works (it stops working it), so that the next to look
    /// takes it at once instead of after the lease.
    pub async fn let_go_run(&self, id: Uuid, worker: &str) -> StoreResult<()> {
        write!(self, |pool| {
            sqlx::query("UPDATE judge_runs SET worker = NULL WHERE id = $1 AND worker = $2")
                .bind(id)
                .bind(worker)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(())
    }

    /// Running runs someone works, with the worker's name.
    pub async fn worked_runs(&self) -> StoreResult<Vec<(Uuid, String)>> {
        Ok(read!(self, |pool| {
            sqlx::query_as(
                "SELECT id, worker FROM judge_runs WHERE status = $1 AND worker IS NOT NULL",
            )
            .bind(RunStatus::Running.as_str())
            .fetch_all(pool)
            .await
        })?)
    }

    /// Running runs nobody works (their worker fell silent for `lease`, or let go).
    pub async fn orphaned_runs(&self, lease: std::time::Duration) -> StoreResult<Vec<Uuid>> {
        let stale = Utc::now() - chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let rows: Vec<(Uuid,)> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT id FROM judge_runs
                 WHERE status = $1 AND (worker IS NULL OR heartbeat_at IS NULL OR heartbeat_at < $2)",
            )
            .bind(RunStatus::Running.as_str())
            .bind(stale)
            .fetch_all(pool)
            .await
        })?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// The ids of a batch's tasks a judge rates, in upload order: every one, gold tasks
    /// too (the judge is graded on them as raters are; its answers to them count in no
    /// other figure).
    pub async fn task_ids(&self, batch_id: Uuid) -> StoreResult<Vec<Uuid>> {
        let rows: Vec<(Uuid,)> = read!(self, |pool| {
            sqlx::query_as("SELECT t.id FROM tasks t WHERE t.batch_id = $1 ORDER BY t.seq")
                .bind(batch_id)
                .fetch_all(pool)
                .await
        })?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// The calls of a run that are over for good (answered or unparsed): a resumed run
    /// does not ask them again.
    pub async fn settled_calls(&self, run_id: Uuid) -> StoreResult<Vec<(Uuid, bool)>> {
        Ok(read!(self, |pool| {
            sqlx::query_as(
                "SELECT task_id, swapped FROM judge_calls WHERE run_id = $1 AND status IN ($2, $3)",
            )
            .bind(run_id)
            .bind(CallStatus::Answered.as_str())
            .bind(CallStatus::Unparsed.as_str())
            .fetch_all(pool)
            .await
        })?)
    }

    pub async fn task_content(&self, id: Uuid) -> StoreResult<Option<TaskContent>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, TaskContent>(
                "SELECT id, prompt, response_a, response_b FROM tasks WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(pool)
            .await
        })?)
    }

    /// Notes on a running run that one of its calls waits to make `attempt` after
    /// `error`: what the run shows while it retries.
    pub async fn note_retry(
        &self,
        run_id: Uuid,
        attempt: i32,
        error: &LastError,
    ) -> StoreResult<()> {
        write!(self, |pool| {
            sqlx::query(
                "UPDATE judge_runs SET retry_attempt = $2, last_error = $3, last_error_at = $4
                 WHERE id = $1 AND status = $5",
            )
            .bind(run_id)
            .bind(attempt)
            .bind(error.as_str())
            .bind(Utc::now())
            .bind(RunStatus::Running.as_str())
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        Ok(())
    }

    /// Stores a call once it is over, replacing a failed one of the same task and order,
    /// and tells its run: a failed call's `error` becomes the run's latest; an answer
    /// (read or not) means the endpoint answers, so no call is taken to wait any more.
    pub async fn record_call(&self, call: &Call, error: Option<&LastError>) -> StoreResult<()> {
        let now = Utc::now();
        transaction!(self, |tx| {
            sqlx::query(
                "INSERT INTO judge_calls (id, run_id, task_id, swapped, status, prompt_sha256, model, params,
                     raw_output, finish_reason, error, fields, answers, prompt_tokens, completion_tokens,
                     latency_ms, attempts, created_at, error_body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
                 ON CONFLICT (run_id, task_id, swapped) DO UPDATE SET
                     status = excluded.status, prompt_sha256 = excluded.prompt_sha256,
                     model = excluded.model, params = excluded.params, raw_output = excluded.raw_output,
                     finish_reason = excluded.finish_reason, error = excluded.error,
                     error_body = excluded.error_body,
                     fields = excluded.fields, answers = excluded.answers,
                     prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,
                     latency_ms = excluded.latency_ms, attempts = judge_calls.attempts + excluded.attempts,
                     created_at = excluded.created_at
                 WHERE judge_calls.status = 'failed'",
            )
            .bind(call.id)
            .bind(call.run_id)
            .bind(call.task_id)
            .bind(call.swapped)
            .bind(call.status.as_str())
            .bind(&call.prompt_sha256)
            .bind(&call.model)
            .bind(&call.params)
            .bind(&call.raw_output)
            .bind(&call.finish_reason)
            .bind(&call.error)
            .bind(&call.fields)
            .bind(&call.answers)
            .bind(call.prompt_tokens)
            .bind(call.completion_tokens)
            .bind(call.latency_ms)
            .bind(call.attempts)
            .bind(call.created_at)
            .bind(&call.error_body)
            .execute(&mut *tx)
            .await?;
            match error {
                Some(error) => {
                    sqlx::query(
                        "UPDATE judge_runs SET last_error = $2, last_error_at = $3 WHERE id = $1",
                    )
                    .bind(call.run_id)
                    .bind(error.as_str())
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                }
                None => {
                    sqlx::query(
                        "UPDATE judge_runs SET retry_attempt = NULL
                         WHERE id = $1 AND retry_attempt IS NOT NULL",
                    )
                    .bind(call.run_id)
                    .execute(&mut *tx)
                    .await?
                }
            };
        });
        Ok(())
    }

    /// A run's calls about one task.
    pub async fn calls_of_task(&self, run_id: Uuid, task_id: Uuid) -> StoreResult<Vec<Call>> {
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM judge_calls c WHERE c.run_id = $1 AND c.task_id = $2 ORDER BY c.swapped"
        );
        Ok(read!(self, |pool| sqlx::query_as::<_, Call>(&sql)
            .bind(run_id)
            .bind(task_id)
            .fetch_all(pool)
            .await)?)
    }

    /// A page of a run's calls, in task order, optionally of one status.
    pub async fn calls_of_run(
        &self,
        run_id: Uuid,
        status: Option<CallStatus>,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<CallRow>, i64)> {
        let sql = format!(
            "SELECT {CALL_COLUMNS}, t.external_id FROM judge_calls c JOIN tasks t ON t.id = c.task_id
             WHERE c.run_id = $1 AND ($2 IS NULL OR c.status = $2)
             ORDER BY t.seq, c.swapped LIMIT $3 OFFSET $4"
        );
        let status = status.map(|s| s.as_str());
        let rows = read!(self, |pool| sqlx::query_as::<_, CallRow>(&sql)
            .bind(run_id)
            .bind(status)
            .bind(limit)
            .bind(offset)
            .fetch_all(pool)
            .await)?;
        let (total,): (i64,) = read!(self, |pool| {
            sqlx::query_as(
                "SELECT COUNT(*) FROM judge_calls WHERE run_id = $1 AND ($2 IS NULL OR status = $2)",
            )
            .bind(run_id)
            .bind(status)
            .fetch_one(pool)
            .await
        })?;
        Ok((rows, total))
    }

    pub async fn run_counts(&self, run_id: Uuid) -> StoreResult<RunCounts> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, RunCounts>(
                "SELECT COALESCE(SUM(CASE WHEN status = 'answered' THEN 1 ELSE 0 END), 0) AS answered,
                        COALESCE(SUM(CASE WHEN status = 'unparsed' THEN 1 ELSE 0 END), 0) AS unparsed,
                        COALESCE(SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0) AS failed,
                        COALESCE(SUM(COALESCE(prompt_tokens, 0)), 0) AS prompt_tokens,
                        COALESCE(SUM(COALESCE(completion_tokens, 0)), 0) AS completion_tokens
                 FROM judge_calls WHERE run_id = $1",
            )
            .bind(run_id)
            .fetch_one(pool)
            .await
        })?)
    }

    /// Stores (or replaces) a judge's rating of a task from run `run_id`: rated,
    /// submitted, with `answers` in the canonical orientation and, for a gold task, its
    /// `grade`, through a finished assignment of the judge's account, naming the run.
    /// Only the run standing for the judge over the batch ([`standing_run`]) stores
    /// ratings: `None`, and nothing changes, for any other. The task's pool is not
    /// touched: judges take no slot of the overlap.
    pub async fn save_judge_rating(
        &self,
        judge_user: Uuid,
        run_id: Uuid,
        batch_id: Uuid,
        task_id: Uuid,
        answers: &TaskAnswers,
        grade: Option<&Grade>,
    ) -> StoreResult<Option<Uuid>> {
        let now = Utc::now();
        let lock = self.lock_clause();
        let select = format!(
            "SELECT {RATING_COLUMNS} FROM ratings r WHERE r.task_id = $1 AND r.rater_id = $2{lock}"
        );
        let stands = format!(
            "SELECT COUNT(*) FROM judge_runs r WHERE r.id = $1 AND r.id = {}",
            standing_run("r.judge_id", "r.batch_id")
        );
        let id = transaction!(self, |tx| {
            let (standing,): (i64,) = sqlx::query_as(&stands)
                .bind(run_id)
                .fetch_one(&mut *tx)
                .await?;
            if standing == 0 {
                None
            } else {
                let before: Option<Rating> = sqlx::query_as::<_, RatingRow>(&select)
                    .bind(task_id)
                    .bind(judge_user)
                    .fetch_optional(&mut *tx)
                    .await?
                    .map(Rating::from);
                Some(match before {
                    Some(before)
                        if before.answers == *answers && before.gold_grade.as_ref() == grade =>
                    {
                        sqlx::query("UPDATE ratings SET judge_run_id = $2 WHERE id = $1")
                            .bind(before.id)
                            .bind(run_id)
                            .execute(&mut *tx)
                            .await?;
                        before.id
                    }
                    Some(before) => {
                        let after: Rating = sqlx::query_as::<_, RatingRow>(&format!(
                            "UPDATE ratings SET answers = $2, version = version + 1, updated_at = $3,
                                 submitted_at = $3, gold_grade = $4, judge_run_id = $5
                             WHERE id = $1 RETURNING {}",
                            RATING_COLUMNS.replace("r.", "")
                        ))
                        .bind(before.id)
                        .bind(Json(answers))
                        .bind(now)
                        .bind(grade.map(Json))
                        .bind(run_id)
                        .fetch_one(&mut *tx)
                        .await?
                        .into();
                        insert_history!(
                            &mut *tx,
                            &after,
                            Some(judge_user),
                            "judge",
                            Some(&before),
                            now
                        )?;
                        after.id
                    }
                    None => {
                        let assignment = Uuid::now_v7();
                        sqlx::query(
                            "INSERT INTO assignments
                               (id, task_id, batch_id, rater_id, swapped, state, lease_expires_at, created_at, updated_at)
                             VALUES ($1, $2, $3, $4, FALSE, 'done', $5, $5, $5)",
                        )
                        .bind(assignment)
                        .bind(task_id)
                        .bind(batch_id)
                        .bind(judge_user)
                        .bind(now)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| on_unique(e, "judge rating"))?;
                        let after: Rating = sqlx::query_as::<_, RatingRow>(&format!(
                            "INSERT INTO ratings (id, assignment_id, task_id, batch_id, rater_id, outcome, status,
                                                  answers, rater_kind, created_at, updated_at, submitted_at,
                                                  gold_grade, judge_run_id)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10, $11, $12) RETURNING {}",
                            RATING_COLUMNS.replace("r.", "")
                        ))
                        .bind(Uuid::now_v7())
                        .bind(assignment)
                        .bind(task_id)
                        .bind(batch_id)
                        .bind(judge_user)
                        .bind(Outcome::Rated.as_str())
                        .bind(Status::Submitted.as_str())
                        .bind(Json(answers))
                        .bind(RaterKind::Judge.as_str())
                        .bind(now)
                        .bind(grade.map(Json))
                        .bind(run_id)
                        .fetch_one(&mut *tx)
                        .await?
                        .into();
                        insert_history!(&mut *tx, &after, Some(judge_user), "judge", None, now)?;
                        after.id
                    }
                })
            }
        });
        Ok(id)
    }

    /// The run that stands for a judge over a batch, if any: see [`standing_run`].
    pub async fn standing_run(&self, judge_id: Uuid, batch_id: Uuid) -> StoreResult<Option<Uuid>> {
        let sql = format!("SELECT {} AS id", standing_run("$1", "$2"));
        let row: Option<(Option<Uuid>,)> = read!(self, |pool| sqlx::query_as(&sql)
            .bind(judge_id)
            .bind(batch_id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.and_then(|(id,)| id))
    }

    /// Each judge's calls about one task, from the run that stands for it over the batch
    /// ([`standing_run`]): (judge name, call), by judge name, A first before B first.
    pub async fn judge_calls_of_task(
        &self,
        batch_id: Uuid,
        task_id: Uuid,
    ) -> StoreResult<Vec<(String, Call)>> {
        #[derive(sqlx::FromRow)]
        struct Named {
            judge: String,
            #[sqlx(flatten)]
            call: Call,
        }
        let sql = format!(
            "SELECT j.name AS judge, {CALL_COLUMNS}
             FROM judge_calls c JOIN judge_runs r ON r.id = c.run_id JOIN judges j ON j.id = r.judge_id
             WHERE c.task_id = $2 AND r.id = {}
             ORDER BY j.name, c.swapped",
            standing_run("r.judge_id", "$1")
        );
        let rows = read!(self, |pool| sqlx::query_as::<_, Named>(&sql)
            .bind(batch_id)
            .bind(task_id)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(|n| (n.judge, n.call)).collect())
    }

    /// The calls of the run that stands for each judge over a batch ([`standing_run`]),
    /// with the responses' lengths, for the batch's metrics.
    pub async fn judge_call_facts(&self, batch_id: Uuid) -> StoreResult<Vec<JudgeCall>> {
        let sql = format!(
            "{CALL_FACTS} WHERE r.batch_id = $1 AND r.id = {} ORDER BY j.name, c.task_id, c.swapped",
            standing_run("r.judge_id", "$1")
        );
        let rows = read!(self, |pool| sqlx::query_as::<_, JudgeCallRow>(&sql)
            .bind(batch_id)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(JudgeCall::from).collect())
    }

    /// The calls of a run about the tasks after the one at `after_seq` (in upload
    /// order), at most `limit` of them, A first before B first: the judge export reads a
    /// run this way, a page at a time, without the raw outputs.
    pub async fn export_calls(
        &self,
        run_id: Uuid,
        after_seq: i64,
        limit: i64,
    ) -> StoreResult<Vec<ExportCall>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, ExportCall>(
                "SELECT t.seq, t.external_id, c.task_id, c.swapped, c.status, c.fields, c.answers,
                        EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id) AS gold,
                        CAST(LENGTH(t.response_a) AS BIGINT) AS len_a,
                        CAST(LENGTH(t.response_b) AS BIGINT) AS len_b
                 FROM judge_calls c JOIN tasks t ON t.id = c.task_id
                 WHERE c.run_id = $1 AND t.seq > $2
                 ORDER BY t.seq, c.swapped LIMIT $3",
            )
            .bind(run_id)
            .bind(after_seq)
            .bind(limit)
            .fetch_all(pool)
            .await
        })?)
    }

    /// The calls of one run, as metrics read them: what the run's own figures (tasks
    /// rated, orders that disagreed, the lean to the response shown first) come from.
    pub async fn run_call_facts(&self, run_id: Uuid) -> StoreResult<Vec<JudgeCall>> {
        let sql = format!("{CALL_FACTS} WHERE c.run_id = $1 ORDER BY c.task_id, c.swapped");
        let rows = read!(self, |pool| sqlx::query_as::<_, JudgeCallRow>(&sql)
            .bind(run_id)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(JudgeCall::from).collect())
    }
}

/// The rule that decides which run's answers stand for a judge over a batch (issue 30):
/// **the judge's latest run over the batch that is not cancelled** (latest by when it was
/// started; a run resumed later stays where it was). A cancelled run is set aside, and the
/// run before it stands again. The judge's figures in the batch's metrics, its answers on
/// the task page, its rows in the batch's export and the ratings stored for it all follow
/// this one subquery: the id of the run standing for the judge whose id is the SQL
/// expression `judge` over the batch `batch` (NULL when none stands).
pub fn standing_run(judge: &str, batch: &str) -> String {
    format!(
        "(SELECT s.id FROM judge_runs s WHERE s.judge_id = {judge} AND s.batch_id = {batch}
            AND s.status <> '{}' ORDER BY s.created_at DESC, s.id DESC LIMIT 1)",
        RunStatus::Cancelled.as_str()
    )
}

/// The calls as metrics read them, with the judge's name and the responses' lengths in
/// characters (`r` the run, `c` the call): a query's start, its `WHERE` to follow.
const CALL_FACTS: &str =
    "SELECT j.name AS judge, c.task_id, c.swapped, c.status, c.fields, c.answers,
        CAST(LENGTH(t.response_a) AS BIGINT) AS len_a,
        CAST(LENGTH(t.response_b) AS BIGINT) AS len_b
 FROM judge_calls c
 JOIN judge_runs r ON r.id = c.run_id
 JOIN judges j ON j.id = r.judge_id
 JOIN tasks t ON t.id = c.task_id";

/// A call as the judge export reads it: what was read, the task it was about (its place
/// in the batch and the lengths of its responses, in characters).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ExportCall {
    pub seq: i64,
    pub external_id: String,
    pub task_id: Uuid,
    pub swapped: bool,
    #[sqlx(try_from = "String")]
    pub status: CallStatus,
    pub fields: Json<Fields>,
    pub answers: Json<ShownAnswers>,
    /// A gold task: graded apart (`gold.judges`), in none of the judge's other figures.
    pub gold: bool,
    pub len_a: i64,
    pub len_b: i64,
}

/// A [`JudgeCall`] as the database hands it over (the core's type knows no database).
#[derive(sqlx::FromRow)]
struct JudgeCallRow {
    judge: String,
    task_id: Uuid,
    swapped: bool,
    #[sqlx(try_from = "String")]
    status: CallStatus,
    fields: Json<Fields>,
    answers: Json<ShownAnswers>,
    len_a: i64,
    len_b: i64,
}

impl From<JudgeCallRow> for JudgeCall {
    fn from(row: JudgeCallRow) -> Self {
        JudgeCall {
            judge: row.judge,
            task_id: row.task_id,
            swapped: row.swapped,
            status: row.status,
            fields: row.fields.0,
            answers: row.answers.0,
            len_a: row.len_a,
            len_b: row.len_b,
        }
    }
}

/// The parameters a call was made with, as stored beside it.
pub fn call_params(plan: &Plan) -> Value {
    json!({
        "temperature": plan.params.temperature,
        "max_tokens": plan.params.max_tokens,
        "seed": plan.params.seed,
        "structured_output": plan.params.structured_output,
        "format": plan.template.format,
    })
}
