//! Webhooks: admins (and leads, for the batches they lead) subscribe a URL to events;
//! each event is written to an outbox in the transaction of its change (the store's
//! `webhooks` module) and sent, signed the Standard Webhooks way, by a background worker
//! ([`deliver`]) that retries with backoff and logs every attempt.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::page::{ListKind, Page};
use crate::store::webhooks::{Delivery, Webhook};
use verdict_core::role::Role;
use verdict_core::user::User;
use verdict_core::webhook::{EventKind, Subscription};

pub mod api;
pub mod deliver;
pub mod pages;

/// The prefix of a signing secret, as Standard Webhooks writes one.
pub const SECRET_PREFIX: &str = "whsec_";

/// Random bytes in a signing secret.
const SECRET_BYTES: usize = 32;

/// A subscription as the API shows it: never its secret.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WebhookView {
    pub id: Uuid,
    pub url: String,
    #[schema(value_type = Vec<String>)]
    pub events: Vec<EventKind>,
    /// Only this batch's events; `null`: every batch's.
    pub batch: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    /// When it was stopped because its owner lost the right to its events (deactivated,
    /// no longer leading its batch, no longer an admin); absent while it is sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<DateTime<Utc>>,
    /// Why it was stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_why: Option<String>,
}

impl From<Webhook> for WebhookView {
    fn from(w: Webhook) -> Self {
        Self {
            id: w.id,
            url: w.url,
            events: w.events.0,
            batch: w.batch_id,
            created_at: w.created_at,
            stopped_at: w.stopped_at,
            stopped_why: w.stopped_why,
        }
    }
}

/// A new subscription, with its signing secret: shown this once.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// `whsec_` and the base64 of 32 random bytes: the key receivers check signatures
    /// with. It is stored sealed and never shown again.
    pub secret: String,
}

