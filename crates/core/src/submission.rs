//! What a rater sends, read once into types: a [`RatingRequest`] is a request's parts
//! split apart (answers as the rater was shown them, active time, code runs, confirmed
//! warnings), whether it came as JSON or as a page's form; a [`Form`] (the batch's
//! rubric and settings, and whether the pair was shown swapped) checks it into a
//! [`NewRating`], whose answers are in the task's own order. Skips, out-of-scope
//! explanations and revisions are read here too, so the API, the pages and the CLI
//! refuse the same input with the same words.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::batch::Batch;
use crate::evidence;
use crate::fields::FieldErrors;
use crate::lifecycle::{Outcome, SkipReason};
use crate::rating::{Extras, Finish};
use crate::rubric::{self, Answers, Classification, Mode, Rubric, ShownAnswers, TaskAnswers};

#[cfg(test)]
mod tests;

/// The longest note or out-of-scope explanation.
pub const MAX_NOTE_CHARS: usize = 5000;

/// The most time a rating may claim, a week: anything more is a broken clock.
pub const MAX_TIME_SPENT_S: i64 = 7 * 24 * 3600;

/// Active seconds a rater spent on a task: a whole number from 0 to
/// [`MAX_TIME_SPENT_S`], which only [`TryFrom`] makes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct TimeSpent(i32);

impl TimeSpent {
    /// The seconds, as the database's column holds them.
    pub fn seconds(self) -> i32 {
        self.0
    }
}

impl TryFrom<&Value> for TimeSpent {
    type Error = String;

    fn try_from(value: &Value) -> Result<Self, String> {
        value
            .as_i64()
            .filter(|s| (0..=MAX_TIME_SPENT_S).contains(s))
            .and_then(|s| i32::try_from(s).ok())
            .map(Self)
            .ok_or_else(|| {
                format!("must be a whole number of seconds from 0 to {MAX_TIME_SPENT_S}")
            })
    }
}

/// The active time a request gives under `time_spent_s`: none when absent or `null`.
fn time_of(given: Option<&Value>) -> Result<Option<TimeSpent>, String> {
    match given {
        None | Some(Value::Null) => Ok(None),
        Some(value) => TimeSpent::try_from(value).map(Some),
    }
}

/// A rating as a request carries it, split into its parts and not yet checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RatingRequest {
    /// The answers, in the order the pair was shown to the rater.
    pub answers: Answers,
    /// `time_spent_s`: the active time so far.
    pub time_spent: Option<Value>,
    /// `evidence`: the code runs made in the browser, as JSON or JSON text.
    pub evidence: Option<Value>,
    /// `confirmed_warnings`: the ids of the rubric's warnings the rater confirmed.
    pub confirmed_warnings: Option<Value>,
}

impl TryFrom<Value> for RatingRequest {
    type Error = FieldErrors;

    /// A JSON body's parts; anything but an object is refused (as `answers`).
    fn try_from(body: Value) -> Result<Self, FieldErrors> {
        match body {
            Value::Object(answers) => Ok(Self::from(answers)),
            _ => Err(FieldErrors::from([(
                "answers".into(),
                "must be a JSON object".into(),
            )])),
        }
    }
}

impl From<Map<String, Value>> for RatingRequest {
    fn from(mut answers: Map<String, Value>) -> Self {
        Self {
            time_spent: answers.remove("time_spent_s"),
            evidence: answers.remove("evidence"),
            confirmed_warnings: answers.remove("confirmed_warnings"),
            answers,
        }
    }
}

