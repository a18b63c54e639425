//! A batch's metrics for leads: `GET /api/v1/batches/{id}/metrics` and the batch page
//! with its charts (SVG drawn here, readable without JavaScript).

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use uuid::Uuid;

use crate::auth::RequireLead;
use crate::batches::BatchView;
use crate::error::FieldErrors;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::export::ExportQuery;
use crate::judges::RunView;
use crate::metrics::bias::{Bias, LengthControlled, RaterBias};
use crate::metrics::judges::{JudgeField, JudgeMetrics, Lean};
use crate::metrics::live::Folded;
use crate::metrics::stats::Estimate;
use crate::metrics::{Accumulator, Metrics, PreferenceSummary, ScoreSummary};
use crate::state::AppState;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiPath, ApiQuery, Layout, PageUser, render};
use utoipa_axum::routes;
use verdict_core::rubric::{self, Answer, Role, Rubric};
use verdict_core::user::User;

pub mod charts;
mod judge_runs;

pub fn api_router() -> ApiRouter {
    ApiRouter::new().routes(routes!(metrics_api))
}

pub fn page_router() -> Router<AppState> {
    Router::new()
        .merge(judge_runs::router())
        .route("/batches/{id}", get(page))
        .route("/batches/{id}/export", get(export))
        .route("/batches/{id}/gold", axum::routing::post(save_gold))
        .route(
            "/batches/{batch}/assignments/{id}/release",
            axum::routing::post(release),
        )
}

/// How many open assignments the batch page lists.
const HELD_SHOWN: i64 = 500;

/// How many tasks no rater is left for the batch page names.
const STRANDED_SHOWN: i64 = 50;

/// Computes the metrics of a batch the lead may see, with the batch as its page shows it
/// and the rubric they were made under.
pub async fn compute(
    state: &AppState,
    id: Uuid,
    lead: &User,
) -> AppResult<(BatchView, Metrics, Arc<Rubric>)> {
    let summary = crate::batches::visible(state, id, lead).await?;
    let (metrics, rubric) = measure(state, &summary.batch, summary.progress.tasks).await?;
    let view = crate::batches::view(state, summary, lead).await?;
    Ok((view, metrics, rubric))
}

/// The metrics of `batch`, of `tasks` tasks (gold aside), with the rubric they were made
/// under.
async fn measure(
    state: &AppState,
    batch: &verdict_core::batch::Batch,
    tasks: i64,
) -> AppResult<(Metrics, Arc<Rubric>)> {
    let id = batch.id;
    let rubric = state.store().batch_rubric(batch).await?;
    let turn = state.heavy_reads().turn().await;
    let (folded, mut slot) = fold(state, id, batch, &rubric).await?;
    let calls = state.store().judge_call_facts(id).await?;
    let store = state.store();
    let grades: Vec<(String, verdict_core::gold::Grade)> = store
        .gold_grades(id)
        .await?
        .into_iter()
        .map(|g| (g.rater, g.grade.0))
        .collect();
    let gold = crate::metrics::gold::figures(
        &grades,
        store.gold_count(id).await?,
        batch.gold_rate,
        batch.review_first_below,
        store.held_count(id).await?,
    );
    let judged = Arc::clone(&rubric);
    let min_explanation = batch.min_explanation();
    let (folded, metrics) = tokio::task::spawn_blocking(move || {
        let acc = &folded.acc;
        let judges = acc.judges(&judged, min_explanation, &calls);
        let metrics = Metrics {
            judges,
            gold,
            ..acc.finish(tasks)
        };
        (folded, metrics)
    })
    .await
    .map_err(AppError::internal)?;
    // Kept for the next request, which reads on from its mark.
    *slot = Some(folded);
    drop(turn);
    Ok((metrics, rubric))
}