/// A fresh signing secret.
fn new_secret() -> String {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    let mut bytes = [0u8; SECRET_BYTES];
    OsRng.fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// Subscribes `url` to `events`, of one batch or (admins only) of all. Leads subscribe
/// only to batches they lead; the URL must be one the server may send to (public, or an
/// internal host `--webhook-allow-hosts` allows); the secret is sealed with the server's
/// key.
pub async fn create(
    state: &AppState,
    user: &User,
    url: &str,
    events: &[String],
    batch: Option<Uuid>,
) -> AppResult<CreatedWebhook> {
    let subscription = Subscription::check(url, events).map_err(AppError::invalid)?;
    let parsed = reqwest::Url::parse(&subscription.url)
        .map_err(|e| AppError::field("url", format!("is not a URL: {e}")))?;
    state
        .config()
        .webhooks
        .endpoints
        .check_url(&parsed)
        .map_err(|why| AppError::field("url", why))?;
    match batch {
        Some(batch) => {
            crate::services::batches::led(state.store(), batch, user)
                .await
                .map_err(|_| AppError::field("batch", "is not a batch you lead"))?;
        }
        None if user.role != Role::Admin => {
            return Err(AppError::field(
                "batch",
                "is required: leads subscribe to the batches they lead",
            ));
        }
        None => {}
    }
    let (mine, of_batch) = state.store().webhook_counts(user.id, batch).await?;
    let limits = &state.config().webhooks;
    if mine >= limits.max_per_owner {
        return Err(AppError::field(
            "url",
            format!(
                "you have {mine} subscriptions, the most one person may have \
                 (--webhook-max-per-owner); delete one first"
            ),
        ));
    }
    if batch.is_some() && of_batch >= limits.max_per_batch {
        return Err(AppError::field(
            "batch",
            format!(
                "has {of_batch} subscriptions, the most one batch may have \
                 (--webhook-max-per-batch); delete one first"
            ),
        ));
    }
    let Some(key) = state.config().sealing_key.as_ref() else {
        return Err(AppError::Conflict(
            "webhooks need the server's VERDICT_SECRET_KEY to seal their signing secrets: \
             set it (the same on every instance) and restart"
                .into(),
        ));
    };
    let secret = new_secret();
    let webhook = Webhook {
        id: Uuid::now_v7(),
        url: subscription.url,
        events: crate::store::webhooks::EventList(subscription.events),
        batch_id: batch,
        secret_sealed: key.seal(&secret),
        created_by: Some(user.id),
        created_at: Utc::now(),
        stopped_at: None,
        stopped_why: None,
    };
    state.store().create_webhook(&webhook).await?;
    crate::services::audit::record(
        state.store(),
        user,
        "webhook.create",
        &webhook.url,
        serde_json::json!({"webhook_id": webhook.id, "url": webhook.url, "events": webhook.events.0,
                           "batch_id": webhook.batch_id}),
    )
    .await;
    Ok(CreatedWebhook {
        webhook: webhook.into(),
        secret,
    })
}

/// Whether `user` may see and manage `webhook`: admins every one, leads those of the
/// batches they lead.
async fn may_manage(state: &AppState, user: &User, webhook: &Webhook) -> AppResult<bool> {
    Ok(match (user.role, webhook.batch_id) {
        (Role::Admin, _) => true,
        (Role::Lead, Some(batch)) => crate::access::can_review(state.store(), batch, user).await?,
        _ => false,
    })
}

/// Whether the owner of `webhook` may still receive its events, asked before every
/// delivery: their account is active and they may still manage it (admins every
/// subscription; leads those of the batches they lead). Why not, in words for admins.
pub async fn owner_may_receive(
    state: &AppState,
    webhook: &Webhook,
) -> AppResult<Result<(), String>> {
    if let Some(why) = &webhook.stopped_why {
        return Ok(Err(why.clone()));
    }
    let owner = match webhook.created_by {
        Some(id) => state.store().user_by_id(id).await?,
        None => None,
    };
    let Some(owner) = owner else {
        return Ok(Err("its owner's account was removed".into()));
    };
    if !owner.active {
        return Ok(Err(format!(
            "its owner, {}, was deactivated",
            owner.username
        )));
    }
    if may_manage(state, &owner, webhook).await? {
        return Ok(Ok(()));
    }
    Ok(Err(match webhook.batch_id {
        None => format!("its owner, {}, is no longer an admin", owner.username),
        Some(_) => format!("its owner, {}, no longer leads its batch", owner.username),
    }))
}

/// The subscriptions `user` may manage.
pub async fn visible(state: &AppState, user: &User) -> AppResult<Vec<Webhook>> {
    let mut mine = Vec::new();
    for webhook in state.store().webhooks().await? {
        if may_manage(state, user, &webhook).await? {
            mine.push(webhook);
        }
    }
    Ok(mine)
}

/// The subscription `id`, if `user` may manage it (404 otherwise, as everywhere).
pub async fn managed(state: &AppState, user: &User, id: Uuid) -> AppResult<Webhook> {
    match state.store().webhook(id).await? {
        Some(webhook) if may_manage(state, user, &webhook).await? => Ok(webhook),
        _ => Err(AppError::NotFound),
    }
}

/// Deletes a subscription and its deliveries.
pub async fn delete(state: &AppState, user: &User, id: Uuid) -> AppResult<()> {
    let webhook = managed(state, user, id).await?;
    if !state.store().delete_webhook(webhook.id).await? {
        return Err(AppError::NotFound);
    }
    crate::services::audit::record(
        state.store(),
        user,
        "webhook.delete",
        &webhook.url,
        serde_json::json!({"webhook_id": webhook.id, "url": webhook.url}),
    )
    .await;
    Ok(())
}

/// A page of the deliveries of subscription `id` (which `user` must manage), with the
/// subscription: the cursor and length checked as every paged list's are.
pub async fn deliveries(
    state: &AppState,
    user: &User,
    id: Uuid,
    cursor: Option<&str>,
    limit: Option<i64>,
) -> AppResult<(Webhook, Page<Delivery>)> {
    let webhook = managed(state, user, id).await?;
    let (cursor, limit) = crate::web::paging::params(ListKind::Deliveries, cursor, limit)?;
    let page = state.store().deliveries(webhook.id, cursor, limit).await?;
    Ok((webhook, page))
}

/// Queues a delivery of subscription `id` (which `user` must manage) to be sent again.
pub async fn redeliver(state: &AppState, user: &User, id: Uuid, event_id: Uuid) -> AppResult<()> {
    let webhook = managed(state, user, id).await?;
    if !state.store().redeliver(webhook.id, event_id).await? {
        return Err(AppError::NotFound);
    }
    Ok(())
}
