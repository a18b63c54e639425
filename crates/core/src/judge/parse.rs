//! Reading a judge's output back as answers to a rubric.
//!
//! Tolerant of form: JSON inside a Markdown fence or with text around it, a score line
//! written `**Score:** 4/5`, the same answer repeated. Strict about meaning, by one rule:
//!
//! 1. Every answer of the expected form is found: each JSON object in the text that has
//!    the form's keys (`choices`; `score`; a question of the rubric or a side `a`/`b`),
//!    and for a score line each `score:` outside those objects, wherever it stands on
//!    its line (`Final score: 4`, `the score: 2 fits better`).
//! 2. An answer that gives nothing (an echo of the instructions: `score: <points>`,
//!    `"[A, B or tie]"`) is passed over, unless nothing else is given.
//! 3. When answers are marked final (`Final answer: {...}`, `**Final score:** 4`, or a
//!    heading such as `Final answer:` on the line before), the last of them alone is
//!    read; the others are drafts.
//! 4. Otherwise every answer counts, and each question takes the value they agree on.
//!    A question given two different ways, by two answers or by one key twice in an
//!    object (or an object, such as `choices`, given twice), is `conflicting`; so is a
//!    score written `3 or 4`.
//!
//! An answer that is not one of the rubric's (`4/10` on a 0-5 scale) is `invalid`, and
//! an output cut off at the token limit is not read at all. Such a field is reported by
//! its path with why, never turned into a low score.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::Deserializer;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::found;
use super::template::{Format, ScoreParts, choices_parts, score_line_parts};
use crate::rubric::{Answer, Answers, Mode, Question, Rubric, ShownAnswers, Subject, validate};

/// What became of one answer of an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldStatus {
    Parsed,
    /// The output does not give it.
    Missing,
    /// The output gives it more than one way.
    Conflicting,
    /// The output was cut off at the token limit, so nothing in it is taken.
    Truncated,
    /// The two orders of a pair gave different answers (see `combine`).
    Inconsistent,
    /// It is given, but the rubric does not take it: why.
    Invalid(String),
}

impl FieldStatus {
    pub fn is_parsed(&self) -> bool {
        *self == FieldStatus::Parsed
    }
}

impl fmt::Display for FieldStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldStatus::Parsed => f.write_str("parsed"),
            FieldStatus::Missing => f.write_str("missing"),
            FieldStatus::Conflicting => f.write_str("conflicting"),
            FieldStatus::Truncated => f.write_str("truncated"),
            FieldStatus::Inconsistent => f.write_str("inconsistent"),
            FieldStatus::Invalid(why) => write!(f, "invalid: {why}"),
        }
    }
}

impl Serialize for FieldStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FieldStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "parsed" => FieldStatus::Parsed,
            "missing" => FieldStatus::Missing,
            "conflicting" => FieldStatus::Conflicting,
            "truncated" => FieldStatus::Truncated,
            "inconsistent" => FieldStatus::Inconsistent,
            other => {
                FieldStatus::Invalid(other.strip_prefix("invalid: ").unwrap_or(other).to_owned())
            }
        })
    }
}

/// Per answer path (`a.correctness`, `sxs`, `score`): what became of it.
pub type Fields = BTreeMap<String, FieldStatus>;

/// An output read as answers, in the orientation the judge was shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The answers that were read, checked against the rubric.
    pub answers: ShownAnswers,
    pub fields: Fields,
}

impl Parsed {
    /// Whether every answer was read and the rubric takes them all.
    pub fn answered(&self) -> bool {
        self.fields.values().all(FieldStatus::is_parsed)
    }
}

/// Reads `output` of the given `format` as answers to `rubric`. `truncated` says the
/// endpoint stopped at its token limit. The answers are checked as a rater's submission
/// is (`min_explanation` as the batch sets it); what the check refuses is `Invalid`.
pub fn parse(
    rubric: &Rubric,
    format: Format,
    output: &str,
    truncated: bool,
    min_explanation: usize,
) -> Parsed {
    let paths = asked_paths(rubric);
    if truncated {
        return Parsed {
            answers: ShownAnswers::default(),
            fields: paths
                .into_iter()
                .map(|p| (p, FieldStatus::Truncated))
                .collect(),
        };
    }
    let (answers, mut fields) = read(rubric, format, output);
    finish(rubric, answers, &mut fields, &paths, min_explanation)
}

