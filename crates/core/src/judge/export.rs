//! A run's answers question by question and order by order: the rows of the judge export
//! (`GET /api/v1/judge-runs/{id}/export`). Each call gives a row per answer it holds (read
//! or not), under the path it has in the task's own order and the path it had as the
//! judge was shown the pair, with its parse status; a task read in every order it was
//! asked also gives the rows of what the orders [`combine`] into. Enough to work out every
//! figure the batch's metrics give of a judge, with the raters' ratings from the batch's
//! export.

use serde::Serialize;
use serde_json::Value;

use super::combine::{at, mirror_path};
use super::{Asked, FieldStatus, Fields, Plan, combine};
use crate::lifecycle::CallStatus;
use crate::rubric::{Answers, Rubric, ShownAnswers};

/// Which answer a row holds: one order's call, or the orders combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The task's A was shown first.
    AFirst,
    /// The task's B was shown first.
    BFirst,
    /// The task's orders combined: the judge's answer, a rating when every answer of it
    /// is parsed.
    Combined,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::AFirst => "a_first",
            Order::BFirst => "b_first",
            Order::Combined => "combined",
        }
    }
}

/// One call of a task, as the export reads it.
#[derive(Debug, Clone, Copy)]
pub struct TaskCall<'a> {
    pub swapped: bool,
    pub status: CallStatus,
    pub fields: &'a Fields,
    pub answers: &'a ShownAnswers,
}

/// One row: an answer of a call, or of the orders combined.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    pub order: Order,
    /// The call's status; none for the combined answer.
    pub call_status: Option<CallStatus>,
    /// In the task's own order (`a.correctness` is about the task's A); empty for a call
    /// that holds no answer at all (a failed one).
    pub path: String,
    /// As the judge was shown the pair (`a.…` is the response shown first).
    pub path_shown: String,
    /// Its parse status (`inconsistent` only for the combined answer); none when the
    /// call holds the value without a status.
    pub status: Option<FieldStatus>,
    /// The value in the task's own order, and as shown (none for the combined answer).
    pub answer: Option<Value>,
    pub answer_shown: Option<Value>,
}

/// The rows of one task's calls (the calls of one run), A first before B first, then the
/// combined answer when every order was read (not failed), as the metrics read it; and
/// whether the task has a whole rating of the run.
pub fn task_rows(
    rubric: &Rubric,
    min_explanation: usize,
    calls: &[TaskCall<'_>],
) -> (bool, Vec<AnswerRow>) {
    let mut rows = Vec::new();
    let mut calls: Vec<&TaskCall<'_>> = calls.iter().collect();
    calls.sort_by_key(|c| c.swapped);
    for call in &calls {
        let order = if call.swapped {
            Order::BFirst
        } else {
            Order::AFirst
        };
        let canonical = call.answers.clone().into_task(rubric, call.swapped);
        let shown_paths = paths(call.fields, call.answers);
        if shown_paths.is_empty() {
            rows.push(AnswerRow {
                order,
                call_status: Some(call.status),
                path: String::new(),
                path_shown: String::new(),
                status: None,
                answer: None,
                answer_shown: None,
            });
        }
        for shown in shown_paths {
            let path = if call.swapped {
                mirror_path(&shown)
            } else {
                shown.clone()
            };
            rows.push(AnswerRow {
                order,
                call_status: Some(call.status),
                status: call.fields.get(&shown).cloned(),
                answer: at(&canonical, &path).cloned(),
                answer_shown: at(call.answers, &shown).cloned(),
                path,
                path_shown: shown,
            });
        }
    }
    let read: Vec<Asked<'_>> = calls
        .iter()
        .filter(|c| c.status != CallStatus::Failed)
        .map(|c| Asked {
            swapped: c.swapped,
            answers: c.answers,
            fields: c.fields,
        })
        .collect();
    if read.len() < Plan::orders(rubric.subject).len() {
        return (false, rows);
    }
    let combined = combine(rubric, &read, min_explanation);
    for path in paths(&combined.fields, &combined.answers) {
        rows.push(AnswerRow {
            order: Order::Combined,
            call_status: None,
            status: combined.fields.get(&path).cloned(),
            answer: at(&combined.answers, &path).cloned(),
            answer_shown: None,
            path_shown: path.clone(),
            path,
        });
    }
    (combined.complete(), rows)
}

/// Every path with a status or a value, in order.
fn paths(fields: &Fields, answers: &Answers) -> Vec<String> {
    let mut paths: Vec<String> = fields.keys().cloned().collect();
    for (key, value) in answers {
        match (key.as_str(), value) {
            ("a" | "b", Value::Object(side)) => {
                paths.extend(side.keys().map(|k| format!("{key}.{k}")));
            }
            _ => paths.push(key.clone()),
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Format, parse};
    use crate::rubric::by_name;
    use serde_json::json;

    fn choices(help: &str) -> String {
        json!({"rationale": "Compared on every aspect.", "choices": {
            "helpfulness": help, "clarity": "tie", "factuality": "tie", "depth": "tie",
            "engagement": "tie", "safety": "tie"}})
        .to_string()
    }

    #[test]
    fn each_order_and_the_combined_answer_have_rows_in_the_tasks_order() {
        let rubric = by_name("pairwise-aspects").unwrap();
        // The judge prefers whatever it is shown first: the orders disagree.
        let first = parse(rubric, Format::Choices, &choices("A"), false, 0);
        let second = parse(rubric, Format::Choices, &choices("A"), false, 0);
        let calls = [
            TaskCall {
                swapped: true,
                status: CallStatus::Answered,
                fields: &second.fields,
                answers: &second.answers,
            },
            TaskCall {
                swapped: false,
                status: CallStatus::Answered,
                fields: &first.fields,
                answers: &first.answers,
            },
        ];
        let (rated, rows) = task_rows(rubric, 0, &calls);
        assert!(!rated);
        let help = |order: Order| {
            rows.iter()
                .find(|r| r.order == order && r.path == "helpfulness")
                .unwrap()
        };
        assert_eq!(help(Order::AFirst).answer, Some(json!("a")));
        assert_eq!(help(Order::BFirst).answer_shown, Some(json!("a")));
        assert_eq!(help(Order::BFirst).answer, Some(json!("b")), "turned back");
        let combined = help(Order::Combined);
        assert_eq!(combined.status, Some(FieldStatus::Inconsistent));
        assert_eq!(combined.answer, None);
        assert_eq!(rows[0].order, Order::AFirst, "A first comes first");
    }

    #[test]
    fn a_failed_call_has_one_empty_row_and_no_combined_answer() {
        let rubric = by_name("blackhat").unwrap();
        let (fields, answers) = (Fields::new(), ShownAnswers::default());
        let failed = TaskCall {
            swapped: false,
            status: CallStatus::Failed,
            fields: &fields,
            answers: &answers,
        };
        let (rated, rows) = task_rows(rubric, 20, &[failed]);
        assert!(!rated);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].path, "");
        assert_eq!(rows[0].call_status, Some(CallStatus::Failed));
    }
}
