//! Gold tasks: tasks whose right answers a lead knows, mixed in among a batch's tasks to
//! see how accurately each rater works. A gold task carries its expected answers, each
//! with how much room it leaves: the exact answer, any of a set, or (for a number) within
//! some points of a value. A rating of a gold task is graded against them.
//!
//! Expected answers are keyed by answer path in the task's canonical orientation
//! (`a.correctness`, `sxs`, `score`), as ratings are stored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fields::FieldErrors;
use crate::rubric::{Answer, Answers, Rubric, Slot, answer_at};

/// How many of a rater's latest graded gold ratings decide whether their new ratings go
/// to review first.
pub const RECENT: usize = 10;

/// The fewest graded gold ratings on which a rater is held for review first: one miss
/// alone says little.
pub const FEWEST_TO_HOLD: usize = 3;

/// How close an answer must be to count as right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Tolerance {
    /// A number within `within` points of `value` (a scale or a derived score).
    Within { value: i64, within: i64 },
    /// Any of these answers.
    AnyOf { any_of: Vec<Value> },
    /// Exactly this answer.
    Exact(Value),
}

impl Tolerance {
    /// Whether `given` (absent: not answered) is right.
    pub fn accepts(&self, given: Option<&Value>) -> bool {
        let Some(given) = given.filter(|v| !v.is_null()) else {
            return false;
        };
        match self {
            Tolerance::Within { value, within } => {
                given.as_i64().is_some_and(|g| (g - value).abs() <= *within)
            }
            Tolerance::AnyOf { any_of } => any_of.contains(given),
            Tolerance::Exact(expected) => expected == given,
        }
    }
}

/// A gold task's expected answers, by path.
pub type Expected = BTreeMap<String, Tolerance>;

/// How a rating of a gold task did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Grade {
    /// Expected answers given right, of those expected.
    pub right: usize,
    pub expected: usize,
    /// The paths answered wrong (or not at all).
    pub wrong: Vec<String>,
}

impl Grade {
    /// Every expected answer right.
    pub fn passed(&self) -> bool {
        self.wrong.is_empty()
    }
}

/// Grades canonical `answers` against `expected`.
pub fn grade(expected: &Expected, answers: &Answers) -> Grade {
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(path, tolerance)| !tolerance.accepts(answer_at(answers, path)))
        .map(|(path, _)| path.clone())
        .collect();
    Grade {
        right: expected.len() - wrong.len(),
        expected: expected.len(),
        wrong,
    }
}

/// Whether `passed` of a rater's latest `graded` gold ratings is a share below
/// `threshold`, once there are enough of them to say.
pub fn below(passed: usize, graded: usize, threshold: f64) -> bool {
    if graded < FEWEST_TO_HOLD {
        return false;
    }
    #[allow(clippy::cast_precision_loss)] // at most RECENT grades
    let accuracy = passed as f64 / graded as f64;
    accuracy < threshold
}

/// Checks a task's `gold` for an upload: every broken expectation named under `gold`,
/// in one line (`gold.sxs 9 is not an answer it takes; ...`).
pub fn check_task(rubric: &Rubric, value: &Value) -> Result<(), String> {
    parse(rubric, value, "gold").map(|_| ()).map_err(|errors| {
        let named: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        named.join("; ")
    })
}

