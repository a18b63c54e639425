//! `/api/v1/batches/{id}/next` and `/api/v1/assignments/{id}/...`: a rater's work.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::TaskView;
use crate::auth::{CurrentUser, RequireLead};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::services::assignment::{self as work, owned};
use crate::state::AppState;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiJson, ApiPath};
use utoipa_axum::routes;
use verdict_core::lifecycle::AssignmentState;
use verdict_core::rating::Rating;
use verdict_core::rubric::{Classification, Rubric};
use verdict_core::submission::RatingRequest;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(next))
        .routes(routes!(draft))
        .routes(routes!(submit))
        .routes(routes!(skip))
        .routes(routes!(out_of_scope))
        .routes(routes!(release))
}

/// An assignment as handed to its rater.
#[derive(Serialize, utoipa::ToSchema)]
pub struct NextTask {
    pub assignment_id: Uuid,
    pub task: TaskView,
    /// The rubric's questions and rules.
    #[schema(value_type = Object)]
    pub rubric: Arc<Rubric>,
    /// The batch's conversation-classification questions.
    pub classifications: Vec<Classification>,
    /// The saved draft, in the orientation shown, or `null`.
    #[schema(value_type = Option<Object>)]
    pub draft: Option<Value>,
    /// The active time already spent, in seconds.
    pub time_spent_s: i32,
    pub lease_expires_at: chrono::DateTime<chrono::Utc>,
}

/// The caller's open assignment in the batch, or a new one (200); 204 when nothing is
/// left for them. Calling again before finishing returns the same assignment. In a batch
/// that asks for a qualification, a rater who has not passed it gets its gold tasks only,
/// and 409 once every try failed or no gold task is left to try with.
#[utoipa::path(post, path = "/api/v1/batches/{id}/next", tag = "rating",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = NextTask), (status = 204, description = "nothing left for you"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "the batch's qualification was not passed, or no gold task is left to take it with")))]
pub async fn next(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let Some(assignment) = work::next(state.store(), batch_id, &user).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let (owned, task, draft) = work::owned_form(state.store(), assignment.id, &user).await?;
    let (time_spent_s, draft) = match draft {
        Some(draft) => (
            draft.time_spent_s,
            Some(Value::Object(draft.answers.into_map())),
        ),
        None => (0, None),
    };
    Ok(Json(NextTask {
        assignment_id: assignment.id,
        task: TaskView::shown(&task, owned.rubric.subject, assignment.swapped),
        rubric: owned.rubric,
        classifications: owned.batch.classifications.clone(),
        draft,
        time_spent_s,
        lease_expires_at: assignment.lease_expires_at,
    })
    .into_response())
}

/// What an assignment's change produced.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RatingRef {
    pub rating_id: Uuid,
    pub outcome: verdict_core::lifecycle::Outcome,
    /// `draft` or `submitted`.
    pub status: verdict_core::lifecycle::Status,
    pub version: i32,
}

impl From<Rating> for RatingRef {
    fn from(r: Rating) -> Self {
        Self {
            rating_id: r.id,
            outcome: r.outcome,
            status: r.status,
            version: r.version,
        }
    }
}

