//! What a rater finishes a task with, checked the same way whether they finish an
//! assignment or revise a rating: a skip's reason and note, an out-of-scope
//! explanation, and answers given over answers kept.

use serde_json::Value;

use super::{FieldErrors, ServiceError, ServiceResult};
use verdict_core::batch::Batch;
use verdict_core::lifecycle::SkipReason;
use verdict_core::rating::Finish;
use verdict_core::rubric::{Answers, ShownAnswers};

/// The longest note or out-of-scope explanation.
pub const MAX_NOTE_CHARS: usize = 5000;

/// A skip, checked: a known reason and a note of a sensible length.
pub fn skip_of(reason: &str, note: Option<&str>) -> ServiceResult<Finish> {
    let mut fields = FieldErrors::new();
    let parsed = reason.parse::<SkipReason>();
    if parsed.is_err() {
        // The field's own words, not the enum's: the field is named already.
        let reasons = SkipReason::NAMES.join(", ");
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
    }
    match parsed {
        Ok(reason) if fields.is_empty() => Ok(Finish::Skipped {
            reason,
            note: note.map(str::to_owned),
        }),
        _ => Err(ServiceError::Invalid(fields)),
    }
}

/// Why a prompt is out of scope, checked: required, and of the batch's minimum length.
pub fn scope_explanation(explanation: &str, batch: &Batch) -> ServiceResult<String> {
    let explanation = explanation.trim();
    let min = batch.min_explanation();
    let length = explanation.chars().count();
    let why = if explanation.is_empty() {
        Some("is required: say why the prompt is out of scope".to_owned())
    } else if length < min {
        Some(format!("must be at least {min} characters (has {length})"))
    } else if length > MAX_NOTE_CHARS {
        Some(format!("must be at most {MAX_NOTE_CHARS} characters"))
    } else {
        None
    };
    match why {
        Some(why) => Err(ServiceError::field("explanation", why)),
        None => Ok(explanation.to_owned()),
    }
}

/// Answers given with a request laid over answers kept before (both as the rater was
/// shown them): a question given replaces the kept one, the rest stay. Per-response
/// answers and classifications are merged question by question.
pub fn over(kept: &ShownAnswers, given: &Value) -> Value {
    let mut merged = Answers::clone(kept);
    if let Some(given) = given.as_object() {
        for (key, value) in given {
            match (merged.get_mut(key), value) {
                (Some(Value::Object(old)), Value::Object(new)) => {
                    for (k, v) in new {
                        old.insert(k.clone(), v.clone());
                    }
                }
                _ => {
                    merged.insert(key.clone(), value.clone());
                }
            }
        }
    }
    Value::Object(merged)
}
