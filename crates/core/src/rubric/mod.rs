//! Rubrics as documents: the questions of a rating form, their answers, when an
//! explanation is required and how long it may be, how answers change when A and B were
//! shown swapped, their role in metrics, what out of scope sets, and derived answers.
//!
//! A rubric is a JSON document (the built-in ones are files under `rubrics/`, embedded in
//! the binary). [`document::parse`] reads one and checks every rule of the format,
//! reporting each broken one by its path. The rule engine in [`answers`] works over the
//! document alone, so the server, the pages, the CLI and the browser script (which gets
//! the same document as JSON) follow one definition.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod answers;
pub mod document;
mod orientation;

pub use answers::{
    Answers, Classification, MAX_TEXT_CHARS, Mode, Problems, answer_at, plain, validate, warnings,
    word_count,
};
pub use orientation::{ShownAnswers, TaskAnswers};

/// A rating form, as its document declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    /// The stored name, e.g. `blackhat`.
    pub name: String,
    pub title: String,
    pub subject: Subject,
    /// Guidance shown to raters above the form.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub help: String,
    /// What marking a task out of scope means for this rubric, shown beside the button.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub out_of_scope_help: String,
    /// The complete guidelines (Markdown), shown with the form and the review pages.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    /// In the order the form asks them.
    pub questions: Vec<Question>,
    /// Answers the server works out from the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<Derived>,
    /// Combinations of answers that are allowed but unlikely: the form asks the rater to
    /// look again before it sends them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// The reasons a rater may give a task back for, in the order offered; none listed
    /// means [`DEFAULT_SKIP_REASONS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_reasons: Vec<SkipOption>,
}

/// A reason a rater may skip a task for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkipOption {
    /// Stored with the skip and exported, e.g. `cannot_assess`.
    pub value: String,
    /// Offered to the rater, e.g. "I cannot judge whether it is correct".
    pub label: String,
    /// A skip for this reason must say more in its note.
    #[serde(default, skip_serializing_if = "is_false")]
    pub note_required: bool,
}

/// The reasons offered by a rubric that lists none: those every rubric offered before
/// documents could list their own.
pub static DEFAULT_SKIP_REASONS: LazyLock<Vec<SkipOption>> = LazyLock::new(|| {
    [
        (
            "unfamiliar",
            "I don't know this language or domain well enough",
        ),
        ("too_long", "It can't be verified in about 30 minutes"),
        ("other", "Another reason (say which in the note)"),
    ]
    .map(|(value, label)| SkipOption {
        value: value.into(),
        label: label.into(),
        note_required: false,
    })
    .into()
});

/// A consistency rule: when every answer named in `when` matches (answers as the rater
/// was shown them, by path: `a.correctness`, `sxs`, `score`, or an explanation such as
/// `a.executability_explanation`), the rater is shown `message` and asked to confirm.
/// A submission that meets a rule is taken only with the rule's `id` among its
/// confirmed warnings; the rating keeps which it confirmed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    /// Names the rule in submissions, ratings and exports, e.g. `prefers-a-despite-major-issues`.
    /// Documents stored before rules had ids read as `warning-<n>` (see [`Rubric::name_warnings`]).
    #[serde(default)]
    pub id: String,
    pub when: BTreeMap<String, Matches>,
    pub message: String,
}

/// What a warning's condition asks of one answer: one value, any of several, or a test
/// of a text (a text answer or an explanation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Matches {
    AnyOf(Vec<Value>),
    Text(TextTest),
    One(Value),
}

/// A test of a written answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TextTest {
    /// The text contains any of these words or phrases (case aside, whole words).
    Mentions(Vec<String>),
    /// The text has more words than this.
    MoreWordsThan(usize),
}

impl Matches {
    /// The values it matches; empty for a text test.
    pub fn values(&self) -> &[Value] {
        match self {
            Matches::AnyOf(values) => values,
            Matches::One(value) => std::slice::from_ref(value),
            Matches::Text(_) => &[],
        }
    }

    /// Whether `answer` (absent: not answered) matches.
    pub fn matches(&self, answer: Option<&Value>) -> bool {
        match (self, answer) {
            (Matches::Text(test), Some(Value::String(text))) => test.holds(text),
            (Matches::Text(_), _) | (_, None) => false,
            (values, Some(answer)) => values.values().contains(answer),
        }
    }
}

