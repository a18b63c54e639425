//! Assignments: one rater on one task, under a lease. What may be done to one is decided
//! here from its state (and, for a repeated finish, the rating stored before); the store
//! carries out the step decided, in the transaction that read the state.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::evidence::Evidence;
use crate::lifecycle::{AssignmentState, Refusal};
use crate::rating::{Finish, Rating};
use crate::rubric::TaskAnswers;

/// One rater on one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub id: Uuid,
    pub task_id: Uuid,
    pub batch_id: Uuid,
    pub rater_id: Uuid,
    /// The rater was shown the task's B as "A" and A as "B".
    pub swapped: bool,
    pub state: AssignmentState,
    pub lease_expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

/// The answers saved on an assignment, in the task's orientation, with the code runs and
/// the time spent.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub answers: TaskAnswers,
    pub evidence: Option<Evidence>,
    pub time_spent_s: i32,
}

/// What saving a draft of an assignment comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftStep {
    /// Save it and renew the lease.
    Save,
    /// The lease ran out: save it (the rater can read it again) and refuse with
    /// [`Refusal::Expired`].
    SaveAndRefuse,
    /// Save nothing.
    Refuse(Refusal),
}

/// What finishing an assignment comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishStep {
    /// Store the rating as submitted and close the assignment with its outcome.
    Store,
    /// The same result is stored already (a retried or double-clicked submit): change
    /// nothing and answer with the stored rating.
    AlreadyStored,
    /// The lease ran out: keep what the rater wrote as the draft when it has answers
    /// (`keep_draft`), and refuse with [`Refusal::Expired`].
    Expired { keep_draft: bool },
    /// Store nothing.
    Refuse(Refusal),
}

impl Assignment {
    /// What saving a draft of it comes to.
    pub fn draft_step(&self) -> DraftStep {
        match self.state.check_work() {
            Ok(()) => DraftStep::Save,
            Err(Refusal::Expired) => DraftStep::SaveAndRefuse,
            Err(refusal) => DraftStep::Refuse(refusal),
        }
    }

    /// What finishing it with `finish` comes to, given the rating stored on it before
    /// (a draft, or a finished one when the request is a repeat).
    pub fn finish_step(&self, before: Option<&Rating>, finish: &Finish) -> FinishStep {
        match self.state.check_work() {
            Ok(()) => FinishStep::Store,
            Err(Refusal::Expired) => FinishStep::Expired {
                keep_draft: finish.outcome().has_answers(),
            },
            Err(_) if before.is_some_and(|r| r.is_finished_with(finish)) => {
                FinishStep::AlreadyStored
            }
            Err(refusal) => FinishStep::Refuse(refusal),
        }
    }
}

#[cfg(test)]
mod tests;
