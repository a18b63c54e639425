//! The rating lifecycle: what a rater finished a task with ([`Outcome`]), where the rating
//! stands ([`Status`]), what a lead decides on it ([`Decision`]), where a rater's hold on
//! a task stands ([`AssignmentState`]), whether a batch hands out work ([`BatchState`]),
//! why a task was given back ([`SkipReason`], one of its rubric's), where a judge run
//! stands ([`RunStatus`]),
//! and the transitions between them, as plain values with their rules beside them. Code
//! outside asks these types (`state.is_open()`), never compares their names as strings.
//!
//! Each name is stored in the database, sent in JSON and shown in pages as its
//! snake_case name (`out_of_scope`, `submitted`, `return`). The columns are TEXT on both
//! backends: the store binds `as_str()` and reads a stored name back with `TryFrom<String>`.
//!
//! Nothing here touches the web, the database or the runtime.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

/// A name that is not one of an enum's values; the message names the allowed ones
/// (`unknown decision "maybe": use accept, return or reject`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What kind of name it is: `outcome`, `status` or `decision`.
    pub what: &'static str,
    pub given: String,
    pub allowed: &'static [&'static str],
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, given) = (self.what, &self.given);
        let allowed = match self.allowed {
            [] => String::new(),
            [one] => (*one).to_owned(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        };
        write!(f, "unknown {what} {given:?}: use {allowed}")
    }
}

impl std::error::Error for UnknownName {}

