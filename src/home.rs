//! `GET /`: the landing page, shaped by the visitor's role.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;

use crate::auth::Role;
use crate::error::AppResult;
use crate::state::AppState;
use crate::store::batches::BatchSummary;
use crate::web::{Layout, PageUser, render};

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
}

async fn home(page_user: PageUser, State(state): State<AppState>) -> AppResult<Html<String>> {
    let PageUser { user, layout } = page_user;
    let batches = state.store().visible_batches(user.id, user.role).await?;
    render(&HomePage {
        layout,
        role: user.role,
        can_lead: user.can_lead(),
        batches,
    })
}