impl TextTest {
    pub fn holds(&self, text: &str) -> bool {
        match self {
            TextTest::Mentions(phrases) => mentions(text, phrases),
            TextTest::MoreWordsThan(n) => word_count(text) > *n,
        }
    }
}

/// Whether any of `phrases` occurs in `text` as whole words, case aside: "ran" is found
/// in "I ran it" but not in "grant". Both sides become their lower-case words, each
/// followed by a space and the whole led by one, so a match of `" ran "` can only be whole
/// words; one automaton looks for every phrase in one pass, so the time grows with the
/// text and the phrases, not with their product.
fn mentions(text: &str, phrases: &[String]) -> bool {
    let words = |s: &str| -> String {
        let mut out = String::from(" ");
        for word in s
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            out.push_str(&word.to_lowercase());
            out.push(' ');
        }
        out
    };
    let patterns: Vec<String> = phrases
        .iter()
        .map(|p| words(p))
        .filter(|p| p.len() > 1)
        .collect();
    if patterns.is_empty() {
        return false;
    }
    aho_corasick::AhoCorasick::new(&patterns)
        .is_ok_and(|automaton| automaton.is_match(&words(text)))
}

/// What a rating judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// Two responses, A and B, which may be shown swapped.
    Pair,
    /// One response.
    Single,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The answer key, e.g. `correctness`; its explanation is `<key>_explanation`.
    pub key: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub help: String,
    /// What the question and its answers mean in full (Markdown), beyond the hint in
    /// `help`: for yes/no, scale and text questions (a choice's options have their own).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub definition: String,
    /// The heading of the form section that asks it (the label when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Asked once of each response (pair rubrics): answers are stored under `a` and `b`
    /// and trade places when the sides were shown swapped.
    #[serde(default, skip_serializing_if = "is_false")]
    pub each_response: bool,
    pub answer: Answer,
    /// Whether a submission must answer it.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub required: bool,
    /// Asked only when every earlier answer named here matches (for a question asked of
    /// each response, that response's answers), e.g. issue categories only when
    /// `correctness` has minor or major issues. Otherwise it takes no answer: the form
    /// hides it and a submission that answers it is refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub applies_when: BTreeMap<String, Matches>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    /// How a question asked once for the pair changes when A and B were shown swapped.
    #[serde(default, skip_serializing_if = "Swap::is_none")]
    pub swap: Swap,
    /// How metrics read it; absent for free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Role>,
    /// The answer out of scope sets (its explanation is dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_scope: Option<Value>,
    /// Code the rater runs in the browser is evidence for it: the form and the review
    /// show beside it how many of the response's code blocks ran and passed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub code_runs: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What kind of answer a question takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Answer {
    /// One of a fixed list of options, stored as its value.
    Choice { options: Vec<Choice> },
    /// A whole number from `min` to `max`, each with a label.
    Scale {
        min: i64,
        max: i64,
        labels: Vec<String>,
    },
    /// Any of a fixed list of options, at least one, stored as their values in the
    /// options' order.
    MultiChoice { options: Vec<Choice> },
    /// Yes or no, stored as `true` or `false`; `labels` name the two (default "Yes", "No").
    YesNo {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        labels: Option<[String; 2]>,
    },
    /// Free text.
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_words: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_chars: Option<usize>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// The stored value.
    pub value: String,
    pub label: String,
    /// When to pick it (Markdown), with examples.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub definition: String,
}

/// A written explanation of a question's answer, stored as `<key>_explanation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explanation {
    pub required: Required,
    /// Asked of the explanation box.
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_words: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// When an explanation must be given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Required {
    Always,
    Optional,
    /// When the answer is one of these values.
    When(Vec<Value>),
}

/// How an answer to a question asked once for the pair is turned when the rater saw A
/// and B swapped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Swap {
    /// It does not depend on which side was shown first.
    #[default]
    None,
    /// A scale read from A to B: `s` becomes `min + max - s`.
    MirrorScale,
    /// Options that name a side trade places, e.g. `{"a": "b", "b": "a"}`; others stay.
    SwapValues(BTreeMap<String, String>),
}

impl Swap {
    fn is_none(&self) -> bool {
        *self == Swap::None
    }
}

