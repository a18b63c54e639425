//! Reading a judge's output back as answers to a rubric.
//!
//! Tolerant of form: JSON inside a Markdown fence or with text around it, a score line
//! written `**Score:** 4/5`, the same score repeated. Strict about meaning: an answer
//! the output gives two different ways (a key twice with different values, two score
//! lines that disagree, "3 or 4"), an answer that is not one of the rubric's, or an
//! output cut off at the token limit is not an answer. Such a field is reported by its
//! path with why, never turned into a low score.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::template::{Format, choices_parts, score_line_parts};
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
    let (answers, mut fields) = match format {
        Format::Answers => read_answers(rubric, output),
        Format::ScoreLine => read_score_line(rubric, output),
        Format::Choices => read_choices(rubric, output),
    };
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

/// A JSON value with every key that appears twice with different values noted, by path:
/// `serde_json::Value` keeps the last silently.
struct Noted {
    value: Value,
    conflicts: Vec<String>,
}

impl<'de> Deserialize<'de> for Noted {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NotedVisitor)
    }
}

struct NotedVisitor;

impl<'de> Visitor<'de> for NotedVisitor {
    type Value = Noted;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Noted, E> {
        Ok(Noted::plain(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<Noted, E> {
        Ok(Noted::plain(Value::from(v)))
    }
    fn visit_unit<E>(self) -> Result<Noted, E> {
        Ok(Noted::plain(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Noted, E> {
        Ok(Noted::plain(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Noted, A::Error> {
        let mut values = Vec::new();
        while let Some(item) = seq.next_element::<Noted>()? {
            values.push(item.value);
        }
        Ok(Noted::plain(Value::Array(values)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Noted, A::Error> {
        let mut object = Map::new();
        let mut conflicts = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let child: Noted = map.next_value()?;
            conflicts.extend(child.conflicts.iter().map(|c| format!("{key}.{c}")));
            if object.get(&key).is_some_and(|seen| *seen != child.value) {
                conflicts.push(key.clone());
            }
            object.insert(key, child.value);
        }
        Ok(Noted {
            value: Value::Object(object),
            conflicts,
        })
    }
}

impl Noted {
    fn plain(value: Value) -> Self {
        Self {
            value,
            conflicts: Vec::new(),
        }
    }
}

/// The JSON object in an output: the first fenced block that holds one, else the first
/// object in the text (what follows it is ignored). With its conflicting keys.
fn json_object(output: &str) -> Option<(Map<String, Value>, Vec<String>)> {
    let fenced = output.split("```").skip(1).step_by(2).find_map(|block| {
        let body = block.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        first_object(body)
    });
    fenced.or_else(|| {
        output
            .match_indices('{')
            .find_map(|(at, _)| first_object(&output[at..]))
    })
}

fn first_object(text: &str) -> Option<(Map<String, Value>, Vec<String>)> {
    let text = text.trim_start();
    if !text.starts_with('{') {
        return None;
    }
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Noted>();
    match stream.next()? {
        Ok(Noted {
            value: Value::Object(object),
            conflicts,
        }) => Some((object, conflicts)),
        _ => None,
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

/// The `answers` form: the rubric's own shape.
fn read_answers(rubric: &Rubric, output: &str) -> (Answers, Fields) {
    let mut fields = Fields::new();
    let mut answers = Answers::new();
    let Some((object, conflicts)) = json_object(output) else {
        return (answers, fields);
    };
    let pair = rubric.subject == Subject::Pair;
    let mut take =
        |holder: &Map<String, Value>, prefix: &str, each: bool, out: &mut Map<String, Value>| {
            for question in rubric.questions.iter().filter(|q| q.each_response == each) {
                let path = format!("{prefix}{}", question.key);
                if conflicts.contains(&path) {
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
                    if let Some(text) = holder.get(&key).and_then(Value::as_str) {
                        out.insert(key, Value::from(text));
                    }
                }
            }
        };
    if pair {
        for side in ["a", "b"] {
            if let Some(holder) = object.get(side).and_then(Value::as_object) {
                let mut out = Map::new();
                take(holder, &format!("{side}."), true, &mut out);
                answers.insert(side.into(), Value::Object(out));
            }
        }
    }
    take(&object, "", false, &mut answers);
    (answers, fields)
}

/// The `score_line` form: `score: N` and a justification (or, under structured output,
/// `{"score": N, "justification": ...}`). N criteria met, cumulatively: the first N are
/// yes, the rest no.
fn read_score_line(rubric: &Rubric, output: &str) -> (Answers, Fields) {
    let mut fields = Fields::new();
    let mut answers = Answers::new();
    let Ok(parts) = score_line_parts(rubric) else {
        return (answers, fields);
    };
    let (score, justification) = match json_object(output).filter(|(o, _)| o.contains_key("score"))
    {
        Some((object, conflicts)) => {
            let score = if conflicts.iter().any(|c| c == "score") {
                Err(FieldStatus::Conflicting)
            } else {
                match &object["score"] {
                    Value::Number(n) => n
                        .as_i64()
                        .ok_or(FieldStatus::Invalid(format!("{n} is not a whole number"))),
                    Value::String(s) => score_value(s)
                        .map_err(|_| FieldStatus::Conflicting)
                        .and_then(|v| {
                            v.ok_or(FieldStatus::Invalid(format!("{s:?} is not a score")))
                        }),
                    other => Err(FieldStatus::Invalid(format!("{other} is not a score"))),
                }
            };
            let justification = object
                .get("justification")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_owned();
            (score, justification)
        }
        None => score_lines(output),
    };
    let high = parts.criteria.len() as i64;
    let status = match score {
        Ok(n) if (0..=high).contains(&n) => {
            for (i, key) in parts.criteria.iter().enumerate() {
                answers.insert(key.clone(), Value::Bool((i as i64) < n));
            }
            for key in parts.zero_when {
                answers.insert(key.clone(), Value::Bool(false));
            }
            FieldStatus::Parsed
        }
        Ok(n) => FieldStatus::Invalid(format!("{n} is not from 0 to {high}")),
        Err(status) => status,
    };
    for key in parts.criteria.iter().chain(parts.zero_when) {
        fields.insert(key.clone(), status.clone());
    }
    if let Some(key) = parts.justification
        && !justification.is_empty()
    {
        answers.insert(key.into(), Value::from(justification));
        fields.insert(key.into(), FieldStatus::Parsed);
    }
    (answers, fields)
}

/// The score of `score: N` lines and the rest of the text as the justification. Lines
/// that give no number (an echo of the instructions) are passed over; two numbers, on
/// one line or several, conflict.
fn score_lines(output: &str) -> (Result<i64, FieldStatus>, String) {
    let mut scores = Vec::new();
    let mut conflicting = false;
    let mut rest = Vec::new();
    for line in output.lines() {
        let bare = line
            .trim()
            .trim_start_matches(['*', '#', '_', '-', '`', ' ']);
        let lower = bare.to_lowercase();
        let Some(after) = lower
            .strip_prefix("score")
            .or_else(|| lower.strip_prefix("total score"))
            .map(|a| a.trim_start_matches(['*', '_', ' ']))
            .and_then(|a| a.strip_prefix(':'))
        else {
            rest.push(line);
            continue;
        };
        match score_value(after) {
            Ok(Some(n)) => scores.push(n),
            Ok(None) => {}
            Err(()) => conflicting = true,
        }
    }
    scores.dedup();
    let mut distinct = scores.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let score = match (conflicting, distinct.as_slice()) {
        (true, _) => Err(FieldStatus::Conflicting),
        (false, []) => Err(FieldStatus::Missing),
        (false, [n]) => Ok(*n),
        (false, _) => Err(FieldStatus::Conflicting),
    };
    let text = rest.join("\n");
    let text = text.trim();
    let text = ["justification:", "**justification:**", "justification"]
        .iter()
        .find_map(|p| {
            text.get(..p.len())
                .filter(|head| head.eq_ignore_ascii_case(p))
                .map(|_| &text[p.len()..])
        })
        .unwrap_or(text);
    (score, text.trim().to_owned())
}

/// The number after `score:`: `Ok(Some(n))` for `4`, `4/5`, `4 out of 5`, `4 points`;
/// `Ok(None)` when no number starts it (`<total points>`); `Err` for two numbers
/// (`3 or 4`, `3-4`).
fn score_value(text: &str) -> Result<Option<i64>, ()> {
    let text = text.trim().trim_matches(['*', '_', '`', '"', ' ']);
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let Ok(n) = digits.parse::<i64>() else {
        return Ok(None);
    };
    let tail = text[digits.len()..]
        .trim()
        .trim_end_matches(['.', '*', '_', '"', ')', ' '])
        .to_lowercase();
    let allowed = [
        "",
        "/5",
        "/ 5",
        "out of 5",
        "points",
        "point",
        "pts",
        "(out of 5",
    ];
    if allowed.contains(&tail.as_str()) || tail.starts_with("points") {
        Ok(Some(n))
    } else if tail.chars().any(|c| c.is_ascii_digit()) {
        Err(())
    } else {
        Ok(Some(n))
    }
}

/// The `choices` form: `{"rationale", "choices": {aspect: "A" | "B" | "tie"}}`.
fn read_choices(rubric: &Rubric, output: &str) -> (Answers, Fields) {
    let mut fields = Fields::new();
    let mut answers = Answers::new();
    let Ok((aspects, rationale)) = choices_parts(rubric) else {
        return (answers, fields);
    };
    let Some((object, conflicts)) = json_object(output) else {
        return (answers, fields);
    };
    let choices = object.get("choices").and_then(Value::as_object);
    for aspect in aspects {
        let Some(question) = rubric.question(aspect) else {
            continue;
        };
        if conflicts.iter().any(|c| c == &format!("choices.{aspect}")) {
            fields.insert(aspect.into(), FieldStatus::Conflicting);
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
                answers.insert(aspect.into(), Value::from(value));
                fields.insert(aspect.into(), FieldStatus::Parsed);
            }
            None => {
                fields.insert(
                    aspect.into(),
                    FieldStatus::Invalid(format!("{given} is not A, B or tie")),
                );
            }
        }
    }
    if let Some(key) = rationale {
        if conflicts.iter().any(|c| c == "rationale") {
            fields.insert(key.into(), FieldStatus::Conflicting);
        } else if let Some(text) = object.get("rationale").and_then(Value::as_str) {
            answers.insert(key.into(), Value::from(text));
            fields.insert(key.into(), FieldStatus::Parsed);
        }
    }
    (answers, fields)
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
}
