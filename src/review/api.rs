//! `POST /api/v1/ratings/{id}/review`.

use axum::Json;
use axum::extract::State;
use uuid::Uuid;

use super::{Decision, decide, reviewable};
use crate::api::ApiRouter;
use crate::auth::RequireLead;
use crate::error::{AppResult, ErrorBody};
use crate::ratings::{RatingView, view};
use crate::state::AppState;
use crate::web::{ApiJson, ApiPath};
use utoipa_axum::routes;

pub fn router() -> ApiRouter {
    ApiRouter::new().routes(routes!(review))
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
    decide(&state, &access, &lead, &decision).await?;
    let after = reviewable(&state, id, &lead).await?;
    Ok(Json(view(&state, &after).await?))
}
