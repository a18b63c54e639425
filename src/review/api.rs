//! The lead's API: the review queue, decisions, and a task's ratings side by side.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use uuid::Uuid;

use super::{
    BulkAccept, BulkAccepted, Decision, FilterText, QueueItem, QueueQuery, TaskSpread, reviewable,
};
use crate::auth::RequireLead;
use crate::error::{AppResult, ErrorBody};
use crate::services::rating::{RatingView, view};
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::web::openapi::ApiRouter;
use crate::web::paging::Paged;
use crate::web::{ApiJson, ApiPath, ApiQuery};
use utoipa_axum::routes;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(queue))
        .routes(routes!(accept_all))
        .routes(routes!(review))
        .routes(routes!(task, change_task))
        .routes(routes!(final_answer, record_final, remove_final))
        .routes(routes!(disagreements))
}

/// The review queue: ratings of the batches the caller leads (every batch for an admin),
/// never their own, oldest submission first, a page at a time, under the filters given;
/// `total` counts every page under the same filters (lead).
#[utoipa::path(get, path = "/api/v1/review", tag = "review", params(QueueQuery),
    responses((status = 200, body = Paged<QueueItem>), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn queue(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<QueueQuery>,
) -> AppResult<Json<Paged<QueueItem>>> {
    let found = super::queue(&state, &lead, &query).await?;
    Ok(Json(Paged::new(found.page, ListKind::ReviewQueue)))
}

/// Accepts every waiting rating the queue's filters keep, each as a normal review
/// (history, audit). Ratings that changed meanwhile are skipped and reported (lead).
#[utoipa::path(post, path = "/api/v1/review/accept", tag = "review", request_body = BulkAccept,
    responses((status = 200, body = BulkAccepted), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn accept_all(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<BulkAccept>,
) -> AppResult<Json<BulkAccepted>> {
    let text = FilterText {
        batch: body.batch.as_deref(),
        rater: body.rater.as_deref(),
        outcome: body.outcome.as_deref(),
        status: None,
        question: body.question.as_deref(),
        answer: body.answer.as_deref(),
        disagrees: body.disagrees.map(|d| if d { "true" } else { "false" }),
        warning: body.warning.as_deref(),
        review_first: body.review_first.map(|d| if d { "true" } else { "false" }),
    };
    let done = super::accept_all(&state, &lead, text, body.seen.as_deref()).await?;
    Ok(Json(done))
}

/// A batch's tasks by how far their raters are apart.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Disagreements {
    pub batch_id: Uuid,
    pub batch: String,
    /// How the spread is measured and the tasks ordered.
    pub rule: String,
    /// Tasks with two or more counted ratings, most disagreement first.
    pub tasks: Vec<TaskSpread>,
}

/// The disagreement view of a batch: tasks rated by two or more counted ratings, most
/// spread first (lead of the batch).
#[utoipa::path(get, path = "/api/v1/batches/{id}/disagreements", tag = "review",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = Disagreements), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn disagreements(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
) -> AppResult<Json<Disagreements>> {
    let (summary, tasks) = super::disagreements(&state, &lead, batch_id).await?;
    Ok(Json(Disagreements {
        batch_id,
        batch: summary.batch.name,
        rule: super::disagreement::SPREAD_RULE.to_owned(),
        tasks,
    }))
}

/// Accepts, returns (with a comment) or rejects a rating. `version` is the version the
/// lead saw; a stale one gets 409, so two leads cannot silently overwrite each other.
#[utoipa::path(post, path = "/api/v1/ratings/{id}/review", tag = "review", request_body = Decision,
    params(("id" = Uuid, Path, description = "rating id")),
    responses((status = 200, body = RatingView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn review(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(decision): ApiJson<Decision>,
) -> AppResult<Json<RatingView>> {
    let access = reviewable(&state, id, &lead).await?;
    crate::services::review::decide(state.store(), &access, &lead, &decision.into()).await?;
    let after = reviewable(&state, id, &lead).await?;
    Ok(Json(view(state.store(), &after).await?))
}

/// Every rater's rating of one task, side by side.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaskRatings {
    pub batch_id: Uuid,
    pub batch: String,
    pub external_id: String,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    /// 1 as uploaded, one more with each correction.
    pub version: i32,
    /// Withdrawn: served to no one, in no metric or aggregate.
    pub withdrawn: bool,
    /// The task's earlier versions, oldest first, as corrections replaced them.
    pub versions: Vec<TaskVersionView>,
    /// By rater name; drafts are left out.
    pub ratings: Vec<TaskRatingView>,
    /// Each LLM judge's answer from the run standing for it over the batch, by judge name: apart
    /// from the raters' (it counts in no human figure).
    pub judges: Vec<JudgeOnTaskView>,
}

/// One judge's answer to the task, and the calls it comes from.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JudgeOnTaskView {
    pub judge: String,
    /// Whether the calls make a whole rating (stored as the judge's).
    pub complete: bool,
    /// What was read, canonical orientation.
    #[schema(value_type = Object)]
    pub answers: verdict_core::rubric::TaskAnswers,
    /// Per answer path: parsed, or why not (missing, conflicting, truncated,
    /// inconsistent, `invalid: why`).
    #[schema(value_type = Object)]
    pub fields: verdict_core::judge::Fields,
    pub calls: Vec<JudgeCallView>,
}

