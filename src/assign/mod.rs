//! Working on tasks: taking the next one, drafts, submitting, skipping, marking out of
//! scope. The rater sees A and B in the order of their assignment; everything is stored
//! in the task's canonical order.

use std::sync::Arc;

use argon2::password_hash::rand_core::{OsRng, RngCore};
use axum::Router;
use chrono::{Duration, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::{AppError, AppResult, FieldErrors, WarningView};
use crate::services::ServiceError;
use crate::services::finish::{self, over, skip_of};
use crate::state::AppState;
use verdict_core::assignment::Assignment;
use verdict_core::batch::Batch;
use verdict_core::evidence;
use verdict_core::lifecycle::AssignmentState;
use verdict_core::rating::{Extras, Finish, Rating};
use verdict_core::rubric::{self, Mode, Rubric, ShownAnswers, TaskAnswers};
use verdict_core::task::Task;
use verdict_core::user::User;

pub mod api;
pub mod pages;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> Router<AppState> {
    pages::router()
}

/// A task as one rater sees it: A and B in the order of their assignment (or the one
/// response of a single-response rubric), no model names.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TaskView {
    /// The task's external id; for a rater of a batch that does not show them, a
    /// neutral name of the rater's own instead (`Task 17`: their 17th task of the batch).
    pub external_id: String,
    /// A string, or a list of `{role, content}` messages.
    pub prompt: Value,
    /// The two responses, for a rubric that compares them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_a: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_b: Option<String>,
    /// The one response, for a rubric that judges one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
}

impl TaskView {
    pub fn shown(task: &Task, subject: rubric::Subject, swapped: bool) -> Self {
        let (a, b) = if swapped {
            (&task.response_b, &task.response_a)
        } else {
            (&task.response_a, &task.response_b)
        };
        let (response_a, response_b, response) = match subject {
            rubric::Subject::Pair => (Some(a.clone()), Some(b.clone()), None),
            rubric::Subject::Single => (None, None, Some(task.response_a.clone())),
        };
        Self {
            external_id: task.external_id.clone(),
            prompt: task.prompt.clone(),
            response_a,
            response_b,
            response,
            metadata: task.metadata.clone(),
        }
    }
}

pub use crate::services::task::Rendered;

/// A task and its rendered HTML (rendered on first view); 404 if there is no such task.
pub async fn task_with_html(state: &AppState, task_id: Uuid) -> AppResult<(Task, Rendered)> {
    Ok(crate::services::task::with_html(state.store(), task_id).await?)
}

/// An assignment of `user`'s with its batch and rubric; 404 for anyone else's, so other
/// raters' work is not even confirmed to exist.
pub struct Owned {
    pub assignment: Assignment,
    pub batch: Batch,
    pub rubric: Arc<Rubric>,
    /// Whether its rater is shown the task's external id ([`crate::access::sees_external_ids`]).
    pub sees_external_ids: bool,
}

pub async fn owned(state: &AppState, id: Uuid, user: &User) -> AppResult<Owned> {
    let assignment = state
        .store()
        .assignment(id)
        .await?
        .filter(|a| a.rater_id == user.id)
        .ok_or(AppError::NotFound)?;
    owned_of(state, assignment, user).await
}

/// An assignment of `user`'s as [`owned`] gives it, with its task and the draft saved on
/// it (answers in the orientation shown), all read in one query: what the form shows.
/// The task's `external_id` is its name as `user` may see it
/// ([`crate::access::task_name`]).
pub async fn owned_form(
    state: &AppState,
    id: Uuid,
    user: &User,
) -> AppResult<(Owned, Task, Option<ShownDraft>)> {
    let form = state
        .store()
        .assignment_form(id)
        .await?
        .ok_or(AppError::NotFound)?;
    let number = form.task_number();
    let (assignment, mut task, draft) = form.split();
    if assignment.rater_id != user.id {
        return Err(AppError::NotFound);
    }
    let owned = owned_of(state, assignment, user).await?;
    task.external_id = crate::access::task_name(owned.sees_external_ids, &task.external_id, number);
    let swapped = owned.assignment.swapped;
    let draft = draft.map(|d| ShownDraft {
        answers: d.answers.into_shown(&owned.rubric, swapped),
        evidence: d.evidence.map(|e| e.oriented(swapped)),
        time_spent_s: d.time_spent_s,
    });
    Ok((owned, task, draft))
}

