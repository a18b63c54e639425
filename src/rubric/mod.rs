//! Rubrics as data: the questions of a rating form, their options, when an explanation
//! is required, and how answers change sides when A and B were shown swapped.
//!
//! One definition serves the server's validation, the HTML form and the browser script
//! (which receives it as JSON), so the three cannot drift apart.

use serde::Serialize;

mod answers;
mod blackhat;

pub use answers::{Answers, Mode, Question, orient, validate};

/// A rating form.
#[derive(Debug, Serialize)]
pub struct Rubric {
    /// The stored name, e.g. `blackhat`.
    pub name: &'static str,
    pub title: &'static str,
    /// Asked once for each response, under `a.` and `b.`.
    pub per_response: Vec<Field>,
    /// Asked once for the pair.
    pub pair: Vec<Field>,
}

/// One question.
#[derive(Debug, Serialize)]
pub struct Field {
    /// The answer key, e.g. `correctness`; its explanation is `<key>_explanation`.
    pub key: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub explain: Explain,
    /// Asked of the explanation box.
    pub explain_prompt: &'static str,
    /// How agreement on this question is measured.
    pub level: crate::metrics::agreement::Level,
    /// Options that say nothing about the scale (N/A, cannot assess): left out of
    /// agreement, as missing values.
    pub unscaled: Vec<&'static str>,
}

/// What kind of answer a question takes.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Kind {
    /// One of a fixed list of options.
    Choice { options: Vec<Choice> },
    /// A whole number from `min` to `max`, each with a label. When A and B were shown
    /// swapped, a stored score `s` is `min + max - s`.
    Scale {
        min: i64,
        max: i64,
        labels: Vec<&'static str>,
    },
}

#[derive(Debug, Serialize)]
pub struct Choice {
    /// The stored value.
    pub value: &'static str,
    pub label: &'static str,
}

/// When a question needs a written explanation.
#[derive(Debug, Serialize)]
#[serde(tag = "when", content = "values", rename_all = "snake_case")]
pub enum Explain {
    Always,
    /// When the answer is one of these values.
    OnValues(Vec<&'static str>),
}

impl Field {
    pub fn explanation_key(&self) -> String {
        format!("{}_explanation", self.key)
    }

    /// Whether `value` (as stored) requires an explanation.
    pub fn needs_explanation(&self, value: &str) -> bool {
        match &self.explain {
            Explain::Always => true,
            Explain::OnValues(values) => values.contains(&value),
        }
    }

    pub fn choices(&self) -> &[Choice] {
        match &self.kind {
            Kind::Choice { options } => options,
            Kind::Scale { .. } => &[],
        }
    }

    /// The options as `(value, label)`, scales included, in order.
    pub fn options(&self) -> Vec<(String, &'static str)> {
        match &self.kind {
            Kind::Choice { options } => options
                .iter()
                .map(|o| (o.value.to_owned(), o.label))
                .collect(),
            Kind::Scale { min, labels, .. } => labels
                .iter()
                .enumerate()
                .map(|(i, l)| ((min + i as i64).to_string(), *l))
                .collect(),
        }
    }
}

/// Names of the rubrics a batch can use.
pub const NAMES: [&str; 1] = ["blackhat"];

/// The rubric with this stored name.
pub fn by_name(name: &str) -> Option<&'static Rubric> {
    match name {
        "blackhat" => Some(blackhat::rubric()),
        _ => None,
    }
}

/// Why a skip is given.
pub const SKIP_REASONS: [(&str, &str); 3] = [
    (
        "unfamiliar",
        "I don't know this language or domain well enough",
    ),
    ("too_long", "It can't be verified in about 30 minutes"),
    ("other", "Another reason (say which in the note)"),
];

/// Who is the shown "A" and "B": the sides of an answer set after undoing a swap.
pub fn side_names(swapped: bool) -> (&'static str, &'static str) {
    if swapped { ("b", "a") } else { ("a", "b") }
}
