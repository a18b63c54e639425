//! `/api/v1/ratings`: the caller's own ratings; read, revise and trace one rating.

use axum::Json;
use axum::extract::State;
use serde_json::Value;
use uuid::Uuid;

use super::{ChangeView, HistoryItem, HistoryQuery};
use crate::auth::CurrentUser;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::services::rating::{RatingView, access, view};
use crate::services::revision;
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::web::openapi::ApiRouter;
use crate::web::paging::Paged;
use crate::web::{ApiJson, ApiPath, ApiQuery};
use utoipa_axum::routes;
use verdict_core::submission::RevisionRequest;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(read, revise))
        .routes(routes!(history))
}

/// The caller's own ratings, drafts included, newest first (by when each was started),
/// a page at a time.
#[utoipa::path(get, path = "/api/v1/ratings", tag = "rating", params(HistoryQuery),
    responses((status = 200, body = Paged<HistoryItem>), (status = 422, body = ErrorBody)))]
pub async fn list(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HistoryQuery>,
) -> AppResult<Json<Paged<HistoryItem>>> {
    let (page, _) = super::history(&state, &user, &query).await?;
    Ok(Json(Paged::new(
        page.map(HistoryItem::from),
        ListKind::History,
    )))
}

/// Every change to a rating, oldest first (its rater, or a lead of its batch). Its rater
/// gets the answers as they were shown; a lead gets them in canonical orientation.
#[utoipa::path(get, path = "/api/v1/ratings/{id}/history", tag = "rating",
    params(("id" = Uuid, Path, description = "rating id")),
    responses((status = 200, body = [ChangeView]), (status = 404, body = ErrorBody)))]
pub async fn history(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<Vec<ChangeView>>> {
    let access = access(state.store(), id, &user).await?;
    Ok(Json(super::changes(&state, &access).await?))
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
    let access = access(state.store(), id, &user).await?;
    Ok(Json(view(state.store(), &access).await?))
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
    let before = access(state.store(), id, &user).await?;
    // Who may revise it and whether it may change are answered before its body is read.
    revision::revisable(&before)?;
    let request = RevisionRequest::try_from(answers).map_err(AppError::invalid)?;
    revision::revise(state.store(), &before, &user, request).await?;
    let after = access(state.store(), id, &user).await?;
    Ok(Json(view(state.store(), &after).await?))
}
