//! How accurately each rater answers the batch's gold tasks: the share of graded gold
//! ratings with every expected answer right, with a Wilson interval, and the recent
//! trend (their latest [`RECENT`] grades, oldest first, and the accuracy over them).
//! Gold ratings count in no other figure of the batch.
//!
//! LLM judges answer gold tasks too, and are graded beside the raters ([`judges`]): a
//! judge's answer to a gold task is what its latest run says in every order it asked
//! (for a pair, both), combined as its stored rating is, and graded by the same
//! [`gold::grade`]. A gold task the judge was read on in every order without a whole
//! rating (unparsed, or inconsistent between the orders) is not graded: it is counted
//! apart as `no_answer`, never as wrong.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use uuid::Uuid;

use super::judges::JudgeCall;
use super::stats::{Estimate, share};
use crate::gold::{self, Expected, Grade, RECENT};
use crate::judge::{Asked, Plan, combine};
use crate::lifecycle::CallStatus;
use crate::rubric::Rubric;

#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct GoldMetrics {
    /// Gold tasks in the batch.
    pub tasks: i64,
    /// The share of raters' new assignments that are gold tasks.
    pub rate: f64,
    /// The accuracy below which a rater's new ratings go to review first.
    pub review_first_below: Option<f64>,
    /// Submitted ratings waiting for review first.
    pub held: i64,
    /// Each rater with a graded gold rating, by name.
    pub raters: Vec<RaterGold>,
    /// Each LLM judge whose latest run asked about a gold task, by name (absent when
    /// none has). Its answers count in no other figure, the judges' own included.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub judges: BTreeMap<String, JudgeGold>,
}

/// A judge on the batch's gold tasks, from its latest run.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct JudgeGold {
    /// Gold tasks the run asked about (a call made, in any order).
    pub asked: u64,
    /// Gold tasks with a whole rating from the judge, graded; and those with every
    /// expected answer right.
    pub graded: u64,
    pub passed: u64,
    /// `passed / graded` with its Wilson 95% interval; absent while nothing is graded.
    pub accuracy: Option<Estimate>,
    /// Expected answers given right of those expected, over every graded task.
    pub answers_right: u64,
    pub answers_expected: u64,
    /// Gold tasks read in every order without a whole rating (an output unparsed, or
    /// the orders of a pair inconsistent): not graded, and never counted as wrong.
    pub no_answer: u64,
    /// Gold tasks not read in every order yet: a call failed (a resumed run asks it
    /// again).
    pub pending: u64,
    /// Per expected answer, by path: the graded tasks that expect it.
    pub fields: BTreeMap<String, GoldField>,
}

/// One expected answer across a judge's graded gold tasks.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GoldField {
    /// Graded tasks that expect it, and those where it was right.
    pub graded: u64,
    pub right: u64,
    /// `right / graded` with its Wilson 95% interval.
    pub accuracy: Estimate,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RaterGold {
    pub rater: String,
    /// Graded gold ratings, and those with every expected answer right.
    pub graded: u64,
    pub passed: u64,
    /// `passed / graded` with its Wilson 95% interval.
    pub accuracy: Estimate,
    /// The latest grades, oldest first: `true` passed.
    pub recent: Vec<bool>,
    /// The accuracy over `recent`.
    pub recent_accuracy: f64,
    /// Expected answers given right of those expected, over every graded rating.
    pub answers_right: u64,
    pub answers_expected: u64,
    /// Whether the batch's threshold now sends the rater's new ratings to review first.
    pub review_first: bool,
}

/// The figures from graded ratings `(rater, grade)`, grouped by rater and oldest first
/// within each.
pub fn figures(
    grades: &[(String, Grade)],
    tasks: i64,
    rate: f64,
    review_first_below: Option<f64>,
    held: i64,
) -> GoldMetrics {
    let mut raters = Vec::new();
    for group in grades.chunk_by(|a, b| a.0 == b.0) {
        let all: Vec<&Grade> = group.iter().map(|(_, g)| g).collect();
        let passed = all.iter().filter(|g| g.passed()).count();
        let latest = &all[all.len().saturating_sub(RECENT)..];
        let recent: Vec<bool> = latest.iter().map(|g| g.passed()).collect();
        let recent_passed = recent.iter().filter(|p| **p).count();
        let held = review_first_below.is_some_and(|t| gold::below(recent_passed, recent.len(), t));
        let (graded, passed) = (all.len() as u64, passed as u64);
        let Some(accuracy) = share(passed, graded) else {
            continue;
        };
        raters.push(RaterGold {
            rater: group[0].0.clone(),
            graded,
            passed,
            accuracy,
            recent_accuracy: recent_passed as f64 / recent.len() as f64,
            recent,
            answers_right: all.iter().map(|g| g.right as u64).sum(),
            answers_expected: all.iter().map(|g| g.expected as u64).sum(),
            review_first: held,
        });
    }
    GoldMetrics {
        tasks,
        rate,
        review_first_below,
        held,
        raters,
        judges: BTreeMap::new(),
    }
}