/// How metrics read a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case", deny_unknown_fields)]
pub enum Role {
    /// Which response is better: a scale with a `midpoint` (below it A is better), or
    /// options that name the side they favour (`a`, `b`, `tie`).
    Preference {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        midpoint: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        a: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tie: Option<String>,
    },
    /// Ordered options, worst to best or best to worst; `unscaled` ones (N/A, cannot
    /// assess) are missing values for agreement.
    Ordinal {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unscaled: Vec<Value>,
    },
    /// Unordered categories.
    Nominal {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unscaled: Vec<Value>,
    },
    /// A number whose mean means something (a total).
    Score,
}

/// An answer the server works out from others: the number of `sum_of` yes/no answers
/// that are yes (scales add their value), or 0 when any of `zero_when` is yes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Derived {
    pub key: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub help: String,
    pub sum_of: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zero_when: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Role>,
    /// The yes/no criteria of `sum_of` build on each other, in order: each can hold only
    /// when every one before it holds, so the total is the highest level reached. The
    /// form asks for that level in one question; the criteria are stored as yes/no
    /// answers all the same ("reached this level").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<Ladder>,
}

/// How the form asks for the level a cumulative score reaches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ladder {
    /// The question, e.g. "The highest level this response reaches".
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub help: String,
    /// The option for level 0, when not even the first criterion holds.
    pub none: String,
}

/// The prefix of a ladder's field on the form: `ladder.<derived key>` carries the level.
pub const LADDER_FIELD: &str = "ladder.";

/// Which response a preference answer favours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Favours {
    A,
    Tie,
    B,
}

impl Favours {
    /// The same answer read with A and B the other way round.
    pub fn flipped(self) -> Self {
        match self {
            Favours::A => Favours::B,
            Favours::Tie => Favours::Tie,
            Favours::B => Favours::A,
        }
    }
}

impl Role {
    /// Which response `value` favours, for a preference: on a scale, below, at or above
    /// its midpoint; among options, the one the role names `a`, `b` or `tie`.
    pub fn favours(&self, value: &Value) -> Option<Favours> {
        match self {
            Role::Preference {
                midpoint: Some(midpoint),
                ..
            } => Some(match value.as_i64()?.cmp(midpoint) {
                std::cmp::Ordering::Less => Favours::A,
                std::cmp::Ordering::Equal => Favours::Tie,
                std::cmp::Ordering::Greater => Favours::B,
            }),
            Role::Preference { a, b, tie, .. } => {
                let value = value.as_str()?;
                [(a, Favours::A), (b, Favours::B), (tie, Favours::Tie)]
                    .into_iter()
                    .find(|(v, _)| v.as_deref() == Some(value))
                    .map(|(_, f)| f)
            }
            _ => None,
        }
    }
}

impl Question {
    /// Which response `value` favours, when the question is a preference.
    pub fn favours(&self, value: &Value) -> Option<Favours> {
        self.metrics.as_ref()?.favours(value)
    }

    pub fn explanation_key(&self) -> String {
        format!("{}_explanation", self.key)
    }

    /// Whether `value` (as stored) requires an explanation.
    pub fn needs_explanation(&self, value: &Value) -> bool {
        match self.explanation.as_ref().map(|e| &e.required) {
            Some(Required::Always) => true,
            Some(Required::When(values)) => values.contains(value),
            Some(Required::Optional) | None => false,
        }
    }

    /// Whether it is asked, given the answers beside it in `holder` (the same
    /// response's, for a question asked of each response): always, unless its
    /// `applies_when` names an answer that does not match.
    pub fn applies(&self, holder: &Answers) -> bool {
        self.applies_when
            .iter()
            .all(|(key, matches)| matches.matches(holder.get(key)))
    }

    /// Why it takes no answer, for a refusal: "applies only when ..." naming each
    /// condition.
    pub fn applies_only_when(&self) -> String {
        let conditions: Vec<String> = self
            .applies_when
            .iter()
            .map(|(key, matches)| {
                let values: Vec<String> = matches.values().iter().map(answers::plain).collect();
                format!("{key} is {}", values.join(" or "))
            })
            .collect();
        format!(
            "applies only when {}: leave it out otherwise",
            conditions.join(" and ")
        )
    }

