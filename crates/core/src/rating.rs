//! Ratings and how they change: what a rater finishes an assignment with, what a rating
//! keeps beside its answers, and the checks on revising and reviewing one. The store
//! persists what these decide; it compares no states itself.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::evidence::Evidence;
use crate::gold::Grade;
use crate::lifecycle::{self, Outcome, Refusal, SkipReason, Status};
use crate::rubric::TaskAnswers;

/// A rating as stored: answers in the task's own orientation.
#[derive(Debug, Clone, PartialEq)]
pub struct Rating {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub task_id: Uuid,
    pub batch_id: Uuid,
    pub rater_id: Uuid,
    pub outcome: Outcome,
    pub status: Status,
    pub answers: TaskAnswers,
    pub skip_reason: Option<SkipReason>,
    /// The skip note, or why the task is out of scope.
    pub note: Option<String>,
    pub time_spent_s: i32,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub reviewed_at: Option<DateTime<Utc>>,
    pub review_comment: Option<String>,
    /// The ids of the rubric's warnings the answers met, which the rater confirmed.
    pub confirmed_warnings: Vec<String>,
    /// Code the rater ran in the browser (the task's orientation).
    pub evidence: Option<Evidence>,
    /// The last review's comments on single answers, by answer path (the task's
    /// orientation).
    pub review_fields: BTreeMap<String, String>,
    /// How a rating of a gold task did against its expected answers.
    pub gold_grade: Option<Grade>,
    /// Held for review first: it counts in no metric until a lead accepts it.
    pub review_first: bool,
    /// Set aside by a correction of its task (withdrawn, or corrected since: a stale
    /// rating of an earlier version): kept as it is, counted nowhere, and changed by
    /// nobody while so.
    pub set_aside: bool,
}

impl Rating {
    /// What the rating's history keeps of it before and after a change.
    pub fn snapshot(&self) -> Value {
        json!({
            "outcome": self.outcome, "status": self.status, "answers": self.answers,
            "skip_reason": self.skip_reason, "note": self.note, "time_spent_s": self.time_spent_s,
            "version": self.version, "confirmed_warnings": self.confirmed_warnings,
            "evidence": self.evidence, "review_fields": self.review_fields,
        })
    }

    /// Whether finishing its assignment with `finish` again would store what is stored:
    /// a retried or double-clicked submit, answered with this rating.
    pub fn is_finished_with(&self, finish: &Finish) -> bool {
        let (answers, _, note) = finish.parts();
        !self.status.is_draft()
            && self.outcome == finish.outcome()
            && self.answers == *answers
            && self.note.as_deref() == note
    }

    /// Whether its rater may revise it; the refusal says why not.
    pub fn check_revise(&self) -> Result<(), Refusal> {
        self.check_not_set_aside()?;
        lifecycle::check_revise(self.outcome, self.status)
    }

    /// Refused while a correction of its task sets it aside.
    fn check_not_set_aside(&self) -> Result<(), Refusal> {
        if self.set_aside {
            return Err(Refusal::Closed(
                "its task was withdrawn, or corrected since it was rated: the rating is kept \
                 as it is"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Whether its rater may still change it (see [`Rating::check_revise`]).
    pub fn can_revise(&self) -> bool {
        self.check_revise().is_ok()
    }

    /// Whether a lead may decide on it, whatever the decision.
    pub fn can_review(&self) -> bool {
        !self.set_aside && lifecycle::can_review(self.outcome, self.status)
    }

    /// Whether its rater may revise it, checked again once it is locked for the change:
    /// the revision may change the outcome, so only the status is asked.
    pub fn check_revise_locked(&self) -> Result<(), Refusal> {
        self.check_not_set_aside()?;
        lifecycle::check_revise_locked(self.status)
    }

    /// Whether a lead who read it at `version` may decide on it now: it has not changed
    /// since, and its outcome and status can be reviewed.
    pub fn check_review(&self, version: i32) -> Result<(), Refusal> {
        if self.version != version {
            return Err(Refusal::Stale {
                current: self.version,
            });
        }
        self.check_not_set_aside()?;
        lifecycle::check_review(self.outcome, self.status)
    }

    /// Whether revising it into `finish` gives its task's slot back to the pool: it
    /// becomes a skip, and was not one.
    pub fn revision_frees_the_task(&self, finish: &Finish) -> bool {
        finish.outcome().frees_the_task() && !self.outcome.frees_the_task()
    }
}

/// What a rater finishes an assignment with.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Rated {
        answers: TaskAnswers,
    },
    Skipped {
        reason: SkipReason,
        note: Option<String>,
    },
    OutOfScope {
        answers: TaskAnswers,
        explanation: String,
    },
}

impl Finish {
    /// The answers, skip reason and note it stores (a skip stores no answers; out of
    /// scope, its explanation is the note), borrowed from it.
    pub fn parts(&self) -> (Cow<'_, TaskAnswers>, Option<&SkipReason>, Option<&str>) {
        match self {
            Finish::Rated { answers } => (Cow::Borrowed(answers), None, None),
            Finish::Skipped { reason, note } => (
                Cow::Owned(TaskAnswers::default()),
                Some(reason),
                note.as_deref(),
            ),
            Finish::OutOfScope {
                answers,
                explanation,
            } => (Cow::Borrowed(answers), None, Some(explanation)),
        }
    }

    pub fn outcome(&self) -> Outcome {
        match self {
            Finish::Rated { .. } => Outcome::Rated,
            Finish::Skipped { .. } => Outcome::Skipped,
            Finish::OutOfScope { .. } => Outcome::OutOfScope,
        }
    }
}

/// What a rating keeps beside its answers, sent with a submission or a draft.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    /// The ids of the warnings the answers meet, confirmed by the rater (a submission's).
    pub confirmed_warnings: Vec<String>,
    /// The code the rater ran, in the task's orientation; `None` keeps what is stored,
    /// an empty one clears it.
    pub evidence: Option<Evidence>,
    /// A submission's grade, when its task is gold.
    pub gold_grade: Option<Grade>,
    /// A submission held for review first (its rater's gold accuracy is low).
    pub review_first: bool,
}

/// What becomes of the evidence a rating stores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EvidenceChange<'a> {
    /// None was sent: the stored evidence stays.
    Keep,
    /// Store this, or clear it (`None`: an empty one was sent).
    Set(Option<&'a Evidence>),
}

impl Extras {
    /// What the write does to the stored evidence.
    pub fn evidence_change(&self) -> EvidenceChange<'_> {
        match &self.evidence {
            None => EvidenceChange::Keep,
            Some(e) if e.is_empty() => EvidenceChange::Set(None),
            Some(e) => EvidenceChange::Set(Some(e)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