/// One call about the task.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JudgeCallView {
    /// B was shown as "Response A".
    pub swapped: bool,
    pub status: verdict_core::lifecycle::CallStatus,
    pub raw_output: Option<String>,
    pub finish_reason: Option<String>,
    pub error: Option<String>,
    /// As the judge was shown them.
    #[schema(value_type = Object)]
    pub fields: verdict_core::judge::Fields,
}

/// An earlier version of a task, replaced by a correction.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaskVersionView {
    pub version: i32,
    #[schema(value_type = Object)]
    pub prompt: serde_json::Value,
    pub response_a: String,
    pub response_b: String,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    pub replaced_at: chrono::DateTime<chrono::Utc>,
    /// Who corrected it (absent: the command line, or an account since removed).
    pub replaced_by: Option<String>,
}

/// One rater's rating of the task, in the task's canonical orientation.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaskRatingView {
    pub rating_id: Uuid,
    pub rater: String,
    pub outcome: verdict_core::lifecycle::Outcome,
    pub status: verdict_core::lifecycle::Status,
    /// Whether it counts in the batch's metrics.
    pub counts_in_metrics: bool,
    /// Of an earlier version of the task, since corrected: kept, counted nowhere.
    pub stale: bool,
    /// Whether the rater was shown B first (the answers are turned back already).
    pub swapped: bool,
    #[schema(value_type = Object)]
    pub answers: verdict_core::rubric::TaskAnswers,
    /// The skip note, or why the task is out of scope.
    pub note: Option<String>,
    pub time_spent_s: i32,
}