/// Fills in `Missing` for every question not reported yet, then checks the answers with
/// the rubric's own rules, marking what they refuse.
fn finish(
    rubric: &Rubric,
    answers: Answers,
    fields: &mut Fields,
    paths: &[String],
    min_explanation: usize,
) -> Parsed {
    for path in paths {
        fields.entry(path.clone()).or_insert(FieldStatus::Missing);
    }
    let answers = match validate(
        rubric,
        &[],
        &Value::Object(answers.clone()),
        Mode::Submit,
        min_explanation,
    ) {
        Ok(checked) => checked,
        Err(problems) => {
            for (path, why) in problems {
                let status = fields.entry(path).or_insert(FieldStatus::Parsed);
                if status.is_parsed() {
                    *status = FieldStatus::Invalid(why);
                }
            }
            answers
        }
    };
    Parsed {
        answers: ShownAnswers::new(answers),
        fields: std::mem::take(fields),
    }
}

/// The path of every question the judge must answer (explanations aside, which the
/// check reports when they are required and missing): the required ones.
pub fn asked_paths(rubric: &Rubric) -> Vec<String> {
    paths(rubric, true)
}

/// The path of every question the judge may leave out: those not required (issue
/// categories, say, asked only when the response has issues).
pub fn optional_paths(rubric: &Rubric) -> Vec<String> {
    paths(rubric, false)
}

fn paths(rubric: &Rubric, required: bool) -> Vec<String> {
    let mut paths = Vec::new();
    let asked = |q: &&Question| q.required == required;
    for side in ["a", "b"] {
        if rubric.subject == Subject::Pair {
            for q in rubric
                .questions
                .iter()
                .filter(|q| q.each_response)
                .filter(asked)
            {
                paths.push(format!("{side}.{}", q.key));
            }
        }
    }
    for q in rubric
        .questions
        .iter()
        .filter(|q| !q.each_response)
        .filter(asked)
    {
        paths.push(q.key.clone());
    }
    paths
}

/// One answer the output gives, read on its own.
struct Reading {
    answers: Answers,
    fields: Fields,
    is_final: bool,
}

impl Reading {
    fn new(is_final: bool) -> Self {
        Self {
            answers: Answers::new(),
            fields: Fields::new(),
            is_final,
        }
    }

    /// Whether it answers any question that is not a text: an echo of the answer form
    /// (`score: <points>`, `"[A, B or tie]"` beside `"[your rationale]"`) does not.
    fn answers_anything(&self, rubric: &Rubric) -> bool {
        self.fields.iter().any(|(path, status)| {
            let key = path.rsplit('.').next().unwrap_or(path);
            status.is_parsed() && rubric.question(key).is_some_and(|q| !q.is_text())
        })
    }
}

/// The reading rule (the module's documentation says it in words): every answer of the
/// expected form is found and read on its own; those that answer nothing are passed over
/// unless nothing else is given; if any is marked final, the last of those alone counts;
/// otherwise each question takes the value all of them agree on, and is `conflicting`
/// where two differ.
fn read(rubric: &Rubric, format: Format, output: &str) -> (Answers, Fields) {
    let objects = found::objects(output);
    match format {
        Format::Answers => settle(
            rubric,
            objects
                .iter()
                .filter(|o| in_answers_form(rubric, &o.map))
                .map(|o| read_answers(rubric, o))
                .collect(),
        ),
        Format::Choices => settle(
            rubric,
            objects
                .iter()
                .filter(|o| o.map.contains_key("choices"))
                .map(|o| read_choices(rubric, o))
                .collect(),
        ),
        Format::ScoreLine => read_score_line(rubric, output, &objects),
    }
}

/// The readings that count (see [`read`]), merged.
fn settle(rubric: &Rubric, readings: Vec<Reading>) -> (Answers, Fields) {
    merge(&choose(rubric, readings))
}

fn choose(rubric: &Rubric, readings: Vec<Reading>) -> Vec<Reading> {
    let mut readings = if readings.iter().any(|r| r.answers_anything(rubric)) {
        readings
            .into_iter()
            .filter(|r| r.answers_anything(rubric))
            .collect()
    } else {
        readings
    };
    match readings.iter().rposition(|r| r.is_final) {
        Some(last) => vec![readings.swap_remove(last)],
        None => readings,
    }
}

