//! `/api/v1/judges` and `/api/v1/judge-runs`: configure judges, run them over batches,
//! follow, pause, resume and cancel runs, and read every call.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::JudgeView;
use crate::auth::{RequireAdmin, RequireLead};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::services::judging::judges::{self, Changed};
use crate::services::judging::runs::{RunAction, RunView, launch, move_run, run_view};
use crate::state::AppState;
use crate::store::judges::Run;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiJson, ApiPath, ApiQuery};
use utoipa_axum::routes;
use verdict_core::judge::Fields;
use verdict_core::lifecycle::{CallStatus, RunStatus};
use verdict_core::rubric::ShownAnswers;
use verdict_core::user::User;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(update))
        .routes(routes!(start, runs_of_batch))
        .routes(routes!(one_run))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(cancel))
        .routes(routes!(calls))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Created {
    pub id: Uuid,
    pub name: String,
}

/// Configures a judge (admin): an OpenAI-compatible chat completions endpoint
/// (`base_url` as `http://host:port/v1`), its model, where its API key comes from
/// (`api_key_env`, an environment variable of the server, or `api_key`, stored sealed
/// and never shown back), sampling parameters, limits, and prompt templates by rubric
/// name (checked when saved). Every bad field is reported at once.
#[utoipa::path(post, path = "/api/v1/judges", tag = "judges",
    request_body(content = Object, description = "{name, base_url, model, api_key_env?, api_key?, \
        temperature?, max_tokens?, seed?, timeout_s?, structured_output?, max_text_chars?, concurrency?, \
        requests_per_minute?, templates?: {<rubric>: {text, format}}}"),
    responses((status = 201, body = Created), (status = 403, body = ErrorBody),
        (status = 409, description = "the name is taken", body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn create(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<Value>,
) -> AppResult<(StatusCode, Json<Created>)> {
    let judge = judges::create(
        state.store(),
        &admin,
        state.judging().sealing_key(),
        state.judging().policy(),
        &body,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(Created {
            id: judge.id,
            name: judge.name,
        }),
    ))
}

/// Every judge (admin), without secrets.
#[utoipa::path(get, path = "/api/v1/judges", tag = "judges",
    responses((status = 200, body = [JudgeView]), (status = 403, body = ErrorBody)))]
pub async fn list(
    RequireAdmin(_admin): RequireAdmin,
    State(state): State<AppState>,
) -> AppResult<Json<Vec<JudgeView>>> {
    let judges = state.store().list_judges().await?;
    Ok(Json(judges.into_iter().map(JudgeView::from).collect()))
}