/// Defines an enum stored, serialised and shown as the names given for its variants,
/// with `as_str`, `ALL`, `NAMES`, `Display`, `FromStr` (refusing with the allowed
/// names), `TryFrom<String>` and serde.
macro_rules! named {
    ($(#[$meta:meta])* $name:ident ($what:literal) { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in the order they are documented.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];
            /// Every name, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($text,)+];

            /// The name it is stored, sent and shown as.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The name for people: words, not an identifier (`out of scope`).
            pub fn label(self) -> String {
                self.as_str().replace('_', " ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(text: &str) -> Result<Self, UnknownName> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownName {
                        what: $what,
                        given: text.to_owned(),
                        allowed: Self::NAMES,
                    }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = Cow::<'de, str>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some(Self::NAMES.iter().copied()))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}

        impl TryFrom<String> for $name {
            type Error = UnknownName;

            /// How the store reads a stored name back (`#[sqlx(try_from = "String")]`).
            fn try_from(text: String) -> Result<Self, UnknownName> {
                text.parse()
            }
        }
    };
}

named! {
    /// What a rater finished a task with.
    Outcome("outcome") {
        /// Every question answered.
        Rated = "rated",
        /// Given back, with a reason; the task goes to another rater.
        Skipped = "skipped",
        /// The prompt is outside what the batch rates, with an explanation.
        OutOfScope = "out_of_scope",
    }
}

named! {
    /// Where a rating stands.
    Status("status") {
        /// Saved while the rater works; not yet finished.
        Draft = "draft",
        /// Finished by the rater and waiting for a lead (again, after a revision).
        Submitted = "submitted",
        /// Sent back to the rater by a lead, with a comment.
        Returned = "returned",
        /// Accepted by a lead.
        Accepted = "accepted",
        /// Rejected by a lead: final, and the task goes to another rater.
        Rejected = "rejected",
    }
}

named! {
    /// A lead's decision on a rating.
    Decision("decision") {
        Accept = "accept",
        /// Back to the rater, with a comment saying what to change.
        Return = "return",
        Reject = "reject",
    }
}

named! {
    /// Who made a rating: a person, or an LLM judge through its account. Judge ratings
    /// are kept out of every human figure (metrics, agreement, review, progress).
    RaterKind("rater kind") {
        Human = "human",
        Judge = "judge",
    }
}

named! {
    /// Where a judge run stands.
    RunStatus("run status") {
        /// Asking: a worker sends the calls still to make.
        Running = "running",
        /// Stopped by an admin; resuming asks only what it does not have yet.
        Paused = "paused",
        /// Stopped for good; what was answered is kept.
        Cancelled = "cancelled",
        /// Every call made, and something came of them (some may have failed; resuming
        /// asks those again).
        Finished = "finished",
        /// Every call made, and every one failed: the endpoint never answered usefully.
        /// Resuming asks them all again.
        Failed = "failed",
    }
}

impl RunStatus {
    /// What a run whose every call was made ends as, by how its calls ended: `failed`
    /// when nothing was answered and nothing unparsed but something failed, else
    /// `finished` (a run with no task to ask about has nothing that failed).
    pub fn ended(answered: i64, unparsed: i64, failed: i64) -> RunStatus {
        if answered == 0 && unparsed == 0 && failed > 0 {
            RunStatus::Failed
        } else {
            RunStatus::Finished
        }
    }

    /// Whether the run still holds its judge and batch (one open run per pair).
    pub fn is_open(self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::Paused)
    }

    /// Whether the run is over (for now): it has an end time.
    pub fn is_over(self) -> bool {
        matches!(
            self,
            RunStatus::Cancelled | RunStatus::Finished | RunStatus::Failed
        )
    }

    pub fn can_pause(self) -> bool {
        self == RunStatus::Running
    }

    /// A paused run resumes; so does a finished or failed one, to ask again the calls
    /// that failed.
    pub fn can_resume(self) -> bool {
        matches!(
            self,
            RunStatus::Paused | RunStatus::Finished | RunStatus::Failed
        )
    }

    pub fn can_cancel(self) -> bool {
        self.is_open()
    }
}

named! {
    /// What became of one judge call.
    CallStatus("call status") {
        /// Every answer read and accepted by the rubric.
        Answered = "answered",
        /// The endpoint answered, but not every answer could be read: nothing of it is a
        /// score. It is never asked again (the output is kept to see why).
        Unparsed = "unparsed",
        /// The endpoint never answered usefully (errors, time-outs, retries spent); asked
        /// again when the run resumes.
        Failed = "failed",
    }
}

named! {
    /// Where one rater's hold on one task stands.
    AssignmentState("assignment state") {
        /// Held by its rater, who may work on it until the lease runs out.
        Open = "open",
        /// Finished with a rating: rated or out of scope.
        Done = "done",
        /// Given back by its rater with a reason; the task went to another rater.
        Skipped = "skipped",
        /// The lease ran out (or a lead released it) before it was finished; any draft
        /// is kept, and the rater may pick it up again while the task has room.
        Expired = "expired",
    }
}

impl AssignmentState {
    /// Whether its rater holds it now.
    pub fn is_open(self) -> bool {
        self == AssignmentState::Open
    }

    /// Whether its rater is (or was lately) working on it: open, or expired with its
    /// draft kept. Work on such an assignment needs the batch open and the rater still
    /// one of its raters; a finished one may only be looked at.
    pub fn is_unfinished(self) -> bool {
        matches!(self, AssignmentState::Open | AssignmentState::Expired)
    }

    /// The state an assignment finished with this outcome has.
    pub fn finished_with(outcome: Outcome) -> AssignmentState {
        if outcome.frees_the_task() {
            AssignmentState::Skipped
        } else {
            AssignmentState::Done
        }
    }

    /// Whether a rater may finish (or save a draft of) an assignment in this state; the
    /// refusal says why not. `Expired` is its own refusal: the caller keeps the answers
    /// sent as the rating's draft.
    pub fn check_work(self) -> Result<(), Refusal> {
        match self {
            AssignmentState::Open => Ok(()),
            AssignmentState::Expired => Err(Refusal::Expired),
            AssignmentState::Done | AssignmentState::Skipped => Err(Refusal::Closed(
                "this task is already finished; open it from your ratings to revise it".into(),
            )),
        }
    }
}

named! {
    /// Whether a batch hands out work. Its refusal says "unknown state": the settings
    /// show it under their `state` field as it is.
    BatchState("state") {
        /// Raters take tasks and work on the ones they hold.
        Open = "open",
        /// No new assignments and no work on held ones; drafts are kept for when it
        /// opens again, and everything finished can still be read and reviewed.
        Closed = "closed",
    }
}

impl BatchState {
    pub fn is_open(self) -> bool {
        self == BatchState::Open
    }

    /// Whether raters may take new tasks from it (and go on with the ones they hold).
    pub fn takes_new_assignments(self) -> bool {
        self.is_open()
    }
}

/// Why a rater gives a task back: one of the reasons the batch's rubric offers
/// ([`crate::rubric::Rubric::skip_options`]), stored, sent and exported as its value
/// (`unfamiliar`, `cannot_assess`). Only a value of the right form makes one: 1 to 64
/// lower-case letters, digits or underscores, from a letter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct SkipReason(String);

impl SkipReason {
    /// The value it is stored, sent and shown as.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `text` has the form of a reason's value.
    pub fn is_value(text: &str) -> bool {
        !text.is_empty()
            && text.len() <= 64
            && text.starts_with(|c: char| c.is_ascii_lowercase())
            && text
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }
}

/// A text that cannot be a skip reason's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAReason(pub String);

impl fmt::Display for NotAReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a skip reason: lower-case letters, digits and underscores",
            self.0
        )
    }
}

