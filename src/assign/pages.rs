//! The rating form and its actions, as HTML pages.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tower_sessions::Session;
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult, FieldErrors, WarningView};
use crate::services::ServiceError;
use crate::services::assignment::{self as work, Owned, ShownDraft};
use crate::state::AppState;
use crate::web::notice::{self, Notice};
use crate::web::{ApiPath, Layout, render};
use verdict_core::evidence::Evidence;
use verdict_core::lifecycle::Outcome;
use verdict_core::rating::Rating;
use verdict_core::render;
use verdict_core::rubric::{self, Answers, Classification, Rubric, Side};
use verdict_core::submission::RatingRequest;
use verdict_core::task::Task;
use verdict_core::user::User;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/batches/{id}/next", get(waiting).post(next))
        .route("/assignments/{id}", get(form))
        .route("/assignments/{id}/submit", post(submit))
        .route("/assignments/{id}/draft", post(draft))
        .route("/assignments/{id}/check", post(check))
        .route("/assignments/{id}/skip", post(skip))
        .route("/assignments/{id}/out-of-scope", post(out_of_scope))
}

#[derive(Template)]
#[template(path = "assign/done.html")]
struct DonePage {
    layout: Layout,
    batch_id: Uuid,
    batch_name: String,
}

/// `GET /batches/{id}/next`: to the rater's open assignment in the batch if there is
/// one, otherwise the page that says nothing is left, with a button to look again.
/// Claims nothing: a GET never changes state (the button posts).
async fn waiting(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
    session: Session,
) -> AppResult<Response> {
    if !crate::access::can_rate(state.store(), batch_id, &page_user.user).await? {
        return Err(AppError::NotFound);
    }
    if let Some(open) = state
        .store()
        .open_assignment(batch_id, page_user.user.id)
        .await?
    {
        // The notice this page took is for the page it sends the rater on to.
        if let Some(waiting) = page_user.layout.notice {
            notice::set(&session, waiting).await?;
        }
        return Ok(Redirect::to(&format!("/assignments/{}", open.id)).into_response());
    }
    let batch = state
        .store()
        .batch(batch_id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(render(&DonePage {
        layout: page_user.layout,
        batch_id,
        batch_name: batch.name,
    })?
    .into_response())
}

/// The "Next task" button has nothing to send but its CSRF token.
#[derive(Deserialize)]
struct NextForm {}

/// `POST /batches/{id}/next`: claims the rater's next task and goes to its form.
async fn next(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
    CsrfForm(NextForm {}): CsrfForm<NextForm>,
) -> AppResult<Response> {
    go_next(&state, batch_id, &page_user.user).await
}

/// Claims the rater's next task in the batch and redirects to its form, or to the
/// page that says nothing is left.
async fn go_next(state: &AppState, batch_id: Uuid, user: &User) -> AppResult<Response> {
    let to = match work::next(state.store(), batch_id, user).await? {
        Some(assignment) => format!("/assignments/{}", assignment.id),
        None => format!("/batches/{batch_id}/next"),
    };
    Ok(Redirect::to(&to).into_response())
}

/// One option of a question, as the form shows it.
pub struct OptionView {
    /// The form value: the stored value as text (`yes_partially`, `3`, `true`).
    pub value: String,
    pub label: String,
    pub checked: bool,
    /// The key that picks it (`1`, `0`, `⇧1`).
    pub key: String,
    /// When to pick it, as the rubric defines it (sanitised inline HTML; empty when it
    /// has no definition): shown beside the option on hover and focus.
    pub definition: String,
}

/// One question with its explanation box (if it has one), for one response or for the
/// whole task. A text question is a box of its own.
pub struct QuestionView {
    /// The form field, e.g. `a.correctness` or `sxs`.
    pub name: String,
    pub label: String,
    /// Whether the label is shown above the options: not when it is already the
    /// section's heading.
    pub show_label: bool,
    pub help: String,
    pub scale: bool,
    /// Several options may be picked (check boxes).
    pub several: bool,
    /// Not asked, given the answers beside it (its `applies_when` does not hold): the
    /// form hides it, and the script shows it once the answers allow it.
    pub hidden: bool,
    pub options: Vec<OptionView>,
    /// For a text question: what was written so far.
    pub text: Option<String>,
    pub error: Option<String>,
    /// The explanation field, e.g. `a.correctness_explanation`; empty when none.
    pub explanation_name: String,
    pub explanation_prompt: String,
    pub explanation: String,
    pub explanation_error: Option<String>,
    /// The current answer calls for an explanation (the box shows without script too).
    pub explanation_needed: bool,
    /// For a question the rubric takes code runs as evidence for: the response whose
    /// runs count (`a`, `b`, or empty for a question asked once), and what ran of it.
    pub code_runs: Option<String>,
    pub code_runs_text: String,
    /// A lead's comments on this answer and on its explanation (a reviewed rating).
    pub comment: Option<String>,
    pub explanation_comment: Option<String>,
}

/// The text of a stored answer as the form's inputs carry it.
fn form_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Markdown of one paragraph as sanitised HTML to sit inside a line (its `<p>` taken
/// off; more paragraphs keep theirs).
fn inline_html(markdown: &str) -> String {
    let html = render::markdown_kept(markdown);
    let trimmed = html.trim();
    match trimmed
        .strip_prefix("<p>")
        .and_then(|rest| rest.strip_suffix("</p>"))
    {
        Some(inner) if !inner.contains("<p>") => inner.to_owned(),
        _ => trimmed.to_owned(),
    }
}

fn question(
    question: &rubric::Question,
    prefix: &str,
    given: &serde_json::Map<String, Value>,
    errors: &FieldErrors,
) -> QuestionView {
    let name = format!("{prefix}{}", question.key);
    let current = given.get(&question.key).filter(|v| !v.is_null());
    let definitions: Vec<&str> = match &question.answer {
        rubric::Answer::Choice { options } | rubric::Answer::MultiChoice { options } => {
            options.iter().map(|o| o.definition.as_str()).collect()
        }
        _ => Vec::new(),
    };
    let options = question
        .options()
        .into_iter()
        .enumerate()
        .map(|(i, (value, label))| OptionView {
            checked: match current {
                Some(Value::Array(picked)) => picked.contains(&value),
                current => current == Some(&value),
            },
            value: form_value(&value),
            label: label.to_owned(),
            key: rubric::option_key(i + 1),
            definition: definitions
                .get(i)
                .map_or_else(String::new, |d| inline_html(d)),
        })
        .collect();
    let text = question
        .is_text()
        .then(|| current.and_then(Value::as_str).unwrap_or("").to_owned());
    let (explanation_name, explanation_prompt, explanation, explanation_error) =
        match &question.explanation {
            Some(e) => {
                let key = question.explanation_key();
                let name = format!("{prefix}{key}");
                (
                    name.clone(),
                    e.prompt.clone(),
                    given
                        .get(&key)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    errors.get(&name).cloned(),
                )
            }
            None => Default::default(),
        };
    QuestionView {
        show_label: !prefix.is_empty() || question.section().trim() != question.label.trim(),
        label: question.label.clone(),
        help: question.help.clone(),
        scale: matches!(question.answer, rubric::Answer::Scale { .. }),
        several: matches!(question.answer, rubric::Answer::MultiChoice { .. }),
        hidden: !question.applies(given),
        options,
        text,
        error: errors.get(&name).cloned(),
        explanation_prompt,
        explanation,
        explanation_error,
        explanation_needed: current.is_some_and(|v| question.needs_explanation(v)),
        explanation_name,
        name,
        code_runs: question
            .code_runs
            .then(|| prefix.trim_end_matches('.').to_owned()),
        code_runs_text: String::new(),
        comment: None,
        explanation_comment: None,
    }
}

/// A section of the form: one question, asked of A and of B side by side, or once; or
/// a ladder, asked in place of its criteria.
pub struct SectionView {
    pub title: String,
    /// `(heading, question)`: "Response A" and "Response B", or one with no heading.
    pub questions: Vec<(&'static str, QuestionView)>,
    pub ladder: Option<LadderView>,
    /// What the question means and when to pick each answer, from the rubric's
    /// definitions (sanitised HTML), shown once for the section.
    pub guide: Guide,
    /// When a question asked only when other answers allow it is asked, e.g. "Asked
    /// when Correctness is Minor issues or Major issues"; empty for the others.
    pub applies: String,
}

/// When `question` is asked, in the labels the rater sees; empty when always.
fn applies_text(rubric: &Rubric, question: &rubric::Question) -> String {
    let conditions: Vec<String> = question
        .applies_when
        .iter()
        .map(|(key, matches)| {
            let other = rubric.question(key);
            let values: Vec<String> = matches
                .values()
                .iter()
                .map(|v| {
                    other
                        .and_then(|q| q.label_of(v))
                        .map_or_else(|| form_value(v), str::to_owned)
                })
                .collect();
            format!(
                "{} is {}",
                other.map_or(key.as_str(), |q| q.label.as_str()),
                values.join(" or ")
            )
        })
        .collect();
    if conditions.is_empty() {
        String::new()
    } else {
        let whose = if question.each_response {
            " (for that response)"
        } else {
            ""
        };
        format!("Asked when {}{whose}.", conditions.join(" and "))
    }
}

/// A question's definitions as sanitised HTML: the question's own, then each answer's
/// `(label, definition)`.
#[derive(Default)]
pub struct Guide {
    pub intro: String,
    pub answers: Vec<(String, String)>,
}

impl Guide {
    fn of(question: &rubric::Question) -> Self {
        let answers = match &question.answer {
            rubric::Answer::Choice { options } | rubric::Answer::MultiChoice { options } => options
                .iter()
                .filter(|o| !o.definition.trim().is_empty())
                .map(|o| (o.label.clone(), render::markdown_kept(&o.definition)))
                .collect(),
            _ => Vec::new(),
        };
        Self {
            intro: render::markdown_kept(&question.definition),
            answers,
        }
    }

    /// A ladder's: what each level means.
    fn of_ladder(rubric: &Rubric, derived: &rubric::Derived) -> Self {
        let answers = derived
            .sum_of
            .iter()
            .filter_map(|key| rubric.question(key))
            .filter(|q| !q.definition.trim().is_empty())
            .map(|q| (q.label.clone(), render::markdown_kept(&q.definition)))
            .collect();
        Self {
            intro: String::new(),
            answers,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.intro.trim().is_empty() && self.answers.is_empty()
    }
}

/// A ladder's one question: the highest level reached, from 0 (none) up, each level
/// named by its criterion. The form sends `ladder.<key>` = the level; the server stores
/// the criteria it stands for.
pub struct LadderView {
    /// The form field, `ladder.<derived key>`.
    pub name: String,
    pub label: String,
    pub help: String,
    pub levels: Vec<LevelView>,
    pub error: Option<String>,
}

pub struct LevelView {
    pub level: usize,
    pub label: String,
    pub help: String,
    pub checked: bool,
    /// The key that picks it: its own digit (`⇧` and the last digit above 9).
    pub key: String,
}

fn ladder(
    rubric: &Rubric,
    derived: &rubric::Derived,
    steps: &rubric::Ladder,
    answers: &Answers,
    errors: &FieldErrors,
) -> LadderView {
    let name = format!("{}{}", rubric::LADDER_FIELD, derived.key);
    // The level the answers reach: the criteria met from the bottom up, once all are
    // answered (a form's draft always answers all or none).
    let met: Option<Vec<bool>> = derived
        .sum_of
        .iter()
        .map(|k| answers.get(k).and_then(Value::as_bool))
        .collect();
    let reached = met.map(|met| met.iter().take_while(|m| **m).count());
    let key = |level: usize| match level {
        0..=9 => level.to_string(),
        _ => format!("⇧{}", level % 10),
    };
    let mut levels = vec![LevelView {
        level: 0,
        label: steps.none.clone(),
        help: String::new(),
        checked: reached == Some(0),
        key: key(0),
    }];
    for (i, criterion) in derived.sum_of.iter().enumerate() {
        let question = rubric.question(criterion);
        levels.push(LevelView {
            level: i + 1,
            label: question.map_or_else(|| criterion.clone(), |q| q.label.clone()),
            help: question.map(|q| q.help.clone()).unwrap_or_default(),
            checked: reached == Some(i + 1),
            key: key(i + 1),
        });
    }
    LadderView {
        error: errors.get(&name).cloned(),
        name,
        label: steps.label.clone(),
        help: steps.help.clone(),
        levels,
    }
}

/// A derived answer, shown as the form works it out.
pub struct DerivedView {
    pub key: String,
    pub label: String,
    pub help: String,
    /// Its value from the answers so far, if they are complete enough.
    pub value: Option<String>,
    pub max: i64,
}

pub struct ClassificationView {
    pub key: String,
    pub label: String,
    pub multiple: bool,
    pub required: bool,
    /// Each option, whether it is chosen, and the key that picks it.
    pub options: Vec<(String, bool, String)>,
    pub error: Option<String>,
}

impl FormView {
    /// Puts a lead's comments (by answer path) beside their answers, and what ran of
    /// each response beside the questions code runs are evidence for; both in the
    /// orientation shown.
    pub fn annotate(
        &mut self,
        comments: &std::collections::BTreeMap<String, String>,
        evidence: Option<&Evidence>,
    ) {
        for section in &mut self.sections {
            for (_, q) in &mut section.questions {
                q.comment = comments.get(&q.name).cloned();
                q.explanation_comment = comments.get(&q.explanation_name).cloned();
                if let (Some(side), Some(evidence)) = (&q.code_runs, evidence) {
                    let side = if side == "b" { Side::B } else { Side::A };
                    let tally = evidence.tally(side);
                    if tally.ran > 0 {
                        q.code_runs_text = format!("In the browser: {}.", tally.words());
                    }
                }
            }
        }
    }
}

/// The whole form, filled from answers (in the orientation shown).
pub struct FormView {
    /// Guidance shown above the questions.
    pub help: String,
    /// The rubric's complete guidelines, as sanitised HTML (empty when it has none).
    pub instructions_html: String,
    /// What out of scope means for this rubric.
    pub out_of_scope_help: String,
    pub sections: Vec<SectionView>,
    pub derived: Vec<DerivedView>,
    pub classifications: Vec<ClassificationView>,
    /// The rubric document and the batch's minimum explanation length, for the script.
    pub rules: Value,
}

pub fn form_view(
    rubric: &Rubric,
    questions: &[Classification],
    min: i32,
    answers: &Answers,
    errors: &FieldErrors,
) -> FormView {
    let empty = serde_json::Map::new();
    let side = |s: &str| answers.get(s).and_then(Value::as_object).unwrap_or(&empty);
    let errors = &rubric.on_form(errors.clone());
    let sections = rubric
        .questions
        .iter()
        .filter_map(|q| {
            if let Some((derived, place)) = rubric.ladder_of(&q.key) {
                let steps = derived.ladder.as_ref()?;
                return (place == 0).then(|| SectionView {
                    title: steps.label.clone(),
                    questions: vec![],
                    ladder: Some(ladder(rubric, derived, steps, answers, errors)),
                    guide: Guide::of_ladder(rubric, derived),
                    applies: String::new(),
                });
            }
            Some(SectionView {
                title: q.section().to_owned(),
                questions: if q.each_response {
                    vec![
                        ("Response A", question(q, "a.", side("a"), errors)),
                        ("Response B", question(q, "b.", side("b"), errors)),
                    ]
                } else {
                    vec![("", question(q, "", answers, errors))]
                },
                ladder: None,
                guide: Guide::of(q),
                applies: applies_text(rubric, q),
            })
        })
        .collect();
    let derived = rubric
        .derived
        .iter()
        .map(|d| DerivedView {
            key: d.key.clone(),
            label: d.label.clone(),
            help: d.help.clone(),
            value: answers.get(&d.key).map(form_value),
            max: d.range(rubric).1,
        })
        .collect();
    let chosen = answers
        .get("classifications")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let classifications = questions
        .iter()
        .map(|q| {
            let picked: Vec<&str> = match chosen.get(&q.key) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            ClassificationView {
                key: q.key.clone(),
                label: q.label.clone(),
                multiple: q.multiple,
                required: q.required,
                options: q
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        (
                            o.clone(),
                            picked.contains(&o.as_str()),
                            rubric::option_key(i + 1),
                        )
                    })
                    .collect(),
                error: errors.get(&format!("classifications.{}", q.key)).cloned(),
            }
        })
        .collect();
    let rules =
        serde_json::json!({ "rubric": rubric.without_guidelines(), "min_explanation": min });
    FormView {
        help: rubric.help.clone(),
        instructions_html: render::markdown_kept(&rubric.instructions),
        out_of_scope_help: rubric.out_of_scope_help.clone(),
        sections,
        derived,
        classifications,
        rules,
    }
}

#[derive(Template)]
#[template(path = "assign/form.html")]
struct FormPage {
    layout: Layout,
    assignment_id: Uuid,
    batch_name: String,
    external_id: String,
    /// Sanitised HTML (see `render`), in the orientation shown.
    prompt_html: String,
    a_html: String,
    b_html: String,
    form: FormView,
    time_spent_s: i32,
    skip_reasons: Vec<rubric::SkipOption>,
    /// A refused skip: why, and the reason and note it came with.
    skip_error: Option<String>,
    skip_reason: String,
    skip_note: String,
    /// How many fields were refused by the last submission, and what the form says of it.
    error_count: usize,
    error_summary: String,
    general_error: Option<String>,
    oos_explanation: String,
    /// How long the task stays held without activity.
    lease_minutes: i32,
    /// The code runs recorded so far, as the JSON the page's runner reads and writes
    /// (in the orientation shown); empty when none.
    evidence: String,
    /// The rubric's warnings the answers meet, to confirm or change (a refused submit).
    warnings: Vec<WarningView>,
    /// The warnings the rater has ticked.
    confirmed: Vec<String>,
}

#[allow(clippy::too_many_arguments)]
async fn form_page(
    state: &AppState,
    owned: &Owned,
    task: Option<Task>,
    layout: Layout,
    answers: Answers,
    time_spent_s: i32,
    errors: FieldErrors,
    general_error: Option<String>,
) -> AppResult<FormPage> {
    let errors = owned.rubric.on_form(errors);
    let (task, rendered) = match task {
        Some(task) => {
            let rendered = crate::services::task::rendered(state.store(), &task).await?;
            (task, rendered)
        }
        None => {
            let (mut task, rendered) =
                super::task_with_html(state, owned.assignment.task_id).await?;
            if !owned.sees_external_ids {
                let number = state.store().task_number(owned.assignment.id).await?;
                task.external_id = crate::access::task_name(false, &task.external_id, number);
            }
            (task, rendered)
        }
    };
    let prompt_html = rendered.prompt.clone();
    let (a_html, b_html) = rendered.responses(owned.assignment.swapped);
    let mut form = form_view(
        &owned.rubric,
        &owned.batch.classifications,
        owned.batch.min_explanation_len,
        &answers,
        &errors,
    );
    let evidence = answers
        .get("evidence")
        .and_then(|given| {
            let single = owned.rubric.subject == rubric::Subject::Single;
            verdict_core::evidence::parse(given, single).ok()
        })
        .unwrap_or_default();
    form.annotate(&Default::default(), Some(&evidence));
    Ok(FormPage {
        layout,
        assignment_id: owned.assignment.id,
        batch_name: owned.batch.name.clone(),
        external_id: task.external_id,
        prompt_html,
        a_html,
        b_html,
        form,
        time_spent_s,
        skip_reasons: owned.rubric.skip_options().to_vec(),
        skip_error: None,
        skip_reason: String::new(),
        skip_note: String::new(),
        error_count: errors.len(),
        error_summary: attention(errors.len()),
        oos_explanation: errors
            .get("explanation")
            .map(|_| String::new())
            .unwrap_or_default(),
        general_error,
        lease_minutes: owned.batch.lease_minutes,
        evidence: answers
            .get("evidence")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        confirmed: confirmed_of(&answers),
        warnings: Vec::new(),
    })
}

/// The warnings a form's answers come with ticked (`confirmed_warnings`).
pub fn confirmed_of(answers: &Answers) -> Vec<String> {
    answers
        .get("confirmed_warnings")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(|id| id.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// An open assignment of this user's, or a trip back to their queue if it is finished.
async fn open_owned(state: &AppState, id: Uuid, user: &User) -> AppResult<Result<Owned, Response>> {
    let owned = work::owned(state.store(), id, user).await?;
    if !owned.assignment.state.is_open() {
        return Ok(Err(finished(state, id).await?));
    }
    Ok(Ok(owned))
}

/// Where a finished assignment leads: its rating, or the rater's home.
async fn finished(state: &AppState, id: Uuid) -> AppResult<Response> {
    let rating = state.store().rating_of_assignment(id).await?;
    let to = rating.map_or_else(|| "/".to_owned(), |r| format!("/ratings/{}", r.id));
    Ok(Redirect::to(&to).into_response())
}

/// `GET /assignments/{id}`: the form, with the saved draft.
async fn form(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    match draft_page(&state, id, &page_user.user, page_user.layout).await? {
        Ok(page) => Ok(render(&page)?.into_response()),
        Err(finished) => Ok(finished),
    }
}

/// The form of an open assignment with its saved draft, or the way on from a finished one.
async fn draft_page(
    state: &AppState,
    id: Uuid,
    user: &User,
    layout: Layout,
) -> AppResult<Result<FormPage, Response>> {
    let (owned, task, draft) = work::owned_form(state.store(), id, user).await?;
    if !owned.assignment.state.is_open() {
        return Ok(Err(finished(state, id).await?));
    }
    let (answers, time) = match draft {
        Some(ShownDraft {
            answers,
            evidence,
            time_spent_s,
        }) => {
            let mut answers = answers.into_map();
            if let Some(evidence) = evidence {
                let text = serde_json::to_string(&evidence).map_err(AppError::internal)?;
                answers.insert("evidence".into(), Value::from(text));
            }
            (answers, time_spent_s)
        }
        None => (Answers::new(), 0),
    };
    let page = form_page(
        state,
        &owned,
        Some(task),
        layout,
        answers,
        time,
        FieldErrors::new(),
        None,
    )
    .await?;
    Ok(Ok(page))
}

type FormPairs = Vec<(String, String)>;

/// The rating a form's fields make.
fn request_of(owned: &Owned, pairs: &FormPairs) -> RatingRequest {
    RatingRequest::from_form(&owned.rubric, &owned.batch.classifications, pairs)
}

/// The out-of-scope explanation a form carries ("" when it has none).
fn scope_explanation_of(pairs: &FormPairs) -> &str {
    pairs
        .iter()
        .find(|(k, _)| k == "explanation")
        .map_or("", |(_, v)| v.as_str())
}

/// The answers of a refused form as the page shows them again (with the code runs and
/// the warnings it ticked, where the form keeps them), and its time spent.
pub fn as_typed(request: &RatingRequest) -> (Answers, i32) {
    let mut answers = request.answers.clone();
    if let Some(evidence) = &request.evidence {
        answers.insert("evidence".into(), evidence.clone());
    }
    if let Some(ids) = &request.confirmed_warnings {
        answers.insert("confirmed_warnings".into(), ids.clone());
    }
    let time = request.time().ok().flatten().unwrap_or_default();
    (answers, time.seconds())
}

/// Where a finished assignment leads: the rater's next task in the same batch (the
/// finishing POST claims it). The work is saved by then, so a failure to claim the next
/// task is not the answer to this request: the rater goes to the batch's next page,
/// which shows what there is.
async fn to_next(state: &AppState, owned: &Owned, user: &User) -> AppResult<Response> {
    match go_next(state, owned.batch.id, user).await {
        Ok(response) => Ok(response),
        Err(err) => {
            tracing::warn!(%err, batch = %owned.batch.id, "could not claim the next task");
            Ok(Redirect::to(&format!("/batches/{}/next", owned.batch.id)).into_response())
        }
    }
}

/// After a finished task: a notice of what was done for the next page, and on to the
/// rater's next task. The work is saved by then: a notice that cannot be kept is logged,
/// not the answer to this request.
async fn finished_to_next(
    state: &AppState,
    owned: &Owned,
    user: &User,
    session: &Session,
    rating: &Rating,
) -> AppResult<Response> {
    match finished_notice(state, owned, rating).await {
        Ok(said) => {
            if let Err(err) = notice::set(session, said).await {
                tracing::warn!(%err, "could not keep the notice of a finished task");
            }
        }
        Err(err) => tracing::warn!(%err, "could not word the notice of a finished task"),
    }
    to_next(state, owned, user).await
}

/// What the rater's next page says of the task they finished, named as their form named
/// it, with the way back to it where the rating can still be changed.
async fn finished_notice(state: &AppState, owned: &Owned, rating: &Rating) -> AppResult<Notice> {
    let task = state
        .store()
        .task(owned.assignment.task_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let number = state.store().task_number(owned.assignment.id).await?;
    let name = crate::access::task_name(owned.sees_external_ids, &task.external_id, number);
    let heading = crate::access::task_heading(&name);
    let mut letters = heading.chars();
    let heading: String = letters
        .next()
        .map(|first| first.to_uppercase().chain(letters).collect())
        .unwrap_or_default();
    let rating_page = format!("/ratings/{}", rating.id);
    Ok(match rating.outcome {
        Outcome::Rated => {
            Notice::new(format!("{heading} submitted.")).link(rating_page, "See or revise it")
        }
        Outcome::OutOfScope => Notice::new(format!("{heading} marked out of scope."))
            .link(rating_page, "Undo: rate it after all"),
        Outcome::Skipped => Notice::new(format!("{heading} skipped: it goes to another rater.")),
    })
}

/// `POST /assignments/{id}/submit`: on success to the next task; otherwise the form
/// again, with every broken rule beside its field.
async fn submit(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    session: Session,
    CsrfForm(pairs): CsrfForm<FormPairs>,
) -> AppResult<Response> {
    let owned = match open_owned(&state, id, &page_user.user).await? {
        Ok(owned) => owned,
        Err(redirect) => return Ok(redirect),
    };
    let input = request_of(&owned, &pairs);
    match work::submit(state.store(), &owned, &page_user.user, &input).await {
        Ok(rating) => finished_to_next(&state, &owned, &page_user.user, &session, &rating).await,
        Err(ServiceError::Invalid(fields)) => {
            shown_again(&state, &owned, page_user.layout, &input, fields, Vec::new()).await
        }
        Err(ServiceError::Unconfirmed(warnings)) => {
            shown_again(
                &state,
                &owned,
                page_user.layout,
                &input,
                FieldErrors::new(),
                warnings,
            )
            .await
        }
        Err(other) => Err(other.into()),
    }
}

/// A refused submission shown again: what was typed is kept as the draft and shown with
/// the refused fields (422) or with the warnings to confirm or change (409).
async fn shown_again(
    state: &AppState,
    owned: &Owned,
    layout: Layout,
    input: &RatingRequest,
    fields: FieldErrors,
    warnings: Vec<WarningView>,
) -> AppResult<Response> {
    let _ = work::save_draft(state.store(), owned, input).await;
    let (shown, time) = as_typed(input);
    let status = if warnings.is_empty() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::CONFLICT
    };
    let mut page = form_page(state, owned, None, layout, shown, time, fields, None).await?;
    if !warnings.is_empty() {
        page.error_summary = look_again(warnings.len());
        page.warnings = warnings;
    }
    Ok((status, render(&page)?).into_response())
}

/// The summary above answers that meet warnings the rater has not confirmed.
fn look_again(count: usize) -> String {
    let which = match count {
        1 => "a warning".to_owned(),
        n => format!("{n} warnings"),
    };
    format!(
        "Your answers meet {which} below. Change the answers, or tick each warning to \
         confirm you mean them, then submit again."
    )
}

#[derive(Serialize)]
struct Saved {
    saved_at: chrono::DateTime<chrono::Utc>,
}

/// `POST /assignments/{id}/draft`: the form's automatic save (form-encoded, so a page
/// being closed can still send it as a beacon).
async fn draft(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(pairs): CsrfForm<FormPairs>,
) -> AppResult<Json<Saved>> {
    let owned = work::owned(state.store(), id, &page_user.user).await?;
    let rating = work::save_draft(state.store(), &owned, &request_of(&owned, &pairs)).await?;
    Ok(Json(Saved {
        saved_at: rating.updated_at,
    }))
}

/// The summary above a refused form.
fn attention(count: usize) -> String {
    match count {
        1 => "1 answer needs attention before this can be submitted.".into(),
        n => format!("{n} answers need attention before this can be submitted."),
    }
}

/// The summary when marking a task out of scope was refused.
fn scope_refusal(why: &str) -> String {
    format!("To mark it out of scope, the explanation {why}.")
}

/// What the form's script is told before it sends the form: the server's own messages.
#[derive(Serialize)]
struct Checked {
    /// Field path to what is wrong with it; empty when the form would be taken.
    fields: FieldErrors,
    summary: String,
    /// With no field refused: the rubric's warnings the answers meet, for the rater to
    /// confirm or change (the form is taken once each is confirmed).
    warnings: Vec<WarningView>,
}

/// `POST /assignments/{id}/check`: what submitting the form would be refused for (or,
/// with `check=out_of_scope`, marking it out of scope), in the words the server uses
/// when it refuses; nothing is saved. The script asks before it sends the form, so a
/// rater sees every problem at once without leaving the page.
async fn check(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(pairs): CsrfForm<FormPairs>,
) -> AppResult<Json<Checked>> {
    let owned = work::owned(state.store(), id, &page_user.user).await?;
    let out_of_scope = pairs
        .iter()
        .any(|(k, v)| k == "check" && v == Outcome::OutOfScope.as_str());
    let result = if out_of_scope {
        work::scope_explanation(scope_explanation_of(&pairs), &owned.batch).map(|_| vec![])
    } else {
        work::check(&owned, &request_of(&owned, &pairs))
    };
    let (fields, warnings) = match result {
        Ok(warnings) => (FieldErrors::new(), warnings),
        Err(ServiceError::Invalid(fields)) => (owned.rubric.on_form(fields), vec![]),
        Err(other) => return Err(other.into()),
    };
    let summary = match fields.get("explanation") {
        Some(why) if out_of_scope => scope_refusal(why),
        _ if fields.is_empty() && !warnings.is_empty() => look_again(warnings.len()),
        _ => attention(fields.len()),
    };
    Ok(Json(Checked {
        fields,
        summary,
        warnings,
    }))
}

#[derive(Deserialize)]
struct SkipForm {
    #[serde(default)]
    reason: String,
    note: Option<String>,
    /// The timer's active seconds, set by the page's script.
    time_spent_s: Option<String>,
}

async fn skip(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    session: Session,
    CsrfForm(form): CsrfForm<SkipForm>,
) -> AppResult<Response> {
    let owned = match open_owned(&state, id, &page_user.user).await? {
        Ok(owned) => owned,
        Err(redirect) => return Ok(redirect),
    };
    // A number the form carries as text; anything else is refused as the API refuses it.
    let time = form
        .time_spent_s
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<i64>()
                .map_or_else(|_| Value::from(t), Value::from)
        });
    let skipped = work::skip(
        state.store(),
        &owned,
        &page_user.user,
        &form.reason,
        form.note.as_deref(),
        time.as_ref(),
    )
    .await;
    match skipped {
        Ok(rating) => finished_to_next(&state, &owned, &page_user.user, &session, &rating).await,
        // The form again, its skip panel open with what was refused and the note typed.
        Err(ServiceError::Invalid(fields)) => {
            match draft_page(&state, id, &page_user.user, page_user.layout).await? {
                Ok(mut page) => {
                    page.skip_error = Some(
                        fields
                            .iter()
                            .map(|(field, why)| format!("The {field} {why}."))
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                    page.skip_reason = form.reason;
                    page.skip_note = form.note.unwrap_or_default();
                    Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
                }
                Err(finished) => Ok(finished),
            }
        }
        Err(other) => Err(other.into()),
    }
}

/// `POST /assignments/{id}/out-of-scope`: the explanation, with the answers on the form.
async fn out_of_scope(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    session: Session,
    CsrfForm(pairs): CsrfForm<FormPairs>,
) -> AppResult<Response> {
    let owned = match open_owned(&state, id, &page_user.user).await? {
        Ok(owned) => owned,
        Err(redirect) => return Ok(redirect),
    };
    let explanation = scope_explanation_of(&pairs).to_owned();
    let input = request_of(&owned, &pairs);
    let refused = as_typed(&input);
    match work::out_of_scope(state.store(), &owned, &page_user.user, &explanation, input).await {
        Ok(rating) => finished_to_next(&state, &owned, &page_user.user, &session, &rating).await,
        Err(ServiceError::Invalid(fields)) if fields.contains_key("explanation") => {
            let (shown, time) = refused;
            let why = scope_refusal(&fields["explanation"]);
            let mut page = form_page(
                &state,
                &owned,
                None,
                page_user.layout,
                shown,
                time,
                fields,
                Some(why),
            )
            .await?;
            page.oos_explanation = explanation;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(other) => Err(other.into()),
    }
}