/// A saved draft as its rater's form shows it: answers and code runs in the order the
/// pair was shown.
#[derive(Debug, Clone)]
pub struct ShownDraft {
    pub answers: ShownAnswers,
    pub evidence: Option<evidence::Evidence>,
    pub time_spent_s: i32,
}

/// The batch and rubric of a rater's own assignment (both from memory once read), after
/// checking that work on it may go on.
async fn owned_of(state: &AppState, assignment: Assignment, user: &User) -> AppResult<Owned> {
    let batch = state
        .store()
        .access_batch(assignment.batch_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let rubric = state.store().batch_rubric(&batch).await?;
    // Work on a task held (or held until lately) needs the batch open and the rater
    // still one of its raters; a finished one may still be looked at.
    if assignment.state.is_unfinished() {
        if !batch.state.takes_new_assignments() {
            return Err(AppError::Conflict(
                "this batch is closed; your draft is kept for when it opens again".into(),
            ));
        }
        if !crate::access::can_rate(state.store(), batch.id, user).await? {
            return Err(AppError::Conflict(
                "you are no longer one of this batch's raters".into(),
            ));
        }
    }
    let sees_external_ids = crate::access::sees_external_ids(user, batch.raters_see_external_ids);
    Ok(Owned {
        assignment,
        batch,
        rubric,
        sees_external_ids,
    })
}

/// The rater's open assignment in a batch, or a new one; `None` when nothing is left.
pub async fn next(state: &AppState, batch_id: Uuid, user: &User) -> AppResult<Option<Assignment>> {
    if !crate::access::can_rate(state.store(), batch_id, user).await? {
        return Err(AppError::NotFound);
    }
    let batch = state
        .store()
        .access_batch(batch_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let randomize = batch.randomize;
    let swap = move || randomize && OsRng.next_u32() & 1 == 1;
    // A gold task at the batch's rate: a uniform draw in [0, 1) below it.
    let rate = batch.gold_rate;
    let gold = move || rate > 0.0 && f64::from(OsRng.next_u32()) / 4_294_967_296.0 < rate;
    Ok(state
        .store()
        .next_assignment(&batch, user.id, swap, gold)
        .await?)
}

/// Releases an open assignment by hand: `lead` must lead its batch (or be an admin);
/// 404 otherwise, 409 if it is no longer open. Recorded in the audit log.
pub async fn release(state: &AppState, id: Uuid, lead: &User) -> AppResult<Assignment> {
    let assignment = state
        .store()
        .assignment(id)
        .await?
        .ok_or(AppError::NotFound)?;
    let batch = crate::batches::visible(state, assignment.batch_id, lead).await?;
    let released = state
        .store()
        .release(crate::store::assignments::Release::One(id))
        .await?;
    let Some(mut ended) = released.into_iter().next() else {
        return Err(AppError::Conflict(format!(
            "this assignment is no longer open (it is {})",
            assignment.state
        )));
    };
    ended.state = AssignmentState::Expired;
    let detail = serde_json::json!({
        "batch": batch.batch.name, "batch_id": batch.batch.id, "task": assignment.task_id,
        "rater": assignment.rater_id
    });
    crate::audit::record(
        state.store(),
        lead,
        "assignment.release",
        &id.to_string(),
        detail,
    )
    .await;
    Ok(ended)
}

/// The saved answers of an assignment, in the orientation its rater was shown.
pub async fn draft(state: &AppState, owned: &Owned) -> AppResult<Option<(Rating, ShownAnswers)>> {
    let rating = state
        .store()
        .rating_of_assignment(owned.assignment.id)
        .await?;
    Ok(rating.map(|r| {
        let shown = r
            .answers
            .clone()
            .into_shown(&owned.rubric, owned.assignment.swapped);
        (r, shown)
    }))
}

/// Where a rater's answers are checked: the batch's rubric and settings, and whether
/// the rater saw A and B swapped.
pub struct Form<'a> {
    pub rubric: &'a Rubric,
    pub batch: &'a Batch,
    pub swapped: bool,
}

impl Owned {
    pub fn form(&self) -> Form<'_> {
        Form {
            rubric: &self.rubric,
            batch: &self.batch,
            swapped: self.assignment.swapped,
        }
    }
}

