//! A rater changing a rating after sending it: the revision they are writing, saved as
//! they go, and the revision sent, checked as a submission is (or as out of scope, or
//! as a skip, when it changes the outcome). Only the rating's rater may revise it.

use serde_json::Value;

use super::assignment::{checked, confirmed};
use super::rating::{Access, Viewer};
use super::{ServiceError, ServiceResult};
use crate::store::Store;
use verdict_core::lifecycle::{Outcome, Refusal};
use verdict_core::overlap::Plan;
use verdict_core::rating::{Extras, Rating};
use verdict_core::rubric::{Mode, ShownAnswers, TaskAnswers};
use verdict_core::submission::{self, Form, RevisionRequest, TimeSpent};
use verdict_core::user::User;

/// A revision in progress, as its rater left it: the answers in their orientation, the
/// out-of-scope explanation being written, and the active time so far.
pub struct RevisionDraft {
    pub answers: ShownAnswers,
    pub explanation: Option<String>,
    pub time_spent_s: i32,
}

/// Where the viewer's revision is checked: as they were shown the pair.
fn form(access: &Access) -> Form<'_> {
    Form {
        rubric: &access.rubric,
        batch: &access.batch,
        swapped: access.turn(),
    }
}

/// Refused unless the viewer is the rating's rater and it may still change: what a
/// revision is refused for first, before its body is read.
pub fn revisable(access: &Access) -> ServiceResult<()> {
    // Leads may read a rating; only its rater may change it.
    if access.viewer != Viewer::Owner {
        return Err(ServiceError::Forbidden);
    }
    Ok(access.rating.check_revise()?)
}

/// Saves what the rater has written into a revision so far, checked as a draft is (any
/// answer may be missing), without changing the rating itself; returns when it was
/// saved. Code runs and confirmations count when the revision is sent, not in its draft.
pub async fn save_draft(
    store: &Store,
    access: &Access,
    request: &RevisionRequest,
) -> ServiceResult<chrono::DateTime<chrono::Utc>> {
    revisable(access)?;
    let mut rating = request.rating.clone();
    (rating.evidence, rating.confirmed_warnings) = (None, None);
    let checked = checked(&form(access), &rating, Mode::Draft)?;
    let draft = serde_json::json!({
        "answers": checked.answers,
        "explanation": request.explanation,
    });
    let time = checked.time_spent.unwrap_or_default();
    store
        .save_revision_draft(access.rating.id, &draft, time)
        .await?
        .ok_or_else(|| Refusal::Closed("a lead has already decided on this rating".into()).into())
}

/// The revision its rater is writing, if they saved one.
pub async fn draft(store: &Store, access: &Access) -> ServiceResult<Option<RevisionDraft>> {
    let Some((draft, time_spent_s)) = store.revision_draft(access.rating.id).await? else {
        return Ok(None);
    };
    // Saved in the task's own order, as ratings are.
    let answers = draft
        .get("answers")
        .and_then(|answers| serde::Deserialize::deserialize(answers).ok())
        .unwrap_or_else(TaskAnswers::default);
    Ok(Some(RevisionDraft {
        answers: answers.into_shown(&access.rubric, access.turn()),
        explanation: draft
            .get("explanation")
            .and_then(Value::as_str)
            .map(str::to_owned),
        time_spent_s,
    }))
}

/// Revises a rating with answers in the viewer's orientation. The request may also
/// change its outcome, with what that outcome needs: an explanation for out of scope, a
/// reason (and a note) for a skip. Answers are checked as a submission, or as out of
/// scope (laid over the answers kept, so a new explanation alone is enough). The change
/// is kept in its history. A gold rating keeps the grade it got when first sent.
pub async fn revise(
    store: &Store,
    access: &Access,
    user: &User,
    request: RevisionRequest,
) -> ServiceResult<Rating> {
    revisable(access)?;
    let outcome = request
        .outcome(access.rating.outcome)
        .map_err(ServiceError::Invalid)?;
    let form = form(access);
    let (finish, extras, time): (_, _, Option<TimeSpent>) = match outcome {
        Outcome::Rated => confirmed(checked(&form, &request.rating, Mode::Submit)?)?.rated(),
        Outcome::OutOfScope => {
            let kept_note = (access.rating.outcome == Outcome::OutOfScope)
                .then(|| access.rating.note.clone())
                .flatten();
            let explanation = request.explanation.or(kept_note).unwrap_or_default();
            let explanation = submission::scope_explanation(&explanation, &access.batch)
                .map_err(ServiceError::Invalid)?;
            let rating = request.rating.over(&access.shown_answers());
            checked(&form, &rating, Mode::OutOfScope)?.out_of_scope(explanation)
        }
        Outcome::Skipped => {
            let reason = request.reason.as_deref().unwrap_or("");
            let given = request.rating.time_spent.as_ref();
            let (finish, time) =
                submission::skip(form.rubric, reason, request.note.as_deref(), given)
                    .map_err(ServiceError::Invalid)?;
            (finish, Extras::default(), time)
        }
    };
    let mut extras = extras;
    (_, extras.review_first) = super::gold::assess(
        store,
        &access.batch,
        access.rating.task_id,
        access.rating.rater_id,
        &finish,
        access.rating.review_first,
    )
    .await?;
    // A gold rating is graded once, when first sent, and a revision never grades it
    // again: otherwise a rater could revise until the grade (or the qualification standing
    // worked out from the grades) says right, learning the expected answers, or revise a
    // qualifying rating to watch later gold tasks slide into its try.
    extras.gold_grade = access.rating.gold_grade.clone();
    Ok(store
        .revise(
            access.rating.id,
            user.id,
            &finish,
            &extras,
            time,
            &Plan::of(&access.batch, &access.rubric),
        )
        .await??)
}