    /// The heading of its form section.
    pub fn section(&self) -> &str {
        self.section.as_deref().unwrap_or(&self.label)
    }

    pub fn is_text(&self) -> bool {
        matches!(self.answer, Answer::Text { .. })
    }

    /// The answers it can take as `(stored value, label)`, in order (for several
    /// choices, each option that can be among them); empty for text.
    pub fn options(&self) -> Vec<(Value, &str)> {
        match &self.answer {
            Answer::Choice { options } | Answer::MultiChoice { options } => options
                .iter()
                .map(|o| (Value::from(o.value.as_str()), o.label.as_str()))
                .collect(),
            Answer::Scale { min, labels, .. } => labels
                .iter()
                .enumerate()
                .map(|(i, l)| (Value::from(min + i as i64), l.as_str()))
                .collect(),
            Answer::YesNo { labels } => {
                let (yes, no) = labels
                    .as_ref()
                    .map_or(("Yes", "No"), |[y, n]| (y.as_str(), n.as_str()));
                vec![(Value::Bool(true), yes), (Value::Bool(false), no)]
            }
            Answer::Text { .. } => vec![],
        }
    }

    /// The label of a stored answer, if it is one of the options.
    pub fn label_of(&self, value: &Value) -> Option<&str> {
        self.options()
            .into_iter()
            .find(|(v, _)| v == value)
            .map(|(_, l)| l)
    }
}

impl Derived {
    /// The lowest and highest value it can take, given the questions it sums.
    pub fn range(&self, rubric: &Rubric) -> (i64, i64) {
        let mut low = 0;
        let mut high = 0;
        for key in &self.sum_of {
            match rubric.question(key).map(|q| &q.answer) {
                Some(Answer::Scale { min, max, .. }) => {
                    low += min;
                    high += max;
                }
                _ => high += 1,
            }
        }
        if !self.zero_when.is_empty() {
            low = low.min(0);
        }
        (low, high)
    }
}

/// A response, and where its answers sit in a stored answer set: `a` or `b` (the one
/// response of a single-response rubric is `a`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
// Named apart from the metrics' `Side` in the OpenAPI document, whose schemas share one
// namespace.
#[schema(as = ResponseSide)]
pub enum Side {
    A,
    B,
}

impl Side {
    pub fn other(self) -> Self {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }
}

/// One stored answer of a rubric: a question (for one side, or for the whole task) or a
/// derived answer. Exports, metrics and the review pages list answers in this order.
#[derive(Debug, Clone, Copy)]
pub enum Slot<'r> {
    Asked {
        question: &'r Question,
        side: Option<Side>,
    },
    Derived(&'r Derived),
}

impl<'r> Slot<'r> {
    /// The answer's key within its object.
    pub fn key(&self) -> &'r str {
        match self {
            Slot::Asked { question, .. } => &question.key,
            Slot::Derived(d) => &d.key,
        }
    }

    /// Its path in an answer set, e.g. `a.correctness` or `sxs`.
    pub fn path(&self) -> String {
        match self {
            Slot::Asked {
                side: Some(side),
                question,
            } => format!("{}.{}", side.key(), question.key),
            _ => self.key().to_owned(),
        }
    }

    pub fn side(&self) -> Option<Side> {
        match self {
            Slot::Asked { side, .. } => *side,
            Slot::Derived(_) => None,
        }
    }

    pub fn label(&self) -> &'r str {
        match self {
            Slot::Asked { question, .. } => &question.label,
            Slot::Derived(d) => &d.label,
        }
    }

    pub fn metrics(&self) -> Option<&'r Role> {
        match self {
            Slot::Asked { question, .. } => question.metrics.as_ref(),
            Slot::Derived(d) => d.metrics.as_ref(),
        }
    }

    /// The object holding this answer within an answer set.
    pub fn holder<'a>(&self, answers: &'a Answers) -> Option<&'a Answers> {
        match self.side() {
            Some(side) => answers.get(side.key()).and_then(Value::as_object),
            None => Some(answers),
        }
    }

    /// The stored answer, if any.
    pub fn value<'a>(&self, answers: &'a Answers) -> Option<&'a Value> {
        self.holder(answers)
            .and_then(|h| h.get(self.key()))
            .filter(|v| !v.is_null())
    }

    /// Its explanation key, when the question has an explanation.
    pub fn explanation_key(&self) -> Option<String> {
        match self {
            Slot::Asked { question, .. } if question.explanation.is_some() => {
                Some(question.explanation_key())
            }
            _ => None,
        }
    }

    /// Its explanation's path in an answer set, e.g. `a.correctness_explanation`.
    pub fn explanation_path(&self) -> Option<String> {
        let key = self.explanation_key()?;
        Some(match self.side() {
            Some(side) => format!("{}.{key}", side.key()),
            None => key,
        })
    }
}

