//! The audit log of admin and lead actions (user changes, uploads, settings, reviews,
//! exports, tokens): recorded after each action, read by admins at `/admin/audit` and
//! `GET /api/v1/audit`.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::ApiRouter;
use crate::auth::RequireAdmin;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::state::AppState;
use crate::store::Store;
use crate::store::audit::AuditEntry;
use crate::store::users::User;
use crate::web::{ApiQuery, Layout, PageUser, render};
use utoipa_axum::routes;

/// The most entries one request returns.
const MAX_ENTRIES: i64 = 1000;
const DEFAULT_ENTRIES: i64 = 200;

pub fn api_router() -> ApiRouter {
    ApiRouter::new().routes(routes!(list))
}

pub fn page_router() -> Router<AppState> {
    Router::new().route("/admin/audit", get(page))
}

/// Who did something the audit log records.
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    /// A signed-in account (or its API token).
    User(&'a User),
    /// The command line, run by whoever holds the database.
    Cli,
}

impl<'a> From<&'a User> for Actor<'a> {
    fn from(user: &'a User) -> Self {
        Self::User(user)
    }
}

/// Records that `actor` did `action` to `target`. The action has already happened, so a
/// failure to record it is logged rather than turned into an error for the caller.
pub async fn record<'a>(
    state: &AppState,
    actor: impl Into<Actor<'a>>,
    action: &str,
    target: &str,
    detail: Value,
) {
    record_in(state.store(), actor.into(), action, target, detail).await;
}

/// [`record`] for callers without a web state (the command line).
pub async fn record_in(store: &Store, actor: Actor<'_>, action: &str, target: &str, detail: Value) {
    let (id, name, who) = match actor {
        Actor::User(user) => (Some(user.id), None, user.username.as_str()),
        Actor::Cli => (None, Some("cli"), "cli"),
    };
    if let Err(err) = store.record_audit(id, name, action, target, &detail).await {
        tracing::error!(%err, actor = who, action, target, "audit entry not recorded");
    }
}

/// One audit entry.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuditView {
    pub at: DateTime<Utc>,
    /// The username of who acted, `cli` for the command line (`null` once the account
    /// is gone).
    pub actor: Option<String>,
    pub action: String,
    pub target: Option<String>,
    pub detail: Value,
}

impl From<AuditEntry> for AuditView {
    fn from(e: AuditEntry) -> Self {
        Self {
            at: e.at,
            actor: e.actor,
            action: e.action,
            target: e.target,
            detail: e.detail.0,
        }
    }
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this action (`user.create`, `batch.upload`, `rating.review`, ...).
    pub action: Option<String>,
    /// How many entries, newest first (default 200, at most 1000).
    pub limit: Option<i64>,
}

async fn entries(state: &AppState, query: &AuditQuery) -> AppResult<Vec<AuditView>> {
    let limit = query.limit.unwrap_or(DEFAULT_ENTRIES);
    if !(1..=MAX_ENTRIES).contains(&limit) {
        return Err(AppError::field(
            "limit",
            format!("must be between 1 and {MAX_ENTRIES}"),
        ));
    }
    let found = state
        .store()
        .audit_entries(query.action.as_deref(), limit)
        .await?;
    Ok(found.into_iter().map(AuditView::from).collect())
}

/// What admins and leads did, newest first (admin).
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditQuery),
    responses((status = 200, body = [AuditView]), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    _: RequireAdmin,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> AppResult<Json<Vec<AuditView>>> {
    Ok(Json(entries(&state, &query).await?))
}

#[derive(Template)]
#[template(path = "audit/log.html")]
struct AuditPage {
    layout: Layout,
    entries: Vec<AuditView>,
}

impl AuditPage {
    fn detail(entry: &AuditView) -> String {
        match &entry.detail {
            Value::Object(map) if map.is_empty() => String::new(),
            other => other.to_string(),
        }
    }
}

async fn page(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
) -> AppResult<Response> {
    let entries = entries(&state, &AuditQuery::default()).await?;
    let page = AuditPage {
        layout: page_user.layout,
        entries,
    };
    Ok(render(&page)?.into_response())
}