/// The batch's ratings folded, brought up to date: the instance's folded copy with the
/// ratings changed since its last read folded in, or on the first request (or after the
/// batch's rubric changed, or a read failed part way) all its ratings. Returned with the
/// batch's slot, held: put the folded ratings back in it when done.
async fn fold(
    state: &AppState,
    id: Uuid,
    batch: &verdict_core::batch::Batch,
    rubric: &Rubric,
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
            store
                .for_each_rating(id, Some(folded.mark), |row| folded.acc.add(&row))
                .await?;
            folded
        }
        None => {
            let mut acc = Accumulator::new(rubric, batch.rubric_version, &batch.classifications);
            store.for_each_rating(id, None, |row| acc.add(&row)).await?;
            Folded {
                acc,
                mark,
                version: batch.rubric_version,
                classifications: batch.classifications.clone(),
            }
        }
    };
    folded.mark = mark;
    Ok((folded, slot))
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
    let store = state.store();
    if !store.batch_matches(id, lead.id, lead.role).await? {
        return Err(AppError::NotFound);
    }
    let batch = store.batch(id).await?.ok_or(AppError::NotFound)?;
    let tasks = store.task_count(id).await?;
    Ok(Json(measure(&state, &batch, tasks).await?.0))
}

/// A preference question as the page shows it.
struct PreferenceView {
    label: String,
    summary: PreferenceSummary,
    /// SVG drawn by `charts` from numbers and escaped labels only.
    chart: String,
    /// The chart's numbers, for the table beside it.
    bars: Vec<charts::Bar>,
    /// With several preferences, this one's own lean.
    bias_chart: Option<String>,
}

/// A score as the page shows it.
struct ScoreView {
    label: String,
    summary: ScoreSummary,
    chart: String,
    bars: Vec<charts::Bar>,
}

/// A judge as the batch page shows it: its figures, its questions in the rubric's order
/// with their labels, and its chart.
struct JudgeFigures {
    name: String,
    metrics: JudgeMetrics,
    fields: Vec<(String, JudgeField)>,
    /// SVG drawn by `charts` from numbers and escaped labels only; none while no
    /// question has a pair to compare.
    chart: Option<String>,
}