impl Rubric {
    /// Whether its answers have parts for each response (`a` and `b`): a pair rubric
    /// with a question asked of each response.
    pub fn has_sides(&self) -> bool {
        self.subject == Subject::Pair && self.questions.iter().any(|q| q.each_response)
    }

    /// `answers` as its parts are shown (API, export): without `a` and `b` when the
    /// rubric has no sides (ratings stored before they were left out carry empty ones).
    pub fn parts<'a>(&self, answers: &'a Answers) -> Parts<'a> {
        Parts {
            answers,
            sides: self.has_sides(),
        }
    }

    /// Drops from owned `answers` the parts the rubric does not have, as
    /// [`Rubric::parts`] leaves them out when writing.
    pub fn keep_parts(&self, answers: &mut Answers) {
        if !self.has_sides() {
            for side in SIDES {
                answers.remove(side);
            }
        }
    }

    /// The cumulative score whose ladder has the criterion `key`, with the criterion's
    /// place on it (0 for the first).
    pub fn ladder_of(&self, key: &str) -> Option<(&Derived, usize)> {
        self.derived.iter().find_map(|d| {
            d.ladder.as_ref()?;
            Some((d, d.sum_of.iter().position(|k| k == key)?))
        })
    }

    /// Field errors as the form shows them: the errors of a ladder's criteria are shown
    /// as one, beside the ladder's question (`ladder.<key>`): the lowest criterion's.
    pub fn on_form(&self, errors: crate::fields::FieldErrors) -> crate::fields::FieldErrors {
        let mut shown = crate::fields::FieldErrors::new();
        let mut lowest = BTreeMap::new();
        for (path, why) in errors {
            match self.ladder_of(&path) {
                Some((ladder, place)) => {
                    let name = format!("{LADDER_FIELD}{}", ladder.key);
                    let kept = lowest.entry(name).or_insert((place, why.clone()));
                    if place < kept.0 {
                        *kept = (place, why);
                    }
                }
                None => {
                    shown.insert(path, why);
                }
            }
        }
        for (name, (_, why)) in lowest {
            shown.entry(name).or_insert(why);
        }
        shown
    }

    /// The document without what only people read (the guidelines and definitions):
    /// what the form's script is sent.
    pub fn without_guidelines(&self) -> Rubric {
        let mut rules = self.clone();
        rules.instructions.clear();
        for question in &mut rules.questions {
            question.definition.clear();
            if let Answer::Choice { options } = &mut question.answer {
                for option in options {
                    option.definition.clear();
                }
            }
        }
        rules
    }

    /// The reasons a rater may skip a task of this rubric for.
    pub fn skip_options(&self) -> &[SkipOption] {
        if self.skip_reasons.is_empty() {
            &DEFAULT_SKIP_REASONS
        } else {
            &self.skip_reasons
        }
    }

    /// The words a skip reason is offered in; for one the rubric does not offer, its
    /// value as words.
    pub fn skip_label(&self, value: &str) -> String {
        self.skip_options()
            .iter()
            .find(|o| o.value == value)
            .map_or_else(|| value.replace('_', " "), |o| o.label.clone())
    }

    /// The question with this key.
    pub fn question(&self, key: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.key == key)
    }

    /// Every stored answer in order: the questions asked of each response for A, then for
    /// B, then the questions asked once, then the derived answers.
    pub fn slots(&self) -> Vec<Slot<'_>> {
        let mut slots = Vec::new();
        for side in [Side::A, Side::B] {
            for question in self.questions.iter().filter(|q| q.each_response) {
                slots.push(Slot::Asked {
                    question,
                    side: Some(side),
                });
            }
        }
        for question in self.questions.iter().filter(|q| !q.each_response) {
            slots.push(Slot::Asked {
                question,
                side: None,
            });
        }
        slots.extend(self.derived.iter().map(Slot::Derived));
        slots
    }

    /// Gives each warning without an id the id `warning-<n>` (its place, from 1), as
    /// documents stored before warnings had ids are read.
    pub fn name_warnings(mut self) -> Self {
        for (i, warning) in self.warnings.iter_mut().enumerate() {
            if warning.id.is_empty() {
                warning.id = format!("warning-{}", i + 1);
            }
        }
        self
    }

    /// The warning with this id.
    pub fn warning(&self, id: &str) -> Option<&Warning> {
        self.warnings.iter().find(|w| w.id == id)
    }
}