/// The disagreement view: every rater's rating of a task side by side, in the task's
/// canonical orientation (lead of the batch).
#[utoipa::path(get, path = "/api/v1/batches/{id}/tasks/{external_id}", tag = "review",
    params(("id" = Uuid, Path, description = "batch id"),
        ("external_id" = String, Path, description = "the task's external id")),
    responses((status = 200, body = TaskRatings), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn task(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
) -> AppResult<Json<TaskRatings>> {
    let (summary, rubric, task_id, ratings) =
        super::task_ratings(&state, &lead, batch_id, &external_id).await?;
    let judges = super::task_judges(&state, &summary.batch, &rubric, task_id)
        .await?
        .into_iter()
        .map(|j| JudgeOnTaskView {
            judge: j.judge,
            complete: j.complete,
            answers: j.answers,
            fields: j.fields,
            calls: j
                .calls
                .into_iter()
                .map(|c| JudgeCallView {
                    swapped: c.swapped,
                    status: c.status,
                    raw_output: c.raw_output,
                    finish_reason: c.finish_reason,
                    error: c.error,
                    fields: c.fields.0,
                })
                .collect(),
        })
        .collect();
    let task = state
        .store()
        .task(task_id)
        .await?
        .ok_or(crate::error::AppError::NotFound)?;
    let ratings = ratings
        .into_iter()
        .map(|r| TaskRatingView {
            counts_in_metrics: r.counts_in_metrics(),
            stale: r.stale,
            rating_id: r.rating_id,
            rater: r.rater,
            outcome: r.outcome,
            status: r.status,
            swapped: r.swapped,
            answers: r.answers.0,
            note: r.note,
            time_spent_s: r.time_spent_s,
        })
        .collect();
    let store = state.store();
    let now = store
        .task_to_correct(batch_id, &task.external_id)
        .await?
        .ok_or(crate::error::AppError::NotFound)?;
    let versions = store
        .task_versions(task_id)
        .await?
        .into_iter()
        .map(|v| TaskVersionView {
            version: v.version,
            prompt: serde_json::from_str(&v.prompt).unwrap_or(serde_json::Value::String(v.prompt)),
            response_a: v.response_a,
            response_b: v.response_b,
            model_a: v.model_a,
            model_b: v.model_b,
            replaced_at: v.replaced_at,
            replaced_by: v.replaced_by,
        })
        .collect();
    Ok(Json(TaskRatings {
        batch_id,
        batch: summary.batch.name,
        external_id: task.external_id,
        model_a: task.model_a,
        model_b: task.model_b,
        version: now.version,
        withdrawn: now.withdrawn_at.is_some(),
        versions,
        ratings,
        judges,
    }))
}

/// Withdraws a task or puts it back, and/or corrects its content (a lead of the batch).
/// Withdrawn, it is served to no one and leaves every metric and aggregate. Corrected,
/// it is a new version: its ratings so far are kept but stale (out of the metrics), the
/// assignments held on it end, and it is served again, to raters who have not had
/// it, until it has its overlap on the new version. Gold tasks are changed by neither.
#[utoipa::path(patch, path = "/api/v1/batches/{id}/tasks/{external_id}", tag = "review",
    request_body = crate::services::corrections::TaskPatch,
    params(("id" = Uuid, Path, description = "batch id"),
        ("external_id" = String, Path, description = "the task's external id, percent-encoded")),
    responses((status = 200, body = crate::services::corrections::TaskState),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn change_task(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
    ApiJson(patch): ApiJson<crate::services::corrections::TaskPatch>,
) -> AppResult<Json<crate::services::corrections::TaskState>> {
    let batch = crate::services::batches::led(state.store(), batch_id, &lead).await?;
    let changed = crate::services::corrections::change_task(
        state.store(),
        &batch,
        &external_id,
        &patch,
        &lead,
    )
    .await?;
    Ok(Json(changed))
}

/// A task's final answer, as a lead of the batch recorded it (404 when none is).
#[utoipa::path(get, path = "/api/v1/batches/{id}/tasks/{external_id}/final", tag = "review",
    params(("id" = Uuid, Path, description = "batch id"),
        ("external_id" = String, Path, description = "the task's external id, percent-encoded")),
    responses((status = 200, body = crate::services::adjudication::FinalView),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn final_answer(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
) -> AppResult<Json<crate::services::adjudication::FinalView>> {
    let batch = crate::services::batches::led(state.store(), batch_id, &lead).await?;
    let found = crate::services::adjudication::read(state.store(), &batch, &external_id).await?;
    Ok(Json(found))
}

/// Records a task's final answer (a lead of the batch): every answer the rubric asks, in
/// the task's own A/B order, checked as a rating's are; it replaces any recorded before.
/// The final dataset (`export?final=true`) gives it for the task.
#[utoipa::path(put, path = "/api/v1/batches/{id}/tasks/{external_id}/final", tag = "review",
    request_body = crate::services::adjudication::FinalRequest,
    params(("id" = Uuid, Path, description = "batch id"),
        ("external_id" = String, Path, description = "the task's external id, percent-encoded")),
    responses((status = 200, body = crate::services::adjudication::FinalView),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn record_final(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
    ApiJson(request): ApiJson<crate::services::adjudication::FinalRequest>,
) -> AppResult<Json<crate::services::adjudication::FinalView>> {
    let batch = crate::services::batches::led(state.store(), batch_id, &lead).await?;
    let recorded =
        crate::services::adjudication::record(state.store(), &batch, &external_id, request, &lead)
            .await?;
    Ok(Json(recorded))
}

/// Withdraws a task's final answer (a lead of the batch): the final dataset goes back to
/// the aggregate of its ratings.
#[utoipa::path(delete, path = "/api/v1/batches/{id}/tasks/{external_id}/final", tag = "review",
    params(("id" = Uuid, Path, description = "batch id"),
        ("external_id" = String, Path, description = "the task's external id, percent-encoded")),
    responses((status = 204, description = "withdrawn"), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn remove_final(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
) -> AppResult<axum::http::StatusCode> {
    let batch = crate::services::batches::led(state.store(), batch_id, &lead).await?;
    crate::services::adjudication::remove(state.store(), &batch, &external_id, &lead).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}
