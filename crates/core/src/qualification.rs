//! Qualification: a batch may ask each rater to pass a round of its gold tasks before
//! they are offered its real ones. A round (a *try*) is `tasks` gold tasks rated in turn;
//! a task is right when every expected answer of it is (see [`crate::gold::Grade`]); the
//! try passes when the share right reaches the pass mark. A rater has `tries` tries: the
//! first try that passes qualifies them, and once every try has failed they are not
//! offered the batch's work.
//!
//! A rater's standing is worked out from their graded gold ratings of the batch in the
//! order they were submitted, so it needs no state of its own: the first `tasks` make the
//! first try, the next `tasks` the second, and so on. Gold ratings after a pass are the
//! batch's usual gold checks and change nothing here.

use serde::Serialize;

use crate::fields::FieldErrors;

/// The most gold tasks one try may ask.
pub const MAX_TASKS: i32 = 50;

/// The most tries a batch may give.
pub const MAX_TRIES: i32 = 10;

/// A batch's qualification, checked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Qualification {
    /// Gold tasks per try.
    pub tasks: i32,
    /// The share of a try's tasks that must be right, from 0 (exclusive) to 1.
    pub pass_mark: f64,
    pub tries: i32,
    /// Whether a rater sees each gold answer, with its explanation, once a try is over.
    pub reveal: bool,
}

impl Qualification {
    /// Checks the settings of a qualification; every broken one is named
    /// (`qualify_tasks`, `qualify_pass`, `qualify_tries`).
    pub fn check(
        tasks: i32,
        pass_mark: f64,
        tries: i32,
        reveal: bool,
    ) -> Result<Self, FieldErrors> {
        let mut fields = FieldErrors::new();
        if !(1..=MAX_TASKS).contains(&tasks) {
            fields.insert(
                "qualify_tasks".into(),
                format!("must be from 1 to {MAX_TASKS} gold tasks a try"),
            );
        }
        if !(pass_mark > 0.0 && pass_mark <= 1.0) {
            fields.insert(
                "qualify_pass".into(),
                "must be a share above 0 and at most 1 (0.8: four tasks in five right)".into(),
            );
        }
        if !(1..=MAX_TRIES).contains(&tries) {
            fields.insert(
                "qualify_tries".into(),
                format!("must be from 1 to {MAX_TRIES}"),
            );
        }
        if fields.is_empty() {
            Ok(Self {
                tasks,
                pass_mark,
                tries,
                reveal,
            })
        } else {
            Err(fields)
        }
    }

    /// The fewest right of a try's tasks that pass it.
    pub fn needed(&self) -> i32 {
        // The smallest whole number at or above the share, with room for the share's
        // own rounding (0.8 of 5 is 4, not 4.000000000000001).
        let exact = f64::from(self.tasks) * self.pass_mark;
        (exact - 1e-9).ceil().max(1.0) as i32
    }

    /// A rater's standing, from whether each of their graded gold ratings of the batch
    /// was right, in the order they were submitted.
    pub fn standing(&self, right: &[bool]) -> Standing {
        let size = usize::try_from(self.tasks).unwrap_or(1).max(1);
        let mut tries = Vec::new();
        for (i, chunk) in right.chunks(size).enumerate() {
            let number = i32::try_from(i + 1).unwrap_or(i32::MAX);
            let right = chunk.iter().filter(|r| **r).count();
            let right = i32::try_from(right).unwrap_or(i32::MAX);
            let over = chunk.len() == size;
            let passed = over.then(|| right >= self.needed());
            tries.push(Try {
                number,
                rated: i32::try_from(chunk.len()).unwrap_or(i32::MAX),
                right,
                passed,
            });
            if passed == Some(true) {
                return Standing {
                    state: State::Passed,
                    tries,
                };
            }
            if passed == Some(false) && number >= self.tries {
                return Standing {
                    state: State::Failed,
                    tries,
                };
            }
        }
        let state = if tries.is_empty() {
            State::NotStarted
        } else {
            State::InProgress
        };
        Standing { state, tries }
    }
}

/// Where a rater stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    NotStarted,
    InProgress,
    Passed,
    /// Every try failed: not offered the batch's work.
    Failed,
}

impl State {
    /// Whether the rater is offered the batch's real tasks.
    pub fn qualified(self) -> bool {
        self == State::Passed
    }

    /// In words, for pages.
    pub fn words(self) -> &'static str {
        match self {
            State::NotStarted => "not started",
            State::InProgress => "in progress",
            State::Passed => "passed",
            State::Failed => "failed",
        }
    }
}

/// A rater's standing and their tries so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Standing {
    pub state: State,
    pub tries: Vec<Try>,
}

/// One try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Try {
    /// From 1.
    pub number: i32,
    /// Its gold tasks rated so far.
    pub rated: i32,
    pub right: i32,
    /// Whether it passed; absent while it is under way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(tasks: i32, pass_mark: f64, tries: i32) -> Qualification {
        Qualification::check(tasks, pass_mark, tries, false).expect("valid")
    }

    #[test]
    fn settings_are_checked_naming_each_field() {
        let refused = Qualification::check(0, 1.5, 11, true).expect_err("refused");
        assert_eq!(
            refused.keys().collect::<Vec<_>>(),
            ["qualify_pass", "qualify_tasks", "qualify_tries"]
        );
        assert!(Qualification::check(5, 0.0, 1, false).is_err());
        assert!(Qualification::check(5, f64::NAN, 1, false).is_err());
        assert_eq!(q(5, 0.8, 2).needed(), 4);
        assert_eq!(q(3, 0.5, 1).needed(), 2);
        assert_eq!(q(10, 1.0, 1).needed(), 10);
    }

    #[test]
    fn the_first_try_that_passes_qualifies() {
        let q = q(3, 0.66, 2);
        assert_eq!(q.standing(&[]).state, State::NotStarted);
        assert_eq!(q.standing(&[true]).state, State::InProgress);
        let passed = q.standing(&[true, false, true]);
        assert_eq!(passed.state, State::Passed);
        assert_eq!(
            passed.tries,
            [Try {
                number: 1,
                rated: 3,
                right: 2,
                passed: Some(true)
            }]
        );
        // Gold ratings after the pass change nothing.
        assert_eq!(
            q.standing(&[true, true, true, false, false, false]).state,
            State::Passed
        );
    }

    #[test]
    fn failing_every_try_fails_and_a_second_try_may_pass() {
        let q = q(2, 1.0, 2);
        let second = q.standing(&[true, false, true]);
        assert_eq!(second.state, State::InProgress);
        assert_eq!(second.tries[0].passed, Some(false));
        assert_eq!(second.tries[1].passed, None);
        assert_eq!(q.standing(&[true, false, true, true]).state, State::Passed);
        let failed = q.standing(&[false, false, true, false, true, true]);
        assert_eq!(failed.state, State::Failed);
        assert_eq!(failed.tries.len(), 2, "nothing after the last try counts");
    }
}