/// A submission checked: its answers canonical, the active time spent, what it carries
/// beside them, and (for a submission) the rubric's warnings its answers meet.
pub struct Checked<'r> {
    pub answers: TaskAnswers,
    pub time: i32,
    pub extras: Extras,
    pub warnings: Vec<&'r rubric::Warning>,
}

/// Checks answers given in the shown orientation (with the evidence and confirmed
/// warnings beside them) and turns them canonical; the time spent is taken out of them
/// (it has a column of its own). Every broken field is named at once.
pub fn checked<'r>(form: &Form<'r>, input: &Value, mode: Mode) -> AppResult<Checked<'r>> {
    let min = form.batch.min_explanation();
    let questions = &form.batch.classifications;
    let (input, extras) = take_extras(form, input);
    let answers = rubric::validate(form.rubric, questions, &input, mode, min);
    let (mut answers, extras) = match (answers, extras) {
        (Ok(answers), Ok(extras)) => (answers, extras),
        (answers, extras) => {
            let mut fields = answers.err().unwrap_or_default();
            fields.extend(extras.err().unwrap_or_default());
            return Err(AppError::invalid(fields));
        }
    };
    // Checked by `validate`: a whole number of seconds in range.
    let time = rubric::take_time_spent(&mut answers).unwrap_or(0);
    // Drafts are saved on every pause in typing; only a submission is held to warnings.
    let warnings = match mode {
        Mode::Submit => rubric::warnings(form.rubric, &answers),
        Mode::Draft | Mode::OutOfScope => Vec::new(),
    };
    Ok(Checked {
        answers: ShownAnswers::new(answers).into_task(form.rubric, form.swapped),
        time,
        extras,
        warnings,
    })
}

/// Takes `evidence` and `confirmed_warnings` out of a submission, checked, leaving the
/// answers for the rubric's checks. The evidence is turned canonical.
fn take_extras(form: &Form, input: &Value) -> (Value, Result<Extras, FieldErrors>) {
    let mut input = input.clone();
    let mut extras = Extras::default();
    let mut errors = FieldErrors::new();
    if let Some(object) = input.as_object_mut() {
        if let Some(given) = object.remove("evidence") {
            let single = form.rubric.subject == rubric::Subject::Single;
            match evidence::parse(&given, single) {
                Ok(e) => extras.evidence = Some(e.oriented(form.swapped)),
                Err(e) => errors.extend(e),
            }
        }
        if let Some(given) = object.remove("confirmed_warnings") {
            match confirmed_ids(form.rubric, &given) {
                Ok(ids) => extras.confirmed_warnings = ids,
                Err(e) => errors.extend(e),
            }
        }
    }
    let extras = if errors.is_empty() {
        Ok(extras)
    } else {
        Err(errors)
    };
    (input, extras)
}

