//! The batch page for leads: progress, the batch's figures with their charts (SVG drawn
//! in `charts`, readable without JavaScript), the held and stranded tasks, and the
//! forms on it (export, gold settings, judge runs), each in its own file.

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::batches::BatchView;
use crate::error::{AppResult, FieldErrors};
use crate::metrics::aggregate::QuestionAggregation;
use crate::metrics::judges::{JudgeField, JudgeMetrics};
use crate::metrics::several::ChoiceCounts;
use crate::metrics::{Metrics, PreferenceSummary, ScoreSummary};
use crate::services::judging::runs::RunView;
use crate::state::AppState;
use crate::web::{ApiPath, Layout, render};
use bias::BiasView;
use export::ExportForm;
use figures::{coefficient, estimate, percent};
use gold::GoldForm;
use verdict_core::rubric::{self, Answer, Role, Rubric};
use verdict_core::user::User;

mod bias;
pub mod charts;
mod export;
mod figures;
mod gold;
mod judge_runs;

pub fn page_router() -> Router<AppState> {
    Router::new()
        .merge(judge_runs::router())
        .route("/batches/{id}", get(page))
        .route("/batches/{id}/export", get(export::export))
        .route("/batches/{id}/gold", post(gold::save_gold))
        .route("/batches/{batch}/assignments/{id}/release", post(release))
}

/// How many open assignments the batch page lists.
const HELD_SHOWN: i64 = 500;

/// A batch as its page shows it, with its metrics, the rubric they were made under, and
/// its qualification (which the batch's view does not carry).
type Computed = (
    BatchView,
    Metrics,
    Arc<Rubric>,
    Option<verdict_core::qualification::Qualification>,
);

