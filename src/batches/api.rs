//! `/api/v1/batches`: upload, list, read and change batches.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::Serialize;
use uuid::Uuid;

use super::gold::{GoldRequest, GoldSettings};
use super::{BatchView, SettingsRequest, UploadParams, view, visible};
use crate::auth::{CurrentUser, RequireAdmin, RequireLead};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::services::batches;
use crate::state::AppState;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiJson, ApiPath, ApiQuery};
use utoipa_axum::routes;
use verdict_core::import::Format;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(upload, list))
        .routes(routes!(one, update, delete))
        .routes(routes!(restore))
        .routes(routes!(deleted))
        .routes(routes!(gold, set_gold))
        .routes(routes!(qualification))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UploadResult {
    pub id: Uuid,
    pub name: String,
    /// Tasks added by this upload.
    pub created: u64,
    /// Tasks already in the batch with the same content, left as they were.
    pub unchanged: u64,
}

/// Uploads tasks into a new or existing batch (admin). The body is JSON Lines
/// (`application/x-ndjson`), a JSON array (`application/json`) or CSV (`text/csv`).
/// Every record is checked first; if any is bad, nothing is stored.
#[utoipa::path(post, path = "/api/v1/batches", tag = "batches", params(UploadParams),
    request_body(description = "the tasks, one per record: JSON Lines (application/x-ndjson), a JSON \
                       array (application/json) or CSV (text/csv)",
        content((String = "application/x-ndjson"), (Vec<Object> = "application/json"),
            (String = "text/csv"))),
    responses((status = 201, body = UploadResult), (status = 403, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 422, description = "bad records (errors by line) or bad parameters", body = ErrorBody)))]
pub async fn upload(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<UploadParams>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> AppResult<(StatusCode, Json<UploadResult>)> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let format = Format::from_content_type(content_type).ok_or_else(|| {
        AppError::UnsupportedMediaType(
            "send tasks as application/x-ndjson (JSON Lines), application/json (an array) or text/csv".into(),
        )
    })?;
    let new = batches::new_batch(state.store(), &params, Some(&admin)).await?;
    let bytes = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => crate::web::too_large(&state),
        _ => AppError::BadRequest(e.body_text()),
    })?;
    let imported = batches::import(
        state.store(),
        new,
        format,
        bytes,
        |_| {},
        Some((&admin).into()),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(UploadResult {
            id: imported.batch.id,
            name: imported.batch.name,
            created: imported.created,
            unchanged: imported.unchanged,
        }),
    ))
}

/// Batches the caller may see, with progress (raters: the open batches opened to them).
#[utoipa::path(get, path = "/api/v1/batches", tag = "batches",
    responses((status = 200, body = [BatchView]), (status = 401, body = ErrorBody)))]
pub async fn list(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
) -> AppResult<Json<Vec<BatchView>>> {
    let mut views = Vec::new();
    for summary in state.store().visible_batches(user.id, user.role).await? {
        views.push(view(&state, summary, &user).await?);
    }
    Ok(Json(views))
}

/// One batch with its progress.
#[utoipa::path(get, path = "/api/v1/batches/{id}", tag = "batches",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = BatchView), (status = 404, body = ErrorBody)))]
pub async fn one(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<BatchView>> {
    let summary = visible(&state, id, &user).await?;
    let stalled = if user.can_lead() {
        Some(crate::services::stalls::stalled(state.store(), &summary.batch).await?)
    } else {
        None
    };
    let mut one = view(&state, summary, &user).await?;
    one.stalled = stalled;
    Ok(Json(one))
}

/// Changes a batch's settings (admin).
#[utoipa::path(patch, path = "/api/v1/batches/{id}", tag = "batches", request_body = SettingsRequest,
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = BatchView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn update(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(request): ApiJson<SettingsRequest>,
) -> AppResult<Json<BatchView>> {
    batches::settings::update(state.store(), id, request.into(), Some(&admin)).await?;
    let summary = visible(&state, id, &admin).await?;
    Ok(Json(view(&state, summary, &admin).await?))
}

/// A deleted batch.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeletedView {
    pub id: Uuid,
    pub name: String,
    pub deleted_at: chrono::DateTime<chrono::Utc>,
    /// Who deleted it (absent: the command line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_by: Option<String>,
    /// Until when `POST /api/v1/batches/{id}/restore` brings it back; then it is purged
    /// with its tasks and ratings (`--deleted-retention-days`).
    pub restorable_until: chrono::DateTime<chrono::Utc>,
    pub tasks: i64,
    /// Its finished ratings.
    pub ratings: i64,
}