/// One answer per path from several readings: the value they agree on, or `conflicting`
/// where they differ (a reading silent on a path does not disagree).
fn merge(readings: &[Reading]) -> (Answers, Fields) {
    let mut statuses: BTreeMap<String, Vec<&FieldStatus>> = BTreeMap::new();
    let mut values: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for reading in readings {
        for (path, status) in &reading.fields {
            statuses.entry(path.clone()).or_default().push(status);
        }
        for (path, value) in flat(&reading.answers) {
            values.entry(path).or_default().push(value);
        }
    }
    let mut answers = Answers::new();
    let mut fields = Fields::new();
    let paths: std::collections::BTreeSet<&String> = statuses.keys().chain(values.keys()).collect();
    for path in paths {
        let said = statuses.get(path).cloned().unwrap_or_default();
        let given = values.get(path).cloned().unwrap_or_default();
        let agreed = distinct(&said) <= 1 && distinct(&given) <= 1;
        if !agreed {
            fields.insert(path.clone(), FieldStatus::Conflicting);
            continue;
        }
        if let Some(status) = said.first() {
            fields.insert(path.clone(), (*status).clone());
        }
        if let Some(value) = given.first() {
            put(&mut answers, path, (*value).clone());
        }
    }
    (answers, fields)
}

fn distinct<T: PartialEq>(items: &[T]) -> usize {
    items
        .iter()
        .enumerate()
        .filter(|(i, item)| !items[..*i].contains(item))
        .count()
}

/// Answers by path: a side's answers (`a.correctness`) one level down.
fn flat(answers: &Answers) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for (key, value) in answers {
        match value.as_object() {
            Some(side) => out.extend(side.iter().map(|(k, v)| (format!("{key}.{k}"), v))),
            None => out.push((key.clone(), value)),
        }
    }
    out
}

fn put(answers: &mut Answers, path: &str, value: Value) {
    match path.split_once('.') {
        Some((side, key)) => {
            if let Value::Object(side) = answers
                .entry(side)
                .or_insert_with(|| Value::Object(Map::new()))
            {
                side.insert(key.to_owned(), value);
            }
        }
        None => {
            answers.insert(path.to_owned(), value);
        }
    }
}

/// Reads one answer to `question` from `given`, leniently as to spelling (an option's
/// label for its value, `"3"` for 3, `"yes"` for true).
fn read_value(question: &Question, given: &Value) -> Result<Value, String> {
    let options = question.options();
    if options.iter().any(|(v, _)| v == given) {
        return Ok(given.clone());
    }
    let text = match given {
        Value::String(s) => s
            .trim()
            .trim_matches(['"', '\'', '[', ']'])
            .trim()
            .to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    };
    let lower = text.to_lowercase();
    let found = options.iter().find(|(value, label)| {
        let value_text = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        value_text.eq_ignore_ascii_case(&lower) || label.eq_ignore_ascii_case(&lower)
    });
    if let Some((value, _)) = found {
        return Ok(value.clone());
    }
    if matches!(question.answer, Answer::YesNo { .. }) {
        match lower.as_str() {
            "yes" | "y" => return Ok(Value::Bool(true)),
            "no" | "n" => return Ok(Value::Bool(false)),
            _ => {}
        }
    }
    let names: Vec<String> = options.iter().map(|(v, _)| v.to_string()).collect();
    Err(format!("{given} is not one of {}", names.join(", ")))
}

/// Reads several choices: a list, or the options named in one text ("safety,
/// performance"), each read as [`read_value`] reads one; none named is no answer.
fn read_several(question: &Question, given: &Value) -> Result<Option<Value>, String> {
    let items: Vec<Value> = match given {
        Value::Array(items) => items.clone(),
        Value::String(text) => text
            .split([',', ';', '|'])
            .map(str::trim)
            .filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("none"))
            .map(Value::from)
            .collect(),
        other => return Err(format!("{other} is not a list of options")),
    };
    let mut chosen: Vec<Value> = Vec::new();
    for item in &items {
        let value = read_value(question, item)?;
        if !chosen.contains(&value) {
            chosen.push(value);
        }
    }
    Ok((!chosen.is_empty())
        .then(|| crate::rubric::document::in_order(&question.answer, Value::Array(chosen))))
}

