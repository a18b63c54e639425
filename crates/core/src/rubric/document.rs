//! Reading a rubric document and checking it against the rules of the format (`rules`),
//! so that a rubric that loads can be asked, checked, turned, exported and measured.
//!
//! Every broken rule is reported under its path in the document (`questions[3].answer.
//! options[1].value`). A part of the wrong shape stops the reading of that part only: the
//! other questions and derived answers are still read and checked.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Answer, Derived, Question, Rubric, Subject};
use rules::check;

mod rules;

/// Path in the document to what is wrong there.
pub type DocumentErrors = BTreeMap<String, String>;

/// The path of what is wrong with the document as a whole.
pub const ROOT: &str = "document";

/// The largest rubric document read, in bytes of its JSON written compactly, whichever
/// way it comes (the API, the page's form, the command line, the built-in files).
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// The most questions a rubric asks.
pub const MAX_QUESTIONS: usize = 50;
/// The most derived answers a rubric has.
pub const MAX_DERIVED: usize = 20;
/// The most warnings a rubric has.
pub const MAX_WARNINGS: usize = 50;
/// The most words or phrases one `mentions` lists, and the longest one: every submission
/// looks for each of them in the explanations.
pub const MAX_PHRASES: usize = 50;
pub const MAX_PHRASE_CHARS: usize = 100;
/// The longest help text (the rubric's, its out-of-scope help, each question's), and
/// the longest definition of a question or an option.
pub const MAX_HELP_CHARS: usize = 4000;
/// The longest guidelines (`instructions`): several pages.
pub const MAX_INSTRUCTIONS_CHARS: usize = 40_000;

/// Answer keys that a rubric's own questions cannot take: they hold the sides, the
/// batch's classifications and the timer.
const RESERVED: [&str; 4] = ["a", "b", "classifications", "time_spent_s"];

/// Reads and checks a rubric document.
pub fn parse(text: &str) -> Result<Rubric, DocumentErrors> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| DocumentErrors::from([(ROOT.into(), format!("not valid JSON: {e}"))]))?;
    from_value(&value)
}

/// Counts what is written to it.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Checks a rubric document already read as JSON. Every path that takes a document
/// comes here, so its size limit holds on all of them.
pub fn from_value(value: &Value) -> Result<Rubric, DocumentErrors> {
    let mut size = ByteCount(0);
    if serde_json::to_writer(&mut size, value).is_err() || size.0 > MAX_DOCUMENT_BYTES {
        return Err(DocumentErrors::from([(
            ROOT.into(),
            format!(
                "the document is larger than {} KiB",
                MAX_DOCUMENT_BYTES / 1024
            ),
        )]));
    }
    let mut errors = DocumentErrors::new();
    match read::<Rubric>(value, "") {
        Ok(rubric) => {
            let all = Parts::whole(&rubric);
            check(&rubric, &all, &mut errors);
            if errors.is_empty() {
                return Ok(rubric);
            }
        }
        Err(first) => {
            // Name every part of the wrong shape, then check what did read, so that one
            // mistyped field does not hide the document's other mistakes.
            if let Some((partial, parts)) = shape_errors(value, &mut errors) {
                check(&partial, &parts, &mut errors);
            }
            if errors.is_empty() {
                errors.insert(first.0, first.1);
            }
        }
    }
    Err(errors)
}

/// Where the parts of a rubric that were read sit in the document.
struct Parts {
    /// The document index of each of `questions`, and of each of `derived`.
    questions: Vec<usize>,
    derived: Vec<usize>,
    /// Every part read: checks across parts (derived answers naming questions, at least
    /// one question) are made only then, so a part that did not read causes no second
    /// error.
    complete: bool,
}

impl Parts {
    fn whole(rubric: &Rubric) -> Self {
        Self {
            questions: (0..rubric.questions.len()).collect(),
            derived: (0..rubric.derived.len()).collect(),
            complete: true,
        }
    }
}

/// Reads `value` as a `T`, or says where and why it is of the wrong shape.
fn read<T: DeserializeOwned>(value: &Value, prefix: &str) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = match (prefix.is_empty(), inner.as_str()) {
            (true, ".") => ROOT.to_owned(),
            (_, ".") => prefix.to_owned(),
            (true, _) => inner,
            (false, _) if inner.starts_with('[') => format!("{prefix}{inner}"),
            (false, _) => format!("{prefix}.{inner}"),
        };
        (path, e.into_inner().to_string())
    })
}

