//! The two orientations answers come in, as two types. A rater (or a judge) answers the
//! pair as it was shown: "A" is the response shown first, which is the task's B when the
//! assignment swapped them. Ratings are stored, graded, measured and shown to leads in
//! the task's own order. [`ShownAnswers`] and [`TaskAnswers`] keep the two apart, and
//! turning one into the other ([`ShownAnswers::into_task`], [`TaskAnswers::into_shown`])
//! is the only way between them.

use std::ops::Deref;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Answer, Answers, Rubric, Subject, Swap};

/// Answers as the pair was shown to whoever gave them: `a` is the response shown first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
#[schema(value_type = Object)]
pub struct ShownAnswers(Answers);

/// Answers in the task's own order: `a` is the task's response A. How ratings are stored,
/// graded, measured, exported and shown to leads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
#[schema(value_type = Object)]
pub struct TaskAnswers(Answers);

impl ShownAnswers {
    /// Answers as given, in the order they were shown.
    pub fn new(answers: Answers) -> Self {
        ShownAnswers(answers)
    }

    /// In the task's own order, for an assignment that showed the pair `swapped`.
    pub fn into_task(self, rubric: &Rubric, swapped: bool) -> TaskAnswers {
        TaskAnswers(orient(rubric, self.0, swapped))
    }

    /// The plain map, for output (a JSON body, a form's fields).
    pub fn into_map(self) -> Answers {
        self.0
    }
}

impl TaskAnswers {
    /// As they were shown on an assignment that showed the pair `swapped`.
    pub fn into_shown(self, rubric: &Rubric, swapped: bool) -> ShownAnswers {
        ShownAnswers(orient(rubric, self.0, swapped))
    }

    /// The plain map, for output (a JSON body, a form's fields).
    pub fn into_map(self) -> Answers {
        self.0
    }

    /// Answers already in the task's own order: a judge's two orders combined.
    pub(crate) fn canonical(answers: Answers) -> Self {
        TaskAnswers(answers)
    }
}

impl Deref for ShownAnswers {
    type Target = Answers;

    fn deref(&self) -> &Answers {
        &self.0
    }
}

impl Deref for TaskAnswers {
    type Target = Answers;

    fn deref(&self) -> &Answers {
        &self.0
    }
}

/// Turns answers between the orientation a rater was shown and the canonical one: with
/// `swapped`, the answers asked of each response trade places and every question asked
/// once turns as its `swap` says. Applying it twice gives back what went in.
fn orient(rubric: &Rubric, mut answers: Answers, swapped: bool) -> Answers {
    if !swapped || rubric.subject == Subject::Single {
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
    for question in rubric.questions.iter().filter(|q| !q.each_response) {
        let Some(value) = answers.get(&question.key) else {
            continue;
        };
        let turned = match (&question.swap, &question.answer, value) {
            (Swap::MirrorScale, Answer::Scale { min, max, .. }, Value::Number(n)) => {
                n.as_i64().map(|n| Value::from(min + max - n))
            }
            (Swap::SwapValues(map), _, Value::String(s)) => {
                map.get(s).map(|to| Value::from(to.as_str()))
            }
            _ => None,
        };
        if let Some(turned) = turned {
            answers.insert(question.key.clone(), turned);
        }
    }
    answers
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rubric::by_name;

    fn shown(value: Value) -> ShownAnswers {
        ShownAnswers::new(value.as_object().unwrap().clone())
    }

    #[test]
    fn a_swapped_pair_trades_sides_and_mirrors_the_preference() {
        let blackhat = by_name("blackhat").unwrap();
        let given = shown(json!({"sxs": 2, "a": {"correctness": "no_issues"}, "b": {}}));
        let task = given.clone().into_task(blackhat, true);
        assert_eq!(task["sxs"], 6);
        assert_eq!(task["b"]["correctness"], "no_issues");
        assert_eq!(
            task.clone().into_shown(blackhat, true),
            given,
            "turning back"
        );
        assert_eq!(
            given.clone().into_task(blackhat, false).into_map(),
            given.into_map()
        );
    }
}