/// Whether a JSON object is an answer in the rubric's own shape, not some other object
/// the output holds (a JSON example in a justification): it answers one of the questions
/// asked of the whole, or holds a side's answers.
fn in_answers_form(rubric: &Rubric, object: &Map<String, Value>) -> bool {
    let pair = rubric.subject == Subject::Pair;
    let sides = pair
        && ["a", "b"]
            .iter()
            .any(|s| object.get(*s).is_some_and(Value::is_object));
    sides
        || rubric
            .questions
            .iter()
            .filter(|q| !pair || !q.each_response)
            .any(|q| object.contains_key(&q.key))
}

/// The `answers` form: the rubric's own shape.
fn read_answers(rubric: &Rubric, object: &found::Object) -> Reading {
    let mut reading = Reading::new(object.is_final);
    let fields = &mut reading.fields;
    let pair = rubric.subject == Subject::Pair;
    let mut take =
        |holder: &Map<String, Value>, prefix: &str, each: bool, out: &mut Map<String, Value>| {
            for question in rubric.questions.iter().filter(|q| q.each_response == each) {
                let path = format!("{prefix}{}", question.key);
                if object.conflicts_at(&path) {
                    fields.insert(path, FieldStatus::Conflicting);
                    continue;
                }
                match holder.get(&question.key).filter(|v| !v.is_null()) {
                    None => {}
                    // Asked only when an earlier answer allows it: a judge sees no form
                    // that hides it, so an answer it should not have given is passed over.
                    Some(_) if !question.applies(out) => {}
                    Some(given) if matches!(question.answer, Answer::MultiChoice { .. }) => {
                        match read_several(question, given) {
                            Ok(Some(value)) => {
                                out.insert(question.key.clone(), value);
                                fields.insert(path, FieldStatus::Parsed);
                            }
                            Ok(None) => {}
                            Err(why) => {
                                fields.insert(path, FieldStatus::Invalid(why));
                            }
                        }
                    }
                    Some(given) if question.is_text() => {
                        out.insert(question.key.clone(), given.clone());
                        fields.insert(path, FieldStatus::Parsed);
                    }
                    Some(given) => match read_value(question, given) {
                        Ok(value) => {
                            out.insert(question.key.clone(), value);
                            fields.insert(path, FieldStatus::Parsed);
                        }
                        Err(why) => {
                            fields.insert(path, FieldStatus::Invalid(why));
                        }
                    },
                }
                if question.explanation.is_some() {
                    let key = question.explanation_key();
                    let path = format!("{prefix}{key}");
                    if object.conflicts_at(&path) {
                        fields.insert(path, FieldStatus::Conflicting);
                    } else if let Some(text) = holder.get(&key).and_then(Value::as_str) {
                        out.insert(key, Value::from(text));
                    }
                }
            }
        };
    if pair {
        for side in ["a", "b"] {
            if let Some(holder) = object.map.get(side).and_then(Value::as_object) {
                let mut out = Map::new();
                take(holder, &format!("{side}."), true, &mut out);
                reading.answers.insert(side.into(), Value::Object(out));
            }
        }
    }
    take(&object.map, "", false, &mut reading.answers);
    reading
}

/// What a score reads as.
#[derive(Debug, PartialEq)]
enum Score {
    Given(i64),
    /// No number: an echo of the instructions (`score: <total points>`).
    Nothing,
    /// Two numbers: `3 or 4`, `3-4`.
    Conflicting,
    /// A number that is not a score on this scale: `4/10`, `-1`.
    Invalid(String),
}

