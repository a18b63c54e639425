//! A batch's metrics for leads: `GET /api/v1/batches/{id}/metrics` and the batch page
//! with its charts (SVG drawn here, readable without JavaScript).

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use uuid::Uuid;

use crate::auth::RequireLead;
use crate::batches::BatchView;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::metrics::{Accumulator, Metrics};
use crate::state::AppState;
use crate::store::users::User;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiPath, Layout, PageUser, render};
use utoipa_axum::routes;

pub mod charts;

pub fn api_router() -> ApiRouter {
    ApiRouter::new().routes(routes!(metrics_api))
}

pub fn page_router() -> Router<AppState> {
    Router::new().route("/batches/{id}", get(page)).route(
        "/batches/{batch}/assignments/{id}/release",
        axum::routing::post(release),
    )
}

/// How many open assignments the batch page lists.
const HELD_SHOWN: i64 = 500;

/// Computes the metrics of a batch the lead may see.
pub async fn compute(state: &AppState, id: Uuid, lead: &User) -> AppResult<(BatchView, Metrics)> {
    let summary = crate::batches::visible(state, id, lead).await?;
    let rubric = state.store().batch_rubric(&summary.batch).await?;
    let tasks = summary.progress.tasks;
    let turn = state.heavy_reads().turn().await;
    let mut acc = Accumulator::new(
        &rubric,
        summary.batch.rubric_version,
        &summary.batch.classifications.0,
    );
    state
        .store()
        .for_each_rating(id, |row| acc.add(&row))
        .await?;
    let metrics = tokio::task::spawn_blocking(move || acc.finish(tasks))
        .await
        .map_err(AppError::internal)?;
    drop(turn);
    let view = crate::batches::view(state, summary, lead).await?;
    Ok((view, metrics))
}

/// The batch's metrics. Only ratings with outcome `rated` and status `submitted` or
/// `accepted` count; `counts` says how many were left out, and why.
#[utoipa::path(get, path = "/api/v1/batches/{id}/metrics", tag = "metrics",
    params(("id" = Uuid, Path, description = "batch id")),
    responses((status = 200, body = Metrics), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn metrics_api(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Json<Metrics>> {
    Ok(Json(compute(&state, id, &lead).await?.1))
}

#[derive(Template)]
#[template(path = "dashboard/batch.html")]
struct BatchPage {
    layout: Layout,
    batch: BatchView,
    metrics: Metrics,
    /// SVG drawn by `charts` from numbers and escaped labels only.
    sxs_chart: String,
    fields_chart: String,
    agreement_chart: String,
    bias_chart: String,
    /// Tasks raters hold open now, oldest first.
    held: Vec<crate::store::assignments::Held>,
    held_shown: i64,
}

async fn page(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let (batch, metrics) = compute(&state, id, &lead).await?;
    let held = state.store().held(id, HELD_SHOWN).await?;
    let page = BatchPage {
        layout: page_user.layout,
        held,
        held_shown: HELD_SHOWN,
        sxs_chart: charts::histogram(&metrics.sxs),
        fields_chart: charts::stacked_fields(&metrics.fields),
        agreement_chart: charts::agreement(&metrics.agreement),
        bias_chart: charts::position_bias(&metrics.position_bias),
        batch,
        metrics,
    };
    Ok(render(&page)?.into_response())
}

/// `POST /batches/{batch}/assignments/{id}/release`: the batch page's Release button.
async fn release(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch, id)): ApiPath<(Uuid, Uuid)>,
    crate::auth::csrf::CsrfForm(_): crate::auth::csrf::CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    crate::assign::release(&state, id, &lead).await?;
    Ok(axum::response::Redirect::to(&format!("/batches/{batch}#held")).into_response())
}