impl RatingRequest {
    /// A page form's fields (`a.correctness=...`, `sxs=3`, repeated
    /// `classifications.x` for several choices, `time_spent_s`, `evidence` as JSON
    /// text, repeated `confirmed_warnings`) as a request. A value that is not of its
    /// question's type is kept as text so the check can name it; fields no question
    /// asks for, and derived answers, are never taken from a form.
    pub fn from_form(
        rubric: &Rubric,
        questions: &[Classification],
        pairs: &[(String, String)],
    ) -> Self {
        let mut request = Self::default();
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
                rubric::Answer::Choice { .. }
                | rubric::Answer::MultiChoice { .. }
                | rubric::Answer::Text { .. } => text,
            }
        };
        for (name, value) in pairs {
            if let Some((side, key)) = name.split_once('.') {
                let index = match side {
                    "a" => 0,
                    "b" => 1,
                    "classifications" => {
                        if value.is_empty() {
                            continue;
                        }
                        let multiple = questions.iter().any(|q| q.key == key && q.multiple);
                        let value = Value::from(value.as_str());
                        if multiple {
                            let list = classifications
                                .entry(key.to_owned())
                                .or_insert_with(|| Value::Array(vec![]));
                            if let Value::Array(items) = list {
                                items.push(value);
                            }
                        } else {
                            classifications.insert(key.to_owned(), value);
                        }
                        continue;
                    }
                    "ladder" => {
                        climbed(rubric, key, value, &mut request.answers);
                        continue;
                    }
                    _ => continue,
                };
                if let Some((q, explains)) = find(key, true) {
                    let value = typed(q, explains, value);
                    if explains || !matches!(q.answer, rubric::Answer::MultiChoice { .. }) {
                        sides[index].insert(key.to_owned(), value);
                    } else if let Value::Array(picked) = sides[index]
                        .entry(key.to_owned())
                        .or_insert_with(|| Value::Array(vec![]))
                    {
                        // Each ticked box is one field of the same name.
                        picked.push(value);
                    }
                }
            } else if name == "time_spent_s" {
                // A form's clock that is not a number is left out, as if not sent.
                if let Ok(n) = value.parse::<i64>() {
                    request.time_spent = Some(Value::from(n));
                }
            } else if name == "evidence" {
                // JSON text, read with the rest of the submission.
                request.evidence = Some(Value::from(value.as_str()));
            } else if name == "confirmed_warnings" {
                let list = request
                    .confirmed_warnings
                    .get_or_insert_with(|| Value::Array(vec![]));
                if let Value::Array(ids) = list {
                    ids.push(Value::from(value.as_str()));
                }
            } else if let Some((q, explains)) = find(name, false) {
                let value = typed(q, explains, value);
                if explains || !matches!(q.answer, rubric::Answer::MultiChoice { .. }) {
                    request.answers.insert(name.clone(), value);
                } else if let Value::Array(picked) = request
                    .answers
                    .entry(name.clone())
                    .or_insert_with(|| Value::Array(vec![]))
                {
                    picked.push(value);
                }
            }
        }
        if rubric.subject == rubric::Subject::Pair {
            let [a, b] = sides;
            request.answers.insert("a".into(), Value::Object(a));
            request.answers.insert("b".into(), Value::Object(b));
        }
        request
            .answers
            .insert("classifications".into(), Value::Object(classifications));
        request
    }

    /// This request's answers laid over answers kept before (both as the rater was
    /// shown them): a question given replaces the kept one, the rest stay. Answers
    /// asked of each response and classifications are merged question by question.
    pub fn over(mut self, kept: &ShownAnswers) -> Self {
        let mut merged = Answers::clone(kept);
        for (key, value) in std::mem::take(&mut self.answers) {
            match (merged.get_mut(&key), value) {
                (Some(Value::Object(old)), Value::Object(new)) => old.extend(new),
                (_, value) => {
                    merged.insert(key, value);
                }
            }
        }
        self.answers = merged;
        self
    }

    /// The active time the request gives, checked (none when it gives none).
    pub fn time(&self) -> Result<Option<TimeSpent>, FieldErrors> {
        time_of(self.time_spent.as_ref())
            .map_err(|why| FieldErrors::from([("time_spent_s".into(), why)]))
    }
}

/// The answers a form's ladder (`ladder.<key>` = the level reached) stands for: the
/// criteria up to the level yes, the rest no. A level that is not one of the ladder's is
/// given to each criterion as it came, so the check refuses it beside the ladder.
fn climbed(rubric: &Rubric, key: &str, level: &str, answers: &mut Map<String, Value>) {
    let Some(derived) = rubric
        .derived
        .iter()
        .find(|d| d.key == key && d.ladder.is_some())
    else {
        return;
    };
    if level.is_empty() {
        return;
    }
    let reached = level
        .parse::<usize>()
        .ok()
        .filter(|n| *n <= derived.sum_of.len());
    for (i, criterion) in derived.sum_of.iter().enumerate() {
        let answer = match reached {
            Some(n) => Value::Bool(i < n),
            None => Value::from(level),
        };
        answers.insert(criterion.clone(), answer);
    }
}