impl std::error::Error for NotAReason {}

impl FromStr for SkipReason {
    type Err = NotAReason;

    fn from_str(text: &str) -> Result<Self, NotAReason> {
        if Self::is_value(text) {
            Ok(Self(text.to_owned()))
        } else {
            Err(NotAReason(text.to_owned()))
        }
    }
}

impl TryFrom<String> for SkipReason {
    type Error = NotAReason;

    /// How the store reads a stored reason back.
    fn try_from(text: String) -> Result<Self, NotAReason> {
        if Self::is_value(&text) {
            Ok(Self(text))
        } else {
            Err(NotAReason(text))
        }
    }
}

impl utoipa::PartialSchema for SkipReason {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some("^[a-z][a-z0-9_]{0,63}$"))
            .description(Some("One of the skip reasons the batch's rubric lists."))
            .into()
    }
}

impl utoipa::ToSchema for SkipReason {}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Status {
    /// The statuses a finished rating can have (every one but `draft`): what an export
    /// may be filtered by.
    pub const FINISHED: &'static [Status] = &[
        Status::Submitted,
        Status::Returned,
        Status::Accepted,
        Status::Rejected,
    ];
    /// Their names.
    pub const FINISHED_NAMES: &'static [&'static str] =
        &["submitted", "returned", "accepted", "rejected"];

    /// Whether the rater is still working on it (it is nobody else's business yet).
    pub fn is_draft(self) -> bool {
        self == Status::Draft
    }

    /// Whether the rating is finished but no lead has settled it: the rater may still
    /// change it (a returned rating goes back to `submitted` when they do).
    pub fn can_revise(self) -> bool {
        matches!(self, Status::Submitted | Status::Returned)
    }

    /// Whether a lead may (still) decide on it: it is finished and not rejected. An
    /// accepted rating may be returned or rejected after all; a rejection is final.
    pub fn can_review(self) -> bool {
        !matches!(self, Status::Draft | Status::Rejected)
    }

    /// Whether a rated rating in this status is in the metrics.
    pub fn counts(self) -> bool {
        matches!(self, Status::Submitted | Status::Accepted)
    }

    /// The status a finished rating may be exported by, parsed; drafts are refused.
    pub fn parse_finished(text: &str) -> Result<Status, UnknownName> {
        match text.parse::<Status>() {
            Ok(status) if status != Status::Draft => Ok(status),
            _ => Err(UnknownName {
                what: "status",
                given: text.to_owned(),
                allowed: Status::FINISHED_NAMES,
            }),
        }
    }
}

impl Outcome {
    /// Whether the rating has answers a lead can judge and a rater can revise (a skip has
    /// none).
    pub fn has_answers(self) -> bool {
        self != Outcome::Skipped
    }

    /// Whether the rater's task slot goes back to the pool with it.
    pub fn frees_the_task(self) -> bool {
        self == Outcome::Skipped
    }