/// Changes a judge's settings (admin): the fields given replace the stored ones. Runs
/// already started keep what they started with.
#[utoipa::path(patch, path = "/api/v1/judges/{id}", tag = "judges",
    params(("id" = Uuid, Path, description = "judge id")),
    request_body(content = Object, description = "any of the settings POST takes, but the name"),
    responses((status = 200, body = JudgeView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn update(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<Value>,
) -> AppResult<Json<JudgeView>> {
    let store = state.store();
    let judge = store.judge(id).await?.ok_or(AppError::NotFound)?;
    let judge = judges::update(
        store,
        &admin,
        state.judging().sealing_key(),
        state.judging().policy(),
        &judge,
        &body,
        Changed::Given,
    )
    .await?;
    Ok(Json(judge.into()))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// The judge, by name or id.
    pub judge: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Started {
    pub id: Uuid,
    pub status: RunStatus,
}

/// Runs a judge over a batch (admin): every task, a pair in both orders. Answers 202 at
/// once; follow the run at `GET /api/v1/judge-runs/{id}`. One open run per judge and
/// batch (409).
#[utoipa::path(post, path = "/api/v1/batches/{id}/judge-runs", tag = "judges",
    params(("id" = Uuid, Path, description = "batch id")),
    request_body = StartRun,
    responses((status = 202, body = Started), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn start(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<StartRun>,
) -> AppResult<(StatusCode, Json<Started>)> {
    let batch = state
        .store()
        .batch(batch_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let run = launch(
        state.store(),
        state.judging(),
        &admin,
        &batch,
        body.judge.trim(),
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Started {
            id: run.id,
            status: run.status,
        }),
    ))
}

/// A batch's judge runs, newest first (admin, or a lead of the batch).
#[utoipa::path(get, path = "/api/v1/batches/{id}/judge-runs", tag = "judges",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = [RunView]), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn runs_of_batch(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
) -> AppResult<Json<Vec<RunView>>> {
    crate::batches::visible(&state, batch_id, &lead).await?;
    let mut views = Vec::new();
    for run in state.store().runs_of_batch(batch_id).await? {
        views.push(run_view(state.store(), run).await?);
    }
    Ok(Json(views))
}

/// The run, if this lead may see its batch (404 otherwise).
async fn visible_run(state: &AppState, id: Uuid, user: &User) -> AppResult<Run> {
    let run = state.store().run(id).await?.ok_or(AppError::NotFound)?;
    crate::batches::visible(state, run.batch_id, user).await?;
    Ok(run)
}

/// How far a run has got (admin, or a lead of its batch).
#[utoipa::path(get, path = "/api/v1/judge-runs/{id}", tag = "judges",
    params(("id" = Uuid, Path, description = "run id")),
    responses((status = 200, body = RunView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn one_run(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<RunView>> {
    let run = visible_run(&state, id, &lead).await?;
    Ok(Json(run_view(state.store(), run).await?))
}

/// The run after `action`, as the API shows it.
async fn moved(
    state: &AppState,
    admin: &User,
    id: Uuid,
    action: RunAction,
) -> AppResult<Json<RunView>> {
    let run = move_run(state.store(), state.judging(), admin, id, action).await?;
    Ok(Json(run_view(state.store(), run).await?))
}

/// Pauses a running run (admin): calls under way finish and are kept.
#[utoipa::path(post, path = "/api/v1/judge-runs/{id}/pause", tag = "judges",
    params(("id" = Uuid, Path, description = "run id")),
    responses((status = 200, body = RunView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn pause(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<RunView>> {
    moved(&state, &admin, id, RunAction::Pause).await
}

/// Resumes a paused run, or a finished one with failed calls (admin): it asks only what
/// it does not have yet.
#[utoipa::path(post, path = "/api/v1/judge-runs/{id}/resume", tag = "judges",
    params(("id" = Uuid, Path, description = "run id")),
    responses((status = 200, body = RunView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn resume(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<RunView>> {
    moved(&state, &admin, id, RunAction::Resume).await
}

/// Cancels a run for good (admin); what it has is kept.
#[utoipa::path(post, path = "/api/v1/judge-runs/{id}/cancel", tag = "judges",
    params(("id" = Uuid, Path, description = "run id")),
    responses((status = 200, body = RunView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn cancel(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<RunView>> {
    moved(&state, &admin, id, RunAction::Cancel).await
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CallsQuery {
    /// Only calls with this status.
    pub status: Option<CallStatus>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// At most this many (default 100, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// One call as the API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CallView {
    pub id: Uuid,
    pub external_id: String,
    /// B was shown as "Response A".
    pub swapped: bool,
    pub status: CallStatus,
    pub prompt_sha256: String,
    pub model: String,
    #[schema(value_type = Object)]
    pub params: Value,
    pub raw_output: Option<String>,
    pub finish_reason: Option<String>,
    /// Why the call failed: the endpoint's status and the cause.
    pub error: Option<String>,
    /// The start of the endpoint's error reply (at most 200 characters); admins only,
    /// since it may carry what the endpoint knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_body: Option<String>,
    /// Per answer path (as shown): parsed, missing, conflicting, truncated or
    /// `invalid: why`.
    #[schema(value_type = Object)]
    pub fields: Fields,
    /// What was read, in the orientation the judge was shown.
    #[schema(value_type = Object)]
    pub answers: ShownAnswers,
    pub prompt_tokens: Option<i32>,
    pub completion_tokens: Option<i32>,
    pub latency_ms: Option<i32>,
    pub attempts: i32,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CallsPage {
    pub total: i64,
    pub calls: Vec<CallView>,
}

/// A run's calls with their raw output and what was read of it (admin, or a lead of
/// the batch), in task order. The start of an endpoint's error reply is shown to admins
/// only.
#[utoipa::path(get, path = "/api/v1/judge-runs/{id}/calls", tag = "judges",
    params(("id" = Uuid, Path, description = "run id"), CallsQuery),
    responses((status = 200, body = CallsPage), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn calls(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<CallsQuery>,
) -> AppResult<Json<CallsPage>> {
    let run = visible_run(&state, id, &lead).await?;
    let admin = lead.role == crate::auth::Role::Admin;
    let offset = query.offset.unwrap_or(0);
    let limit = query.limit.unwrap_or(100);
    if offset < 0 {
        return Err(AppError::field("offset", "must be 0 or more"));
    }
    if !(1..=1000).contains(&limit) {
        return Err(AppError::field("limit", "must be from 1 to 1000"));
    }
    let (rows, total) = state
        .store()
        .calls_of_run(run.id, query.status, offset, limit)
        .await?;
    let calls = rows
        .into_iter()
        .map(|row| {
            let c = row.call;
            CallView {
                id: c.id,
                external_id: row.external_id,
                swapped: c.swapped,
                status: c.status,
                prompt_sha256: c.prompt_sha256,
                model: c.model,
                params: c.params.0,
                raw_output: c.raw_output,
                finish_reason: c.finish_reason,
                error: c.error,
                error_body: c.error_body.filter(|_| admin),
                fields: c.fields.0,
                answers: c.answers.0,
                prompt_tokens: c.prompt_tokens,
                completion_tokens: c.completion_tokens,
                latency_ms: c.latency_ms,
                attempts: c.attempts,
                created_at: c.created_at,
            }
        })
        .collect();
    Ok(Json(CallsPage { total, calls }))
}