/// Where a rater's answers are checked: the batch's rubric and settings, and whether
/// the rater saw A and B swapped.
#[derive(Debug, Clone, Copy)]
pub struct Form<'a> {
    pub rubric: &'a Rubric,
    pub batch: &'a Batch,
    pub swapped: bool,
}

/// A request checked: its answers in the task's own order, the active time (if it gave
/// one), what it carries beside them, and (for a submission) the rubric's warnings its
/// answers meet.
#[derive(Debug, Clone)]
pub struct NewRating<'r> {
    pub answers: TaskAnswers,
    pub time_spent: Option<TimeSpent>,
    pub extras: Extras,
    pub warnings: Vec<&'r rubric::Warning>,
}

impl<'r> Form<'r> {
    /// Checks `request` as `mode` asks (a draft's types only, a submission's every
    /// rule, or out of scope's answers set), naming every broken field at once, and
    /// turns its answers and code runs into the task's own order.
    pub fn check(&self, request: &RatingRequest, mode: Mode) -> Result<NewRating<'r>, FieldErrors> {
        let mut errors = FieldErrors::new();
        let input = Value::Object(request.answers.clone());
        let answers = rubric::validate(
            self.rubric,
            &self.batch.classifications,
            &input,
            mode,
            self.batch.min_explanation(),
        )
        .map_err(|e| errors.extend(e))
        .ok();
        let time = request.time().map_err(|e| errors.extend(e)).ok();
        let extras = self.extras(request).map_err(|e| errors.extend(e)).ok();
        let (Some(answers), Some(time), Some(extras)) = (answers, time, extras) else {
            return Err(errors);
        };
        // Drafts are saved on every pause in typing; only a submission is held to
        // warnings.
        let warnings = match mode {
            Mode::Submit => rubric::warnings(self.rubric, &answers),
            Mode::Draft | Mode::OutOfScope => Vec::new(),
        };
        Ok(NewRating {
            answers: ShownAnswers::new(answers).into_task(self.rubric, self.swapped),
            time_spent: time,
            extras,
            warnings,
        })
    }

    /// The code runs and confirmed warnings of `request`, checked; the code runs are
    /// turned into the task's own order.
    fn extras(&self, request: &RatingRequest) -> Result<Extras, FieldErrors> {
        let mut extras = Extras::default();
        let mut errors = FieldErrors::new();
        if let Some(given) = &request.evidence {
            let single = self.rubric.subject == rubric::Subject::Single;
            match evidence::parse(given, single) {
                Ok(e) => extras.evidence = Some(e.oriented(self.swapped)),
                Err(e) => errors.extend(e),
            }
        }
        if let Some(given) = &request.confirmed_warnings {
            match confirmed_ids(self.rubric, given) {
                Ok(ids) => extras.confirmed_warnings = ids,
                Err(e) => errors.extend(e),
            }
        }
        if errors.is_empty() {
            Ok(extras)
        } else {
            Err(errors)
        }
    }
}

impl<'r> NewRating<'r> {
    /// Takes the warnings a submission's answers meet as confirmed, if the rater
    /// confirmed each one; otherwise the ones still unconfirmed, and nothing may be
    /// stored.
    pub fn confirm(&mut self) -> Result<(), Vec<&'r rubric::Warning>> {
        let unconfirmed: Vec<&rubric::Warning> = self
            .warnings
            .iter()
            .copied()
            .filter(|w| !self.extras.confirmed_warnings.contains(&w.id))
            .collect();
        if !unconfirmed.is_empty() {
            return Err(unconfirmed);
        }
        self.extras.confirmed_warnings = self.warnings.iter().map(|w| w.id.clone()).collect();
        Ok(())
    }

    /// A submission that was confirmed ([`NewRating::confirm`]), as what finishes a task.
    pub fn rated(self) -> (Finish, Extras, Option<TimeSpent>) {
        let finish = Finish::Rated {
            answers: self.answers,
        };
        (finish, self.extras, self.time_spent)
    }

    /// The answers marked out of scope for `explanation` (checked with
    /// [`scope_explanation`]). Warnings are about rated answers: none is recorded.
    pub fn out_of_scope(self, explanation: String) -> (Finish, Extras, Option<TimeSpent>) {
        let finish = Finish::OutOfScope {
            answers: self.answers,
            explanation,
        };
        let extras = Extras {
            confirmed_warnings: vec![],
            ..self.extras
        };
        (finish, extras, self.time_spent)
    }
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