/// Reads each part of a document that failed as a whole, naming every part of the wrong
/// shape; returns what did read, with stand-ins that break no rule for top-level fields
/// that did not (their error is already named).
fn shape_errors(value: &Value, errors: &mut DocumentErrors) -> Option<(Rubric, Parts)> {
    let Some(object) = value.as_object() else {
        errors.insert(ROOT.into(), "must be a JSON object".into());
        return None;
    };
    for key in object.keys() {
        if !matches!(
            key.as_str(),
            "name"
                | "title"
                | "help"
                | "out_of_scope_help"
                | "instructions"
                | "subject"
                | "questions"
                | "derived"
                | "warnings"
                | "skip_reasons"
        ) {
            errors.insert(key.clone(), "is not a field of a rubric document".into());
        }
    }
    for required in ["name", "title", "subject", "questions"] {
        if !object.contains_key(required) {
            errors.insert(required.into(), "is required".into());
        }
    }
    // A text that did not read (or is missing) stands in as one that breaks no rule.
    let text = |key: &str, errors: &mut DocumentErrors| -> String {
        match object.get(key).map(|part| read::<String>(part, key)) {
            Some(Ok(text)) => text,
            Some(Err((path, why))) => {
                errors.insert(path, why);
                "stand-in".into()
            }
            None => "stand-in".into(),
        }
    };
    let name = text("name", errors);
    let title = text("title", errors);
    let help = text("help", errors);
    let out_of_scope_help = text("out_of_scope_help", errors);
    let instructions = if object.contains_key("instructions") {
        text("instructions", errors)
    } else {
        String::new()
    };
    let subject = match object.get("subject").map(|p| read::<Subject>(p, "subject")) {
        Some(Ok(subject)) => subject,
        Some(Err((path, why))) => {
            errors.insert(path, why);
            Subject::Pair
        }
        None => Subject::Pair,
    };
    let mut complete = true;
    let (questions, question_at) =
        read_list::<Question>(object, "questions", errors, &mut complete);
    let (derived, derived_at) = read_list::<Derived>(object, "derived", errors, &mut complete);
    let (warnings, _) = read_list::<super::Warning>(object, "warnings", errors, &mut complete);
    let (skip_reasons, _) =
        read_list::<super::SkipOption>(object, "skip_reasons", errors, &mut complete);
    let parts = Parts {
        questions: question_at,
        derived: derived_at,
        complete,
    };
    let rubric = Rubric {
        name,
        title,
        subject,
        help,
        out_of_scope_help,
        instructions,
        questions,
        derived,
        warnings,
        skip_reasons,
    };
    Some((rubric, parts))
}

/// The items of the list `key` of a document that read as `T`, with their indices in the
/// list; each that does not is named in `errors` and leaves the parts read incomplete.
fn read_list<T: DeserializeOwned>(
    object: &Map<String, Value>,
    key: &str,
    errors: &mut DocumentErrors,
    complete: &mut bool,
) -> (Vec<T>, Vec<usize>) {
    let list = match object.get(key) {
        None => return (vec![], vec![]),
        Some(Value::Array(list)) => list,
        Some(_) => {
            errors.insert(key.into(), "must be a list".into());
            *complete = false;
            return (vec![], vec![]);
        }
    };
    let mut read_ones = (vec![], vec![]);
    for (i, item) in list.iter().enumerate() {
        match read::<T>(item, &format!("{key}[{i}]")) {
            Ok(one) => {
                read_ones.0.push(one);
                read_ones.1.push(i);
            }
            Err((path, why)) => {
                errors.insert(path, why);
                *complete = false;
            }
        }
    }
    read_ones
}

/// Whether `text` is 1 to 64 lower-case letters, digits or `joiner`, from a letter.
fn is_identifier(text: &str, joiner: char) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text.starts_with(|c: char| c.is_ascii_lowercase())
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == joiner)
}

