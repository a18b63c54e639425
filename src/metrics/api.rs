//! The metrics API: `GET /api/v1/batches/{id}/metrics`, and the figures of a batch as
//! the batch page reads them too, folded from the instance's copy kept in
//! [`crate::heavy::live`].

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::RequireLead;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::heavy::live::Folded;
use crate::metrics::{Accumulator, Metrics};
use crate::state::AppState;
use crate::store::review::RatingsMark;
use crate::web::ApiPath;
use crate::web::openapi::ApiRouter;
use verdict_core::rubric::Rubric;

pub fn router() -> ApiRouter {
    ApiRouter::new().routes(routes!(metrics_api))
}

/// The metrics of `batch`, of `tasks` tasks (gold aside), with the rubric they were made
/// under: what the API answers and the batch page draws.
pub async fn measure(
    state: &AppState,
    batch: &verdict_core::batch::Batch,
    tasks: i64,
) -> AppResult<(Metrics, Arc<Rubric>)> {
    let id = batch.id;
    let rubric = state.store().batch_rubric(batch).await?;
    let turn = state.heavy_reads().turn().await;
    let store = state.store();
    // Taken before the ratings are read: a rating that changes during the read (or after
    // it) then moves the fingerprint away from the one the aggregation is kept under, and
    // the next request works it out again; taken after, such a change could be missed.
    let fingerprint = store.ratings_fingerprint(id).await?;
    let (folded, mut slot) = fold(state, id, batch, &rubric, fingerprint.count()).await?;
    // A judge's calls about gold tasks grade it (`gold.judges`) and count in none of its
    // figures beside the raters, as the raters' gold ratings count in none of theirs.
    let expected: HashMap<Uuid, verdict_core::gold::Expected> = if batch.has_gold {
        store.gold_expectations(id).await?.into_iter().collect()
    } else {
        HashMap::new()
    };
    let (gold_calls, calls): (Vec<_>, Vec<_>) = store
        .judge_call_facts(id)
        .await?
        .into_iter()
        .partition(|c| expected.contains_key(&c.task_id));
    let grades: Vec<(String, verdict_core::gold::Grade)> = store
        .gold_grades(id)
        .await?
        .into_iter()
        .map(|g| (g.rater, g.grade.0))
        .collect();
    let mut gold = crate::metrics::gold::figures(
        &grades,
        store.gold_count(id).await?,
        batch.gold_rate,
        batch.review_first_below,
        store.held_count(id).await?,
    );
    let (tasks_asked, escalated, raters_added) = store.escalation_counts(id).await?;
    let overlap = verdict_core::metrics::OverlapFigures::new(
        &verdict_core::overlap::Plan::of(batch, &rubric),
        tasks_asked,
        escalated,
        raters_added,
    );
    let routing = match &batch.route_by {
        Some(route_by) => Some(routing_figures(state, batch, route_by, &rubric).await?),
        None => None,
    };
    // Majority vote and Dawid-Skene are not folded: they are worked out from the
    // folded ratings' codes, under the same turn, whenever a rating of the batch changed
    // since they last were (Dawid-Skene iterates over every answer).
    let stale = !matches!(&folded.aggregation, Some((of, _)) if *of == fingerprint);
    let judged = Arc::clone(&rubric);
    let min_explanation = batch.min_explanation();
    let prior = batch.bradley_terry_prior;
    let (folded, metrics) = tokio::task::spawn_blocking(move || {
        let mut folded = folded;
        if stale {
            folded.aggregation = Some((fingerprint, folded.acc.aggregation(&judged)));
        }
        let aggregation = folded
            .aggregation
            .as_ref()
            .map(|(_, a)| a.clone())
            .unwrap_or_default();
        let acc = &folded.acc;
        let judges = acc.judges(&judged, min_explanation, &calls);
        gold.judges =
            crate::metrics::gold::judges(&judged, min_explanation, &gold_calls, &expected);
        let metrics = Metrics {
            judges,
            gold,
            overlap,
            routing,
            aggregation,
            ..acc.finish(tasks, prior)
        };
        (folded, metrics)
    })
    .await
    .map_err(AppError::internal)?;
    // Kept for the next request, which reads on from its mark.
    *slot = Some(folded);
    let mut metrics = metrics;
    vs_final(store, id, &rubric, &mut metrics).await?;
    drop(turn);
    Ok((metrics, rubric))
}

