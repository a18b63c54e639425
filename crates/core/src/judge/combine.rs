//! A judge's answer for a task, from its answers in each order it was asked.
//!
//! A pair is asked twice, A first and then B first, and both answers are turned to the
//! task's canonical orientation before they are compared. The judge's answer is what it
//! says in both orders:
//! - an answer given the same both ways is taken;
//! - a preference on a scale that leans the same way both times (or is the midpoint both
//!   times) takes the mean of the two, rounded towards the midpoint, since the two orders
//!   are equally good evidence and the smaller lean is the safer reading;
//! - anything else that differs is `inconsistent`: not an answer, never a tie;
//! - what is unparsed in either order is unparsed in the answer.
//!
//! Explanations are taken from the order that showed A first, where their "A" and "B"
//! mean what the task's do, else from the other. The result is checked by the rubric as a
//! rater's submission is; only an answer that passes is a rating.

use serde_json::Value;

use super::parse::{FieldStatus, Fields, asked_paths, optional_paths};
use crate::rubric::{
    Answer, Answers, Favours, Mode, Role, Rubric, ShownAnswers, TaskAnswers, validate,
};

/// One order's answers: whether B was shown as "A", the answers read (in the
/// orientation shown) and their statuses.
#[derive(Debug, Clone)]
pub struct Asked<'a> {
    pub swapped: bool,
    pub answers: &'a ShownAnswers,
    pub fields: &'a Fields,
}

/// A task's answer, canonical, and per question path what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    pub answers: TaskAnswers,
    pub fields: Fields,
}

impl Combined {
    /// Whether it is a whole rating.
    pub fn complete(&self) -> bool {
        self.fields.values().all(FieldStatus::is_parsed)
    }
}