/// Reads a task's `gold` (its expected answers) and checks it against the rubric: each
/// path an answer with set values (not free text), each answer one the question takes,
/// `within` only for numbers. Every broken rule is named under `prefix` (`gold`).
pub fn parse(rubric: &Rubric, value: &Value, prefix: &str) -> Result<Expected, FieldErrors> {
    let mut errors = FieldErrors::new();
    let Some(object) = value.as_object() else {
        errors.insert(
            prefix.into(),
            "must be an object of expected answers by path, e.g. {\"sxs\": {\"value\": 2, \"within\": 1}}"
                .into(),
        );
        return Err(errors);
    };
    if object.is_empty() {
        errors.insert(prefix.into(), "must expect at least one answer".into());
        return Err(errors);
    }
    let slots = rubric.slots();
    let mut expected = Expected::new();
    for (path, given) in object {
        let at = format!("{prefix}.{path}");
        let Some(slot) = slots.iter().find(|s| s.path() == *path) else {
            let known: Vec<String> = slots
                .iter()
                .filter(|s| !is_text(s))
                .map(Slot::path)
                .collect();
            errors.insert(
                at,
                format!(
                    "is not an answer of rubric {}: one of {}",
                    rubric.name,
                    known.join(", ")
                ),
            );
            continue;
        };
        if is_text(slot) {
            errors.insert(at, "is written text, which cannot be graded".into());
            continue;
        }
        // The last form takes any value, so this reads whatever was given.
        let tolerance = serde_json::from_value::<Tolerance>(given.clone())
            .unwrap_or_else(|_| Tolerance::Exact(given.clone()));
        match check(rubric, slot, &tolerance) {
            Ok(()) => {
                expected.insert(path.clone(), in_order(slot, tolerance));
            }
            Err(why) => {
                errors.insert(at, why);
            }
        }
    }
    if errors.is_empty() {
        Ok(expected)
    } else {
        Err(errors)
    }
}

/// Several choices expected in any order, as ratings store them: in the options' order.
fn in_order(slot: &Slot<'_>, tolerance: Tolerance) -> Tolerance {
    let Slot::Asked { question, .. } = slot else {
        return tolerance;
    };
    let order = |v: Value| crate::rubric::document::in_order(&question.answer, v);
    match tolerance {
        Tolerance::AnyOf { any_of } => Tolerance::AnyOf {
            any_of: any_of.into_iter().map(order).collect(),
        },
        Tolerance::Exact(value) => Tolerance::Exact(order(value)),
        within => within,
    }
}

fn is_text(slot: &Slot<'_>) -> bool {
    matches!(slot, Slot::Asked { question, .. } if question.is_text())
}

/// Whether `value` is an answer the slot takes.
fn takes(rubric: &Rubric, slot: &Slot<'_>, value: &Value) -> bool {
    match slot {
        Slot::Asked { question, .. } => crate::rubric::document::accepts(&question.answer, value),
        Slot::Derived(d) => {
            let (low, high) = d.range(rubric);
            value.as_i64().is_some_and(|n| (low..=high).contains(&n))
        }
    }
}

fn is_number(slot: &Slot<'_>) -> bool {
    match slot {
        Slot::Asked { question, .. } => matches!(question.answer, Answer::Scale { .. }),
        Slot::Derived(_) => true,
    }
}