/// Computes the metrics of a batch the lead may see (see [`Computed`]), and its stalls.
pub async fn compute(state: &AppState, id: Uuid, lead: &User) -> AppResult<Computed> {
    let summary = crate::batches::visible(state, id, lead).await?;
    let (metrics, rubric) =
        crate::metrics::api::measure(state, &summary.batch, summary.progress.tasks).await?;
    let stalled = crate::services::stalls::stalled(state.store(), &summary.batch).await?;
    let qualification = summary.batch.qualification;
    let mut view = crate::batches::view(state, summary, lead).await?;
    view.stalled = Some(stalled);
    Ok((view, metrics, rubric, qualification))
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

/// A question of several choices as the page shows it: per option, how many ratings
/// picked it of those asked, for each place it is asked (`Response A`, `Response B`,
/// both) and per model.
struct ChoicesView {
    label: String,
    /// The columns: a place's heading and its counts.
    places: Vec<(&'static str, ChoiceCounts)>,
    /// `(option value, label)`, in the rubric's order.
    options: Vec<(String, String)>,
    /// Per model: its counts, over every place.
    models: Vec<(String, ChoiceCounts)>,
}

impl ChoicesView {
    /// Each question of several choices of `rubric` with counts in `metrics`.
    fn all(rubric: &Rubric, metrics: &Metrics) -> Vec<Self> {
        rubric
            .questions
            .iter()
            .filter(|q| matches!(q.answer, Answer::MultiChoice { .. }))
            .filter_map(|q| {
                let pooled = metrics.choices.get(&q.key)?;
                let places = if q.each_response {
                    ["a", "b"]
                        .into_iter()
                        .zip(["Response A", "Response B"])
                        .filter_map(|(side, heading)| {
                            let summary = metrics.choices.get(&format!("{side}.{}", q.key))?;
                            Some((heading, summary.counts.clone()))
                        })
                        .chain([("Both", pooled.counts.clone())])
                        .collect()
                } else {
                    vec![("Ratings", pooled.counts.clone())]
                };
                Some(Self {
                    label: q.label.clone(),
                    places,
                    options: q
                        .options()
                        .into_iter()
                        .map(|(v, l)| (v.as_str().unwrap_or_default().to_owned(), l.to_owned()))
                        .collect(),
                    models: pooled
                        .models
                        .iter()
                        .map(|(m, c)| (m.clone(), c.clone()))
                        .collect(),
                })
            })
            .collect()
    }
}

/// A question's line in the batch's summary table.
struct SummaryRow {
    label: String,
    /// Counted answers to it.
    n: u64,
    /// The answer given most (its label) and its share, while there are answers.
    top: Option<(String, f64)>,
    /// Percent agreement between raters and Krippendorff's alpha, where measured.
    agreement: Option<f64>,
    alpha: Option<f64>,
}

/// The rows of the answers chart: each question of `rubric` with fixed options in the
/// form's order (but those in `apart`, charted on their own), then the batch's
/// classifications, each option labelled as the form labels it, in the form's order, and
/// coloured by its kind: a ramp from dark to light for ordered options (answers outside
/// the scale grey), distinct colours otherwise. Also says where the classifications'
/// rows start.
fn field_rows(
    rubric: &Rubric,
    classifications: &[verdict_core::rubric::Classification],
    metrics: &Metrics,
    apart: &[&str],
) -> (Vec<charts::FieldRow>, usize) {
    let row = |label: String,
               counts: &std::collections::BTreeMap<String, u64>,
               options: Vec<(String, String)>,
               scaled: Option<Vec<bool>>| {
        let colours = charts::field_colours(scaled.as_deref(), options.len());
        charts::FieldRow {
            label,
            options: options
                .into_iter()
                .zip(colours)
                .map(|((value, label), colour)| charts::FieldOption {
                    n: counts.get(&value).copied().unwrap_or(0),
                    label,
                    colour,
                })
                .collect(),
        }
    };
    let mut rows = Vec::new();
    for slot in rubric.slots() {
        let path = slot.path();
        let (rubric::Slot::Asked { question, .. }, Some(counts)) =
            (slot, metrics.fields.get(&path))
        else {
            continue;
        };
        if apart.contains(&path.as_str()) || question.options().is_empty() {
            continue;
        }
        let options: Vec<(String, String)> = question
            .options()
            .into_iter()
            .map(|(value, label)| (rubric::plain(&value), label.to_owned()))
            .collect();
        let scaled = match &question.metrics {
            Some(Role::Ordinal { unscaled }) => Some(
                question
                    .options()
                    .iter()
                    .map(|(value, _)| !unscaled.contains(value))
                    .collect(),
            ),
            _ => None,
        };
        rows.push(row(
            rubric::answer_label(rubric, &path),
            counts,
            options,
            scaled,
        ));
    }
    let asked = rows.len();
    for class in classifications {
        let Some(counts) = metrics
            .fields
            .get(&format!("classifications.{}", class.key))
        else {
            continue;
        };
        let options = class
            .options
            .iter()
            .map(|o| (o.clone(), o.clone()))
            .collect();
        rows.push(row(class.label.clone(), counts, options, None));
    }
    (rows, asked)
}

/// The summary table: each question with answers counted, in the form's order, with the
/// answer given most (as the form labels it) and the raters' agreement on it.
fn summary_rows(
    rubric: &Rubric,
    metrics: &Metrics,
    classified: &[charts::FieldRow],
) -> Vec<SummaryRow> {
    let mut rows: Vec<SummaryRow> = Vec::new();
    for slot in rubric.slots() {
        let path = slot.path();
        let Some(counts) = metrics.fields.get(&path) else {
            continue;
        };
        let n: u64 = counts.values().sum();
        let top = counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .filter(|(_, most)| **most > 0)
            .map(|(value, most)| {
                let label = match slot {
                    rubric::Slot::Asked { question, .. } => question
                        .options()
                        .into_iter()
                        .find(|(v, _)| rubric::plain(v) == *value)
                        .map_or_else(|| value.clone(), |(_, l)| l.to_owned()),
                    rubric::Slot::Derived(_) => value.clone(),
                };
                (label, *most as f64 / n as f64)
            });
        let agreement = metrics.agreement.get(&path);
        rows.push(SummaryRow {
            label: rubric::answer_label(rubric, &path),
            n,
            top,
            agreement: agreement.and_then(|a| a.percent_agreement),
            alpha: agreement.and_then(|a| a.krippendorff_alpha),
        });
    }
    // The batch's classifications, after the rubric's questions, from their chart rows.
    for field in classified {
        let n: u64 = field.options.iter().map(|o| o.n).sum();
        let top = field
            .options
            .iter()
            .max_by_key(|o| o.n)
            .filter(|o| o.n > 0)
            .map(|o| (o.label.clone(), o.n as f64 / n as f64));
        rows.push(SummaryRow {
            label: field.label.clone(),
            n,
            top,
            agreement: None,
            alpha: None,
        });
    }
    rows
}

/// Agreement per question in the form's order, each labelled as the form labels it (a
/// score measured again at the ordinal level, `score:ordinal`, as "… (ordinal)").
fn agreement_rows(
    rubric: &Rubric,
    metrics: &Metrics,
) -> Vec<(String, crate::metrics::agreement::Agreement)> {
    let order: Vec<String> = rubric.slots().iter().map(|s| s.path()).collect();
    let mut rows: Vec<(usize, bool, String, crate::metrics::agreement::Agreement)> = metrics
        .agreement
        .iter()
        .map(|(path, a)| {
            let (base, ordinal) = match path.strip_suffix(":ordinal") {
                Some(base) => (base, true),
                None => (path.as_str(), false),
            };
            let rank = order.iter().position(|p| p == base).unwrap_or(order.len());
            let label = rubric::answer_label(rubric, base);
            let label = if ordinal {
                format!("{label} (ordinal)")
            } else {
                label
            };
            (rank, ordinal, label, a.clone())
        })
        .collect();
    rows.sort_by_key(|row| (row.0, row.1));
    rows.into_iter()
        .map(|(_, _, label, a)| (label, a))
        .collect()
}

/// Each aggregated question of `metrics` in the form's order, labelled as the form
/// labels it.
fn aggregation_rows(rubric: &Rubric, metrics: &Metrics) -> Vec<(String, QuestionAggregation)> {
    rubric
        .slots()
        .iter()
        .filter_map(|slot| {
            let path = slot.path();
            let summary = metrics.aggregation.get(&path)?;
            Some((rubric::answer_label(rubric, &path), summary.clone()))
        })
        .collect()
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

/// The batch page's form to start a judge run, as an admin sent it, and what was wrong
/// with it (`judge`, `judge.templates.…`) or with a run's button (`run`).
#[derive(Debug, Default)]
pub struct RunForm {
    /// The judge picked, by name.
    pub judge: String,
    pub errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "dashboard/batch.html")]
struct BatchPage {
    layout: Layout,
    batch: BatchView,
    metrics: Metrics,
    preferences: Vec<PreferenceView>,
    scores: Vec<ScoreView>,
    choices: Vec<ChoicesView>,
    /// SVG drawn by `charts` from numbers and escaped labels only.
    /// Absent when the rubric has no question without a chart of its own.
    fields_chart: Option<String>,
    /// Agreement per question, labelled as the form labels it, in the form's order.
    agreement_rows: Vec<(String, crate::metrics::agreement::Agreement)>,
    /// One answer per task: each aggregated question, labelled as the form labels it,
    /// in the form's order.
    aggregation_rows: Vec<(String, QuestionAggregation)>,
    /// The rows of that chart, labelled as the form labels them, for its table.
    field_rows: Vec<charts::FieldRow>,
    /// One line per question at the top of the figures: ratings, the answer given most
    /// and agreement.
    summary: Vec<SummaryRow>,
    agreement_chart: String,
    /// The lean to the response shown first, of the one preference or all pooled.
    bias_chart: Option<String>,
    /// What the middle of `bias_chart` means.
    bias_midpoint: Option<i64>,
    /// Tasks raters hold open now, oldest first.
    held: Vec<crate::store::assignments::Held>,
    held_shown: i64,
    /// Tasks that need more ratings than the people who could take them now can give,
    /// while the batch is open.
    stalled: verdict_core::stall::Stalled,
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
    /// The batch's qualification and each rater's standing with it, by username.
    qualification: Option<(
        verdict_core::qualification::Qualification,
        std::collections::BTreeMap<String, verdict_core::qualification::Standing>,
    )>,
}

impl BatchPage {
    /// Whether a run on the page is running (its row is then kept up to date by
    /// `static/judges.js`).
    fn any_running(&self) -> bool {
        self.runs
            .iter()
            .any(|r| r.status == verdict_core::lifecycle::RunStatus::Running)
    }

    /// Whether a run can be resumed from the page: a paused one, or a finished or failed
    /// one with calls that failed (resuming asks them again).
    fn resumable(&self, run: &RunView) -> bool {
        run.status.can_resume()
            && (run.status == verdict_core::lifecycle::RunStatus::Paused || run.failed > 0)
    }

    /// What resuming a run does, as its button says it.
    fn resume_words(&self, run: &RunView) -> &'static str {
        if run.status == verdict_core::lifecycle::RunStatus::Paused {
            "Resume"
        } else {
            "Ask failed calls again"
        }
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
            .map(|(field, why)| format!("{}: {why}", export::export_label(field)))
            .collect()
    }

    /// Whether any question has two counted ratings of a task to compare.
    fn has_agreement(&self) -> bool {
        self.metrics.agreement.values().any(|a| a.pairs > 0)
    }

    /// Whether any question has a task with an aggregated answer.
    fn has_aggregation(&self) -> bool {
        self.aggregation_rows.iter().any(|(_, a)| a.tasks > 0)
    }

    /// Whether the answers chart has anything to show.
    fn has_answers(&self) -> bool {
        self.metrics
            .fields
            .values()
            .any(|options| options.values().any(|n| *n > 0))
    }
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

async fn build(
    state: &AppState,
    lead: &User,
    layout: Layout,
    id: Uuid,
    export: ExportForm,
    export_errors: FieldErrors,
    run_form: RunForm,
) -> AppResult<BatchPage> {
    let (batch, metrics, rubric, qualifying) = compute(state, id, lead).await?;
    let mut runs = Vec::new();
    for run in state.store().runs_of_batch(id).await? {
        runs.push(crate::services::judging::runs::run_view(state.store(), run).await?);
    }
    let run_judges = if lead.can_administer() {
        let judges = state.store().list_judges().await?;
        Some(judges.into_iter().map(|j| j.name).collect())
    } else {
        None
    };
    let held = state.store().held(id, HELD_SHOWN).await?;
    let stalled = batch.stalled.clone().unwrap_or_default();
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
    // Several choices have a table of their own: their counts do not add up to the
    // ratings, as a stacked bar's would.
    let apart: Vec<&str> = metrics
        .preferences
        .keys()
        .chain(metrics.scores.keys())
        .chain(metrics.choices.keys())
        .map(String::as_str)
        .collect();
    let (field_rows, asked) = field_rows(&rubric, &batch.classifications, &metrics, &apart);
    let agreement_rows = agreement_rows(&rubric, &metrics);
    let judges = judge_figures(&metrics, &rubric);
    let bias = bias::bias_view(&metrics, &rubric);
    let gold_form = GoldForm::of(&metrics.gold, qualifying.as_ref());
    let qualification = match qualifying {
        Some(q) => Some((
            q,
            crate::services::qualification::standings(state.store(), id, &q).await?,
        )),
        None => None,
    };
    Ok(BatchPage {
        layout,
        qualification,
        gold_form,
        gold_errors: FieldErrors::new(),
        judges,
        bias,
        runs,
        run_judges,
        run_form,
        export_raters: export::batch_raters(&batch, &metrics),
        export,
        export_errors,
        outcomes: verdict_core::lifecycle::Outcome::ALL
            .iter()
            .map(|o| (o.as_str(), o.label()))
            .collect(),
        statuses: verdict_core::lifecycle::Status::FINISHED_NAMES,
        held,
        held_shown: HELD_SHOWN,
        stalled,
        fields_chart: (!field_rows.is_empty()).then(|| charts::stacked_fields(&field_rows)),
        summary: summary_rows(&rubric, &metrics, &field_rows[asked..]),
        field_rows,
        agreement_chart: charts::agreement(&agreement_rows),
        aggregation_rows: aggregation_rows(&rubric, &metrics),
        agreement_rows,
        bias_chart: metrics
            .position_bias
            .as_ref()
            .map(|b| charts::position_bias(b, min, max)),
        bias_midpoint: only_scale.and_then(|(_, _, mid)| mid),
        preferences,
        scores,
        choices: ChoicesView::all(&rubric, &metrics),
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

/// `POST /batches/{batch}/assignments/{id}/release`: the batch page's Release button.
async fn release(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath((batch, id)): ApiPath<(Uuid, Uuid)>,
    crate::auth::csrf::CsrfForm(_): crate::auth::csrf::CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    crate::services::assignment::release(state.store(), id, &lead).await?;
    Ok(axum::response::Redirect::to(&format!("/batches/{batch}#held")).into_response())
}