    /// The history's name for finishing an assignment with this outcome.
    pub fn finish_action(self) -> &'static str {
        match self {
            Outcome::Rated => "submit",
            Outcome::Skipped => "skip",
            Outcome::OutOfScope => "out of scope",
        }
    }
}

impl Decision {
    /// The status the rating has after it.
    pub fn status(self) -> Status {
        match self {
            Decision::Accept => Status::Accepted,
            Decision::Return => Status::Returned,
            Decision::Reject => Status::Rejected,
        }
    }

    /// Whether the lead must say why (the rater is to change something).
    pub fn needs_comment(self) -> bool {
        self == Decision::Return
    }

    /// Whether the task's slot goes back to the pool, so another rater rates it.
    pub fn frees_the_task(self) -> bool {
        self == Decision::Reject
    }
}

/// The part of the metrics' rule that reads a rating's lifecycle: only rated ratings
/// that are submitted or accepted count. Whole, the rule is [`Standing::counts_in_metrics`].
pub fn counts_in_metrics(outcome: Outcome, status: Status) -> bool {
    outcome == Outcome::Rated && status.counts()
}

/// Where a rating stands with its batch's metrics: everything the rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// A person's rating or an LLM judge's (measured apart).
    pub kind: RaterKind,
    /// A rating of a gold task (graded, never a figure of the batch).
    pub gold: bool,
    /// Held for review first: not a figure until a lead accepts it.
    pub review_first: bool,
    /// Set aside by a correction: its task is withdrawn, or was corrected after it (a
    /// stale rating, of an earlier version). Never a figure while so.
    pub set_aside: bool,
    pub outcome: Outcome,
    pub status: Status,
}

impl Standing {
    /// Whether the rating is one of the batch's figures at all: a person's, not of a
    /// gold task, not set aside by a correction, and not held for review first unless
    /// accepted. The metrics count the
    /// excluded ones among these (drafts, skips, ...) and leave the rest unmentioned.
    pub fn in_figures(self) -> bool {
        self.kind == RaterKind::Human
            && !self.gold
            && !self.set_aside
            && (!self.review_first || self.status == Status::Accepted)
    }

    /// The metrics' rule, in one place: whether the rating counts in its batch's
    /// metrics. The export's `counts_in_metrics`, the per-task view, the disagreement
    /// list and the review queue's disagreement filter all ask this.
    pub fn counts_in_metrics(self) -> bool {
        self.in_figures() && counts_in_metrics(self.outcome, self.status)
    }
}

/// Why a rating is left out of the metrics, in this order of precedence: a draft, a
/// skip, out of scope, rejected, returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    Draft,
    Skipped,
    OutOfScope,
    Rejected,
    Returned,
}

/// The one reason a rating is excluded from the metrics; `None` when it counts.
pub fn exclusion(outcome: Outcome, status: Status) -> Option<Exclusion> {
    if counts_in_metrics(outcome, status) {
        return None;
    }
    Some(match (status, outcome) {
        (Status::Draft, _) => Exclusion::Draft,
        (_, Outcome::Skipped) => Exclusion::Skipped,
        (_, Outcome::OutOfScope) => Exclusion::OutOfScope,
        (Status::Rejected, _) => Exclusion::Rejected,
        _ => Exclusion::Returned,
    })
}

