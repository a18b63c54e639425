//! The rule engine: checking a set of answers against a rubric document, working out its
//! derived answers, applying out of scope, and turning it between the orientation a rater
//! was shown and the task's canonical one. Plain functions over the document.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Answer, Explanation, Question, Required, Rubric, Subject, Warning};

/// Answers as a JSON object. A pair rubric keeps the answers asked of each response
/// under `a` and `b`; the answers asked once, the derived ones, `classifications` and
/// `time_spent_s` sit at the top.
pub type Answers = Map<String, Value>;

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

/// The most time a rating may claim, a week: anything more is a broken clock.
pub const MAX_TIME_SPENT_S: i64 = 7 * 24 * 3600;

/// Takes the active time out of answers, where a form or a request carries it (it is
/// stored in a column of its own): `None` when absent or not a number of seconds.
pub fn take_time_spent(answers: &mut Answers) -> Option<i32> {
    answers
        .remove("time_spent_s")
        .and_then(|t| t.as_i64())
        .and_then(|t| i32::try_from(t).ok())
}

/// Active time as a rating, a skip or an out-of-scope mark carries it: whole seconds
/// from 0 to [`MAX_TIME_SPENT_S`].
pub fn time_spent(value: &Value) -> Result<i32, String> {
    value
        .as_i64()
        .filter(|s| (0..=MAX_TIME_SPENT_S).contains(s))
        .and_then(|s| i32::try_from(s).ok())
        .ok_or_else(|| format!("must be a whole number of seconds from 0 to {MAX_TIME_SPENT_S}"))
}

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
            || matches!(key.as_str(), "classifications" | "time_spent_s")
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
            out.insert(side.into(), Value::Object(answers));
        }
    }
    for question in once() {
        check.question(question, input, "", &mut out, &mut errors);
    }
    if mode == Mode::OutOfScope {
        out_of_scope(rubric, &mut out);
    }
    derive(rubric, input, &mut out, &mut errors);
    if let Some(classes) =
        check.classifications(classifications, input.get("classifications"), &mut errors)
    {
        out.insert("classifications".into(), Value::Object(classes));
    }
    match input.get("time_spent_s") {
        None | Some(Value::Null) => {}
        Some(v) => match time_spent(v) {
            Ok(s) => {
                out.insert("time_spent_s".into(), Value::from(s));
            }
            Err(why) => {
                errors.insert("time_spent_s".into(), why);
            }
        },
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
        let set = |holder: &mut Map<String, Value>| {
            holder.insert(question.key.clone(), value.clone());
            holder.remove(&question.explanation_key());
        };
        if question.each_response {
            for side in ["a", "b"] {
                if let Some(Value::Object(holder)) = answers.get_mut(side) {
                    set(holder);
                }
            }
        } else {
            set(answers);
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

/// The number of words in a text, as a reader counts them: runs of non-space characters.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
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
        let value = given
            .get(&question.key)
            .filter(|v| !v.is_null() && *v != "");
        let stored = match value {
            None => {
                if self.mode == Mode::Submit && question.required {
                    errors.insert(path.clone(), "is required".into());
                }
                None
            }
            Some(v) if super::document::accepts(&question.answer, v) => {
                out.insert(question.key.clone(), v.clone());
                Some(v.clone())
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

/// An answer's value as a rule's message names it: strings without quotes.
fn plain(value: &Value) -> String {
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
    let at = |path: &str| match path.split_once('.') {
        Some((side, key)) => answers.get(side).and_then(|s| s.get(key)),
        None => answers.get(path),
    };
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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rubric::ShownAnswers;

    fn orient(rubric: &Rubric, answers: Answers, swapped: bool) -> Answers {
        ShownAnswers::new(answers)
            .into_task(rubric, swapped)
            .into_map()
    }
    use crate::rubric::by_name;

    fn blackhat() -> &'static Rubric {
        by_name("blackhat").unwrap()
    }

    const WHY: &str = "the loop stops one element early";

    fn complete() -> Value {
        json!({
            "a": {"executability": "yes_fully", "instruction_following": "no_issues",
                  "correctness": "minor_issues", "correctness_explanation": WHY},
            "b": {"executability": "no_code", "instruction_following": "not_applicable",
                  "correctness": "not_applicable"},
            "sxs": 2, "sxs_explanation": "A runs and is nearly right; B has no code.",
            "time_spent_s": 640
        })
    }

    fn submit(input: Value) -> Result<Answers, Problems> {
        validate(blackhat(), &[], &input, Mode::Submit, 20)
    }

    #[test]
    fn a_complete_answer_set_passes_and_comes_back_clean() {
        let out = submit(complete()).unwrap();
        assert_eq!(out["a"]["correctness_explanation"], WHY);
        assert_eq!(out["sxs"], 2);
        assert_eq!(out["time_spent_s"], 640);
    }

    #[test]
    fn every_option_field_is_required_on_submit() {
        let errors = submit(json!({})).unwrap_err();
        for path in [
            "a.executability",
            "a.instruction_following",
            "a.correctness",
            "b.executability",
            "b.instruction_following",
            "b.correctness",
            "sxs",
        ] {
            assert_eq!(errors[path], "is required", "{path}");
        }
        assert_eq!(errors.len(), 7, "{errors:?}");
    }

    #[test]
    fn unknown_values_name_the_field_and_the_allowed_ones() {
        let mut input = complete();
        input["b"]["executability"] = json!("maybe");
        input["sxs"] = json!(8);
        input["a"]["correctness"] = json!(3);
        let errors = submit(input).unwrap_err();
        assert_eq!(
            errors["b.executability"],
            "unknown value \"maybe\": use yes_fully, yes_partially, no, no_code"
        );
        assert_eq!(errors["sxs"], "must be a whole number from 1 to 7");
        assert_eq!(
            errors["a.correctness"],
            "must be one of the options, as a string"
        );
    }

    #[test]
    fn explanations_are_required_exactly_when_the_rubric_says() {
        let cases = [
            ("executability", "yes_partially", true),
            ("executability", "no", true),
            ("executability", "yes_fully", false),
            ("executability", "no_code", false),
            ("instruction_following", "minor_issues", true),
            ("instruction_following", "major_issues", true),
            ("instruction_following", "no_issues", false),
            ("instruction_following", "not_applicable", false),
            ("correctness", "minor_issues", true),
            ("correctness", "major_issues", true),
            ("correctness", "no_issues", false),
            ("correctness", "cannot_assess", false),
            ("correctness", "not_applicable", false),
        ];
        for (field, value, required) in cases {
            for side in ["a", "b"] {
                let mut input = complete();
                input[side] = json!({"executability": "yes_fully", "instruction_following": "no_issues", "correctness": "no_issues"});
                input[side][field] = json!(value);
                let errors = submit(input).err().unwrap_or_default();
                let path = format!("{side}.{field}_explanation");
                match required {
                    true => assert_eq!(
                        errors.get(&path).map(String::as_str),
                        Some(format!("required when {field} is {value}").as_str()),
                        "{path}={value}"
                    ),
                    false => assert!(errors.is_empty(), "{path}={value}: {errors:?}"),
                }
            }
        }
    }

    #[test]
    fn the_sxs_explanation_is_always_required() {
        for score in 1..=7 {
            let mut input = complete();
            input["sxs"] = json!(score);
            input["sxs_explanation"] = json!("   ");
            assert_eq!(
                submit(input).unwrap_err()["sxs_explanation"],
                "is always required"
            );
        }
    }

    #[test]
    fn explanations_have_a_minimum_length_after_trimming() {
        let mut input = complete();
        input["a"]["correctness_explanation"] = json!("   too short    ");
        let errors = submit(input.clone()).unwrap_err();
        assert_eq!(
            errors["a.correctness_explanation"],
            "must be at least 20 characters (has 9)"
        );
        let relaxed = validate(blackhat(), &[], &input, Mode::Submit, 5).unwrap();
        assert_eq!(relaxed["a"]["correctness_explanation"], "too short");
    }

    #[test]
    fn unknown_fields_are_refused_not_dropped() {
        let mut input = complete();
        input["status"] = json!("accepted");
        input["a"]["rater"] = json!("someone");
        let errors = submit(input).unwrap_err();
        assert_eq!(errors["status"], "is not a question of this rubric");
        assert_eq!(errors["a.rater"], "is not a question of this rubric");
    }

    #[test]
    fn drafts_check_types_but_not_completeness() {
        let draft = validate(
            blackhat(),
            &[],
            &json!({"a": {"executability": "no"}}),
            Mode::Draft,
            20,
        )
        .unwrap();
        assert_eq!(draft["a"]["executability"], "no");
        let bad = validate(blackhat(), &[], &json!({"sxs": "seven"}), Mode::Draft, 20).unwrap_err();
        assert_eq!(bad["sxs"], "must be a whole number from 1 to 7");
        assert!(validate(blackhat(), &[], &json!([1]), Mode::Draft, 20).is_err());
    }

    #[test]
    fn out_of_scope_sets_correctness_to_cannot_assess_on_both_sides() {
        let input =
            json!({"a": {"correctness": "major_issues", "correctness_explanation": "x"}, "sxs": 5});
        let out = validate(blackhat(), &[], &input, Mode::OutOfScope, 20).unwrap();
        assert_eq!(out["a"]["correctness"], "cannot_assess");
        assert_eq!(out["b"]["correctness"], "cannot_assess");
        assert!(out["a"].get("correctness_explanation").is_none());
        assert_eq!(out["sxs"], 5, "other fields stay as they are");
    }

    #[test]
    fn classifications_follow_the_batch_questions() {
        let questions = vec![
            Classification {
                key: "language".into(),
                label: "Language".into(),
                multiple: false,
                required: true,
                options: vec!["python".into(), "rust".into()],
            },
            Classification {
                key: "kind".into(),
                label: "Kind".into(),
                multiple: true,
                required: false,
                options: vec!["bug".into(), "feature".into()],
            },
        ];
        let mut input = complete();
        let missing = validate(blackhat(), &questions, &input, Mode::Submit, 20).unwrap_err();
        assert_eq!(missing["classifications.language"], "is required");
        input["classifications"] = json!({"language": "cobol", "kind": "bug", "mood": "x"});
        let bad = validate(blackhat(), &questions, &input, Mode::Submit, 20).unwrap_err();
        assert_eq!(
            bad["classifications.language"],
            "unknown option \"cobol\": use python, rust"
        );
        assert_eq!(bad["classifications.kind"], "must be a list of options");
        assert_eq!(
            bad["classifications.mood"],
            "is not a question of this batch"
        );
        input["classifications"] = json!({"language": "rust", "kind": ["bug", "bug", "feature"]});
        let ok = validate(blackhat(), &questions, &input, Mode::Submit, 20).unwrap();
        assert_eq!(
            ok["classifications"],
            json!({"language": "rust", "kind": ["bug", "feature"]})
        );
    }

    #[test]
    fn time_spent_must_be_plausible() {
        let mut input = complete();
        input["time_spent_s"] = json!(-5);
        assert!(
            submit(input.clone())
                .unwrap_err()
                .contains_key("time_spent_s")
        );
        input["time_spent_s"] = json!(MAX_TIME_SPENT_S + 1);
        assert!(submit(input).unwrap_err().contains_key("time_spent_s"));
    }

    #[test]
    fn orientation_swaps_sides_and_mirrors_the_score() {
        let shown = submit(complete()).unwrap();
        let canonical = orient(blackhat(), shown.clone(), true);
        assert_eq!(canonical["sxs"], 6, "8 - 2");
        assert_eq!(canonical["a"], shown["b"]);
        assert_eq!(canonical["b"], shown["a"]);
        assert_eq!(canonical["sxs_explanation"], shown["sxs_explanation"]);
        assert_eq!(orient(blackhat(), canonical, true), shown, "an involution");
        assert_eq!(orient(blackhat(), shown.clone(), false), shown);
        for s in 1..=7 {
            let mut one = Answers::new();
            one.insert("sxs".into(), json!(s));
            assert_eq!(orient(blackhat(), one, true)["sxs"], 8 - s);
        }
    }

    fn additive() -> &'static Rubric {
        by_name("additive-5").unwrap()
    }

    fn criteria(met: [bool; 5], repetitive: bool) -> Value {
        json!({
            "relevant": met[0], "substantial": met[1], "useful": met[2],
            "comprehensive": met[3], "expert": met[4], "repetitive": repetitive,
            "justification": "Relevant and useful, but it misses the edge cases."
        })
    }

    #[test]
    fn the_additive_score_is_the_number_of_criteria_met_or_zero_when_repetitive() {
        for bits in 0u8..32 {
            let met = std::array::from_fn(|i| bits & (1 << i) != 0);
            let expected = i64::from(bits.count_ones() as u8);
            let out = validate(additive(), &[], &criteria(met, false), Mode::Submit, 20).unwrap();
            assert_eq!(out["score"], expected, "{met:?}");
            let zero = validate(additive(), &[], &criteria(met, true), Mode::Submit, 20).unwrap();
            assert_eq!(zero["score"], 0, "repetitive: {met:?}");
        }
    }

    #[test]
    fn a_sent_score_must_agree_with_the_criteria() {
        let mut input = criteria([true, true, false, false, false], false);
        input["score"] = json!(2);
        assert_eq!(
            validate(additive(), &[], &input, Mode::Submit, 20).unwrap()["score"],
            2
        );
        input["score"] = json!(4);
        let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
        assert_eq!(
            errors["score"],
            "is worked out from the answers and is 2, not 4; leave it out or send 2"
        );
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn the_justification_is_required_and_at_most_100_words() {
        let mut input = criteria([true; 5], false);
        input["justification"] = json!(vec!["word"; 100].join(" "));
        assert!(validate(additive(), &[], &input, Mode::Submit, 20).is_ok());
        input["justification"] = json!(vec!["word"; 101].join(" \n "));
        let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
        assert_eq!(
            errors["justification"],
            "must be at most 100 words (has 101)"
        );
        let draft = validate(additive(), &[], &input, Mode::Draft, 20).unwrap_err();
        assert!(
            draft.contains_key("justification"),
            "limits hold for drafts too"
        );
        input["justification"] = json!("  ");
        let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
        assert_eq!(errors["justification"], "is required");
    }

    #[test]
    fn additive_answers_are_yes_or_no_and_single_sided() {
        let mut input = criteria([true; 5], false);
        input["relevant"] = json!("yes");
        input["a"] = json!({});
        let errors = validate(additive(), &[], &input, Mode::Submit, 20).unwrap_err();
        assert_eq!(errors["relevant"], "must be true or false");
        assert_eq!(errors["a"], "is not a question of this rubric");
        let out = validate(
            additive(),
            &[],
            &criteria([true; 5], false),
            Mode::Submit,
            20,
        )
        .unwrap();
        assert_eq!(
            orient(additive(), out.clone(), true),
            out,
            "one response: no swap"
        );
        let missing = validate(additive(), &[], &json!({}), Mode::Submit, 20).unwrap_err();
        assert_eq!(
            missing.len(),
            7,
            "six criteria and the justification: {missing:?}"
        );
    }

    fn aspects() -> &'static Rubric {
        by_name("pairwise-aspects").unwrap()
    }

    #[test]
    fn swapped_aspects_are_stored_for_the_canonical_side() {
        let shown = json!({
            "helpfulness": "a", "clarity": "b", "factuality": "tie", "depth": "a",
            "engagement": "tie", "safety": "b", "rationale": "A solves it; B is clearer."
        });
        let checked = validate(aspects(), &[], &shown, Mode::Submit, 20).unwrap();
        let canonical = orient(aspects(), checked.clone(), true);
        let expect = [
            ("helpfulness", "b"),
            ("clarity", "a"),
            ("factuality", "tie"),
            ("depth", "b"),
            ("engagement", "tie"),
            ("safety", "a"),
        ];
        for (aspect, side) in expect {
            assert_eq!(canonical[aspect], side, "{aspect}");
        }
        assert_eq!(canonical["rationale"], checked["rationale"]);
        assert_eq!(orient(aspects(), canonical, true), checked);
        let bad = validate(aspects(), &[], &json!({"depth": "A"}), Mode::Draft, 20).unwrap_err();
        assert_eq!(bad["depth"], "unknown value \"A\": use a, tie, b");
    }

    /// The ids of the warnings `answers` meet.
    fn met(rubric: &Rubric, answers: &Answers) -> Vec<String> {
        warnings(rubric, answers)
            .iter()
            .map(|w| w.id.clone())
            .collect()
    }

    #[test]
    fn warnings_name_unlikely_combinations_without_refusing_them() {
        let mut input = complete();
        input["a"]["correctness"] = json!("major_issues");
        input["a"]["correctness_explanation"] = json!(WHY);
        input["b"]["correctness"] = json!("no_issues");
        let shown = submit(input.clone()).expect("a warning refuses nothing");
        assert_eq!(met(blackhat(), &shown), ["prefers-a-despite-major-issues"]);
        assert!(
            warnings(blackhat(), &shown)[0]
                .message
                .starts_with("You prefer A, yet A has major")
        );
        input["sxs"] = json!(4);
        assert!(
            met(blackhat(), &submit(input).unwrap()).is_empty(),
            "a tie is fine"
        );
        let mut odd = criteria([false, true, true, true, true], false);
        odd["substantial"] = json!(false);
        let out = validate(additive(), &[], &odd, Mode::Submit, 20).unwrap();
        assert_eq!(
            met(additive(), &out),
            ["expert-not-relevant", "comprehensive-not-substantial"]
        );
        let plain = validate(
            additive(),
            &[],
            &criteria([true, true, false, false, false], false),
            Mode::Submit,
            20,
        )
        .unwrap();
        assert!(warnings(additive(), &plain).is_empty());
    }

    #[test]
    fn text_conditions_read_whole_words_of_explanations() {
        let mut input = complete();
        for side in ["a", "b"] {
            input[side]["executability"] = json!("no_code");
            input[side]["correctness"] = json!("not_applicable");
        }
        input["sxs_explanation"] = json!("Neither has code; A explains the idea better.");
        let answers = submit(input.clone()).unwrap();
        assert!(
            met(blackhat(), &answers).is_empty(),
            "{:?}",
            met(blackhat(), &answers)
        );
        // "ran" as a word, whatever its case; not inside another word ("grant").
        input["sxs_explanation"] = json!("I RAN both snippets; A grants more.");
        assert_eq!(
            met(blackhat(), &submit(input.clone()).unwrap()),
            ["no-code-yet-ran"]
        );
        input["sxs_explanation"] = json!("A grants more detail than B does here.");
        assert!(met(blackhat(), &submit(input.clone()).unwrap()).is_empty());
        input["a"]["executability_explanation"] = json!("The output was printed twice.");
        assert_eq!(
            met(blackhat(), &submit(input.clone()).unwrap()),
            ["a-no-code-yet-ran"]
        );
        // N/A correctness beside code that ran, or did not.
        input["b"]["executability"] = json!("no");
        input["b"]["executability_explanation"] = json!("It needs a database I do not have.");
        assert_eq!(
            met(blackhat(), &submit(input).unwrap()),
            ["a-no-code-yet-ran", "b-not-applicable-with-code"]
        );
    }

    #[test]
    fn a_derived_total_and_a_phrase_in_the_justification_meet_a_warning() {
        let mut five = criteria([true, true, true, true, true], false);
        five["justification"] = json!("Clear and complete, though the example is wordy.");
        let out = validate(additive(), &[], &five, Mode::Submit, 20).unwrap();
        assert_eq!(met(additive(), &out), ["full-score-yet-faults"]);
        five["justification"] = json!("Clear, complete and exactly what was asked.");
        let out = validate(additive(), &[], &five, Mode::Submit, 20).unwrap();
        assert!(met(additive(), &out).is_empty());
        let mut repeats = criteria([true, true, false, false, false], false);
        repeats["justification"] = json!("Useful, but it is not concise at all.");
        let out = validate(additive(), &[], &repeats, Mode::Submit, 20).unwrap();
        assert_eq!(met(additive(), &out), ["repeats-not-marked"]);
    }
}