/// The `score_line` form: `score: N` and a justification (or, under structured output,
/// `{"score": N, "justification": ...}`). N criteria met, cumulatively: the first N are
/// yes, the rest no. Every `score:` mention outside a JSON object and every JSON object
/// with a score is an answer; the justification is the object's, or for an answer in
/// text, the text's other lines.
fn read_score_line(rubric: &Rubric, output: &str, objects: &[found::Object]) -> (Answers, Fields) {
    let Ok(parts) = score_line_parts(rubric) else {
        return (Answers::new(), Fields::new());
    };
    let high = parts.criteria.len() as i64;
    let scored: Vec<&found::Object> = objects
        .iter()
        .filter(|o| o.map.contains_key("score"))
        .collect();
    let (mentions, rest) = found::score_mentions(output, objects);
    let mut readings = Vec::new();
    for object in &scored {
        let score = if object.conflicts_at("score") {
            Score::Conflicting
        } else {
            match &object.map["score"] {
                Value::Number(n) => n.as_i64().map_or_else(
                    || Score::Invalid(format!("{n} is not a whole number")),
                    Score::Given,
                ),
                Value::String(s) => match score_value(s, high) {
                    Score::Nothing => Score::Invalid(format!("{s:?} is not a score")),
                    read => read,
                },
                other => Score::Invalid(format!("{other} is not a score")),
            }
        };
        let mut reading = score_reading(&parts, high, score, object.is_final);
        if let Some(key) = parts.justification {
            if object.conflicts_at("justification") {
                reading.fields.insert(key.into(), FieldStatus::Conflicting);
            } else if let Some(text) = object.map.get("justification").and_then(Value::as_str) {
                let text = text.trim();
                if !text.is_empty() {
                    reading.answers.insert(key.into(), Value::from(text));
                    reading.fields.insert(key.into(), FieldStatus::Parsed);
                }
            }
        }
        readings.push(reading);
    }
    for mention in &mentions {
        readings.push(score_reading(
            &parts,
            high,
            score_value(mention.value, high),
            mention.is_final,
        ));
    }
    let (mut answers, mut fields) = settle(rubric, readings);
    // The score is one answer, which its criteria only spell out: two scores conflict
    // as a whole, though they may agree on some criteria (3 and 4 both meet the first).
    let scored_paths = || parts.criteria.iter().chain(parts.zero_when);
    if scored_paths().any(|k| fields.get(k) == Some(&FieldStatus::Conflicting)) {
        for key in scored_paths() {
            fields.insert(key.clone(), FieldStatus::Conflicting);
            answers.remove(key);
        }
    }
    // An answer in text: the justification is what the score lines leave.
    if let Some(key) = parts.justification
        && scored.is_empty()
        && !fields.contains_key(key)
    {
        let text = justification(&rest);
        if !text.is_empty() {
            answers.insert(key.into(), Value::from(text));
            fields.insert(key.into(), FieldStatus::Parsed);
        }
    }
    (answers, fields)
}

/// The answers a score gives: the first N criteria yes, the rest no, and the questions
/// that zero the score no.
fn score_reading(parts: &ScoreParts<'_>, high: i64, score: Score, is_final: bool) -> Reading {
    let mut reading = Reading::new(is_final);
    let status = match score {
        Score::Given(n) if (0..=high).contains(&n) => {
            for (i, key) in parts.criteria.iter().enumerate() {
                reading
                    .answers
                    .insert(key.clone(), Value::Bool((i as i64) < n));
            }
            for key in parts.zero_when {
                reading.answers.insert(key.clone(), Value::Bool(false));
            }
            FieldStatus::Parsed
        }
        Score::Given(n) => FieldStatus::Invalid(format!("{n} is not from 0 to {high}")),
        Score::Nothing => FieldStatus::Missing,
        Score::Conflicting => FieldStatus::Conflicting,
        Score::Invalid(why) => FieldStatus::Invalid(why),
    };
    for key in parts.criteria.iter().chain(parts.zero_when) {
        reading.fields.insert(key.clone(), status.clone());
    }
    reading
}

/// The justification of an answer in text: its other lines, a leading
/// "Justification:" aside.
fn justification(rest: &str) -> String {
    let text = rest.trim();
    let text = ["justification:", "**justification:**", "justification"]
        .iter()
        .find_map(|p| {
            text.get(..p.len())
                .filter(|head| head.eq_ignore_ascii_case(p))
                .map(|_| &text[p.len()..])
        })
        .unwrap_or(text);
    text.trim().to_owned()
}

