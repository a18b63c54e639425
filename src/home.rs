//! `GET /`: the landing page, shaped by the visitor's role.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;

use crate::auth::PageUser;
use crate::auth::Role;
use crate::error::AppResult;
use crate::state::AppState;
use crate::store::batches::BatchSummary;
use crate::store::ratings::HistoryRow;
use crate::web::{Layout, render};

pub fn router() -> Router<AppState> {
    Router::new().route("/", get(home))
}

#[derive(Template)]
#[template(path = "home/home.html")]
struct HomePage {
    layout: Layout,
    role: Role,
    /// Batch names link to their lead's page.
    can_lead: bool,
    batches: Vec<BatchSummary>,
    /// The user's ratings a lead returned for revision, the longest waiting first.
    returned: Vec<HistoryRow>,
    /// For a lead: open batches with stuck tasks (see [`verdict_core::stall`]), as (batch
    /// id, name, its stalls).
    stranded: Vec<(uuid::Uuid, String, verdict_core::stall::Stalled)>,
}

async fn home(page_user: PageUser, State(state): State<AppState>) -> AppResult<Html<String>> {
    let PageUser { user, layout } = page_user;
    let batches = state.store().visible_batches(user.id, user.role).await?;
    let returned = state.store().returned_ratings(user.id, 20).await?;
    let returned = returned.into_iter().map(|r| r.shown_to(&user)).collect();
    let mut stranded = Vec::new();
    if user.can_lead() {
        for s in batches.iter().filter(|s| s.batch.state.is_open()) {
            let stalled = crate::services::stalls::stalled(state.store(), &s.batch).await?;
            if stalled.tasks > 0 {
                stranded.push((s.batch.id, s.batch.name.clone(), stalled));
            }
        }
    }
    render(&HomePage {
        layout,
        role: user.role,
        can_lead: user.can_lead(),
        batches,
        returned,
        stranded,
    })
}
