//! The rule engine: checking a set of answers against a rubric document, working out its
//! derived answers, applying out of scope, and turning it between the orientation a rater
//! was shown and the task's canonical one. Plain functions over the document.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Answer, Explanation, Question, Required, Rubric, Subject, Warning};

/// Answers as a JSON object. A pair rubric keeps the answers asked of each response
/// under `a` and `b`; the answers asked once, the derived ones and `classifications` sit
/// at the top.
pub type Answers = Map<String, Value>;

/// The answer of `answers` at `path`: `sxs`, or `a.correctness` on one response.
pub fn answer_at<'a>(answers: &'a Answers, path: &str) -> Option<&'a Value> {
    match path.split_once('.') {
        Some((side, key)) => answers.get(side)?.get(key),
        None => answers.get(path),
    }
}

/// Field path (e.g. `b.correctness_explanation`) to what is wrong with it: the core's one
/// map of field errors.
pub type Problems = crate::fields::FieldErrors;

/// How strictly to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A draft: only types and known fields and values; anything may be missing.
    Draft,
    /// A submission: every rule of the rubric.
    Submit,
    /// Out of scope: as a draft, then the answers the rubric sets for out of scope.
    OutOfScope,
}

/// A batch's conversation-classification question, answered once per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Classification {
    /// The answer key, e.g. `language`.
    pub key: String,
    pub label: String,
    /// Several options may be chosen.
    #[serde(default)]
    pub multiple: bool,
    #[serde(default = "super::yes")]
    pub required: bool,
    pub options: Vec<String>,
}

/// The longest explanation or text answer, in characters: several pages of text, far
/// more than any rubric asks for, and a bound on what one rating can make the database
/// hold.
pub const MAX_TEXT_CHARS: usize = 20_000;