/// Each rater's agreement with the final answers leads recorded (`raters[].vs_final`),
/// from the ratings that count of the adjudicated tasks, read at once.
async fn vs_final(
    store: &crate::store::Store,
    batch: Uuid,
    rubric: &Rubric,
    metrics: &mut Metrics,
) -> AppResult<()> {
    let finals = store.final_answers(batch).await?;
    if finals.is_empty() {
        return Ok(());
    }
    let ratings: Vec<(Uuid, String, verdict_core::rubric::TaskAnswers)> = store
        .adjudicated_ratings(batch)
        .await?
        .into_iter()
        .filter(|(_, rating)| rating.counts_in_metrics())
        .map(|(task, rating)| (task, rating.rater, rating.answers.0))
        .collect();
    let decided: std::collections::BTreeMap<Uuid, &verdict_core::rubric::Answers> =
        finals.iter().map(|f| (f.task_id, &*f.answers.0)).collect();
    let given: Vec<(Uuid, String, &verdict_core::rubric::Answers)> = ratings
        .iter()
        .map(|(task, rater, answers)| (*task, rater.clone(), &**answers))
        .collect();
    let questions = verdict_core::metrics::aggregate::questions(rubric);
    let mut agreement = verdict_core::metrics::aggregate::vs_final(&questions, &decided, &given);
    for rater in &mut metrics.raters {
        if let Some(figures) = agreement.remove(&rater.rater) {
            rater.vs_final = figures;
        }
    }
    Ok(())
}

/// What routing did for `batch`, routed by `route_by`: suggestions come from skips
/// for the rubric's reason `unfamiliar`, when it offers that reason.
async fn routing_figures(
    state: &AppState,
    batch: &verdict_core::batch::Batch,
    route_by: &verdict_core::routing::RouteBy,
    rubric: &Rubric,
) -> AppResult<verdict_core::routing::RoutingFigures> {
    let store = state.store();
    let since = batch.routed_since.unwrap_or(batch.created_at);
    let (before, after) = store.skips_around(batch.id, since).await?;
    let skills = crate::services::stalls::able_skills(store, batch).await?;
    let unmatched =
        verdict_core::routing::unmatched(&store.open_tasks_by_key(batch.id).await?, &skills);
    let suggestions = if rubric.skip_options().iter().any(|r| r.value == UNFAMILIAR) {
        store.routing_suggestions(batch.id, UNFAMILIAR).await?
    } else {
        Vec::new()
    };
    Ok(verdict_core::routing::RoutingFigures {
        route_by: route_by.to_string(),
        routing: batch.routing.to_string(),
        since,
        before,
        after,
        unmatched_tasks: unmatched.values().sum(),
        unmatched,
        suggestions,
    })
}

/// The skip reason that says a rater does not know the task's language or subject.
const UNFAMILIAR: &str = "unfamiliar";

/// The batch's ratings folded, brought up to date: the instance's folded copy with the
/// ratings changed since its last read folded in, or on the first request (or after the
/// batch's rubric changed, or a read failed part way) all its ratings, of which there are
/// about `expected`. Returned with the batch's slot, held: put the folded ratings back in
/// it when done.
async fn fold(
    state: &AppState,
    id: Uuid,
    batch: &verdict_core::batch::Batch,
    rubric: &Rubric,
    expected: usize,
) -> AppResult<(Folded, tokio::sync::OwnedMutexGuard<Option<Folded>>)> {
    let mut slot = state.live_metrics().slot(id).lock_owned().await;
    let store = state.store();
    // Taken out while reading: a read that fails leaves the slot empty, to count afresh.
    let kept = slot.take().filter(|f| {
        f.version == batch.rubric_version && f.classifications == batch.classifications
    });
    // The mark comes before the read, so that what changes during it is read again.
    let mark = store.ratings_mark().await?;
    let mut folded = match kept {
        Some(mut folded) => {
            folded.acc = fold_in(state, id, Some(folded.mark), folded.acc).await?;
            folded
        }
        None => {
            let mut acc = Accumulator::new(rubric, batch.rubric_version, &batch.classifications);
            acc.reserve(expected);
            Folded {
                acc: fold_in(state, id, None, acc).await?,
                mark,
                version: batch.rubric_version,
                classifications: batch.classifications.clone(),
                aggregation: None,
            }
        }
    };
    folded.mark = mark;
    Ok((folded, slot))
}

/// `acc` with the batch's ratings read from the store folded in (those changed since
/// `since`, or all of them): the store reads on its side while a blocking thread folds
/// what it has read, so that a cold read of a million ratings holds none of the
/// runtime's workers.
async fn fold_in(
    state: &AppState,
    id: Uuid,
    since: Option<RatingsMark>,
    mut acc: Accumulator,
) -> AppResult<Accumulator> {
    // A few batches in flight keep both sides busy without holding the batch in memory.
    let (out, mut rows) = tokio::sync::mpsc::channel::<Vec<verdict_core::metrics::RatingFacts>>(4);
    let folding = tokio::task::spawn_blocking(move || {
        while let Some(batch) = rows.blocking_recv() {
            batch.iter().for_each(|row| acc.add(row));
        }
        acc
    });
    let read = state.store().send_ratings(id, since, &out).await;
    // The folding thread ends once the sender is gone and it has what was sent.
    drop(out);
    let acc = folding.await.map_err(AppError::internal)?;
    read?;
    Ok(acc)
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
    // The batch and its task count only: the progress the batch page shows counts over
    // all the batch's ratings, which the metrics keep folded.
    let batch = crate::batches::visible_settings(&state, id, &lead).await?;
    let tasks = state.store().task_count(id).await?;
    Ok(Json(measure(&state, &batch, tasks).await?.0))
}
