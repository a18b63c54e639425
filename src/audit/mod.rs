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

use crate::auth::PageUser;
use crate::auth::RequireAdmin;
use crate::error::{AppResult, ErrorBody};
use crate::state::AppState;
use crate::store::audit::AuditEntry;
use crate::store::page::{ListKind, Page};
use crate::web::openapi::ApiRouter;
use crate::web::paging::{PageLinks, Paged, params};
use crate::web::{ApiQuery, Layout, render};
use utoipa_axum::routes;

pub mod words;

pub fn api_router() -> ApiRouter {
    ApiRouter::new().routes(routes!(list))
}

pub fn page_router() -> Router<AppState> {
    Router::new().route("/admin/audit", get(page))
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
    /// `next_cursor` of the previous page; absent for the newest entries.
    pub cursor: Option<String>,
    /// Entries per page, newest first (default 50, at most 200).
    pub limit: Option<i64>,
}

async fn entries(state: &AppState, query: &AuditQuery) -> AppResult<(Page<AuditView>, i64)> {
    let (cursor, limit) = params(ListKind::Audit, query.cursor.as_deref(), query.limit)?;
    let action = query.action.as_deref().filter(|a| !a.is_empty());
    let found = state.store().audit_entries(action, cursor, limit).await?;
    Ok((found.map(AuditView::from), limit))
}

/// What admins and leads did, newest first, a page at a time (admin).
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditQuery),
    responses((status = 200, body = Paged<AuditView>), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    _: RequireAdmin,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> AppResult<Json<Paged<AuditView>>> {
    let (page, _) = entries(&state, &query).await?;
    Ok(Json(Paged::new(page, ListKind::Audit)))
}

#[derive(Template)]
#[template(path = "audit/log.html")]
struct AuditPage {
    layout: Layout,
    entries: Vec<AuditView>,
    /// The action shown alone, if one was chosen.
    action: String,
    pager: PageLinks,
}

impl AuditPage {
    fn words(entry: &AuditView) -> words::EntryWords {
        words::words(entry)
    }
}

async fn page(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> AppResult<Response> {
    let (found, limit) = entries(&state, &query).await?;
    let action = query.action.unwrap_or_default();
    let keep: Vec<(&str, String)> = if action.is_empty() {
        vec![]
    } else {
        vec![("action", action.clone())]
    };
    let pager = PageLinks::new(
        "/admin/audit",
        &keep,
        &found,
        ListKind::Audit,
        limit,
        query.cursor.is_none(),
    );
    let page = AuditPage {
        layout: page_user.layout,
        entries: found.items,
        action,
        pager,
    };
    Ok(render(&page)?.into_response())
}