/// The number after `score:` on a scale from 0 to `high`: `4`, `4/5`, `4 out of 5`,
/// `4 points`. No number is [`Score::Nothing`]; two (`3 or 4`, `3-4`) conflict; a score
/// out of another scale (`4/10`) or below zero is invalid.
fn score_value(text: &str, high: i64) -> Score {
    let text = text.trim().trim_matches(['*', '_', '`', '"', ' ']);
    if let Some(negative) = text.strip_prefix('-')
        && negative.starts_with(|c: char| c.is_ascii_digit())
    {
        let digits: String = negative.chars().take_while(char::is_ascii_digit).collect();
        return Score::Invalid(format!("-{digits} is not from 0 to {high}"));
    }
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let Ok(n) = digits.parse::<i64>() else {
        return Score::Nothing;
    };
    let tail = text[digits.len()..]
        .trim()
        .trim_end_matches(['.', '*', '_', '"', ')', ' '])
        .to_lowercase();
    let scale = ["/", "(out of", "out of"]
        .iter()
        .find_map(|p| tail.strip_prefix(p))
        .map(str::trim_start);
    if let Some(scale) = scale {
        let of: String = scale.chars().take_while(char::is_ascii_digit).collect();
        let after = &scale[of.len()..];
        if let Ok(of) = of.parse::<i64>()
            && !after.chars().any(|c| c.is_ascii_digit())
        {
            return if of == high {
                Score::Given(n)
            } else {
                Score::Invalid(format!("{n}/{of} is not a score from 0 to {high}"))
            };
        }
    }
    if tail.chars().any(|c| c.is_ascii_digit()) {
        Score::Conflicting
    } else {
        Score::Given(n)
    }
}