fn check(rubric: &Rubric, slot: &Slot<'_>, tolerance: &Tolerance) -> Result<(), String> {
    let shown = |v: &Value| v.to_string();
    match tolerance {
        Tolerance::Within { value, within } => {
            if !is_number(slot) {
                return Err(
                    "within is for numbers (a scale or a score); name the answer, or any_of".into(),
                );
            }
            if *within < 0 {
                return Err("within must be 0 or more points".into());
            }
            if !takes(rubric, slot, &Value::from(*value)) {
                return Err(format!("{value} is not an answer it takes"));
            }
        }
        Tolerance::AnyOf { any_of } => {
            if any_of.is_empty() {
                return Err("any_of must list at least one answer".into());
            }
            if let Some(bad) = any_of.iter().find(|v| !takes(rubric, slot, v)) {
                return Err(format!("{} is not an answer it takes", shown(bad)));
            }
        }
        Tolerance::Exact(value) => {
            if value.is_object() {
                return Err(
                    "give the answer, {\"any_of\": [answers]}, or {\"value\": N, \"within\": K}"
                        .into(),
                );
            }
            if !takes(rubric, slot, value) {
                return Err(format!("{} is not an answer it takes", shown(value)));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn blackhat() -> &'static Rubric {
        crate::rubric::by_name("blackhat").unwrap()
    }

    fn answers(value: Value) -> Answers {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn each_tolerance_grades_as_it_says() {
        let expected = parse(
            blackhat(),
            &json!({
                "sxs": {"value": 2, "within": 1},
                "a.correctness": {"any_of": ["no_issues", "minor_issues"]},
                "b.executability": "no_code"
            }),
            "gold",
        )
        .unwrap();
        let rated = |sxs: i64, correctness: &str, executability: &str| {
            grade(
                &expected,
                &answers(json!({"sxs": sxs, "a": {"correctness": correctness},
                                "b": {"executability": executability}})),
            )
        };
        let all = rated(3, "minor_issues", "no_code");
        assert_eq!((all.right, all.expected, all.passed()), (3, 3, true));
        let off = rated(4, "major_issues", "no");
        assert_eq!(off.right, 0);
        assert_eq!(off.wrong, ["a.correctness", "b.executability", "sxs"]);
        assert!(
            !rated(1, "no_issues", "no_code")
                .wrong
                .contains(&"sxs".to_owned()),
            "1 is within 1 of 2"
        );
        let missing = grade(&expected, &answers(json!({})));
        assert_eq!(missing.right, 0, "an answer not given is wrong");
    }

    #[test]
    fn an_upload_names_every_broken_expectation_in_one_line() {
        let bad = json!({"sxs": 8, "a.correctness": {"any_of": ["fine"]}});
        assert_eq!(
            check_task(blackhat(), &bad).unwrap_err(),
            "gold.a.correctness \"fine\" is not an answer it takes; gold.sxs 8 is not an answer it takes"
        );
        assert_eq!(check_task(blackhat(), &json!({"sxs": 3})), Ok(()));
    }

    #[test]
    fn a_derived_score_takes_a_range() {
        let additive = crate::rubric::by_name("additive-5").unwrap();
        let expected = parse(
            additive,
            &json!({"score": {"value": 4, "within": 1}}),
            "gold",
        )
        .unwrap();
        assert!(grade(&expected, &answers(json!({"score": 5}))).passed());
        assert!(!grade(&expected, &answers(json!({"score": 2}))).passed());
    }

    #[test]
    fn every_broken_expectation_is_named() {
        let errors = parse(
            blackhat(),
            &json!({
                "c.correctness": "no_issues",
                "sxs_explanation": "x",
                "sxs": {"value": 9, "within": 1},
                "a.correctness": {"value": 1, "within": 1},
                "b.correctness": {"any_of": []},
                "a.executability": "maybe",
                "b.executability": {"whatever": 1}
            }),
            "gold",
        )
        .unwrap_err();
        assert!(errors["gold.c.correctness"].contains("not an answer of rubric blackhat"));
        assert!(errors["gold.sxs_explanation"].contains("not an answer of rubric blackhat"));
        assert!(errors["gold.sxs"].contains("9 is not an answer"));
        assert!(errors["gold.a.correctness"].contains("within is for numbers"));
        assert!(errors["gold.b.correctness"].contains("at least one"));
        assert!(errors["gold.a.executability"].contains("\"maybe\" is not an answer"));
        assert!(errors["gold.b.executability"].contains("any_of"));
        assert_eq!(parse(blackhat(), &json!([]), "gold").unwrap_err().len(), 1);
        assert!(
            parse(blackhat(), &json!({}), "gold").unwrap_err()["gold"].contains("at least one")
        );
    }

    #[test]
    fn expected_issue_categories_are_graded_in_any_order() {
        let expected = parse(
            blackhat(),
            &json!({
                "a.issue_categories": ["safety", "functionality"],
                "b.issue_categories": {"any_of": [["performance"], ["documentation", "performance"]]}
            }),
            "gold",
        )
        .unwrap();
        let rated = |a: Value, b: Value| {
            grade(
                &expected,
                &answers(json!({"a": {"issue_categories": a}, "b": {"issue_categories": b}})),
            )
        };
        // Ratings store them in the options' order.
        assert!(rated(json!(["functionality", "safety"]), json!(["performance"])).passed());
        assert!(
            rated(
                json!(["functionality", "safety"]),
                json!(["performance", "documentation"])
            )
            .passed()
        );
        let missed = rated(json!(["functionality"]), json!(["safety"]));
        assert_eq!(missed.wrong, ["a.issue_categories", "b.issue_categories"]);
        let errors = parse(
            blackhat(),
            &json!({"a.issue_categories": {"value": 1, "within": 1}, "b.issue_categories": ["style"]}),
            "gold",
        )
        .unwrap_err();
        assert!(errors["gold.a.issue_categories"].starts_with("within is for numbers"));
        assert_eq!(
            errors["gold.b.issue_categories"],
            "[\"style\"] is not an answer it takes"
        );
    }
}
