//! Checking a set of answers against a rubric, and turning it between the orientation a
//! rater was shown and the task's canonical one.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Field, Kind, Rubric};
use crate::error::FieldErrors;

/// Answers as a JSON object: `a` and `b` hold the per-response fields, the pair fields
/// sit at the top, with `classifications` and `time_spent_s` beside them.
pub type Answers = Map<String, Value>;

/// How strictly to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A draft: only types and known fields and values; anything may be missing.
    Draft,
    /// A submission: every rule of the rubric.
    Submit,
    /// Out of scope: as a draft, then correctness becomes `cannot_assess` for both sides.
    OutOfScope,
}

/// A batch's conversation-classification question, answered once per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The answer key, e.g. `language`.
    pub key: String,
    pub label: String,
    /// Several options may be chosen.
    #[serde(default)]
    pub multiple: bool,
    #[serde(default = "yes")]
    pub required: bool,
    pub options: Vec<String>,
}

fn yes() -> bool {
    true
}

/// The longest explanation, in characters: several pages of text, far more than any
/// rubric asks for, and a bound on what one rating can make the database hold.
pub const MAX_TEXT_CHARS: usize = 20_000;

/// The most time a rating may claim, a week: anything more is a broken clock.
pub const MAX_TIME_SPENT_S: i64 = 7 * 24 * 3600;