/// Checks `input` against `rubric` and the batch's `classifications`, returning the
/// answers with texts trimmed, derived answers worked out and nothing but known fields,
/// or every broken rule by path.
pub fn validate(
    rubric: &Rubric,
    classifications: &[Classification],
    input: &Value,
    mode: Mode,
    min_explanation: usize,
) -> Result<Answers, Problems> {
    let mut errors = Problems::new();
    let mut out = Answers::new();
    let Some(input) = input.as_object() else {
        errors.insert("answers".into(), "must be a JSON object".into());
        return Err(errors);
    };
    let check = Checker {
        mode,
        min_explanation,
    };
    let pair = rubric.subject == Subject::Pair;
    let once = || rubric.questions.iter().filter(|q| !q.each_response);
    let each = || rubric.questions.iter().filter(|q| q.each_response);
    for (key, value) in input {
        let side = pair && (key == "a" || key == "b");
        let known = side
            || key == "classifications"
            || once()
                .any(|q| *key == q.key || (q.explanation.is_some() && *key == q.explanation_key()))
            || rubric.derived.iter().any(|d| d.key == *key);
        if !known {
            errors.insert(key.clone(), "is not a question of this rubric".into());
        } else if side && !value.is_object() && !value.is_null() {
            errors.insert(key.clone(), "must be an object of answers".into());
        }
    }
    if pair {
        for side in ["a", "b"] {
            let empty = Map::new();
            let given = input.get(side).and_then(Value::as_object).unwrap_or(&empty);
            for key in given.keys() {
                if !each().any(|q| {
                    *key == q.key || (q.explanation.is_some() && *key == q.explanation_key())
                }) {
                    errors.insert(
                        format!("{side}.{key}"),
                        "is not a question of this rubric".into(),
                    );
                }
            }
            let mut answers = Map::new();
            for question in each() {
                check.question(
                    question,
                    given,
                    &format!("{side}."),
                    &mut answers,
                    &mut errors,
                );
            }
            // Only the parts the rubric has: a pair rubric with no question asked of each
            // response keeps no (empty) answers under `a` and `b`.
            if each().next().is_some() {
                out.insert(side.into(), Value::Object(answers));
            }
        }
    }
    for question in once() {
        check.question(question, input, "", &mut out, &mut errors);
    }
    if mode == Mode::OutOfScope {
        out_of_scope(rubric, &mut out);
    } else {
        climb(rubric, &out, &mut errors);
    }
    derive(rubric, input, &mut out, &mut errors);
    if let Some(classes) =
        check.classifications(classifications, input.get("classifications"), &mut errors)
    {
        out.insert("classifications".into(), Value::Object(classes));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Sets the answers the rubric gives out-of-scope tasks (on each side for a question
/// asked of each response), dropping their explanations.
fn out_of_scope(rubric: &Rubric, answers: &mut Answers) {
    for question in &rubric.questions {
        let Some(value) = &question.out_of_scope else {
            continue;
        };
        for holder in holders(question, answers) {
            holder.insert(question.key.clone(), value.clone());
            holder.remove(&question.explanation_key());
        }
    }
    // What out of scope set may leave an answer without the condition it needs.
    for question in rubric
        .questions
        .iter()
        .filter(|q| !q.applies_when.is_empty())
    {
        for holder in holders(question, answers) {
            if !question.applies(holder) {
                holder.remove(&question.key);
                holder.remove(&question.explanation_key());
            }
        }
    }
}

/// The objects of `answers` that hold `question`'s answer: `a` and `b` for a question
/// asked of each response (those present), else the top.
fn holders<'a>(question: &Question, answers: &'a mut Answers) -> Vec<&'a mut Map<String, Value>> {
    if !question.each_response {
        return vec![answers];
    }
    answers
        .iter_mut()
        .filter(|(side, _)| *side == "a" || *side == "b")
        .filter_map(|(_, holder)| holder.as_object_mut())
        .collect()
}

/// Refuses a ladder's criterion answered yes above one answered no: each level holds
/// only when every level below it holds. Criteria not answered yet (a draft) are passed
/// over.
fn climb(rubric: &Rubric, out: &Answers, errors: &mut Problems) {
    for derived in rubric.derived.iter().filter(|d| d.ladder.is_some()) {
        let mut unmet: Option<&str> = None;
        for key in &derived.sum_of {
            match (out.get(key), unmet) {
                (Some(Value::Bool(false)), None) => unmet = Some(key),
                (Some(Value::Bool(true)), Some(below)) => {
                    let label = |k: &str| {
                        rubric
                            .question(k)
                            .map_or_else(|| k.to_owned(), |q| q.label.clone())
                    };
                    errors.entry(key.clone()).or_insert_with(|| {
                        format!(
                            "can be yes only when \"{}\" is yes: the levels build on each \
                             other, so a response reaches \"{}\" only through every level \
                             below it",
                            label(below),
                            label(key)
                        )
                    });
                }
                _ => {}
            }
        }
    }
}

/// Works out each derived answer from the checked answers in `out` once every answer it
/// depends on is given; a value sent for it must agree.
fn derive(rubric: &Rubric, input: &Answers, out: &mut Answers, errors: &mut Problems) {
    for derived in &rubric.derived {
        let number = |key: &String| match out.get(key) {
            Some(Value::Bool(b)) => Some(i64::from(*b)),
            Some(Value::Number(n)) => n.as_i64(),
            _ => None,
        };
        let terms: Option<Vec<i64>> = derived.sum_of.iter().map(number).collect();
        let zeros: Option<Vec<i64>> = derived.zero_when.iter().map(number).collect();
        let value = match (terms, zeros) {
            (Some(_), Some(zeros)) if zeros.iter().any(|z| *z != 0) => Some(0),
            (Some(terms), Some(_)) => Some(terms.iter().sum::<i64>()),
            _ => None,
        };
        match (input.get(&derived.key), value) {
            (None | Some(Value::Null), _) => {}
            (Some(sent), Some(v)) if sent.as_i64() == Some(v) => {}
            (Some(sent), Some(v)) => {
                errors.insert(
                    derived.key.clone(),
                    format!(
                        "is worked out from the answers and is {v}, not {sent}; leave it out \
                         or send {v}"
                    ),
                );
            }
            (Some(_), None) => {
                errors.insert(
                    derived.key.clone(),
                    format!(
                        "is worked out from the answers ({}): answer those instead",
                        derived
                            .sum_of
                            .iter()
                            .chain(&derived.zero_when)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
        if let Some(v) = value {
            out.insert(derived.key.clone(), Value::from(v));
        }
    }
}

struct Checker {
    mode: Mode,
    min_explanation: usize,
}

/// The number of words in a text, as a reader counts them: Unicode's word boundaries
/// (UAX #29), counting the pieces with a letter or digit in them. Words joined by a dash,
/// a slash or an invisible space are still separate words; punctuation standing alone
/// is none; "don't" and "3.14" are one each. Every limit on words and every warning about
/// them counts this way, and the form learns the count from the server's check.
pub fn word_count(text: &str) -> usize {
    unicode_segmentation::UnicodeSegmentation::unicode_words(text).count()
}

impl Checker {
    /// Checks one question (and its explanation) found in `given`, writing the clean
    /// answer into `out` and any broken rule under `prefix` + key into `errors`.
    fn question(
        &self,
        question: &Question,
        given: &Map<String, Value>,
        prefix: &str,
        out: &mut Map<String, Value>,
        errors: &mut Problems,
    ) {
        let path = format!("{prefix}{}", question.key);
        if let Answer::Text {
            max_words,
            max_chars,
        } = question.answer
        {
            let limits = Limits {
                max_words,
                max_chars,
            };
            let required = self.mode == Mode::Submit && question.required;
            if let Some(text) = self.text(
                given.get(&question.key),
                &path,
                required,
                None,
                limits,
                errors,
            ) {
                out.insert(question.key.clone(), Value::from(text));
            }
            return;
        }
        // An empty text is no answer, nor is an empty list of several choices (nothing
        // ticked).
        let several = matches!(question.answer, Answer::MultiChoice { .. });
        let value = given.get(&question.key).filter(|v| {
            !v.is_null() && *v != "" && !(several && v.as_array().is_some_and(Vec::is_empty))
        });
        let stored = match value {
            None => {
                if self.mode == Mode::Submit && question.required && question.applies(out) {
                    errors.insert(path.clone(), "is required".into());
                }
                None
            }
            // A draft may hold an answer its condition no longer allows (the rater may
            // be changing the answer it depends on); a submission may not.
            Some(_) if self.mode == Mode::Submit && !question.applies(out) => {
                errors.insert(path.clone(), question.applies_only_when());
                None
            }
            Some(v) if super::document::accepts(&question.answer, v) => {
                let v = super::document::in_order(&question.answer, v.clone());
                out.insert(question.key.clone(), v.clone());
                Some(v)
            }
            Some(v) => {
                errors.insert(path.clone(), refusal(&question.answer, v));
                None
            }
        };
        let Some(explanation) = &question.explanation else {
            return;
        };
        let key = question.explanation_key();
        let required = self.mode == Mode::Submit
            && stored
                .as_ref()
                .is_some_and(|v| question.needs_explanation(v));
        let why_required = match (&explanation.required, &stored) {
            (Required::When(_), Some(v)) => {
                format!("required when {} is {}", question.key, plain(v))
            }
            _ => "is always required".to_owned(),
        };
        if let Some(text) = self.text(
            given.get(&key),
            &format!("{prefix}{key}"),
            required,
            Some(why_required),
            Limits::of(explanation),
            errors,
        ) {
            out.insert(key, Value::from(text));
        }
    }

    /// Checks a text answer or explanation: returns it trimmed when it is non-empty and
    /// within its limits. `required` asks for a text at least the batch's minimum long;
    /// `why_required` is what a missing one is told (by default "is required").
    fn text(
        &self,
        given: Option<&Value>,
        path: &str,
        required: bool,
        why_required: Option<String>,
        limits: Limits,
        errors: &mut Problems,
    ) -> Option<String> {
        let text = match given {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.trim().to_owned(),
            Some(_) => {
                errors.insert(path.into(), "must be a string".into());
                return None;
            }
        };
        let length = text.chars().count();
        let max_chars = limits.max_chars.unwrap_or(MAX_TEXT_CHARS);
        if length > max_chars {
            errors.insert(
                path.into(),
                format!("must be at most {max_chars} characters (has {length})"),
            );
            return None;
        }
        if let Some(max) = limits.max_words {
            let words = word_count(&text);
            if words > max {
                errors.insert(
                    path.into(),
                    format!("must be at most {max} words (has {words})"),
                );
                return None;
            }
        }
        if required {
            if text.is_empty() {
                errors.insert(
                    path.into(),
                    why_required.unwrap_or_else(|| "is required".into()),
                );
            } else if length < self.min_explanation {
                errors.insert(
                    path.into(),
                    format!(
                        "must be at least {} characters (has {length})",
                        self.min_explanation
                    ),
                );
            }
        }
        (!text.is_empty()).then_some(text)
    }

    fn classifications(
        &self,
        questions: &[Classification],
        given: Option<&Value>,
        errors: &mut Problems,
    ) -> Option<Map<String, Value>> {
        let empty = Map::new();
        let given = match given {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(map)) => map,
            Some(_) => {
                errors.insert("classifications".into(), "must be an object".into());
                return None;
            }
        };
        for key in given.keys() {
            if !questions.iter().any(|q| q.key == *key) {
                errors.insert(
                    format!("classifications.{key}"),
                    "is not a question of this batch".into(),
                );
            }
        }
        let mut out = Map::new();
        for q in questions {
            let path = format!("classifications.{}", q.key);
            let chosen: Vec<&str> = match given.get(&q.key) {
                None | Some(Value::Null) => vec![],
                Some(Value::String(s)) if !q.multiple => vec![s.as_str()],
                Some(Value::Array(items)) if q.multiple => {
                    let strings: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                    let Some(strings) = strings else {
                        errors.insert(path, "must be a list of options".into());
                        continue;
                    };
                    strings
                }
                Some(_) => {
                    let shape = if q.multiple {
                        "a list of options"
                    } else {
                        "one option, as a string"
                    };
                    errors.insert(path, format!("must be {shape}"));
                    continue;
                }
            };
            if let Some(bad) = chosen.iter().find(|c| !q.options.iter().any(|o| o == *c)) {
                errors.insert(
                    path,
                    format!("unknown option {bad:?}: use {}", q.options.join(", ")),
                );
                continue;
            }
            if chosen.is_empty() {
                if self.mode == Mode::Submit && q.required {
                    errors.insert(path, "is required".into());
                }
                continue;
            }
            let value = if q.multiple {
                let mut unique: Vec<&str> = vec![];
                chosen.into_iter().for_each(|c| {
                    if !unique.contains(&c) {
                        unique.push(c)
                    }
                });
                Value::from(unique)
            } else {
                Value::from(chosen[0])
            };
            out.insert(q.key.clone(), value);
        }
        Some(out)
    }
}

/// How long a text may be.
#[derive(Clone, Copy)]
struct Limits {
    max_words: Option<usize>,
    max_chars: Option<usize>,
}

impl Limits {
    fn of(explanation: &Explanation) -> Self {
        Self {
            max_words: explanation.max_words,
            max_chars: explanation.max_chars,
        }
    }
}

/// An answer's value as a rule's message names it, and as metrics count it: strings
/// without quotes.
pub fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What is said of a value the question does not take.
fn refusal(answer: &Answer, value: &Value) -> String {
    match (answer, value) {
        (Answer::Choice { options }, Value::String(s)) => {
            let allowed: Vec<&str> = options.iter().map(|o| o.value.as_str()).collect();
            format!("unknown value {s:?}: use {}", allowed.join(", "))
        }
        (Answer::Choice { .. }, _) => "must be one of the options, as a string".into(),
        (Answer::MultiChoice { options }, _) => {
            let allowed: Vec<&str> = options.iter().map(|o| o.value.as_str()).collect();
            format!(
                "must be a list of different options from {}",
                allowed.join(", ")
            )
        }
        (Answer::Scale { min, max, .. }, _) => {
            format!("must be a whole number from {min} to {max}")
        }
        (Answer::YesNo { .. }, _) => "must be true or false".into(),
        (Answer::Text { .. }, _) => "must be a string".into(),
    }
}

/// The rubric's warnings that `answers` (checked, in the orientation the rater was
/// shown, derived answers worked out) meet: allowed but unlikely combinations the rater
/// is asked to confirm or change.
pub fn warnings<'r>(rubric: &'r Rubric, answers: &Answers) -> Vec<&'r Warning> {
    let at = |path: &str| answer_at(answers, path);
    rubric
        .warnings
        .iter()
        .filter(|w| {
            w.when
                .iter()
                .all(|(path, matches)| matches.matches(at(path)))
        })
        .collect()
}

#[cfg(test)]
mod tests;