/// A skip, checked: one of the rubric's reasons, a note of a sensible length (required
/// when the reason asks for one), and the active time (none keeps what the draft
/// recorded). Every refused field is named at once.
pub fn skip(
    rubric: &Rubric,
    reason: &str,
    note: Option<&str>,
    time_spent: Option<&Value>,
) -> Result<(Finish, Option<TimeSpent>), FieldErrors> {
    let mut fields = FieldErrors::new();
    let options = rubric.skip_options();
    let chosen = options.iter().find(|o| o.value == reason);
    if chosen.is_none() {
        let values: Vec<&str> = options.iter().map(|o| o.value.as_str()).collect();
        let reasons = match values.as_slice() {
            [init @ .., last] if !init.is_empty() => format!("{} or {last}", init.join(", ")),
            _ => values.join(""),
        };
        let why = if reason.is_empty() {
            format!("is required: use {reasons}")
        } else {
            format!("unknown reason {reason:?}: use {reasons}")
        };
        fields.insert("reason".into(), why);
    }
    let note = note.map(str::trim).filter(|n| !n.is_empty());
    if note.is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS) {
        fields.insert(
            "note".into(),
            format!("must be at most {MAX_NOTE_CHARS} characters"),
        );
    } else if note.is_none()
        && let Some(option) = chosen.filter(|o| o.note_required)
    {
        fields.insert(
            "note".into(),
            format!(
                "is required for the reason {:?}: say why you skip it",
                option.value
            ),
        );
    }
    let time = time_of(time_spent).map_err(|why| fields.insert("time_spent_s".into(), why));
    let parsed = chosen.and_then(|o| o.value.parse::<SkipReason>().ok());
    match (parsed, time) {
        (Some(reason), Ok(time)) if fields.is_empty() => {
            let finish = Finish::Skipped {
                reason,
                note: note.map(str::to_owned),
            };
            Ok((finish, time))
        }
        _ => Err(fields),
    }
}

/// Why a prompt is out of scope, checked: required, and of the batch's minimum length.
pub fn scope_explanation(explanation: &str, batch: &Batch) -> Result<String, FieldErrors> {
    let explanation = explanation.trim();
    let min = batch.min_explanation();
    let length = explanation.chars().count();
    let why = if explanation.is_empty() {
        "is required: say why the prompt is out of scope".to_owned()
    } else if length < min {
        format!("must be at least {min} characters (has {length})")
    } else if length > MAX_NOTE_CHARS {
        format!("must be at most {MAX_NOTE_CHARS} characters")
    } else {
        return Ok(explanation.to_owned());
    };
    Err(FieldErrors::from([("explanation".into(), why)]))
}

/// A revision as its rater sends it: a rating request, and what changing the outcome
/// needs (`outcome`, `explanation` for out of scope, `reason` and `note` for a skip).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RevisionRequest {
    /// The outcome to change to, as named (read with [`RevisionRequest::outcome`]).
    pub outcome: Option<String>,
    pub explanation: Option<String>,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub rating: RatingRequest,
}

impl TryFrom<Value> for RevisionRequest {
    type Error = FieldErrors;

    /// A JSON body's parts: an object, whose `outcome`, `explanation`, `reason` and
    /// `note` are strings (or absent, or `null`); the rest is a rating request.
    fn try_from(body: Value) -> Result<Self, FieldErrors> {
        let Value::Object(mut given) = body else {
            return Err(FieldErrors::from([(
                "answers".into(),
                "must be a JSON object".into(),
            )]));
        };
        let mut text = |key: &str| match given.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(FieldErrors::from([(key.into(), "must be a string".into())])),
        };
        Ok(Self {
            outcome: text("outcome")?,
            explanation: text("explanation")?,
            reason: text("reason")?,
            note: text("note")?,
            rating: RatingRequest::from(given),
        })
    }
}

impl RevisionRequest {
    /// The outcome the revision asks for; `kept` (the rating's own) when it names none.
    pub fn outcome(&self, kept: Outcome) -> Result<Outcome, FieldErrors> {
        let Some(name) = &self.outcome else {
            return Ok(kept);
        };
        name.parse::<Outcome>().map_err(|_| {
            FieldErrors::from([(
                "outcome".into(),
                format!("unknown outcome {name:?}: use rated, out_of_scope or skipped"),
            )])
        })
    }
}