/// What a deletion did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeletedBatch {
    pub id: Uuid,
    pub name: String,
    /// Assignments raters held on it, now ended: submitting one gets 410.
    pub ended_assignments: u64,
    pub restorable_until: chrono::DateTime<chrono::Utc>,
}

/// Deletes a batch (admin): it leaves every list, page and metric at once and its held
/// assignments end. It can be restored until `restorable_until`; then it is purged with
/// its tasks and ratings.
#[utoipa::path(delete, path = "/api/v1/batches/{id}", tag = "batches",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = DeletedBatch), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn delete(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<DeletedBatch>> {
    let deletion =
        crate::services::corrections::delete_batch(state.store(), id, None, &admin).await?;
    let retention = state.config().deleted_retention;
    Ok(Json(DeletedBatch {
        id,
        name: deletion.name,
        ended_assignments: deletion.ended,
        restorable_until: retention.purge_at(chrono::Utc::now()),
    }))
}

/// Restores a deleted batch (admin), while its retention lasts: it is back as it was,
/// its tasks, ratings and settings with it (held assignments stay ended).
#[utoipa::path(post, path = "/api/v1/batches/{id}/restore", tag = "batches",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = BatchView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn restore(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<BatchView>> {
    let retention = state.config().deleted_retention;
    crate::services::corrections::restore_batch(state.store(), id, retention, &admin).await?;
    let summary = visible(&state, id, &admin).await?;
    Ok(Json(view(&state, summary, &admin).await?))
}

/// The deleted batches (admin), most recently deleted first, each with when it will be
/// purged.
#[utoipa::path(get, path = "/api/v1/batches/deleted", tag = "batches",
    responses((status = 200, body = [DeletedView]), (status = 403, body = ErrorBody)))]
pub async fn deleted(
    RequireAdmin(_admin): RequireAdmin,
    State(state): State<AppState>,
) -> AppResult<Json<Vec<DeletedView>>> {
    let retention = state.config().deleted_retention;
    let deleted = crate::services::corrections::deleted(state.store(), retention).await?;
    Ok(Json(
        deleted
            .into_iter()
            .map(|(b, restorable_until)| DeletedView {
                id: b.id,
                name: b.name,
                deleted_at: b.deleted_at,
                deleted_by: b.deleted_by,
                restorable_until,
                tasks: b.tasks,
                ratings: b.ratings,
            })
            .collect(),
    ))
}

/// The batch's gold settings (a lead of the batch): how often gold tasks are mixed in,
/// and the accuracy below which a rater's new ratings go to review first.
#[utoipa::path(get, path = "/api/v1/batches/{id}/gold", tag = "batches",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = GoldSettings), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn gold(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<GoldSettings>> {
    Ok(Json(super::gold::settings(&state, id, &lead).await?))
}

/// The batch's qualification: for a rater of it, where they stand (and, when the batch
/// reveals them, the expected answers of each try that is over); for a lead of it,
/// every rater's standing. `qualification` is `null` when the batch asks for none.
#[utoipa::path(get, path = "/api/v1/batches/{id}/qualification", tag = "batches",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = super::qualification::QualificationView),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn qualification(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<super::qualification::QualificationView>> {
    Ok(Json(super::qualification::view(&state, id, &user).await?))
}

/// Changes the batch's gold settings (a lead of the batch); an absent field is kept.
#[utoipa::path(patch, path = "/api/v1/batches/{id}/gold", tag = "batches", request_body = GoldRequest,
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = GoldSettings), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn set_gold(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(request): ApiJson<GoldRequest>,
) -> AppResult<Json<GoldSettings>> {
    Ok(Json(super::gold::set(&state, id, &lead, &request).await?))
}