/// The `choices` form: `{"rationale", "choices": {aspect: "A" | "B" | "tie"}}`.
fn read_choices(rubric: &Rubric, object: &found::Object) -> Reading {
    let mut reading = Reading::new(object.is_final);
    let Ok((aspects, rationale)) = choices_parts(rubric) else {
        return reading;
    };
    let choices = object.map.get("choices").and_then(Value::as_object);
    for aspect in aspects {
        let Some(question) = rubric.question(aspect) else {
            continue;
        };
        if object.conflicts_at(&format!("choices.{aspect}")) {
            reading
                .fields
                .insert(aspect.into(), FieldStatus::Conflicting);
            continue;
        }
        let Some(given) = choices.and_then(|c| c.get(aspect)).filter(|v| !v.is_null()) else {
            continue;
        };
        let named = given
            .as_str()
            .map(|s| s.trim().trim_matches(['[', ']', '"', ' ']).to_lowercase());
        let Some(crate::rubric::Role::Preference { a, b, tie, .. }) = &question.metrics else {
            continue;
        };
        let value = match named.as_deref() {
            Some("a" | "response a") => a.clone(),
            Some("b" | "response b") => b.clone(),
            Some("tie") => tie.clone(),
            _ => None,
        };
        match value {
            Some(value) => {
                reading.answers.insert(aspect.into(), Value::from(value));
                reading.fields.insert(aspect.into(), FieldStatus::Parsed);
            }
            None => {
                reading.fields.insert(
                    aspect.into(),
                    FieldStatus::Invalid(format!("{given} is not A, B or tie")),
                );
            }
        }
    }
    if let Some(key) = rationale {
        if object.conflicts_at("rationale") {
            reading.fields.insert(key.into(), FieldStatus::Conflicting);
        } else if let Some(text) = object.map.get("rationale").and_then(Value::as_str) {
            reading.answers.insert(key.into(), Value::from(text));
            reading.fields.insert(key.into(), FieldStatus::Parsed);
        }
    }
    reading
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rubric::by_name;

    fn additive(output: &str) -> Parsed {
        parse(
            by_name("additive-5").unwrap(),
            Format::ScoreLine,
            output,
            false,
            0,
        )
    }

    fn status(parsed: &Parsed, path: &str) -> String {
        parsed.fields[path].to_string()
    }

    #[test]
    fn a_score_line_sets_the_first_criteria() {
        let parsed = additive("score: 3\nIt answers the core of the question.");
        assert!(parsed.answered(), "{:?}", parsed.fields);
        assert_eq!(parsed.answers["relevant"], true);
        assert_eq!(parsed.answers["useful"], true);
        assert_eq!(parsed.answers["comprehensive"], false);
        assert_eq!(parsed.answers["repetitive"], false);
        assert_eq!(parsed.answers["score"], 3);
        assert_eq!(
            parsed.answers["justification"],
            "It answers the core of the question."
        );
    }

    #[test]
    fn score_lines_are_read_leniently() {
        for (output, score) in [
            ("**Score:** 4/5\nGood.", 4),
            ("Justification: fine.\nscore: <total points>\nscore: 2", 2),
            ("score: 5\nscore: 5 out of 5\nGreat.", 5),
            ("## Score: 0\nIt rambles.", 0),
        ] {
            let parsed = additive(output);
            assert!(parsed.answered(), "{output}: {:?}", parsed.fields);
            assert_eq!(parsed.answers["score"], score, "{output}");
        }
    }

    #[test]
    fn conflicting_or_missing_scores_are_unparsed_never_low() {
        for (output, why) in [
            ("score: 3\nscore: 4\nUnsure.", "conflicting"),
            ("score: 3 or 4\nUnsure.", "conflicting"),
            ("I like it a lot.", "missing"),
            ("score: 9\nOff the scale.", "invalid: 9 is not from 0 to 5"),
        ] {
            let parsed = additive(output);
            assert!(!parsed.answered(), "{output}");
            assert_eq!(status(&parsed, "relevant"), why, "{output}");
            assert!(parsed.answers.get("score").is_none(), "{output}");
            assert!(parsed.answers.get("relevant").is_none(), "{output}");
        }
    }

    #[test]
    fn a_truncated_output_is_not_read() {
        let parsed = parse(
            by_name("additive-5").unwrap(),
            Format::ScoreLine,
            "score: 4\nThe response is",
            true,
            0,
        );
        assert!(!parsed.answered());
        assert_eq!(status(&parsed, "relevant"), "truncated");
        assert!(parsed.answers.is_empty());
    }

    #[test]
    fn fenced_json_with_text_around_it_is_read() {
        let output = "Here is my verdict.\n```json\n{\"rationale\": \"A is clearer and right.\", \
                      \"choices\": {\"helpfulness\": \"A\", \"clarity\": \"a\", \"factuality\": \"tie\", \
                      \"depth\": \"B\", \"engagement\": \"[tie]\", \"safety\": \"tie\"}}\n```\nThanks!";
        let parsed = parse(
            by_name("pairwise-aspects").unwrap(),
            Format::Choices,
            output,
            false,
            10,
        );
        assert!(parsed.answered(), "{:?}", parsed.fields);
        assert_eq!(parsed.answers["helpfulness"], "a");
        assert_eq!(parsed.answers["depth"], "b");
        assert_eq!(parsed.answers["engagement"], "tie");
        assert_eq!(parsed.answers["rationale"], "A is clearer and right.");
    }

    #[test]
    fn a_key_given_twice_differently_conflicts() {
        let output = "{\"rationale\": \"mixed feelings here\", \"choices\": {\"helpfulness\": \"A\", \
                      \"helpfulness\": \"B\", \"clarity\": \"tie\", \"factuality\": \"tie\", \
                      \"depth\": \"tie\", \"engagement\": \"tie\", \"safety\": \"tie\"}}";
        let parsed = parse(
            by_name("pairwise-aspects").unwrap(),
            Format::Choices,
            output,
            false,
            0,
        );
        assert_eq!(status(&parsed, "helpfulness"), "conflicting");
        assert_eq!(status(&parsed, "clarity"), "parsed");
        assert!(parsed.answers.get("helpfulness").is_none());
        assert!(!parsed.answered());
    }

    #[test]
    fn blackhat_answers_are_checked_by_the_rubric() {
        let side = |correctness: &str| {
            serde_json::json!({
                "executability": "Yes, fully", "instruction_following": "no_issues",
                "correctness": correctness, "correctness_explanation": ""
            })
        };
        let output = serde_json::json!({
            "a": side("no_issues"), "b": side("major_issues"),
            "sxs": "2", "sxs_explanation": "A is right and B crashes on empty input."
        })
        .to_string();
        let parsed = parse(
            by_name("blackhat").unwrap(),
            Format::Answers,
            &output,
            false,
            20,
        );
        assert_eq!(status(&parsed, "a.executability"), "parsed");
        assert_eq!(parsed.answers["a"]["executability"], "yes_fully");
        assert_eq!(status(&parsed, "sxs"), "parsed");
        assert_eq!(parsed.answers["sxs"], 2);
        assert_eq!(
            status(&parsed, "b.correctness_explanation"),
            "invalid: required when correctness is major_issues"
        );
        assert!(!parsed.answered());
    }

    #[test]
    fn field_statuses_read_back_as_written() {
        for status in [
            FieldStatus::Parsed,
            FieldStatus::Missing,
            FieldStatus::Conflicting,
            FieldStatus::Truncated,
            FieldStatus::Inconsistent,
            FieldStatus::Invalid("is required".into()),
        ] {
            let text = serde_json::to_string(&status).unwrap();
            assert_eq!(serde_json::from_str::<FieldStatus>(&text).unwrap(), status);
        }
    }

    #[test]
    fn a_judges_issue_categories_are_read_when_asked_and_passed_over_when_not() {
        let blackhat = |output: &str| {
            parse(
                by_name("blackhat").unwrap(),
                Format::Answers,
                output,
                false,
                20,
            )
        };
        let why = "The loop stops one element before the end of the list.";
        let output = serde_json::json!({
            "a": {"executability": "yes_fully", "instruction_following": "no_issues",
                  "correctness": "major_issues", "correctness_explanation": why,
                  "issue_categories": "Performance, functionality"},
            "b": {"executability": "yes_fully", "instruction_following": "no_issues",
                  "correctness": "no_issues", "issue_categories": ["safety"]},
            "sxs": 6, "sxs_explanation": "B is right; A is slow and wrong at the edge."
        })
        .to_string();
        let parsed = blackhat(&output);
        assert!(parsed.answered(), "{:?}", parsed.fields);
        assert_eq!(
            parsed.answers["a"]["issue_categories"],
            serde_json::json!(["functionality", "performance"])
        );
        // B has no issues: its categories were not asked for.
        assert!(parsed.answers["b"].get("issue_categories").is_none());
        assert!(!parsed.fields.contains_key("b.issue_categories"));

        // Left out, the answer is still whole; an unknown kind is named.
        let mut without: serde_json::Value = serde_json::from_str(&output).unwrap();
        without["a"]
            .as_object_mut()
            .unwrap()
            .remove("issue_categories");
        let parsed = blackhat(&without.to_string());
        assert!(parsed.answered(), "{:?}", parsed.fields);
        without["a"]["issue_categories"] = serde_json::json!(["style"]);
        let parsed = blackhat(&without.to_string());
        assert!(
            status(&parsed, "a.issue_categories").starts_with("invalid: \"style\" is not one of"),
            "{:?}",
            parsed.fields
        );
    }

    /// The table of outputs in `tests/fixtures/judge-outputs/cases.json`, each read as
    /// the case expects: the status of every answer, and the answers named.
    #[test]
    fn the_output_table_is_read_as_it_says() {
        let table: Value = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/judge-outputs/cases.json"
        ))
        .unwrap();
        let cases = table["cases"].as_array().unwrap();
        assert!(cases.len() >= 40, "{} cases", cases.len());
        let mut wrong = Vec::new();
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let rubric = by_name(case["rubric"].as_str().unwrap()).unwrap();
            let format: Format = serde_json::from_value(case["format"].clone()).unwrap();
            let parsed = parse(
                rubric,
                format,
                case["output"].as_str().unwrap(),
                case["truncated"].as_bool().unwrap_or(false),
                case["min_explanation"].as_u64().unwrap_or(0) as usize,
            );
            let expected = case["status"].as_object().unwrap();
            let every = expected.get("*").and_then(Value::as_str);
            for (path, status) in expected.iter().filter(|(p, _)| *p != "*") {
                if parsed.fields.get(path).map(ToString::to_string).as_deref() != status.as_str() {
                    wrong.push(format!(
                        "{name}: {path} is {:?}, not {status}",
                        parsed.fields.get(path)
                    ));
                }
            }
            if let Some(every) = every {
                for (path, status) in &parsed.fields {
                    if !expected.contains_key(path) && status.to_string() != every {
                        wrong.push(format!("{name}: {path} is {status}, not {every}"));
                    }
                }
            }
            let answered = parsed.answered();
            if answered != (every == Some("parsed")) && expected.len() == 1 {
                wrong.push(format!("{name}: answered is {answered}"));
            }
            for (path, value) in case["answers"].as_object().into_iter().flatten() {
                let (first, rest) = path.split_once('.').unwrap_or((path, ""));
                let got = parsed
                    .answers
                    .get(first)
                    .and_then(|v| {
                        if rest.is_empty() {
                            Some(v)
                        } else {
                            v.get(rest)
                        }
                    })
                    .cloned();
                if got.as_ref() != Some(value) {
                    wrong.push(format!("{name}: answer {path} is {got:?}, not {value}"));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
