//! `/api/v1/webhooks`: subscribe a URL to events, list and delete subscriptions, read
//! each one's deliveries with every attempt, and send a delivery again.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use uuid::Uuid;

use super::{CreatedWebhook, WebhookView};
use crate::auth::RequireLead;
use crate::error::{AppResult, ErrorBody};
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::store::webhooks::Delivery;
use crate::web::openapi::ApiRouter;
use crate::web::paging::Paged;
use crate::web::{ApiJson, ApiPath, ApiQuery};
use utoipa_axum::routes;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(delete))
        .routes(routes!(deliveries))
        .routes(routes!(redeliver))
}

/// A new subscription.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookRequest {
    /// Where events are POSTed: http:// or https://, at most 2000 characters, and a
    /// host the server may reach (the judges' address rules).
    pub url: String,
    /// Any of `batch.completed`, `batch.reopened`, `rating.submitted`, `rating.revised`,
    /// `rating.reviewed`, `judge_run.finished`, `task.escalated`, each once.
    pub events: Vec<String>,
    /// Only this batch's events (required for leads); absent: every batch's.
    pub batch: Option<Uuid>,
}

/// Subscribes a URL to events (admins; leads for a batch they lead). The answer carries
/// the signing secret, `whsec_` and base64, shown this once: receivers check each
/// message's `webhook-signature` with it.
#[utoipa::path(post, path = "/api/v1/webhooks", tag = "webhooks",
    request_body = WebhookRequest,
    responses((status = 201, body = CreatedWebhook), (status = 403, body = ErrorBody),
        (status = 409, description = "the server has no VERDICT_SECRET_KEY to seal the secret", body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn create(
    RequireLead(user): RequireLead,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<WebhookRequest>,
) -> AppResult<(StatusCode, Json<CreatedWebhook>)> {
    let created = super::create(&state, &user, &body.url, &body.events, body.batch).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// The subscriptions the caller manages: every one for an admin, those of the batches
/// they lead for a lead. Secrets are never shown.
#[utoipa::path(get, path = "/api/v1/webhooks", tag = "webhooks",
    responses((status = 200, body = [WebhookView]), (status = 403, body = ErrorBody)))]
pub async fn list(
    RequireLead(user): RequireLead,
    State(state): State<AppState>,
) -> AppResult<Json<Vec<WebhookView>>> {
    let webhooks = super::visible(&state, &user).await?;
    Ok(Json(webhooks.into_iter().map(WebhookView::from).collect()))
}

/// Deletes a subscription; its deliveries, sent or not, go with it.
#[utoipa::path(delete, path = "/api/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = Uuid, Path, description = "webhook id")),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    RequireLead(user): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<StatusCode> {
    super::delete(&state, &user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Which page of deliveries to read.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// `next_cursor` of the previous page; absent for the newest.
    pub cursor: Option<String>,
    /// Deliveries per page, newest first (default 50, at most 200).
    pub limit: Option<i64>,
}

/// A subscription's deliveries, newest first, each with its state, the body sent and
/// every attempt (when, the receiver's status or why there was none, how long it took).
#[utoipa::path(get, path = "/api/v1/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = Uuid, Path, description = "webhook id"), DeliveriesQuery),
    responses((status = 200, body = Paged<Delivery>), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn deliveries(
    RequireLead(user): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> AppResult<Json<Paged<Delivery>>> {
    let (_, page) =
        super::deliveries(&state, &user, id, query.cursor.as_deref(), query.limit).await?;
    Ok(Json(Paged::new(page, ListKind::Deliveries)))
}

/// Sends a delivery again, now, with a fresh set of retries (whatever its state: a
/// receiver that lost a message can ask for it once more). 202: it is queued.
#[utoipa::path(post, path = "/api/v1/webhooks/{id}/deliveries/{event_id}/redeliver", tag = "webhooks",
    params(("id" = Uuid, Path, description = "webhook id"),
        ("event_id" = Uuid, Path, description = "the delivery's event id (webhook-id)")),
    responses((status = 202, description = "queued to be sent again"),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn redeliver(
    RequireLead(user): RequireLead,
    State(state): State<AppState>,
    ApiPath((id, event_id)): ApiPath<(Uuid, Uuid)>,
) -> AppResult<StatusCode> {
    super::redeliver(&state, &user, id, event_id).await?;
    Ok(StatusCode::ACCEPTED)
}