/// Each judge on the gold tasks, from `calls` (the calls of each judge's latest run;
/// those of tasks not in `expected` are passed over). A task's answer is its calls
/// combined as its stored rating is ([`combine`]), and only a whole one is graded, by
/// [`gold::grade`] as a rater's rating is.
pub fn judges(
    rubric: &Rubric,
    min_explanation: usize,
    calls: &[JudgeCall],
    expected: &HashMap<Uuid, Expected>,
) -> BTreeMap<String, JudgeGold> {
    let orders = Plan::orders(rubric.subject).len();
    let mut by_judge: BTreeMap<&str, BTreeMap<Uuid, Vec<&JudgeCall>>> = BTreeMap::new();
    for call in calls.iter().filter(|c| expected.contains_key(&c.task_id)) {
        by_judge
            .entry(call.judge.as_str())
            .or_default()
            .entry(call.task_id)
            .or_default()
            .push(call);
    }
    let mut out = BTreeMap::new();
    for (judge, tasks) in by_judge {
        let (mut no_answer, mut pending) = (0u64, 0u64);
        let mut grades = Vec::new();
        // Per path: (graded, right).
        let mut per_path: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (task, task_calls) in &tasks {
            let asked: Vec<Asked<'_>> = task_calls
                .iter()
                .filter(|c| c.status != CallStatus::Failed)
                .map(|c| Asked {
                    swapped: c.swapped,
                    answers: &c.answers,
                    fields: &c.fields,
                })
                .collect();
            if asked.len() < orders {
                pending += 1;
                continue;
            }
            let combined = combine(rubric, &asked, min_explanation);
            if !combined.complete() {
                no_answer += 1;
                continue;
            }
            let wanted = &expected[task];
            let grade = gold::grade(wanted, &combined.answers);
            for path in wanted.keys() {
                let tally = per_path.entry(path.as_str()).or_default();
                tally.0 += 1;
                tally.1 += u64::from(!grade.wrong.contains(path));
            }
            grades.push(grade);
        }
        let graded = grades.len() as u64;
        let passed = grades.iter().filter(|g| g.passed()).count() as u64;
        let fields = per_path
            .into_iter()
            .filter_map(|(path, (graded, right))| {
                let accuracy = share(right, graded)?;
                Some((
                    path.to_owned(),
                    GoldField {
                        graded,
                        right,
                        accuracy,
                    },
                ))
            })
            .collect();
        out.insert(
            judge.to_owned(),
            JudgeGold {
                asked: tasks.len() as u64,
                graded,
                passed,
                accuracy: share(passed, graded),
                answers_right: grades.iter().map(|g| g.right as u64).sum(),
                answers_expected: grades.iter().map(|g| g.expected as u64).sum(),
                no_answer,
                pending,
                fields,
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grade(passed: bool) -> Grade {
        Grade {
            right: usize::from(passed) + 1,
            expected: 2,
            wrong: if passed { vec![] } else { vec!["sxs".into()] },
        }
    }

    #[test]
    fn accuracy_interval_and_trend_per_rater() {
        // ana: 12 graded, the first two wrong, then ten right; bo: 3 graded, 1 right.
        let mut grades: Vec<(String, Grade)> =
            (0..12).map(|i| ("ana".to_owned(), grade(i >= 2))).collect();
        grades.extend([true, false, false].map(|p| ("bo".to_owned(), grade(p))));
        let figures = figures(&grades, 5, 0.1, Some(0.5), 2);
        let [ana, bo] = &figures.raters[..] else {
            panic!("two raters")
        };
        assert_eq!((ana.graded, ana.passed), (12, 10));
        assert!((ana.accuracy.value - 10.0 / 12.0).abs() < 1e-12);
        // Wilson 95% for 10/12, by hand: centre 0.7328, half 0.1986.
        assert!(
            (ana.accuracy.low - 0.5520).abs() < 1e-3,
            "{}",
            ana.accuracy.low
        );
        assert!(
            (ana.accuracy.high - 0.9530).abs() < 1e-3,
            "{}",
            ana.accuracy.high
        );
        assert_eq!(
            ana.recent,
            vec![true; 10],
            "the latest ten, the misses before them"
        );
        assert!((ana.recent_accuracy - 1.0).abs() < 1e-12);
        assert_eq!((ana.answers_right, ana.answers_expected), (22, 24));
        assert!(!ana.review_first);
        assert_eq!(bo.recent, vec![true, false, false]);
        assert!(bo.review_first, "1 of 3 is below 0.5");
        assert_eq!((figures.tasks, figures.held), (5, 2));
    }

    /// A pairwise-aspects judge's call about `task`: helpfulness and clarity as shown,
    /// every other aspect a tie; `None` for an output that cannot be read.
    fn call(task: Uuid, swapped: bool, said: Option<(&str, &str)>) -> JudgeCall {
        let rubric = crate::rubric::by_name("pairwise-aspects").unwrap();
        let output = said.map_or("I cannot decide.".to_owned(), |(help, clarity)| {
            serde_json::json!({"rationale": "Compared on every aspect.", "choices": {
                "helpfulness": help, "clarity": clarity, "factuality": "tie", "depth": "tie",
                "engagement": "tie", "safety": "tie"}})
            .to_string()
        });
        let parsed = crate::judge::parse(rubric, crate::judge::Format::Choices, &output, false, 0);
        JudgeCall {
            judge: "scripted".into(),
            task_id: task,
            swapped,
            status: if parsed.answered() {
                CallStatus::Answered
            } else {
                CallStatus::Unparsed
            },
            fields: parsed.fields,
            answers: parsed.answers,
            len_a: 10,
            len_b: 20,
        }
    }

    #[test]
    fn a_judge_is_graded_on_its_combined_answer_and_unread_gold_is_no_answer() {
        let rubric = crate::rubric::by_name("pairwise-aspects").unwrap();
        let wanted = crate::gold::parse(
            rubric,
            &serde_json::json!({"helpfulness": "a", "clarity": {"any_of": ["a", "tie"]}}),
            "gold",
        )
        .unwrap();
        let tasks: Vec<Uuid> = (0..6).map(|_| Uuid::new_v4()).collect();
        let expected: HashMap<Uuid, Expected> =
            tasks[..5].iter().map(|t| (*t, wanted.clone())).collect();
        let mut failed = call(tasks[4], true, Some(("B", "tie")));
        failed.status = CallStatus::Failed;
        let calls = vec![
            // Right in both orders: the task's A shown first, then second.
            call(tasks[0], false, Some(("A", "tie"))),
            call(tasks[0], true, Some(("B", "tie"))),
            // Helpfulness wrong (B both ways round), clarity right.
            call(tasks[1], false, Some(("B", "tie"))),
            call(tasks[1], true, Some(("A", "tie"))),
            // Unreadable in one order.
            call(tasks[2], false, Some(("A", "tie"))),
            call(tasks[2], true, None),
            // Follows the position: inconsistent.
            call(tasks[3], false, Some(("A", "tie"))),
            call(tasks[3], true, Some(("A", "tie"))),
            // One order read, the other failed.
            call(tasks[4], false, Some(("A", "tie"))),
            failed,
            // Not a gold task.
            call(tasks[5], false, Some(("B", "B"))),
            call(tasks[5], true, Some(("A", "A"))),
        ];
        let graded = judges(rubric, 0, &calls, &expected);
        let judge = &graded["scripted"];
        assert_eq!(
            (judge.asked, judge.graded, judge.passed),
            (5, 2, 1),
            "{judge:?}"
        );
        assert_eq!((judge.no_answer, judge.pending), (2, 1));
        assert_eq!((judge.answers_right, judge.answers_expected), (3, 4));
        assert_eq!(judge.accuracy, share(1, 2));
        let help = &judge.fields["helpfulness"];
        assert_eq!((help.graded, help.right), (2, 1));
        let clarity = &judge.fields["clarity"];
        assert_eq!((clarity.graded, clarity.right), (2, 2));
        assert_eq!(Some(clarity.accuracy), share(2, 2));
        assert!(
            judges(rubric, 0, &calls[10..], &expected).is_empty(),
            "no gold task asked: no entry"
        );
    }

    #[test]
    fn too_few_grades_hold_no_one() {
        let grades = vec![
            ("cy".to_owned(), grade(false)),
            ("cy".to_owned(), grade(false)),
        ];
        let figures = figures(&grades, 2, 1.0, Some(0.9), 0);
        assert!(!figures.raters[0].review_first);
        assert_eq!(figures.raters[0].accuracy.value, 0.0);
    }
}