/// The ids in `confirmed_warnings`: a list of ids of the rubric's warnings.
fn confirmed_ids(rubric: &Rubric, given: &Value) -> Result<Vec<String>, FieldErrors> {
    let field = "confirmed_warnings";
    let Some(list) = given.as_array() else {
        return Err(FieldErrors::from([(
            field.into(),
            "must be a list of warning ids".into(),
        )]));
    };
    let mut errors = FieldErrors::new();
    let mut ids = Vec::new();
    for (i, id) in list.iter().enumerate() {
        match id.as_str() {
            Some(id) if rubric.warning(id).is_some() => ids.push(id.to_owned()),
            Some(id) => {
                let known: Vec<&str> = rubric.warnings.iter().map(|w| w.id.as_str()).collect();
                let known = if known.is_empty() {
                    "this rubric has no warnings".to_owned()
                } else {
                    format!("its warnings are {}", known.join(", "))
                };
                errors.insert(
                    format!("{field}[{i}]"),
                    format!("{id:?} is not a warning of this rubric; {known}"),
                );
            }
            None => {
                errors.insert(
                    format!("{field}[{i}]"),
                    "must be a warning id, as a string".into(),
                );
            }
        }
    }
    if errors.is_empty() {
        Ok(ids)
    } else {
        Err(errors)
    }
}

/// The warnings a submission must have confirmed: each one its answers meet. Refused
/// (409, nothing stored) while any is unconfirmed; taken, the rating records them.
pub fn confirm(checked: &mut Checked) -> AppResult<()> {
    let unconfirmed: Vec<WarningView> = checked
        .warnings
        .iter()
        .filter(|w| !checked.extras.confirmed_warnings.contains(&w.id))
        .map(|w| view(w))
        .collect();
    if !unconfirmed.is_empty() {
        return Err(AppError::Unconfirmed(unconfirmed));
    }
    checked.extras.confirmed_warnings = checked.warnings.iter().map(|w| w.id.clone()).collect();
    Ok(())
}

/// What submitting `input` would be refused for, by path (an error), or else the
/// rubric's warnings it meets (answers it takes once the rater confirms them); nothing
/// is saved.
pub fn check(owned: &Owned, input: &Value) -> AppResult<Vec<WarningView>> {
    let checked = checked(&owned.form(), input, Mode::Submit)?;
    Ok(checked.warnings.iter().map(|w| view(w)).collect())
}

fn view(warning: &rubric::Warning) -> WarningView {
    WarningView {
        id: warning.id.clone(),
        message: warning.message.clone(),
    }
}

pub async fn save_draft(state: &AppState, owned: &Owned, input: &Value) -> AppResult<Rating> {
    let checked = checked(&owned.form(), input, Mode::Draft)?;
    let lease = Utc::now() + Duration::minutes(i64::from(owned.batch.lease_minutes));
    state
        .store()
        .save_draft(
            owned.assignment.id,
            &checked.answers,
            &checked.extras,
            checked.time,
            lease,
        )
        .await?
        .map_err(AppError::from)
}

pub async fn submit(
    state: &AppState,
    owned: &Owned,
    user: &User,
    input: &Value,
) -> AppResult<Rating> {
    let mut checked = checked(&owned.form(), input, Mode::Submit)?;
    confirm(&mut checked)?;
    let finish = Finish::Rated {
        answers: checked.answers,
    };
    finish_with(state, owned, user, &finish, &checked.extras, checked.time).await
}

/// Skips the task, keeping the active time spent on it (`time_spent_s`, checked as a
/// rating's is; none keeps what its draft recorded).
pub async fn skip(
    state: &AppState,
    owned: &Owned,
    user: &User,
    reason: &str,
    note: Option<&str>,
    time_spent_s: Option<&Value>,
) -> AppResult<Rating> {
    let time = time_spent_s.map(rubric::time_spent).transpose();
    match (skip_of(reason, note), time) {
        (Ok(finish), Ok(time)) => {
            let keep = Extras::default();
            finish_with(state, owned, user, &finish, &keep, time.unwrap_or(0)).await
        }
        (finish, time) => {
            // Every refused field at once: the reason, the note and the time.
            let mut fields = match finish {
                Err(ServiceError::Invalid(fields)) => fields,
                Err(other) => return Err(other.into()),
                Ok(_) => FieldErrors::new(),
            };
            if let Err(why) = time {
                fields.insert("time_spent_s".into(), why);
            }
            Err(AppError::invalid(fields))
        }
    }
}

