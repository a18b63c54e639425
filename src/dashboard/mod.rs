//! A batch's metrics for leads: `GET /api/v1/batches/{id}/metrics` and the batch page
//! with its charts (SVG drawn here, readable without JavaScript).

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use uuid::Uuid;

use crate::auth::RequireLead;
use crate::batches::BatchView;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::metrics::{Accumulator, Metrics, PreferenceSummary, ScoreSummary};
use crate::rubric::{Answer, Role, Rubric};
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

/// Computes the metrics of a batch the lead may see; with the rubric they were made under.
pub async fn compute(
    state: &AppState,
    id: Uuid,
    lead: &User,
) -> AppResult<(BatchView, Metrics, Arc<Rubric>)> {
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
    Ok((view, metrics, rubric))
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

/// A preference question as the page shows it.
struct PreferenceView {
    label: String,
    summary: PreferenceSummary,
    /// SVG drawn by `charts` from numbers and escaped labels only.
    chart: String,
    /// With several preferences, this one's own lean.
    bias_chart: Option<String>,
}

/// A score as the page shows it.
struct ScoreView {
    label: String,
    summary: ScoreSummary,
    chart: String,
}

#[derive(Template)]
#[template(path = "dashboard/batch.html")]
struct BatchPage {
    layout: Layout,
    batch: BatchView,
    metrics: Metrics,
    preferences: Vec<PreferenceView>,
    scores: Vec<ScoreView>,
    /// SVG drawn by `charts` from numbers and escaped labels only.
    /// Absent when the rubric has no question without a chart of its own.
    fields_chart: Option<String>,
    agreement_chart: String,
    /// The lean to the response shown first, of the one preference or all pooled.
    bias_chart: Option<String>,
    /// What the middle of `bias_chart` means.
    bias_midpoint: Option<i64>,
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
    let (batch, metrics, rubric) = compute(&state, id, &lead).await?;
    let held = state.store().held(id, HELD_SHOWN).await?;
    let scale_of = |q: &crate::rubric::Question| match (&q.answer, &q.metrics) {
        (Answer::Scale { min, max, .. }, Some(Role::Preference { midpoint, .. })) => {
            Some((*min, *max, *midpoint))
        }
        _ => None,
    };
    let mut preferences = Vec::new();
    // In the order the form asks them.
    for question in &rubric.questions {
        let Some(summary) = metrics.preferences.get(&question.key) else {
            continue;
        };
        let bars: Vec<charts::Bar> = question
            .options()
            .into_iter()
            .map(|(value, label)| {
                let name = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                let lean = question.favours(&value);
                // A scale's bars are its numbers (the labels say what they mean).
                let shown = if scale_of(question).is_some() {
                    name.clone()
                } else {
                    label.to_owned()
                };
                charts::Bar {
                    n: summary.distribution.get(&name).copied().unwrap_or(0),
                    label: shown,
                    lean,
                }
            })
            .collect();
        let (min, max) = scale_of(question).map_or((0, 1), |(min, max, _)| (min, max));
        preferences.push(PreferenceView {
            label: question.label.clone(),
            chart: charts::bars(&question.label, &bars),
            bias_chart: summary
                .position_bias
                .as_ref()
                .map(|b| charts::position_bias(b, min, max)),
            summary: summary.clone(),
        });
    }
    let slots = rubric.slots();
    let scores = metrics
        .scores
        .iter()
        .map(|(path, summary)| {
            let label = slots
                .iter()
                .find(|s| s.path() == *path)
                .map_or(path.clone(), |s| s.label().to_owned());
            let bars: Vec<charts::Bar> = summary
                .distribution
                .iter()
                .map(|(value, n)| charts::Bar {
                    label: value.clone(),
                    n: *n,
                    lean: None,
                })
                .collect();
            ScoreView {
                chart: charts::bars(&label, &bars),
                label,
                summary: summary.clone(),
            }
        })
        .collect();
    // The one preference's scale, when the rubric has exactly one on a scale.
    let only_scale = match metrics.preferences.keys().collect::<Vec<_>>()[..] {
        [key] => rubric.question(key).and_then(scale_of),
        _ => None,
    };
    let (min, max) = only_scale.map_or((0, 1), |(min, max, _)| (min, max));
    let apart: Vec<&str> = metrics
        .preferences
        .keys()
        .chain(metrics.scores.keys())
        .map(String::as_str)
        .collect();
    let page = BatchPage {
        layout: page_user.layout,
        held,
        held_shown: HELD_SHOWN,
        fields_chart: (slots
            .iter()
            .any(|s| s.metrics().is_some() && !apart.contains(&s.path().as_str()))
            || !batch.classifications.is_empty())
        .then(|| charts::stacked_fields(&metrics.fields, &apart)),
        agreement_chart: charts::agreement(&metrics.agreement),
        bias_chart: metrics
            .position_bias
            .as_ref()
            .map(|b| charts::position_bias(b, min, max)),
        bias_midpoint: only_scale.and_then(|(_, _, mid)| mid),
        preferences,
        scores,
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