/// The rater bias figures as the batch page shows them: a table row for the batch and
/// each rater, a row per rater and question for straight-lining, and the charts.
struct BiasView {
    /// The batch's row first, then each rater's.
    rows: Vec<BiasRow>,
    /// Whether the rubric asks a preference (else only time and straight-lining).
    preference: bool,
    /// Per rater and question: rater, question label, most common answer, its share
    /// and n, and whether it is straight-lined.
    answers: Vec<(String, String, String, String, u64, bool)>,
    /// Each chart's heading and SVG, drawn by `charts` from numbers and escaped labels.
    charts: Vec<(&'static str, String)>,
}

/// One row of the rater bias table, each figure as the page words it.
struct BiasRow {
    label: String,
    pooled: bool,
    rated: u64,
    position: String,
    length: String,
    prefers_b: String,
    length_controlled: String,
    coefficient: String,
    median_time: String,
    over_guidance: String,
    straight_lined: String,
}

/// The batch page's form to start a judge run, as an admin sent it, and what was wrong
/// with it (`judge`, `judge.templates.…`) or with a run's button (`run`).
#[derive(Debug, Default)]
pub struct RunForm {
    /// The judge picked, by name.
    pub judge: String,
    pub errors: FieldErrors,
}

/// A share as a page shows it: `75%`, or a dash when there is none.
fn percent(share: &Option<f64>) -> String {
    share.map_or_else(|| "—".into(), |x| format!("{:.0}%", x * 100.0))
}

/// A coefficient (kappa, Spearman) as a page shows it: `0.62`, or a dash.
fn coefficient(value: &Option<f64>) -> String {
    value.map_or_else(|| "—".into(), |x| format!("{x:.2}"))
}

/// A share with its 95% interval: `62% (48–75%)`, or a dash.
fn estimate(share: &Option<Estimate>) -> String {
    share.map_or_else(
        || "—".into(),
        |e| {
            format!(
                "{:.0}% ({:.0}–{:.0}%)",
                e.value * 100.0,
                e.low * 100.0,
                e.high * 100.0
            )
        },
    )
}

/// A lean as the page shows it: `60% (31–83%) of 5`, or `— of 3` below the answers a
/// share needs.
fn lean(lean: &Option<Lean>) -> String {
    lean.as_ref().map_or_else(
        || "—".into(),
        |l| format!("{} of {}", estimate(&l.share), l.n),
    )
}

/// A coefficient with its interval: `1.10 (-0.25 to 2.45)`, or a dash.
fn coefficient_with_interval(e: &Option<Estimate>) -> String {
    e.map_or_else(
        || "—".into(),
        |e| format!("{:.2} ({:.2} to {:.2})", e.value, e.low, e.high),
    )
}

/// The rater bias section of `metrics`, its straight-lined questions labelled from
/// `rubric`.
fn bias_view(metrics: &Metrics, rubric: &Rubric) -> BiasView {
    let bias = &metrics.bias;
    let b = &bias.batch;
    let label_of = |path: &str| rubric::answer_label(rubric, path);
    let mut rows = vec![BiasRow {
        label: "All raters".into(),
        pooled: true,
        rated: b.rated,
        position: lean(&b.position),
        length: lean(&b.length),
        prefers_b: estimate(&b.length_controlled.as_ref().and_then(|l| l.prefers_b)),
        length_controlled: estimate(&b.length_controlled.as_ref().and_then(|l| l.share)),
        coefficient: coefficient_with_interval(
            &b.length_controlled
                .as_ref()
                .and_then(|l| l.length_coefficient),
        ),
        median_time: b
            .time
            .median_s
            .map_or_else(|| "—".into(), |t| crate::web::clock(t.round() as i32)),
        over_guidance: estimate(&b.time.over_guidance),
        straight_lined: format!(
            "{} of {} raters with 5 or more",
            b.straight_lining.raters_flagged, b.straight_lining.raters_checked
        ),
    }];
    let mut answers = Vec::new();
    for r in &bias.raters {
        let lc = r.length_controlled.as_ref();
        rows.push(BiasRow {
            label: r.rater.clone(),
            pooled: false,
            rated: r.rated,
            position: lean(&r.position),
            length: lean(&r.length),
            prefers_b: estimate(&lc.and_then(|l| l.prefers_b)),
            length_controlled: estimate(&lc.and_then(|l| l.share)),
            coefficient: coefficient_with_interval(&lc.and_then(|l| l.length_coefficient)),
            median_time: r
                .time
                .median_s
                .map_or_else(|| "—".into(), |t| crate::web::clock(t.round() as i32)),
            over_guidance: estimate(&r.time.over_guidance),
            straight_lined: if r.straight_lining.straight_lined.is_empty() {
                "none".into()
            } else {
                r.straight_lining
                    .straight_lined
                    .iter()
                    .map(|p| label_of(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
        let questions = rubric::labelled_in_order(
            rubric,
            r.straight_lining
                .questions
                .iter()
                .map(|(p, a)| (p.clone(), a.clone())),
        );
        for (label, a) in questions {
            answers.push((
                r.rater.clone(),
                label,
                a.answer.clone(),
                estimate(&a.share),
                a.n,
                a.straight,
            ));
        }
    }
    BiasView {
        preference: b.position.is_some(),
        charts: bias_charts(bias),
        rows,
        answers,
    }
}

/// The charts of the rater bias section: each figure per rater, the batch's first.
fn bias_charts(bias: &Bias) -> Vec<(&'static str, String)> {
    let b = &bias.batch;
    let dots = |pick: &dyn Fn(&RaterBias) -> (Option<Estimate>, u64),
                pooled: (Option<Estimate>, u64)| {
        let mut rows = vec![charts::DotRow {
            label: "All raters".into(),
            estimate: pooled.0,
            n: pooled.1,
            pooled: true,
        }];
        rows.extend(bias.raters.iter().map(|r| {
            let (estimate, n) = pick(r);
            charts::DotRow {
                label: r.rater.clone(),
                estimate,
                n,
                pooled: false,
            }
        }));
        rows
    };
    let of_lean = |l: &Option<Lean>| l.as_ref().map_or((None, 0), |l| (l.share, l.n));
    let of_lc = |l: &Option<LengthControlled>| l.as_ref().map_or((None, 0), |l| (l.share, l.n));
    let even = charts::DotScale::shares(Some((0.5, "no lean (50%)")));
    let mut out = Vec::new();
    if b.position.is_some() {
        out.push((
            "Lean to the response shown first",
            charts::dot_intervals(
                "Lean to the response shown first, per rater",
                "share to the first shown",
                &dots(&|r| of_lean(&r.position), of_lean(&b.position)),
                &even,
            ),
        ));
        out.push((
            "Lean to the longer response",
            charts::dot_intervals(
                "Lean to the longer response, per rater",
                "share to the longer",
                &dots(&|r| of_lean(&r.length), of_lean(&b.length)),
                &even,
            ),
        ));
        out.push((
            "Preference for B at equal length",
            charts::dot_intervals(
                "Length-controlled preference for B, per rater",
                "share for B",
                &dots(
                    &|r| of_lc(&r.length_controlled),
                    of_lc(&b.length_controlled),
                ),
                &even,
            ),
        ));
    }
    let medians = bias
        .raters
        .iter()
        .filter_map(|r| r.time.median_s)
        .chain(b.time.median_s);
    let point = |t: Option<f64>| {
        t.map(|value| Estimate {
            value,
            low: value,
            high: value,
        })
    };
    out.push((
        "Median time against the guidance",
        charts::dot_intervals(
            "Median active time per rater against the 30-minute guidance",
            "median active time",
            &dots(
                &|r| (point(r.time.median_s), r.time.n),
                (point(b.time.median_s), b.time.n),
            ),
            &charts::DotScale::minutes(medians, f64::from(bias.guidance_s)),
        ),
    ));
    out.push((
        "Ratings over 30 minutes",
        charts::dot_intervals(
            "Share of ratings over the 30-minute guidance, per rater",
            "share over 30 minutes",
            &dots(
                &|r| (r.time.over_guidance, r.time.n),
                (b.time.over_guidance, b.time.n),
            ),
            &charts::DotScale::shares(None),
        ),
    ));
    // Per rater, the question they most often gave one answer to: 100% on 5 or more
    // tasks is straight-lining.
    let rows: Vec<charts::DotRow> = bias
        .raters
        .iter()
        .map(|r| {
            let most = r
                .straight_lining
                .questions
                .values()
                .filter(|a| a.share.is_some())
                .max_by(|x, y| {
                    let share =
                        |a: &crate::metrics::bias::RepeatedAnswer| a.share.map_or(0.0, |e| e.value);
                    share(x).total_cmp(&share(y))
                });
            charts::DotRow {
                label: r.rater.clone(),
                estimate: most.and_then(|a| a.share),
                n: most.map_or(r.rated, |a| a.n),
                pooled: false,
            }
        })
        .collect();
    out.push((
        "Straight-lining",
        charts::dot_intervals(
            "Per rater, the largest share of one answer to one question",
            "largest share",
            &rows,
            &charts::DotScale::shares(Some((1.0, "the same answer every time"))),
        ),
    ));
    out
}

/// The export form as typed: every field text, empty for "any".
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct ExportForm {
    #[serde(default)]
    format: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    rater: String,
    /// Submitted on or after this day (`YYYY-MM-DD`).
    #[serde(default)]
    since: String,
    /// Submitted on or before this day.
    #[serde(default)]
    until: String,
}

impl ExportForm {
    /// The export's query for these filters, or every field that is wrong. `raters` are
    /// the batch's raters, whom the rater filter picks from. The "to" day is included
    /// whole: the query asks for ratings submitted before the next day.
    fn query(&self, raters: &[String]) -> Result<ExportQuery, FieldErrors> {
        let given = |text: &str| Some(text.trim().to_owned()).filter(|t| !t.is_empty());
        let day = |text: &Option<String>| {
            text.as_deref()
                .and_then(|t| chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").ok())
        };
        let (since, until) = (given(&self.since), given(&self.until));
        let until_query = match day(&until) {
            Some(d) => d.succ_opt().map(|next| next.to_string()),
            None => until.clone(),
        };
        let query = ExportQuery {
            format: Some(given(&self.format).unwrap_or_else(|| "csv".into())),
            outcome: given(&self.outcome),
            status: given(&self.status),
            rater: given(&self.rater),
            since: since.clone(),
            until: until_query,
        };
        let mut fields = match crate::export::parse(&query) {
            Ok(_) => FieldErrors::new(),
            Err(AppError::Validation { fields, .. }) => fields,
            Err(other) => FieldErrors::from([("export".to_owned(), other.to_string())]),
        };
        // A day is what the form asks for; the API's RFC 3339 times are not offered here.
        for (field, text) in [("since", &since), ("until", &until)] {
            if text.is_some() && day(text).is_none() {
                fields.insert(field.into(), "must be a date like 2026-11-21".into());
            }
        }
        if let (Some(from), Some(to)) = (day(&since), day(&until))
            && to < from
        {
            fields.insert("until".into(), "must be on or after the from date".into());
        }
        if let Some(rater) = &query.rater
            && !raters.contains(rater)
        {
            fields.insert(
                "rater".into(),
                format!("{rater:?} is not one of this batch's raters"),
            );
        }
        if fields.is_empty() {
            Ok(query)
        } else {
            Err(fields)
        }
    }
}

/// An export form field's name in words.
fn export_label(field: &str) -> &'static str {
    match field {
        "format" => "Format",
        "outcome" => "Outcome",
        "status" => "Status",
        "rater" => "Rater",
        "since" => "Submitted from",
        "until" => "Submitted to",
        _ => "Export",
    }
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
    /// Tasks no eligible rater is left to rate (how many, and the first of them), while
    /// the batch is open.
    stranded: (i64, Vec<String>),
    /// The export form, the raters it offers, and what is wrong with it.
    export: ExportForm,
    export_raters: Vec<String>,
    export_errors: FieldErrors,
    /// Each outcome's name and its words.
    outcomes: Vec<(&'static str, String)>,
    statuses: &'static [&'static str],
    /// Each judge measured against the raters, by name.
    judges: Vec<JudgeFigures>,
    /// The rater bias section.
    bias: BiasView,
    /// The batch's judge runs, newest first.
    runs: Vec<RunView>,
    /// For an admin, the judges a run can be started with; `None` for a lead, who sees
    /// the runs but not their buttons.
    run_judges: Option<Vec<String>>,
    run_form: RunForm,
    /// The gold settings form, as shown or as typed, and what is wrong with it.
    gold_form: GoldForm,
    gold_errors: FieldErrors,
}

impl BatchPage {
    /// Whether a run on the page is running (its row is then kept up to date by
    /// `static/judges.js`).
    fn any_running(&self) -> bool {
        self.runs
            .iter()
            .any(|r| r.status == verdict_core::lifecycle::RunStatus::Running)
    }

    /// Whether a run can be resumed from the page: a paused one, or a finished one with
    /// calls that failed (resuming asks them again).
    fn resumable(&self, run: &RunView) -> bool {
        run.status.can_resume()
            && (run.status == verdict_core::lifecycle::RunStatus::Paused || run.failed > 0)
    }

    /// What is wrong with the start form, each line naming its field in words (a refused
    /// button, under `run`, is shown by the runs instead).
    fn run_errors(&self) -> Vec<String> {
        self.run_form
            .errors
            .iter()
            .filter(|(field, _)| *field != "run")
            .map(|(field, why)| match field.as_str() {
                "judge" => format!("Judge: {why}"),
                other => format!("{other}: {why}"),
            })
            .collect()
    }

    fn export_summary(&self) -> Vec<String> {
        self.export_errors
            .iter()
            .map(|(field, why)| format!("{}: {why}", export_label(field)))
            .collect()
    }

    /// Whether any question has two counted ratings of a task to compare.
    fn has_agreement(&self) -> bool {
        self.metrics.agreement.values().any(|a| a.pairs > 0)
    }

    /// Whether the answers chart has anything to show.
    fn has_answers(&self) -> bool {
        self.metrics
            .fields
            .values()
            .any(|options| options.values().any(|n| *n > 0))
    }
}

/// The raters an export may be filtered on: whoever rated the batch, and its members.
fn batch_raters(batch: &BatchView, metrics: &Metrics) -> Vec<String> {
    let mut names: Vec<String> = metrics.raters.iter().map(|r| r.rater.clone()).collect();
    if let Some(Some(members)) = &batch.raters {
        names.extend(members.iter().cloned());
    }
    names.sort();
    names.dedup();
    names
}

async fn page(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let form = ExportForm {
        format: "csv".into(),
        ..ExportForm::default()
    };
    let page = build(
        &state,
        &lead,
        page_user.layout,
        id,
        form,
        FieldErrors::new(),
        RunForm::default(),
    )
    .await?;
    Ok(render(&page)?.into_response())
}

/// The batch page with the judge run form as sent and what was wrong with it, for the
/// judge pages' buttons to answer with.
pub async fn with_run_form(
    state: &AppState,
    user: &User,
    layout: Layout,
    id: Uuid,
    run_form: RunForm,
) -> AppResult<Html<String>> {
    let export = ExportForm {
        format: "csv".into(),
        ..ExportForm::default()
    };
    let page = build(
        state,
        user,
        layout,
        id,
        export,
        FieldErrors::new(),
        run_form,
    )
    .await?;
    render(&page)
}

/// `GET /batches/{id}/export`: the batch page's export form. Good filters go on to the
/// export itself (`303` to `GET /api/v1/batches/{id}/export` with them); bad ones show
/// the page again with each wrong field named.
async fn export(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(form): ApiQuery<ExportForm>,
) -> AppResult<Response> {
    let summary = crate::batches::visible(&state, id, &lead).await?;
    let batch = crate::batches::view(&state, summary, &lead).await?;
    let mut raters: Vec<String> = state.store().batch_raters(id).await?;
    if let Some(Some(members)) = &batch.raters {
        raters.extend(members.iter().cloned());
    }
    match form.query(&raters) {
        Ok(query) => {
            let encoded = serde_urlencoded::to_string(&query).map_err(AppError::internal)?;
            let to = format!("/api/v1/batches/{id}/export?{encoded}");
            Ok(axum::response::Redirect::to(&to).into_response())
        }
        Err(errors) => {
            let page = build(
                &state,
                &lead,
                page_user.layout,
                id,
                form,
                errors,
                RunForm::default(),
            )
            .await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
    }
}

async fn build(
    state: &AppState,
    lead: &User,
    layout: Layout,
    id: Uuid,
    export: ExportForm,
    export_errors: FieldErrors,
    run_form: RunForm,
) -> AppResult<BatchPage> {
    let (batch, metrics, rubric) = compute(state, id, lead).await?;
    let mut runs = Vec::new();
    for run in state.store().runs_of_batch(id).await? {
        runs.push(crate::judges::run_view(state.store(), run).await?);
    }
    let run_judges = if lead.can_administer() {
        let judges = state.store().list_judges().await?;
        Some(judges.into_iter().map(|j| j.name).collect())
    } else {
        None
    };
    let held = state.store().held(id, HELD_SHOWN).await?;
    let stranded = if batch.state.is_open() {
        state.store().stranded_tasks(id, STRANDED_SHOWN).await?
    } else {
        (0, Vec::new())
    };
    let scale_of = |q: &verdict_core::rubric::Question| match (&q.answer, &q.metrics) {
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
            bars,
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
                bars,
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
    let judges = judge_figures(&metrics, &rubric);
    let bias = bias_view(&metrics, &rubric);
    let gold_form = GoldForm::of(&metrics.gold);
    Ok(BatchPage {
        layout,
        gold_form,
        gold_errors: FieldErrors::new(),
        judges,
        bias,
        runs,
        run_judges,
        run_form,
        export_raters: batch_raters(&batch, &metrics),
        export,
        export_errors,
        outcomes: verdict_core::lifecycle::Outcome::ALL
            .iter()
            .map(|o| (o.as_str(), o.label()))
            .collect(),
        statuses: verdict_core::lifecycle::Status::FINISHED_NAMES,
        held,
        held_shown: HELD_SHOWN,
        stranded,
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
    })
}

/// Each judge of `metrics` as the page shows it, its questions in the rubric's order.
fn judge_figures(metrics: &Metrics, rubric: &Rubric) -> Vec<JudgeFigures> {
    metrics
        .judges
        .iter()
        .map(|(name, judge)| {
            let fields = rubric::labelled_in_order(
                rubric,
                judge.fields.iter().map(|(p, f)| (p.clone(), f.clone())),
            );
            let rows: Vec<charts::JudgeRow> = fields
                .iter()
                .map(|(label, f)| charts::JudgeRow {
                    label: label.clone(),
                    judge: f.consensus.agreement,
                    judge_n: f.consensus.n,
                    human: f.human.agreement,
                    human_n: f.human.n,
                })
                .collect();
            let compared = rows.iter().any(|r| r.judge_n > 0 || r.human_n > 0);
            JudgeFigures {
                name: name.clone(),
                chart: compared.then(|| charts::judge_agreement(name, &rows)),
                metrics: judge.clone(),
                fields,
            }
        })
        .collect()
}

/// The batch page's gold settings, in percent: how often a gold task is mixed in, and
/// the accuracy below which a rater's new ratings go to review first (empty: never).
#[derive(Debug, Clone, Default, serde::Deserialize)]
struct GoldForm {
    #[serde(default)]
    gold_percent: String,
    #[serde(default)]
    review_first_percent: String,
}

impl GoldForm {
    fn of(gold: &crate::metrics::gold::GoldMetrics) -> Self {
        let percent = |share: f64| format!("{}", (share * 1000.0).round() / 10.0);
        GoldForm {
            gold_percent: percent(gold.rate),
            review_first_percent: gold.review_first_below.map(percent).unwrap_or_default(),
        }
    }

    /// The settings it asks for, or what is wrong with it by field.
    fn request(&self) -> Result<crate::batches::gold::GoldRequest, FieldErrors> {
        let mut errors = FieldErrors::new();
        let mut read = |field: &str, text: &str| {
            let text = text.trim().trim_end_matches('%').trim();
            if text.is_empty() {
                return None;
            }
            match text.parse::<f64>() {
                Ok(n) if n.is_finite() && (0.0..=100.0).contains(&n) => Some(n / 100.0),
                _ => {
                    errors.insert(field.into(), "must be a percentage from 0 to 100".into());
                    None
                }
            }
        };
        let rate = read("gold_percent", &self.gold_percent).unwrap_or(0.0);
        let below = read("review_first_percent", &self.review_first_percent);
        if below == Some(0.0) {
            errors.insert(
                "review_first_percent".into(),
                "must be above 0; leave it empty to never hold ratings".into(),
            );
        }
        if errors.is_empty() {
            Ok(crate::batches::gold::GoldRequest {
                gold_rate: Some(rate),
                review_first_below: Some(below),
            })
        } else {
            Err(errors)
        }
    }
}

/// `POST /batches/{id}/gold`: the batch page's gold settings form (a lead of the batch).
async fn save_gold(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    crate::auth::csrf::CsrfForm(form): crate::auth::csrf::CsrfForm<GoldForm>,
) -> AppResult<Response> {
    let errors = match form.request() {
        Ok(request) => match crate::batches::gold::set(&state, id, &lead, &request).await {
            Ok(_) => {
                let to = format!("/batches/{id}#gold");
                return Ok(axum::response::Redirect::to(&to).into_response());
            }
            // The form's own checks keep its values in range; named on its fields all
            // the same should the service refuse one.
            Err(AppError::Validation { fields, .. }) => fields
                .into_iter()
                .map(|(k, v)| {
                    let field = if k == "gold_rate" {
                        "gold_percent"
                    } else {
                        "review_first_percent"
                    };
                    (field.to_owned(), v)
                })
                .collect(),
            Err(other) => return Err(other),
        },
        Err(errors) => errors,
    };
    let export = ExportForm {
        format: "csv".into(),
        ..ExportForm::default()
    };
    let mut page = build(
        &state,
        &lead,
        page_user.layout,
        id,
        export,
        FieldErrors::new(),
        RunForm::default(),
    )
    .await?;
    page.gold_form = form;
    page.gold_errors = errors;
    Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn form(since: &str, until: &str, rater: &str) -> ExportForm {
        ExportForm {
            since: since.into(),
            until: until.into(),
            rater: rater.into(),
            ..ExportForm::default()
        }
    }

    #[test]
    fn the_to_day_is_included_and_empty_filters_are_left_out() {
        let raters = ["ana".to_owned()];
        let query = form("2026-11-01", "2026-11-30", "ana")
            .query(&raters)
            .unwrap();
        assert_eq!(
            (query.since.as_deref(), query.until.as_deref()),
            (Some("2026-11-01"), Some("2026-12-01"))
        );
        assert_eq!(query.format.as_deref(), Some("csv"));
        let any = form(" ", "", "").query(&raters).unwrap();
        assert_eq!(
            serde_urlencoded::to_string(&any).unwrap(),
            "format=csv",
            "nothing but the format"
        );
    }

    #[test]
    fn every_bad_filter_is_named() {
        let bad = ExportForm {
            format: "xml".into(),
            outcome: "maybe".into(),
            status: "draft".into(),
            ..form("2026-11-30", "2026-11-01", "ghost")
        };
        let fields = bad.query(&["ana".to_owned()]).unwrap_err();
        assert_eq!(
            fields.keys().collect::<Vec<_>>(),
            ["format", "outcome", "rater", "status", "until"]
        );
        let times = form("2026-11-01T10:00:00Z", "2026-02-30", "")
            .query(&[])
            .unwrap_err();
        assert_eq!(times["since"], "must be a date like 2026-11-21");
        assert_eq!(times["until"], "must be a date like 2026-11-21");
    }
}