/// A name of a rubric: lower-case letters, digits and dashes, as in `additive-5`.
pub fn check_name(name: &str) -> Result<(), String> {
    if is_identifier(name, '-') {
        Ok(())
    } else {
        Err("must be 1 to 64 lower-case letters, digits or dashes, starting with a letter".into())
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if !is_identifier(key, '_') {
        return Err(
            "must be 1 to 64 lower-case letters, digits or underscores, starting with a letter"
                .into(),
        );
    }
    if RESERVED.contains(&key) {
        return Err(format!(
            "is reserved ({} hold the sides, classifications and time)",
            RESERVED.join(", ")
        ));
    }
    Ok(())
}

/// Whether `value` is an answer the question takes.
pub(crate) fn accepts(answer: &Answer, value: &Value) -> bool {
    match answer {
        Answer::Choice { options } => value
            .as_str()
            .is_some_and(|v| options.iter().any(|o| o.value == v)),
        Answer::Scale { min, max, .. } => {
            value.as_i64().is_some_and(|v| (*min..=*max).contains(&v))
        }
        Answer::MultiChoice { options } => value.as_array().is_some_and(|chosen| {
            !chosen.is_empty()
                && chosen.iter().enumerate().all(|(i, c)| {
                    c.as_str()
                        .is_some_and(|c| options.iter().any(|o| o.value == c))
                        && !chosen[..i].contains(c)
                })
        }),
        Answer::YesNo { .. } => value.is_boolean(),
        Answer::Text { .. } => value.is_string(),
    }
}

/// Several choices in their options' order, the one order they are stored in; any
/// other answer as it is.
pub(crate) fn in_order(answer: &Answer, value: Value) -> Value {
    match (answer, value) {
        (Answer::MultiChoice { options }, Value::Array(chosen)) => options
            .iter()
            .map(|o| Value::from(o.value.as_str()))
            .filter(|v| chosen.contains(v))
            .collect(),
        (_, value) => value,
    }
}
/// The questions two versions of a rubric share unchanged: same key, same place (each
/// response or once), same answers and labels, same swap and role. Ratings made under
/// either can be compared on these.
pub fn comparable(old: &Rubric, new: &Rubric) -> Vec<String> {
    let mut same: Vec<String> = old
        .questions
        .iter()
        .filter(|q| {
            new.question(&q.key).is_some_and(|n| {
                n.each_response == q.each_response
                    && same_answers(&n.answer, &q.answer)
                    && n.swap == q.swap
                    && n.metrics == q.metrics
                    && n.label == q.label
                    // "Yes" on a ladder means "reached this level": not the same answer
                    // as a criterion judged on its own.
                    && new.ladder_of(&q.key).is_some() == old.ladder_of(&q.key).is_some()
            })
        })
        .map(|q| q.key.clone())
        .collect();
    same.extend(
        old.derived
            .iter()
            .filter(|d| {
                new.derived.iter().any(|n| {
                    n.key == d.key
                        && n.sum_of == d.sum_of
                        && n.zero_when == d.zero_when
                        && n.ladder.is_some() == d.ladder.is_some()
                        && d.sum_of.iter().chain(&d.zero_when).all(|k| {
                            match (old.question(k), new.question(k)) {
                                (Some(o), Some(n)) => same_answers(&o.answer, &n.answer),
                                (o, n) => o.is_none() && n.is_none(),
                            }
                        })
                })
            })
            .map(|d| d.key.clone()),
    );
    same
}

/// Whether two questions take the same answers with the same labels; what the options
/// are said to mean (their definitions, like a question's help) may differ.
fn same_answers(old: &Answer, new: &Answer) -> bool {
    match (old, new) {
        (Answer::Choice { options: o }, Answer::Choice { options: n })
        | (Answer::MultiChoice { options: o }, Answer::MultiChoice { options: n }) => {
            o.len() == n.len()
                && o.iter()
                    .zip(n)
                    .all(|(o, n)| o.value == n.value && o.label == n.label)
        }
        (old, new) => old == new,
    }
}

/// The document as JSON, in the form [`parse`] reads.
pub fn to_value(rubric: &Rubric) -> Value {
    serde_json::to_value(rubric).unwrap_or(Value::Object(Map::new()))
}

#[cfg(test)]
mod tests;
