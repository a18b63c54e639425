//! The admin's pages for deleting a batch (its name typed to confirm) and restoring a
//! deleted one; the list of deleted batches is on the batches page.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use crate::auth::csrf::CsrfForm;
use crate::auth::{PageUser, RequireAdmin};
use crate::error::AppResult;
use crate::services::ServiceError;
use crate::services::corrections;
use crate::state::AppState;
use crate::web::{ApiPath, Layout, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/batches/{id}/delete", get(ask).post(delete))
        .route("/admin/batches/{id}/restore", post(restore))
}

#[derive(Template)]
#[template(path = "batches/delete.html")]
struct DeletePage {
    layout: Layout,
    id: Uuid,
    name: String,
    tasks: i64,
    ratings: i64,
    /// Assignments raters hold on it now.
    held: i64,
    retention_days: u64,
    /// What was typed, when it was not the name.
    typed: String,
    error: Option<String>,
}

async fn page(
    state: &AppState,
    page_user: PageUser,
    id: Uuid,
    typed: String,
    error: Option<String>,
) -> AppResult<DeletePage> {
    let summary = super::visible(state, id, &page_user.user).await?;
    let progress = &summary.progress;
    Ok(DeletePage {
        layout: page_user.layout,
        id,
        name: summary.batch.name.clone(),
        tasks: progress.tasks,
        ratings: progress.rated + progress.skipped + progress.out_of_scope,
        held: progress.in_progress,
        retention_days: state.config().deleted_retention.0.as_secs() / (24 * 3600),
        typed,
        error,
    })
}

/// `GET /admin/batches/{id}/delete`: what deleting it does, and the name to type.
async fn ask(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    Ok(render(&page(&state, page_user, id, String::new(), None).await?)?.into_response())
}

#[derive(Debug, Deserialize)]
struct DeleteForm {
    #[serde(default)]
    confirm: String,
}

/// `POST /admin/batches/{id}/delete`: deletes it when the name typed is its own.
async fn delete(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<DeleteForm>,
) -> AppResult<Response> {
    let user = page_user.user.clone();
    match corrections::delete_batch(state.store(), id, Some(&form.confirm), &user).await {
        Ok(done) => {
            let to = format!("/admin/batches?deleted={}", query_value(&done.name));
            Ok(Redirect::to(&to).into_response())
        }
        Err(ServiceError::Invalid(fields)) => {
            let error = fields.get("confirm").cloned();
            let page = page(&state, page_user, id, form.confirm, error).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(other) => Err(other.into()),
    }
}

/// `POST /admin/batches/{id}/restore`: brings a deleted batch back.
async fn restore(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(_): CsrfForm<Empty>,
) -> AppResult<Response> {
    let retention = state.config().deleted_retention;
    let name = corrections::restore_batch(state.store(), id, retention, &page_user.user).await?;
    let to = format!("/admin/batches?restored={}", query_value(&name));
    Ok(Redirect::to(&to).into_response())
}

#[derive(Debug, Deserialize)]
struct Empty {}

/// `value` percent-encoded for a query string.
fn query_value(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC).to_string()
}
