//! Adjudication: a lead records a task's final answer where its raters disagree, and the
//! final dataset gives one answer per task: the adjudicated one, else the aggregate of
//! the ratings that count (by the batch's `final_method`), else none.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::audit::{self, Actor};
use super::{FieldErrors, ServiceError, ServiceResult};
use crate::store::Store;
use crate::store::final_answers::{FinalAnswer, NewFinal};
use verdict_core::batch::Batch;
use verdict_core::metrics::aggregate::{Gathered, Label, Method};
use verdict_core::rubric::{Mode, Rubric, TaskAnswers};
use verdict_core::submission::{Form, RatingRequest};
use verdict_core::user::User;

/// The longest note a final answer takes, in characters.
pub const MAX_NOTE_CHARS: usize = 4000;

/// A final answer as a lead sends it.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FinalRequest {
    /// Every answer the rubric asks, in the task's own A/B order, checked as a rating's
    /// are (its warnings are the lead's to weigh, not confirmed).
    #[schema(value_type = Object)]
    pub answers: Value,
    /// The rating it starts from, if any: one of the task's.
    #[serde(default)]
    pub from_rating: Option<Uuid>,
    /// Why, for whoever reads the dataset later.
    #[serde(default)]
    pub note: Option<String>,
}

/// A task's final answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FinalView {
    pub external_id: String,
    /// The task's own A/B order.
    #[schema(value_type = Object)]
    pub answers: TaskAnswers,
    pub from_rating: Option<Uuid>,
    pub note: Option<String>,
    /// Who recorded it.
    pub by: Option<String>,
    pub at: DateTime<Utc>,
}

impl From<FinalAnswer> for FinalView {
    fn from(f: FinalAnswer) -> Self {
        Self {
            external_id: f.external_id,
            answers: f.answers.0,
            from_rating: f.from_rating,
            note: f.note,
            by: f.decided_by,
            at: f.decided_at,
        }
    }
}

/// The task `external_id` of `batch` a final answer may be recorded for: not gold (graded
/// against its expected answers), not withdrawn.
async fn task_of(store: &Store, batch: &Batch, external_id: &str) -> ServiceResult<Uuid> {
    let task = store
        .task_to_correct(batch.id, external_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    if task.gold {
        return Err(ServiceError::Conflict(
            "a gold task has its expected answers: it takes no final answer".into(),
        ));
    }
    if task.withdrawn_at.is_some() {
        return Err(ServiceError::Conflict(
            "the task is withdrawn: put it back before deciding its answer".into(),
        ));
    }
    Ok(task.id)
}

/// Records (or replaces) the final answer of task `external_id` as `lead`.
pub async fn record(
    store: &Store,
    batch: &Batch,
    external_id: &str,
    request: FinalRequest,
    lead: &User,
) -> ServiceResult<FinalView> {
    let task = task_of(store, batch, external_id).await?;
    let mut errors = FieldErrors::new();
    let rubric = store.batch_rubric(batch).await?;
    let answers = match request.answers {
        Value::Object(answers) => checked(&rubric, batch, answers, &mut errors),
        _ => {
            errors.insert(
                "answers".into(),
                "must be a JSON object of the rubric's answers".into(),
            );
            None
        }
    };
    if let Some(rating) = request.from_rating
        && !store.is_rating_of_task(rating, task).await?
    {
        errors.insert(
            "from_rating".into(),
            "is not a finished rating of this task".into(),
        );
    }
    let note = request
        .note
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty());
    if let Some(note) = &note
        && note.chars().count() > MAX_NOTE_CHARS
    {
        errors.insert(
            "note".into(),
            format!("is longer than {MAX_NOTE_CHARS} characters"),
        );
    }
    let Some(answers) = answers.filter(|_| errors.is_empty()) else {
        return Err(ServiceError::Invalid(errors));
    };
    store
        .set_final_answer(NewFinal {
            task,
            batch: batch.id,
            answers: &answers,
            from_rating: request.from_rating,
            note: note.as_deref(),
            by: lead.id,
            at: Utc::now(),
        })
        .await?;
    let target = format!("{}/{external_id}", batch.name);
    let detail = json!({"from_rating": request.from_rating});
    audit::record(store, lead, "task.final", &target, detail).await;
    let stored = store
        .final_answer(task)
        .await?
        .ok_or_else(|| ServiceError::Internal("a final answer just stored is gone".into()))?;
    Ok(stored.into())
}