/// Checks `input` against `rubric` and the batch's `questions`, returning the answers
/// with explanations trimmed and nothing but known fields, or every broken rule by path.
pub fn validate(
    rubric: &Rubric,
    questions: &[Question],
    input: &Value,
    mode: Mode,
    min_explanation: usize,
) -> Result<Answers, FieldErrors> {
    let mut errors = FieldErrors::new();
    let mut out = Answers::new();
    let Some(input) = input.as_object() else {
        errors.insert("answers".into(), "must be a JSON object".into());
        return Err(errors);
    };
    let check = Checker {
        mode,
        min_explanation,
    };
    for (key, value) in input {
        let known = matches!(key.as_str(), "a" | "b" | "classifications" | "time_spent_s")
            || rubric
                .pair
                .iter()
                .any(|f| *key == f.key || *key == f.explanation_key());
        if !known {
            errors.insert(key.clone(), "is not a question of this rubric".into());
        } else if (key == "a" || key == "b") && !value.is_object() && !value.is_null() {
            errors.insert(key.clone(), "must be an object of answers".into());
        }
    }
    for side in ["a", "b"] {
        let given = input.get(side).and_then(Value::as_object);
        let empty = Map::new();
        let given = given.unwrap_or(&empty);
        for key in given.keys() {
            if !rubric
                .per_response
                .iter()
                .any(|f| *key == f.key || *key == f.explanation_key())
            {
                errors.insert(
                    format!("{side}.{key}"),
                    "is not a question of this rubric".into(),
                );
            }
        }
        let mut answers = Map::new();
        for field in &rubric.per_response {
            check.field(field, given, &format!("{side}."), &mut answers, &mut errors);
        }
        if mode == Mode::OutOfScope {
            answers.insert("correctness".into(), Value::from("cannot_assess"));
            answers.remove("correctness_explanation");
        }
        out.insert(side.into(), Value::Object(answers));
    }
    for field in &rubric.pair {
        check.field(field, input, "", &mut out, &mut errors);
    }
    if let Some(classes) =
        check.classifications(questions, input.get("classifications"), &mut errors)
    {
        out.insert("classifications".into(), Value::Object(classes));
    }
    match input.get("time_spent_s") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_i64() {
            Some(s) if (0..=MAX_TIME_SPENT_S).contains(&s) => {
                out.insert("time_spent_s".into(), Value::from(s));
            }
            _ => {
                errors.insert(
                    "time_spent_s".into(),
                    format!("must be a whole number of seconds from 0 to {MAX_TIME_SPENT_S}"),
                );
            }
        },
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

struct Checker {
    mode: Mode,
    min_explanation: usize,
}

impl Checker {
    /// Checks one question (and its explanation) found in `given`, writing the clean
    /// answer into `out` and any broken rule under `prefix` + key into `errors`.
    fn field(
        &self,
        field: &Field,
        given: &Map<String, Value>,
        prefix: &str,
        out: &mut Map<String, Value>,
        errors: &mut FieldErrors,
    ) {
        let path = format!("{prefix}{}", field.key);
        let value = given.get(field.key).filter(|v| !v.is_null() && *v != "");
        let stored: Option<String> = match (value, &field.kind) {
            (None, _) => {
                if self.mode == Mode::Submit {
                    errors.insert(path.clone(), "is required".into());
                }
                None
            }
            (Some(Value::String(s)), Kind::Choice { options }) => {
                if options.iter().any(|o| o.value == s) {
                    out.insert(field.key.into(), Value::from(s.as_str()));
                    Some(s.clone())
                } else {
                    let allowed: Vec<&str> = options.iter().map(|o| o.value).collect();
                    errors.insert(
                        path.clone(),
                        format!("unknown value {s:?}: use {}", allowed.join(", ")),
                    );
                    None
                }
            }
            (Some(v), Kind::Scale { min, max, .. }) => match v.as_i64() {
                Some(n) if (*min..=*max).contains(&n) => {
                    out.insert(field.key.into(), Value::from(n));
                    Some(n.to_string())
                }
                _ => {
                    errors.insert(
                        path.clone(),
                        format!("must be a whole number from {min} to {max}"),
                    );
                    None
                }
            },
            (Some(_), Kind::Choice { .. }) => {
                errors.insert(
                    path.clone(),
                    "must be one of the options, as a string".into(),
                );
                None
            }
        };
        let key = field.explanation_key();
        let explanation_path = format!("{prefix}{key}");
        let explanation = match given.get(&key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.trim().to_owned(),
            Some(_) => {
                errors.insert(explanation_path, "must be a string".into());
                return;
            }
        };
        let length = explanation.chars().count();
        if length > MAX_TEXT_CHARS {
            errors.insert(
                explanation_path,
                format!("must be at most {MAX_TEXT_CHARS} characters (has {length})"),
            );
            return;
        }
        if self.mode == Mode::Submit
            && let Some(value) = stored.as_deref()
            && field.needs_explanation(value)
        {
            if explanation.is_empty() {
                let why = match field.explain {
                    super::Explain::Always => "is always required".to_owned(),
                    super::Explain::OnValues(_) => {
                        format!("required when {} is {value}", field.key)
                    }
                };
                errors.insert(explanation_path.clone(), why);
            } else if explanation.chars().count() < self.min_explanation {
                errors.insert(
                    explanation_path.clone(),
                    format!(
                        "must be at least {} characters (has {})",
                        self.min_explanation,
                        explanation.chars().count()
                    ),
                );
            }
        }
        if !explanation.is_empty() {
            out.insert(key, Value::from(explanation));
        }
    }

    fn classifications(
        &self,
        questions: &[Question],
        given: Option<&Value>,
        errors: &mut FieldErrors,
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

/// Turns answers between the orientation a rater was shown and the canonical one: with
/// `swapped`, the sides trade places and every scale is mirrored. Applying it twice gives
/// back what went in.
pub fn orient(rubric: &Rubric, mut answers: Answers, swapped: bool) -> Answers {
    if !swapped {
        return answers;
    }
    let a = answers.remove("a");
    let b = answers.remove("b");
    if let Some(b) = b {
        answers.insert("a".into(), b);
    }
    if let Some(a) = a {
        answers.insert("b".into(), a);
    }
    for field in &rubric.pair {
        if let Kind::Scale { min, max, .. } = field.kind
            && let Some(n) = answers.get(field.key).and_then(Value::as_i64)
        {
            answers.insert(field.key.into(), Value::from(min + max - n));
        }
    }
    answers
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
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

    fn submit(input: Value) -> Result<Answers, FieldErrors> {
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
        let input = json!({"a": {"correctness": "major_issues"}, "sxs": 5});
        let out = validate(blackhat(), &[], &input, Mode::OutOfScope, 20).unwrap();
        assert_eq!(out["a"]["correctness"], "cannot_assess");
        assert_eq!(out["b"]["correctness"], "cannot_assess");
        assert_eq!(out["sxs"], 5, "other fields stay as they are");
    }

    #[test]
    fn classifications_follow_the_batch_questions() {
        let questions = vec![
            Question {
                key: "language".into(),
                label: "Language".into(),
                multiple: false,
                required: true,
                options: vec!["python".into(), "rust".into()],
            },
            Question {
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
}