/// Why a prompt is out of scope, checked (see [`finish::scope_explanation`]); the pages
/// check it before anything is stored.
pub fn scope_explanation(explanation: &str, batch: &Batch) -> AppResult<String> {
    Ok(finish::scope_explanation(explanation, batch)?)
}

/// Marks an assignment out of scope. Answers already saved in its draft are kept, and
/// any given with the request laid over them.
pub async fn out_of_scope(
    state: &AppState,
    owned: &Owned,
    user: &User,
    explanation: &str,
    input: &Value,
) -> AppResult<Rating> {
    let explanation = scope_explanation(explanation, &owned.batch)?;
    let kept = draft(state, owned)
        .await?
        .map(|(_, shown)| shown)
        .unwrap_or_default();
    let checked = checked(&owned.form(), &over(&kept, input), Mode::OutOfScope)?;
    let finish = Finish::OutOfScope {
        answers: checked.answers,
        explanation,
    };
    // Warnings are about rated answers: out of scope, none is asked or recorded.
    let extras = Extras {
        confirmed_warnings: vec![],
        ..checked.extras
    };
    finish_with(state, owned, user, &finish, &extras, checked.time).await
}

async fn finish_with(
    state: &AppState,
    owned: &Owned,
    user: &User,
    finish: &Finish,
    extras: &Extras,
    time: i32,
) -> AppResult<Rating> {
    let mut extras = extras.clone();
    (extras.gold_grade, extras.review_first) = crate::services::gold::assess(
        state.store(),
        &owned.batch,
        owned.assignment.task_id,
        user.id,
        finish,
        false,
    )
    .await?;
    state
        .store()
        .finish(
            owned.assignment.id,
            user.id,
            finish,
            &extras,
            time,
            owned.batch.overlap,
        )
        .await?
        .map_err(AppError::from)
}