/// `answers` checked as a submitted rating's (in the task's own order), errors named
/// under `answers.`.
fn checked(
    rubric: &Rubric,
    batch: &Batch,
    answers: Map<String, Value>,
    errors: &mut FieldErrors,
) -> Option<TaskAnswers> {
    let form = Form {
        rubric,
        batch,
        swapped: false,
    };
    let request = RatingRequest {
        answers,
        time_spent: None,
        evidence: None,
        confirmed_warnings: None,
    };
    match form.check(&request, Mode::Submit) {
        Ok(rating) => Some(rating.answers),
        Err(fields) => {
            for (path, why) in fields {
                errors.insert(format!("answers.{path}"), why);
            }
            None
        }
    }
}

/// Task `external_id`'s final answer.
pub async fn read(store: &Store, batch: &Batch, external_id: &str) -> ServiceResult<FinalView> {
    let task = store
        .task_by_external_id(batch.id, external_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    match store.final_answer(task).await? {
        Some(found) => Ok(found.into()),
        None => Err(ServiceError::NotFound),
    }
}

/// Removes task `external_id`'s final answer as `actor`: the final dataset goes back to
/// the aggregate for it.
pub async fn remove<'a>(
    store: &Store,
    batch: &Batch,
    external_id: &str,
    actor: impl Into<Actor<'a>>,
) -> ServiceResult<()> {
    let task = store
        .task_by_external_id(batch.id, external_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    if !store.remove_final_answer(task).await? {
        return Err(ServiceError::NotFound);
    }
    let target = format!("{}/{external_id}", batch.name);
    audit::record(store, actor, "task.final_removed", &target, json!({})).await;
    Ok(())
}

/// Where a task's final answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A lead recorded it.
    Adjudicated,
    /// Majority vote over the ratings that count (a score: their middle answer).
    Majority,
    /// Dawid-Skene over the ratings that count (a score: their middle answer).
    DawidSkene,
    /// No rating counts and no lead decided.
    None,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Adjudicated => "adjudicated",
            Source::Majority => "majority",
            Source::DawidSkene => "dawid_skene",
            Source::None => "none",
        }
    }
}

/// One task of the final dataset.
#[derive(Debug, Clone, Serialize)]
pub struct FinalRow {
    pub external_id: String,
    pub source: Source,
    /// The task's own A/B order: a lead's whole answer, or each aggregated question's
    /// answer (`null` where its answers are tied), or nothing.
    pub answers: Value,
    /// The aggregated questions (by path) whose answers are tied: no answer given.
    pub tied: Vec<String>,
}

/// The final dataset of `batch`: one row per task (gold and withdrawn tasks left out), in
/// upload order, from the final answers leads recorded and `gathered` (the answers of the
/// ratings that count) aggregated by the batch's `final_method`.
pub fn final_rows(
    tasks: &[String],
    finals: Vec<FinalAnswer>,
    gathered: &Gathered<String>,
    method: Method,
) -> Vec<FinalRow> {
    let mut decided: BTreeMap<String, FinalAnswer> = finals
        .into_iter()
        .map(|f| (f.external_id.clone(), f))
        .collect();
    // Each question's aggregate, by task: its answer, or its tie.
    let known: std::collections::BTreeSet<&str> = tasks.iter().map(String::as_str).collect();
    let mut aggregated: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut tied: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, question) in gathered.questions.iter().enumerate() {
        for answer in gathered.run(i, method).tasks {
            if !known.contains(answer.task.as_str()) {
                continue;
            }
            let task = answer.task.clone();
            let value = answer.label.as_ref().map_or(Value::Null, Label::to_json);
            if answer.label.is_none() {
                tied.entry(task.clone())
                    .or_default()
                    .push(question.path.clone());
            }
            let holder = aggregated.entry(task).or_default();
            match question.path.split_once('.') {
                Some((side, key)) => {
                    if let Value::Object(inner) = holder
                        .entry(side.to_owned())
                        .or_insert_with(|| Value::Object(Map::new()))
                    {
                        inner.insert(key.to_owned(), value);
                    }
                }
                None => {
                    holder.insert(question.path.clone(), value);
                }
            }
        }
    }
    let by_method = match method {
        Method::Majority => Source::Majority,
        Method::DawidSkene => Source::DawidSkene,
    };
    tasks
        .iter()
        .map(|task| {
            if let Some(found) = decided.remove(task) {
                return FinalRow {
                    external_id: task.clone(),
                    source: Source::Adjudicated,
                    answers: Value::Object(found.answers.0.into_map()),
                    tied: Vec::new(),
                };
            }
            match aggregated.remove(task) {
                Some(answers) => FinalRow {
                    external_id: task.clone(),
                    source: by_method,
                    answers: Value::Object(answers),
                    tied: tied.remove(task).unwrap_or_default(),
                },
                None => FinalRow {
                    external_id: task.clone(),
                    source: Source::None,
                    answers: Value::Object(Map::new()),
                    tied: Vec::new(),
                },
            }
        })
        .collect()
}