/// Saves a draft (answers in the orientation shown; only types are checked), with the
/// code runs recorded so far under `evidence` if any.
#[utoipa::path(put, path = "/api/v1/assignments/{id}/draft", tag = "rating",
    params(("id" = Uuid, Path, description = "assignment id")), request_body = Object,
    responses((status = 200, body = RatingRef), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn draft(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(answers): ApiJson<Value>,
) -> AppResult<Json<RatingRef>> {
    let owned = owned(state.store(), id, &user).await?;
    let request = RatingRequest::try_from(answers).map_err(AppError::invalid)?;
    Ok(Json(
        work::save_draft(state.store(), &owned, &request)
            .await?
            .into(),
    ))
}

/// Submits the rating; 422 with `fields` naming every broken rule. Answers that meet
/// consistency warnings of the rubric are refused with 409 and `warnings: [{id, message}]`
/// (nothing stored) until sent again with those ids in `confirmed_warnings`. `evidence`
/// carries the code runs made in the browser.
#[utoipa::path(post, path = "/api/v1/assignments/{id}/submit", tag = "rating",
    params(("id" = Uuid, Path, description = "assignment id")), request_body = Object,
    responses((status = 200, body = RatingRef), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn submit(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(answers): ApiJson<Value>,
) -> AppResult<Json<RatingRef>> {
    let owned = owned(state.store(), id, &user).await?;
    let request = RatingRequest::try_from(answers).map_err(AppError::invalid)?;
    Ok(Json(
        work::submit(state.store(), &owned, &user, &request)
            .await?
            .into(),
    ))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SkipRequest {
    /// One of the rubric's skip reasons, e.g. `unfamiliar`, `cannot_assess`, `too_long`
    /// or `other` for blackhat.
    #[schema(schema_with = crate::web::openapi::skip_reasons)]
    reason: String,
    #[schema(max_length = 5000)]
    note: Option<String>,
    /// Active seconds spent on the task before skipping it (kept with the skip; without
    /// it, what the draft recorded).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 604800)]
    time_spent_s: Option<Value>,
}

/// Skips the task: it goes back to the pool for others and is never offered to the
/// caller again.
#[utoipa::path(post, path = "/api/v1/assignments/{id}/skip", tag = "rating",
    params(("id" = Uuid, Path, description = "assignment id")), request_body = SkipRequest,
    responses((status = 200, body = RatingRef), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn skip(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(request): ApiJson<SkipRequest>,
) -> AppResult<Json<RatingRef>> {
    let owned = owned(state.store(), id, &user).await?;
    Ok(Json(
        work::skip(
            state.store(),
            &owned,
            &user,
            &request.reason,
            request.note.as_deref(),
            request.time_spent_s.as_ref(),
        )
        .await?
        .into(),
    ))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutOfScopeRequest {
    /// Why the prompt is out of scope (required; at least the batch's minimum length,
    /// 20 characters unless the batch says otherwise).
    #[schema(min_length = 1, max_length = 5000, pattern = r"\S")]
    explanation: Option<String>,
    /// Any answers given so far, in the orientation shown.
    #[schema(value_type = Option<Object>)]
    answers: Option<Value>,
    /// Active seconds spent on the task before marking it (kept with the mark).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 604800)]
    time_spent_s: Option<Value>,
}

/// Marks the prompt out of scope: the answers the rubric sets for out of scope are set
/// (blackhat: correctness `cannot_assess` for both responses), and the rating is left
/// out of every metric.
#[utoipa::path(post, path = "/api/v1/assignments/{id}/out-of-scope", tag = "rating",
    params(("id" = Uuid, Path, description = "assignment id")), request_body = OutOfScopeRequest,
    responses((status = 200, body = RatingRef), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn out_of_scope(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(request): ApiJson<OutOfScopeRequest>,
) -> AppResult<Json<RatingRef>> {
    let owned = owned(state.store(), id, &user).await?;
    let mut answers = match request.answers {
        Some(answers) => RatingRequest::try_from(answers).map_err(AppError::invalid)?,
        None => RatingRequest::default(),
    };
    // The time travels with the answers, where a submission carries it too.
    if request.time_spent_s.is_some() {
        answers.time_spent = request.time_spent_s;
    }
    let explanation = request.explanation.unwrap_or_default();
    Ok(Json(
        work::out_of_scope(state.store(), &owned, &user, &explanation, answers)
            .await?
            .into(),
    ))
}

/// An assignment as a lead sees it after releasing it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Released {
    pub assignment_id: Uuid,
    /// `expired`: the task went back to the pool.
    pub state: AssignmentState,
}

/// Ends a rater's open assignment so its task goes back to the pool for other raters
/// (a lead of the batch, or an admin). A draft stays with the rater, who is told their
/// time ran out if they go on.
#[utoipa::path(post, path = "/api/v1/assignments/{id}/release", tag = "review",
    params(("id" = Uuid, Path, description = "assignment id")),
    responses((status = 200, body = Released), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn release(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<Released>> {
    let assignment = work::release(state.store(), id, &lead).await?;
    Ok(Json(Released {
        assignment_id: assignment.id,
        state: assignment.state,
    }))
}