/// Turns the fields of the HTML form (`a.correctness=...`, `sxs=3`, `relevant=true`,
/// repeated `classifications.x` for several choices) into answers JSON for the rubric
/// checks. A value that is not of the question's type is kept as text so the check can
/// name it; derived answers are never taken from a form.
pub fn form_answers(
    rubric: &Rubric,
    questions: &[rubric::Classification],
    pairs: &[(String, String)],
) -> Value {
    let mut answers = Map::new();
    let mut sides: [Map<String, Value>; 2] = [Map::new(), Map::new()];
    let mut classifications = Map::new();
    // The question a field answers (or explains), asked of each response or once.
    let find = |key: &str, each: bool| {
        rubric.questions.iter().find_map(|q| {
            (q.each_response == each).then_some(())?;
            if q.key == key {
                Some((q, false))
            } else if q.explanation.is_some() && q.explanation_key() == key {
                Some((q, true))
            } else {
                None
            }
        })
    };
    let typed = |q: &rubric::Question, explains: bool, value: &str| {
        let text = Value::from(value);
        if explains {
            return text;
        }
        match q.answer {
            rubric::Answer::Scale { .. } => value.parse::<i64>().map_or(text, Value::from),
            rubric::Answer::YesNo { .. } => value.parse::<bool>().map_or(text, Value::from),
            rubric::Answer::Choice { .. } | rubric::Answer::Text { .. } => text,
        }
    };
    for (name, value) in pairs {
        if let Some((side, key)) = name.split_once('.') {
            let index = match side {
                "a" => 0,
                "b" => 1,
                "classifications" => {
                    let multiple = questions.iter().any(|q| q.key == key && q.multiple);
                    if value.is_empty() {
                        continue;
                    }
                    if multiple {
                        let list = classifications
                            .entry(key.to_owned())
                            .or_insert_with(|| Value::Array(vec![]));
                        if let Value::Array(items) = list {
                            items.push(Value::from(value.as_str()));
                        }
                    } else {
                        classifications.insert(key.to_owned(), Value::from(value.as_str()));
                    }
                    continue;
                }
                _ => continue,
            };
            if let Some((q, explains)) = find(key, true) {
                sides[index].insert(key.to_owned(), typed(q, explains, value));
            }
        } else if name == "time_spent_s" {
            if let Ok(n) = value.parse::<i64>() {
                answers.insert(name.clone(), Value::from(n));
            }
        } else if name == "evidence" {
            // JSON text, read with the rest of the submission.
            answers.insert(name.clone(), Value::from(value.as_str()));
        } else if name == "confirmed_warnings" {
            let list = answers
                .entry(name.clone())
                .or_insert_with(|| Value::Array(vec![]));
            if let Value::Array(ids) = list {
                ids.push(Value::from(value.as_str()));
            }
        } else if let Some((q, explains)) = find(name, false) {
            answers.insert(name.clone(), typed(q, explains, value));
        }
    }
    if rubric.subject == rubric::Subject::Pair {
        let [a, b] = sides;
        answers.insert("a".into(), Value::Object(a));
        answers.insert("b".into(), Value::Object(b));
    }
    answers.insert("classifications".into(), Value::Object(classifications));
    Value::Object(answers)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn form_fields_become_answers() {
        let rubric = rubric::by_name("blackhat").unwrap();
        let questions = vec![rubric::Classification {
            key: "kind".into(),
            label: "Kind".into(),
            multiple: true,
            required: false,
            options: vec!["bug".into(), "feature".into()],
        }];
        let pairs: Vec<(String, String)> = [
            ("a.executability", "no"),
            ("a.executability_explanation", "needs a database"),
            ("b.correctness", "no_issues"),
            ("sxs", "3"),
            ("sxs_explanation", "A is closer"),
            ("classifications.kind", "bug"),
            ("classifications.kind", "feature"),
            ("time_spent_s", "75"),
            ("csrf_token", "ignored"),
            ("a.rater", "dropped: not a rubric field"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let answers = form_answers(rubric, &questions, &pairs);
        assert_eq!(
            answers,
            json!({
                "a": {"executability": "no", "executability_explanation": "needs a database"},
                "b": {"correctness": "no_issues"},
                "sxs": 3, "sxs_explanation": "A is closer",
                "classifications": {"kind": ["bug", "feature"]},
                "time_spent_s": 75
            })
        );
        let odd = form_answers(rubric, &[], &[("sxs".into(), "seven".into())]);
        assert_eq!(odd["sxs"], "seven", "kept as text so the check names it");
    }

    #[test]
    fn yes_no_answers_and_text_questions_of_a_single_response_rubric() {
        let rubric = rubric::by_name("additive-5").unwrap();
        let pairs: Vec<(String, String)> = [
            ("relevant", "true"),
            ("repetitive", "false"),
            ("useful", "maybe"),
            ("justification", "It answers the question."),
            ("score", "5"),
            ("a.relevant", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(
            form_answers(rubric, &[], &pairs),
            json!({
                "relevant": true, "repetitive": false, "useful": "maybe",
                "justification": "It answers the question.", "classifications": {}
            }),
            "no sides, no derived score from the form"
        );
    }

    #[test]
    fn a_swapped_task_shows_b_first() {
        let task = Task {
            id: Uuid::nil(),
            batch_id: Uuid::nil(),
            external_id: "t".into(),
            prompt: json!("p"),
            response_a: "first".into(),
            response_b: "second".into(),
            model_a: Some("m1".into()),
            model_b: Some("m2".into()),
            metadata: Map::new(),
            rendered: None,
        };
        let shown = TaskView::shown(&task, rubric::Subject::Pair, true);
        assert_eq!(
            (shown.response_a.as_deref(), shown.response_b.as_deref()),
            (Some("second"), Some("first"))
        );
        let plain = TaskView::shown(&task, rubric::Subject::Pair, false);
        assert_eq!(plain.response_a.as_deref(), Some("first"));
        let single = TaskView::shown(&task, rubric::Subject::Single, false);
        assert_eq!(
            (
                single.response.as_deref(),
                single.response_a,
                single.response_b
            ),
            (Some("first"), None, None)
        );
    }
}