/// Why a change to an assignment or a rating was refused. The web layer turns each into
/// an HTTP error in one place (`error.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The assignment is finished, or the rating is no longer the caller's to change.
    Closed(Cow<'static, str>),
    /// The assignment's lease ran out and its task went back to the pool. Answers sent
    /// with the refused request were kept as the rating's draft.
    Expired,
    /// The rating changed since the caller read it; this is its version now.
    Stale { current: i32 },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Closed(why) => f.write_str(why),
            Refusal::Expired => f.write_str("the assignment's time ran out"),
            Refusal::Stale { current } => {
                write!(f, "the rating changed; it is at version {current} now")
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// Whether the rater may revise a rating with this outcome and status; the refusal says
/// why not.
pub fn check_revise(outcome: Outcome, status: Status) -> Result<(), Refusal> {
    if !outcome.has_answers() {
        Err(Refusal::Closed(
            "a skipped task has no answers to revise".into(),
        ))
    } else if !status.can_revise() {
        Err(Refusal::Closed(
            format!("a {status} rating cannot be revised").into(),
        ))
    } else {
        Ok(())
    }
}

/// Whether the rater may revise a rating in this status, checked again once the rating
/// is locked (the outcome may change in a revision, so only the status is checked).
pub fn check_revise_locked(status: Status) -> Result<(), Refusal> {
    match status {
        Status::Draft => Err(Refusal::Closed(
            "this rating is still a draft; submit it from its task".into(),
        )),
        s if !s.can_revise() => Err(Refusal::Closed(
            "a lead has already decided on this rating".into(),
        )),
        _ => Ok(()),
    }
}

/// Whether a lead may decide on a rating with this outcome and status (whatever the
/// decision); the refusal says why not.
pub fn check_review(outcome: Outcome, status: Status) -> Result<(), Refusal> {
    let why = match (status, outcome) {
        (Status::Draft, _) => "a draft is not ready for review",
        (Status::Rejected, _) => "a rejected rating stays rejected",
        (_, Outcome::Skipped) => "a skip is not reviewed",
        _ => return Ok(()),
    };
    Err(Refusal::Closed(why.into()))
}

/// Whether a lead may decide on it (see [`check_review`]).
pub fn can_review(outcome: Outcome, status: Status) -> bool {
    check_review(outcome, status).is_ok()
}

/// Whether the rater may still change it (see [`check_revise`]).
pub fn can_revise(outcome: Outcome, status: Status) -> bool {
    check_revise(outcome, status).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_name_the_allowed() {
        for o in Outcome::ALL {
            assert_eq!(o.as_str().parse::<Outcome>(), Ok(*o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        for s in Status::ALL {
            assert_eq!(s.to_string().parse::<Status>(), Ok(*s));
        }
        for d in Decision::ALL {
            let back: Decision = serde_json::from_value(d.as_str().into()).unwrap();
            assert_eq!(back, *d);
        }
        assert_eq!(Outcome::NAMES, ["rated", "skipped", "out_of_scope"]);
        assert_eq!(
            "maybe".parse::<Decision>().unwrap_err().to_string(),
            "unknown decision \"maybe\": use accept, return or reject"
        );
        assert_eq!(
            "Rated".parse::<Outcome>().unwrap_err().to_string(),
            "unknown outcome \"Rated\": use rated, skipped or out_of_scope"
        );
        let refused = serde_json::from_value::<Status>("done".into()).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("use draft, submitted, returned"),
            "{refused}"
        );
        assert_eq!(Outcome::OutOfScope.label(), "out of scope");
    }

    #[test]
    fn a_run_whose_every_call_failed_ends_failed() {
        assert_eq!(RunStatus::ended(0, 0, 6), RunStatus::Failed);
        assert_eq!(RunStatus::ended(1, 0, 5), RunStatus::Finished);
        assert_eq!(RunStatus::ended(0, 1, 5), RunStatus::Finished);
        assert_eq!(RunStatus::ended(6, 0, 0), RunStatus::Finished);
        // Nothing to ask about: nothing failed either.
        assert_eq!(RunStatus::ended(0, 0, 0), RunStatus::Finished);
    }

    #[test]
    fn a_failed_run_resumes_like_a_finished_one_and_holds_nothing() {
        use RunStatus::*;
        let open: Vec<RunStatus> = RunStatus::ALL
            .iter()
            .copied()
            .filter(|s| s.is_open())
            .collect();
        assert_eq!(
            open,
            [Running, Paused],
            "only these hold the judge and batch"
        );
        let resumable: Vec<RunStatus> = RunStatus::ALL
            .iter()
            .copied()
            .filter(|s| s.can_resume())
            .collect();
        assert_eq!(resumable, [Paused, Finished, Failed]);
        let over: Vec<RunStatus> = RunStatus::ALL
            .iter()
            .copied()
            .filter(|s| s.is_over())
            .collect();
        assert_eq!(over, [Cancelled, Finished, Failed]);
        for status in RunStatus::ALL {
            assert_eq!(status.can_pause(), *status == Running, "{status}");
            assert_eq!(status.can_cancel(), status.is_open(), "{status}");
        }
        assert_eq!("failed".parse(), Ok(Failed));
        assert_eq!(Failed.label(), "failed");
    }

    #[test]
    fn assignments_are_worked_on_only_while_open() {
        use AssignmentState as A;
        assert_eq!(A::NAMES, ["open", "done", "skipped", "expired"]);
        assert!(A::Open.is_open());
        assert!(A::ALL.iter().filter(|a| a.is_open()).eq([&A::Open]));
        assert_eq!(A::Open.check_work(), Ok(()));
        assert_eq!(A::Expired.check_work(), Err(Refusal::Expired));
        for finished in [A::Done, A::Skipped] {
            assert!(!finished.is_unfinished(), "{finished}");
            assert_eq!(
                finished.check_work(),
                Err(Refusal::Closed(
                    "this task is already finished; open it from your ratings to revise it".into()
                ))
            );
        }
        // An expired assignment still has its rater's draft, so its batch's rules apply.
        assert!(A::Open.is_unfinished() && A::Expired.is_unfinished());
    }

    #[test]
    fn a_skip_frees_the_assignment_and_anything_else_finishes_it() {
        use AssignmentState as A;
        assert_eq!(A::finished_with(Outcome::Rated), A::Done);
        assert_eq!(A::finished_with(Outcome::OutOfScope), A::Done);
        assert_eq!(A::finished_with(Outcome::Skipped), A::Skipped);
        for o in Outcome::ALL {
            assert!(!A::finished_with(*o).is_unfinished(), "{o}");
        }
    }

    #[test]
    fn only_an_open_batch_hands_out_work() {
        assert_eq!(BatchState::NAMES, ["open", "closed"]);
        assert!(BatchState::Open.takes_new_assignments());
        assert!(!BatchState::Closed.takes_new_assignments() && !BatchState::Closed.is_open());
        // The settings page shows this message under the field as it is.
        assert_eq!(
            "shut".parse::<BatchState>().unwrap_err().to_string(),
            "unknown state \"shut\": use open or closed"
        );
        assert_eq!(serde_json::to_value(BatchState::Closed).unwrap(), "closed");
    }

    #[test]
    fn a_skip_reason_is_a_value_of_lower_case_letters_digits_and_underscores() {
        let reason: SkipReason = "cannot_assess".parse().unwrap();
        assert_eq!(reason.as_str(), "cannot_assess");
        assert_eq!(serde_json::to_value(&reason).unwrap(), "cannot_assess");
        for bad in ["", "Bored", "2late", "too-long", "a b", &"x".repeat(65)] {
            assert!(bad.parse::<SkipReason>().is_err(), "{bad:?}");
        }
        assert_eq!(
            SkipReason::try_from("too long".to_owned())
                .unwrap_err()
                .to_string(),
            "\"too long\" is not a skip reason: lower-case letters, digits and underscores"
        );
    }

    #[test]
    fn exports_filter_by_finished_statuses_only() {
        assert_eq!(Status::parse_finished("accepted"), Ok(Status::Accepted));
        let draft = Status::parse_finished("draft").unwrap_err();
        assert_eq!(
            draft.to_string(),
            "unknown status \"draft\": use submitted, returned, accepted or rejected"
        );
        let names: Vec<&str> = Status::FINISHED.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, Status::FINISHED_NAMES);
    }

    #[test]
    fn only_rated_submitted_or_accepted_ratings_count() {
        for o in Outcome::ALL {
            for s in Status::ALL {
                let counts = counts_in_metrics(*o, *s);
                let expected =
                    *o == Outcome::Rated && matches!(s, Status::Submitted | Status::Accepted);
                assert_eq!(counts, expected, "{o} {s}");
                assert_eq!(exclusion(*o, *s).is_none(), counts, "{o} {s}");
            }
        }
    }

    #[test]
    fn only_a_persons_rating_of_an_ordinary_task_not_held_counts() {
        let rated = Standing {
            kind: RaterKind::Human,
            gold: false,
            review_first: false,
            set_aside: false,
            outcome: Outcome::Rated,
            status: Status::Submitted,
        };
        assert!(rated.counts_in_metrics());
        let set_aside = Standing {
            set_aside: true,
            ..rated
        };
        assert!(!set_aside.counts_in_metrics() && !set_aside.in_figures());
        let gold = Standing {
            gold: true,
            ..rated
        };
        assert!(!gold.counts_in_metrics() && !gold.in_figures());
        let judge = Standing {
            kind: RaterKind::Judge,
            ..rated
        };
        assert!(!judge.counts_in_metrics());
        let held = Standing {
            review_first: true,
            ..rated
        };
        assert!(!held.counts_in_metrics(), "held until a lead accepts it");
        let accepted = Standing {
            status: Status::Accepted,
            ..held
        };
        assert!(accepted.counts_in_metrics());
        let skipped = Standing {
            outcome: Outcome::Skipped,
            ..rated
        };
        assert!(skipped.in_figures() && !skipped.counts_in_metrics());
    }

    #[test]
    fn exclusions_take_the_first_reason_in_order() {
        use Exclusion as E;
        use Outcome as O;
        use Status as S;
        let cases = [
            (O::Skipped, S::Draft, E::Draft),
            (O::OutOfScope, S::Draft, E::Draft),
            (O::Skipped, S::Rejected, E::Skipped),
            (O::OutOfScope, S::Accepted, E::OutOfScope),
            (O::OutOfScope, S::Rejected, E::OutOfScope),
            (O::Rated, S::Rejected, E::Rejected),
            (O::Rated, S::Returned, E::Returned),
        ];
        for (o, s, reason) in cases {
            assert_eq!(exclusion(o, s), Some(reason), "{o} {s}");
        }
    }

    #[test]
    fn decisions_lead_to_their_status() {
        assert_eq!(Decision::Accept.status(), Status::Accepted);
        assert_eq!(Decision::Return.status(), Status::Returned);
        assert_eq!(Decision::Reject.status(), Status::Rejected);
        assert!(Decision::Return.needs_comment() && !Decision::Accept.needs_comment());
        assert!(Decision::Reject.frees_the_task() && !Decision::Return.frees_the_task());
        // Every decision leads to a status the rater can revise only when returned.
        for d in Decision::ALL {
            assert_eq!(d.status().can_revise(), *d == Decision::Return, "{d}");
        }
    }

    #[test]
    fn raters_revise_until_a_lead_settles_it() {
        assert!(can_revise(Outcome::Rated, Status::Submitted));
        assert!(can_revise(Outcome::OutOfScope, Status::Returned));
        for s in [Status::Draft, Status::Accepted, Status::Rejected] {
            assert!(!can_revise(Outcome::Rated, s), "{s}");
        }
        assert_eq!(
            check_revise(Outcome::Rated, Status::Accepted),
            Err(Refusal::Closed(
                "a accepted rating cannot be revised".into()
            ))
        );
        assert_eq!(
            check_revise(Outcome::Skipped, Status::Submitted),
            Err(Refusal::Closed(
                "a skipped task has no answers to revise".into()
            ))
        );
        assert!(check_revise_locked(Status::Returned).is_ok());
        assert!(check_revise_locked(Status::Draft).is_err());
        assert!(check_revise_locked(Status::Rejected).is_err());
    }

    #[test]
    fn leads_review_finished_ratings_until_rejected() {
        assert!(can_review(Outcome::Rated, Status::Submitted));
        assert!(can_review(Outcome::OutOfScope, Status::Returned));
        assert!(can_review(Outcome::Rated, Status::Accepted));
        assert!(!can_review(Outcome::Skipped, Status::Submitted));
        assert_eq!(
            check_review(Outcome::Rated, Status::Draft),
            Err(Refusal::Closed("a draft is not ready for review".into()))
        );
        assert_eq!(
            check_review(Outcome::Skipped, Status::Rejected),
            Err(Refusal::Closed("a rejected rating stays rejected".into()))
        );
        assert!(Status::Submitted.can_review() && !Status::Rejected.can_review());
    }
}