/// The most options (or scale values) a question offers: each has its own key on the
/// form, `1` to `9`, `0`, then Shift with `1` to `0` (see [`option_key`]).
pub const MAX_OPTIONS: usize = 20;

/// The key that picks the `n`th option (from 1) on the form, as the form shows it.
pub fn option_key(n: usize) -> String {
    match n {
        1..=9 => n.to_string(),
        10 => "0".into(),
        11..=20 => format!("⇧{}", (n - 10) % 10),
        _ => String::new(),
    }
}

/// The rubric documents shipped with the binary.
const BUILT_IN: [&str; 3] = [
    include_str!("../../../../rubrics/blackhat.json"),
    include_str!("../../../../rubrics/additive-5.json"),
    include_str!("../../../../rubrics/pairwise-aspects.json"),
];

static BUILT_IN_RUBRICS: LazyLock<Vec<Rubric>> = LazyLock::new(|| {
    BUILT_IN
        .iter()
        .map(|text| {
            document::parse(text).unwrap_or_else(|errors| {
                panic!("a built-in rubric breaks the document rules: {errors:?}")
            })
        })
        .collect()
});

/// The built-in rubrics, in the order they are offered.
pub fn built_in() -> &'static [Rubric] {
    &BUILT_IN_RUBRICS
}

/// The names of the rubrics a batch can use.
pub fn names() -> Vec<&'static str> {
    built_in().iter().map(|r| r.name.as_str()).collect()
}

/// The built-in rubric with this stored name.
pub fn by_name(name: &str) -> Option<&'static Rubric> {
    built_in().iter().find(|r| r.name == name)
}

/// Who is the shown "A" and "B": the sides of an answer set after undoing a swap.
pub fn side_names(swapped: bool) -> (&'static str, &'static str) {
    if swapped { ("b", "a") } else { ("a", "b") }
}
/// An answer's label for people: the rubric's words, with the response a question about
/// each response is about; the path itself when the rubric has no such answer.
pub fn answer_label(rubric: &Rubric, path: &str) -> String {
    rubric
        .slots()
        .iter()
        .find(|s| s.path() == path)
        .map_or_else(
            || path.to_owned(),
            |slot| match slot.side() {
                Some(side) => format!("{} ({})", slot.label(), side.key().to_uppercase()),
                None => slot.label().to_owned(),
            },
        )
}

/// Values by answer path, in the order the rubric asks them (paths it does not have
/// last), each with its label for people.
pub fn labelled_in_order<T>(
    rubric: &Rubric,
    by_path: impl IntoIterator<Item = (String, T)>,
) -> Vec<(String, T)> {
    let order: Vec<String> = rubric.slots().iter().map(|s| s.path()).collect();
    let rank = |path: &str| order.iter().position(|p| p == path).unwrap_or(order.len());
    let mut items: Vec<(String, T)> = by_path.into_iter().collect();
    items.sort_by_key(|(path, _)| rank(path));
    items
        .into_iter()
        .map(|(path, value)| (answer_label(rubric, &path), value))
        .collect()
}

/// The keys of the answers asked of each response.
const SIDES: [&str; 2] = ["a", "b"];

/// Answers with only the parts their rubric has ([`Rubric::parts`]), written out without
/// being copied.
#[derive(Debug, Clone, Copy)]
pub struct Parts<'a> {
    answers: &'a Answers,
    sides: bool,
}

impl Parts<'_> {
    fn shown(&self, key: &str) -> bool {
        self.sides || !SIDES.contains(&key)
    }
}

impl Serialize for Parts<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.answers.iter().filter(|(key, _)| self.shown(key)))
    }
}
