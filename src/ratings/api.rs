//! `/api/v1/ratings/{id}`: read and revise one rating.

use axum::Json;
use axum::extract::State;
use serde_json::Value;
use uuid::Uuid;

use super::{RatingView, access, view};
use crate::api::ApiRouter;
use crate::auth::CurrentUser;
use crate::error::{AppResult, ErrorBody};
use crate::state::AppState;
use crate::web::{ApiJson, ApiPath};
use utoipa_axum::routes;

pub fn router() -> ApiRouter {
    ApiRouter::new().routes(routes!(read, revise))
}

/// One rating: its rater sees the answers as they were shown, a lead of the batch sees
/// them in canonical orientation with the rater's name.
#[utoipa::path(get, path = "/api/v1/ratings/{id}", tag = "rating",
    params(("id" = Uuid, Path, description = "rating id")),
    responses((status = 200, body = RatingView), (status = 404, body = ErrorBody)))]
pub async fn read(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<RatingView>> {
    let access = access(&state, id, &user).await?;
    Ok(Json(view(&state, &access).await?))
}

/// Revises a rating until a lead accepts it; a returned rating goes back for review.
#[utoipa::path(put, path = "/api/v1/ratings/{id}", tag = "rating", request_body = Object,
    params(("id" = Uuid, Path, description = "rating id")),
    responses((status = 200, body = RatingView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn revise(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(answers): ApiJson<Value>,
) -> AppResult<Json<RatingView>> {
    let before = access(&state, id, &user).await?;
    super::revise(&state, &before, &user, &answers).await?;
    let after = access(&state, id, &user).await?;
    Ok(Json(view(&state, &after).await?))
}