/// Combines the orders of one task (one for a single-response rubric, two for a pair).
/// Without every order the rubric asks in, nothing is answered.
pub fn combine(rubric: &Rubric, asked: &[Asked<'_>], min_explanation: usize) -> Combined {
    let orders = super::Plan::orders(rubric.subject);
    if orders
        .iter()
        .any(|order| !asked.iter().any(|a| a.swapped == *order))
    {
        return Combined {
            answers: TaskAnswers::default(),
            fields: asked_paths(rubric)
                .into_iter()
                .chain(rubric.derived.iter().map(|d| d.key.clone()))
                .map(|path| (path, FieldStatus::Missing))
                .collect(),
        };
    }
    let canonical: Vec<(bool, TaskAnswers)> = asked
        .iter()
        .map(|a| (a.swapped, a.answers.clone().into_task(rubric, a.swapped)))
        .collect();
    let mut answers = Answers::new();
    let mut fields = Fields::new();
    for path in asked_paths(rubric) {
        // A field's status in an order, read under the path it was shown at.
        let statuses: Vec<FieldStatus> = asked
            .iter()
            .map(|a| {
                let shown = if a.swapped {
                    mirror_path(&path)
                } else {
                    path.clone()
                };
                a.fields
                    .get(&shown)
                    .cloned()
                    .unwrap_or(FieldStatus::Missing)
            })
            .collect();
        if let Some(bad) = statuses.iter().find(|s| !s.is_parsed()) {
            fields.insert(path, bad.clone());
            continue;
        }
        let values: Vec<Option<&Value>> = canonical.iter().map(|(_, c)| at(c, &path)).collect();
        let Some(Some(first)) = values.first() else {
            fields.insert(path, FieldStatus::Missing);
            continue;
        };
        let agreed = if values.iter().all(|v| *v == Some(*first)) {
            Some((*first).clone())
        } else {
            scale_mean(rubric, &path, &values)
        };
        match agreed {
            Some(value) => {
                put(&mut answers, &path, value);
                fields.insert(path, FieldStatus::Parsed);
            }
            None => {
                fields.insert(path, FieldStatus::Inconsistent);
            }
        }
    }
    // Answers a judge may leave out: kept when every order gives the same; several
    // choices keep what every order picked. Never a reason to call the rating incomplete.
    for path in optional_paths(rubric) {
        let values: Vec<Option<&Value>> = canonical.iter().map(|(_, c)| at(c, &path)).collect();
        let several = rubric
            .question(path.rsplit('.').next().unwrap_or_default())
            .is_some_and(|q| matches!(q.answer, Answer::MultiChoice { .. }));
        let agreed = if several {
            let lists: Vec<&Vec<Value>> = values
                .iter()
                .map(|v| v.and_then(Value::as_array))
                .collect::<Option<_>>()
                .unwrap_or_default();
            let common: Vec<Value> = lists
                .first()
                .map(|first| {
                    first
                        .iter()
                        .filter(|v| lists.iter().all(|l| l.contains(v)))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            (!common.is_empty()).then_some(Value::Array(common))
        } else {
            match values.first() {
                Some(Some(first)) if values.iter().all(|v| v == &Some(*first)) => {
                    Some((*first).clone())
                }
                _ => None,
            }
        };
        if let Some(value) = agreed {
            put(&mut answers, &path, value);
            fields.insert(path, FieldStatus::Parsed);
        }
    }
    // Explanations and texts that are not compared: from A-first, else B-first.
    let mut by_order: Vec<&(bool, TaskAnswers)> = canonical.iter().collect();
    by_order.sort_by_key(|(swapped, _)| *swapped);
    for question in rubric.questions.iter() {
        let keys: Vec<String> = question
            .explanation
            .is_some()
            .then(|| question.explanation_key())
            .into_iter()
            .collect();
        let holders: Vec<Option<&str>> = if question.each_response {
            vec![Some("a"), Some("b")]
        } else {
            vec![None]
        };
        for holder in holders {
            for key in &keys {
                let path = holder.map_or_else(|| key.clone(), |h| format!("{h}.{key}"));
                if let Some(text) = by_order.iter().find_map(|(_, c)| {
                    at(c, &path)
                        .and_then(Value::as_str)
                        .filter(|t| !t.trim().is_empty())
                }) {
                    put(&mut answers, &path, Value::from(text));
                }
            }
        }
    }
    match validate(
        rubric,
        &[],
        &Value::Object(answers.clone()),
        Mode::Submit,
        min_explanation,
    ) {
        Ok(checked) => answers = checked,
        Err(problems) => {
            for (path, why) in problems {
                let status = fields.entry(path).or_insert(FieldStatus::Parsed);
                if status.is_parsed() {
                    *status = FieldStatus::Invalid(why);
                }
            }
        }
    }
    // A derived answer (a total) is read when what it is worked out from was.
    for derived in &rubric.derived {
        let status = if answers.contains_key(&derived.key) {
            FieldStatus::Parsed
        } else {
            derived
                .sum_of
                .iter()
                .chain(&derived.zero_when)
                .filter_map(|key| fields.get(key))
                .find(|s| !s.is_parsed())
                .cloned()
                .unwrap_or(FieldStatus::Missing)
        };
        fields.insert(derived.key.clone(), status);
    }
    Combined {
        answers: TaskAnswers::canonical(answers),
        fields,
    }
}

/// `a.x` for `b.x` and the other way round; other paths stay.
pub(crate) fn mirror_path(path: &str) -> String {
    match path.split_once('.') {
        Some(("a", key)) => format!("b.{key}"),
        Some(("b", key)) => format!("a.{key}"),
        _ => path.to_owned(),
    }
}

pub(crate) fn at<'a>(answers: &'a Answers, path: &str) -> Option<&'a Value> {
    match path.split_once('.') {
        Some((side, key)) => answers.get(side)?.get(key),
        None => answers.get(path),
    }
    .filter(|v| !v.is_null())
}

fn put(answers: &mut Answers, path: &str, value: Value) {
    match path.split_once('.') {
        Some((side, key)) => {
            let holder = answers
                .entry(side.to_owned())
                .or_insert_with(|| Value::Object(Answers::new()));
            if let Value::Object(holder) = holder {
                holder.insert(key.to_owned(), value);
            }
        }
        None => {
            answers.insert(path.to_owned(), value);
        }
    }
}

/// For a preference on a scale whose answers all lean the same way: their mean, rounded
/// towards the midpoint.
fn scale_mean(rubric: &Rubric, path: &str, values: &[Option<&Value>]) -> Option<Value> {
    let question = rubric.question(path)?;
    let (
        Answer::Scale { .. },
        Some(Role::Preference {
            midpoint: Some(mid),
            ..
        }),
    ) = (&question.answer, &question.metrics)
    else {
        return None;
    };
    let numbers: Vec<i64> = values
        .iter()
        .map(|v| v.and_then(Value::as_i64))
        .collect::<Option<_>>()?;
    let sides: Vec<Favours> = numbers
        .iter()
        .map(|n| question.favours(&Value::from(*n)))
        .collect::<Option<_>>()?;
    if sides.iter().any(|s| *s != sides[0]) {
        return None;
    }
    let sum: i64 = numbers.iter().sum();
    let count = numbers.len() as i64;
    // Rounded towards the midpoint: below it, up; above it, down.
    let mean = if sides[0] == Favours::A {
        (sum + count - 1).div_euclid(count)
    } else {
        sum.div_euclid(count)
    };
    debug_assert!(sides[0] != Favours::Tie || mean == *mid);
    Some(Value::from(mean))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::parse::{Parsed, parse};
    use crate::judge::template::Format;
    use crate::rubric::by_name;
    use serde_json::json;

    /// Combines an answer given A first and one given B first.
    fn both_orders(rubric: &Rubric, first: &Parsed, second: &Parsed, min: usize) -> Combined {
        fn asked(swapped: bool, parsed: &Parsed) -> Asked<'_> {
            Asked {
                swapped,
                answers: &parsed.answers,
                fields: &parsed.fields,
            }
        }
        combine(rubric, &[asked(false, first), asked(true, second)], min)
    }

    fn choices(help: &str, clarity: &str) -> String {
        json!({"rationale": "Compared on every aspect.", "choices": {
            "helpfulness": help, "clarity": clarity, "factuality": "tie", "depth": "tie",
            "engagement": "tie", "safety": "tie"}})
        .to_string()
    }

    #[test]
    fn both_orders_are_mapped_back_to_canonical_sides() {
        let rubric = by_name("pairwise-aspects").unwrap();
        // A first: A is more helpful. B first (the judge's "B" is the task's A): the same.
        let first = parse(rubric, Format::Choices, &choices("A", "tie"), false, 0);
        let second = parse(rubric, Format::Choices, &choices("B", "tie"), false, 0);
        let combined = both_orders(rubric, &first, &second, 0);
        assert!(combined.complete(), "{:?}", combined.fields);
        assert_eq!(combined.answers["helpfulness"], "a");
        assert_eq!(combined.answers["clarity"], "tie");
    }

    #[test]
    fn a_judge_that_follows_the_position_is_inconsistent_not_tied() {
        let rubric = by_name("pairwise-aspects").unwrap();
        // It prefers whatever it is shown first, both times.
        let first = parse(rubric, Format::Choices, &choices("A", "tie"), false, 0);
        let second = parse(rubric, Format::Choices, &choices("A", "tie"), false, 0);
        let combined = both_orders(rubric, &first, &second, 0);
        assert_eq!(combined.fields["helpfulness"], FieldStatus::Inconsistent);
        assert!(combined.answers.get("helpfulness").is_none());
        assert!(!combined.complete());
    }

    #[test]
    fn a_scale_leaning_the_same_way_takes_the_mean_towards_the_midpoint() {
        let rubric = by_name("blackhat").unwrap();
        let side = json!({"executability": "no_code", "instruction_following": "no_issues",
                          "correctness": "no_issues"});
        let answer = |sxs: i64| {
            json!({"a": side, "b": side, "sxs": sxs,
                   "sxs_explanation": "Both are right; one is a little clearer."})
            .to_string()
        };
        let cases = [
            (2, 5, Some(3)),
            (1, 6, Some(2)),
            (6, 3, Some(5)),
            (4, 4, Some(4)),
            (2, 2, None),
        ];
        for (shown_first, shown_second, expected) in cases {
            let first = parse(rubric, Format::Answers, &answer(shown_first), false, 20);
            let second = parse(rubric, Format::Answers, &answer(shown_second), false, 20);
            let combined = both_orders(rubric, &first, &second, 20);
            match expected {
                Some(sxs) => {
                    assert_eq!(combined.answers["sxs"], sxs, "{shown_first}/{shown_second}")
                }
                None => assert_eq!(combined.fields["sxs"], FieldStatus::Inconsistent),
            }
        }
    }

    #[test]
    fn unparsed_in_either_order_is_unparsed() {
        let rubric = by_name("pairwise-aspects").unwrap();
        let first = parse(rubric, Format::Choices, &choices("A", "tie"), false, 0);
        let second = parse(rubric, Format::Choices, "I cannot decide.", false, 0);
        let combined = both_orders(rubric, &first, &second, 0);
        assert_eq!(combined.fields["helpfulness"], FieldStatus::Missing);
        assert!(!combined.complete());
    }

    #[test]
    fn a_pair_asked_in_one_order_only_is_not_answered() {
        let rubric = by_name("pairwise-aspects").unwrap();
        let first = parse(rubric, Format::Choices, &choices("A", "tie"), false, 0);
        let combined = combine(
            rubric,
            &[Asked {
                swapped: false,
                answers: &first.answers,
                fields: &first.fields,
            }],
            0,
        );
        assert!(!combined.complete());
        assert_eq!(combined.fields["helpfulness"], FieldStatus::Missing);
        assert!(combined.answers.is_empty());
    }

    #[test]
    fn a_single_response_is_its_one_answer() {
        let rubric = by_name("additive-5").unwrap();
        let only = parse(
            rubric,
            Format::ScoreLine,
            "score: 2\nPartly useful.",
            false,
            0,
        );
        let combined = combine(
            rubric,
            &[Asked {
                swapped: false,
                answers: &only.answers,
                fields: &only.fields,
            }],
            0,
        );
        assert!(combined.complete(), "{:?}", combined.fields);
        assert_eq!(combined.answers["score"], 2);
        assert_eq!(combined.fields["score"], FieldStatus::Parsed);
        let none = parse(rubric, Format::ScoreLine, "score: 2 or 3", false, 0);
        let combined = combine(
            rubric,
            &[Asked {
                swapped: false,
                answers: &none.answers,
                fields: &none.fields,
            }],
            0,
        );
        assert_eq!(combined.fields["score"], FieldStatus::Conflicting);
    }

    #[test]
    fn issue_categories_keep_what_both_orders_picked_and_never_make_a_rating_incomplete() {
        let rubric = by_name("blackhat").unwrap();
        let why = "The loop stops one element before the end of the list.";
        let side = |kinds: Value| {
            json!({"executability": "yes_fully", "instruction_following": "no_issues",
                   "correctness": "major_issues", "correctness_explanation": why,
                   "issue_categories": kinds})
        };
        let answer = |a: Value, b: Value, sxs: i64| {
            json!({"a": side(a), "b": side(b), "sxs": sxs,
                   "sxs_explanation": "Both are wrong; one is also slow."})
            .to_string()
        };
        // A first, then B first (the judge's A is the task's B).
        let first = parse(
            rubric,
            Format::Answers,
            &answer(
                json!(["functionality", "safety"]),
                json!(["performance"]),
                4,
            ),
            false,
            20,
        );
        let second = parse(
            rubric,
            Format::Answers,
            &answer(json!(["documentation"]), json!(["safety"]), 4),
            false,
            20,
        );
        let combined = both_orders(rubric, &first, &second, 20);
        assert!(combined.complete(), "{:?}", combined.fields);
        assert_eq!(combined.answers["a"]["issue_categories"], json!(["safety"]));
        // Nothing in common: no answer, and still a whole rating.
        assert!(combined.answers["b"].get("issue_categories").is_none());
    }
}
