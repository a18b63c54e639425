//! A rater's work on their assignments: taking the next task, saving drafts, submitting,
//! skipping, marking out of scope, and a lead releasing an assignment. Requests come in
//! read ([`RatingRequest`]) and are checked by the core ([`Form::check`]); what is stored
//! is in the task's own order, whatever order the rater was shown.

use std::sync::Arc;

use argon2::password_hash::rand_core::{OsRng, RngCore};
use chrono::{Duration, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{ServiceError, ServiceResult, WarningView, qualification};
use crate::store::Store;
use crate::store::assignments::Release;
use verdict_core::assignment::Assignment;
use verdict_core::batch::Batch;
use verdict_core::evidence::Evidence;
use verdict_core::lifecycle::AssignmentState;
use verdict_core::overlap::Plan;
use verdict_core::qualification::State;
use verdict_core::rating::{Extras, Finish, Rating};
use verdict_core::rubric::{Mode, Rubric, ShownAnswers};
use verdict_core::submission::{self, Form, NewRating, RatingRequest, TimeSpent};
use verdict_core::task::Task;
use verdict_core::user::User;

/// An assignment of a rater's own with its batch and rubric. Anyone else's is not
/// found, so other raters' work is not even confirmed to exist.
pub struct Owned {
    pub assignment: Assignment,
    pub batch: Batch,
    pub rubric: Arc<Rubric>,
    /// Whether its rater is shown the task's external id
    /// ([`crate::access::sees_external_ids`]).
    pub sees_external_ids: bool,
}

impl Owned {
    /// Where its answers are checked: the batch's rubric and settings, and the order
    /// its rater was shown the pair in.
    pub fn form(&self) -> Form<'_> {
        Form {
            rubric: &self.rubric,
            batch: &self.batch,
            swapped: self.assignment.swapped,
        }
    }
}

/// A saved draft as its rater's form shows it: answers and code runs in the order the
/// pair was shown.
#[derive(Debug, Clone)]
pub struct ShownDraft {
    pub answers: ShownAnswers,
    pub evidence: Option<Evidence>,
    pub time_spent_s: i32,
}

/// The assignment `id`, if it is `user`'s.
pub async fn owned(store: &Store, id: Uuid, user: &User) -> ServiceResult<Owned> {
    let assignment = store
        .assignment(id)
        .await?
        .filter(|a| a.rater_id == user.id)
        .ok_or(ServiceError::NotFound)?;
    owned_of(store, assignment, user).await
}

/// An assignment of `user`'s as [`owned`] gives it, with its task and the draft saved on
/// it (answers in the orientation shown), all read in one query: what the form shows.
/// The task's `external_id` is its name as `user` may see it
/// ([`crate::access::task_name`]).
pub async fn owned_form(
    store: &Store,
    id: Uuid,
    user: &User,
) -> ServiceResult<(Owned, Task, Option<ShownDraft>)> {
    let form = store
        .assignment_form(id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let number = form.task_number();
    let (assignment, mut task, draft) = form.split();
    if assignment.rater_id != user.id {
        return Err(ServiceError::NotFound);
    }
    let owned = owned_of(store, assignment, user).await?;
    task.external_id = crate::access::task_name(owned.sees_external_ids, &task.external_id, number);
    let swapped = owned.assignment.swapped;
    let draft = draft.map(|d| ShownDraft {
        answers: d.answers.into_shown(&owned.rubric, swapped),
        evidence: d.evidence.map(|e| e.oriented(swapped)),
        time_spent_s: d.time_spent_s,
    });
    Ok((owned, task, draft))
}

/// The batch and rubric of a rater's own assignment (both from memory once read), after
/// checking that work on it may go on.
async fn owned_of(store: &Store, assignment: Assignment, user: &User) -> ServiceResult<Owned> {
    let Some(batch) = store.access_batch(assignment.batch_id).await? else {
        // A deleted batch's assignments ended with it: say so, by its name.
        return Err(super::corrections::gone_or_not_found(store, assignment.batch_id).await?);
    };
    let rubric = store.batch_rubric(&batch).await?;
    // Work on a task held (or held until lately) needs the batch open and the rater
    // still one of its raters; a finished one may still be looked at.
    if assignment.state.is_unfinished() {
        if !batch.state.takes_new_assignments() {
            return Err(ServiceError::Conflict(
                "this batch is closed; your draft is kept for when it opens again".into(),
            ));
        }
        if !crate::access::can_rate(store, batch.id, user).await? {
            return Err(ServiceError::Conflict(
                "you are no longer one of this batch's raters".into(),
            ));
        }
    }
    let sees_external_ids = crate::access::sees_external_ids(user, batch.raters_see_external_ids);
    Ok(Owned {
        assignment,
        batch,
        rubric,
        sees_external_ids,
    })
}

/// The rater's open assignment in a batch, or a new one; `None` when nothing is left.
/// In a batch that asks for a qualification, a rater who has not passed it is handed its
/// gold tasks only, and one who failed it nothing (409).
pub async fn next(store: &Store, batch_id: Uuid, user: &User) -> ServiceResult<Option<Assignment>> {
    if !crate::access::can_rate(store, batch_id, user).await? {
        return Err(ServiceError::NotFound);
    }
    let batch = store
        .access_batch(batch_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let randomize = batch.randomize;
    let swap = move || randomize && OsRng.next_u32() & 1 == 1;
    // A gold task at the batch's rate: a uniform draw in [0, 1) below it.
    let rate = batch.gold_rate;
    let gold = move || rate > 0.0 && f64::from(OsRng.next_u32()) / 4_294_967_296.0 < rate;
    let qualifying = match &batch.qualification {
        None => false,
        Some(qualification) => {
            let standing = qualification::standing_of(store, &batch, qualification, user).await?;
            match standing.state {
                State::Passed => false,
                State::NotStarted | State::InProgress => true,
                State::Failed => {
                    return Err(ServiceError::Conflict(format!(
                        "you did not pass this batch's qualification ({} of {} tr{} failed); \
                         its lead can tell you more",
                        standing.tries.len(),
                        qualification.tries,
                        if qualification.tries == 1 { "y" } else { "ies" }
                    )));
                }
            }
        }
    };
    let next = store
        .next_assignment(
            &batch,
            user.id,
            &user.skills_for(batch.routing),
            swap,
            gold,
            qualifying,
        )
        .await?;
    if next.is_none() && qualifying {
        return Err(ServiceError::Conflict(
            "this batch asks you to pass a qualification first, and it has no gold task left \
             that you have not had: ask its lead to add some"
                .into(),
        ));
    }
    Ok(next)
}

/// Releases an open assignment by hand: `lead` must lead its batch (or be an admin);
/// not found otherwise, refused if it is no longer open. Recorded in the audit log.
pub async fn release(store: &Store, id: Uuid, lead: &User) -> ServiceResult<Assignment> {
    let assignment = store.assignment(id).await?.ok_or(ServiceError::NotFound)?;
    let batch = store
        .visible_batch(assignment.batch_id, lead.id, lead.role)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let released = store.release(Release::One(id)).await?;
    let Some(mut ended) = released.into_iter().next() else {
        return Err(ServiceError::Conflict(format!(
            "this assignment is no longer open (it is {})",
            assignment.state
        )));
    };
    ended.state = AssignmentState::Expired;
    let detail = serde_json::json!({
        "batch": batch.batch.name, "batch_id": batch.batch.id, "task": assignment.task_id,
        "rater": assignment.rater_id
    });
    super::audit::record(store, lead, "assignment.release", &id.to_string(), detail).await;
    Ok(ended)
}

/// Ends every assignment whose lease ran out, so its task goes back to the pool (taking
/// a task sweeps its own batch; this keeps progress true where nobody is taking any).
pub async fn release_lapsed(store: &Store) -> ServiceResult<Vec<Assignment>> {
    Ok(store.release(Release::LeaseOver).await?)
}

/// The saved answers of an assignment, in the orientation its rater was shown.
pub async fn draft(store: &Store, owned: &Owned) -> ServiceResult<Option<(Rating, ShownAnswers)>> {
    let rating = store.rating_of_assignment(owned.assignment.id).await?;
    Ok(rating.map(|r| {
        let shown = r
            .answers
            .clone()
            .into_shown(&owned.rubric, owned.assignment.swapped);
        (r, shown)
    }))
}

/// `request` checked as `mode` asks, every broken field named at once.
pub fn checked<'r>(
    form: &Form<'r>,
    request: &RatingRequest,
    mode: Mode,
) -> ServiceResult<NewRating<'r>> {
    form.check(request, mode).map_err(ServiceError::Invalid)
}

/// A submission whose every warning its rater confirmed; refused (nothing stored) while
/// any is unconfirmed.
pub fn confirmed<'r>(mut rating: NewRating<'r>) -> ServiceResult<NewRating<'r>> {
    match rating.confirm() {
        Ok(()) => Ok(rating),
        Err(unconfirmed) => Err(ServiceError::Unconfirmed(
            unconfirmed.into_iter().map(WarningView::from).collect(),
        )),
    }
}

/// What submitting `request` would be refused for (an error), or else the rubric's
/// warnings it meets (answers it takes once the rater confirms them); nothing is saved.
pub fn check(owned: &Owned, request: &RatingRequest) -> ServiceResult<Vec<WarningView>> {
    let checked = checked(&owned.form(), request, Mode::Submit)?;
    Ok(checked
        .warnings
        .into_iter()
        .map(WarningView::from)
        .collect())
}

/// Saves a draft: only types are checked; the lease is renewed.
pub async fn save_draft(
    store: &Store,
    owned: &Owned,
    request: &RatingRequest,
) -> ServiceResult<Rating> {
    let checked = checked(&owned.form(), request, Mode::Draft)?;
    let lease = Utc::now() + Duration::minutes(i64::from(owned.batch.lease_minutes));
    let time = checked.time_spent.unwrap_or_default();
    Ok(store
        .save_draft(
            owned.assignment.id,
            &checked.answers,
            &checked.extras,
            time,
            lease,
        )
        .await??)
}

/// Submits the rating: every rule of the rubric, and every warning it meets confirmed.
pub async fn submit(
    store: &Store,
    owned: &Owned,
    user: &User,
    request: &RatingRequest,
) -> ServiceResult<Rating> {
    let checked = confirmed(checked(&owned.form(), request, Mode::Submit)?)?;
    finish_with(store, owned, user, checked.rated()).await
}

/// Skips the task, keeping the active time spent on it (`time_spent_s`, checked as a
/// rating's is; none keeps what its draft recorded).
pub async fn skip(
    store: &Store,
    owned: &Owned,
    user: &User,
    reason: &str,
    note: Option<&str>,
    time_spent_s: Option<&Value>,
) -> ServiceResult<Rating> {
    let (finish, time) = submission::skip(&owned.rubric, reason, note, time_spent_s)
        .map_err(ServiceError::Invalid)?;
    finish_with(store, owned, user, (finish, Extras::default(), time)).await
}

/// Why a prompt is out of scope, checked ([`submission::scope_explanation`]); the pages
/// check it before anything is stored.
pub fn scope_explanation(explanation: &str, batch: &Batch) -> ServiceResult<String> {
    submission::scope_explanation(explanation, batch).map_err(ServiceError::Invalid)
}

/// Marks an assignment out of scope. Answers already saved in its draft are kept, and
/// any given with the request laid over them.
pub async fn out_of_scope(
    store: &Store,
    owned: &Owned,
    user: &User,
    explanation: &str,
    request: RatingRequest,
) -> ServiceResult<Rating> {
    let explanation = scope_explanation(explanation, &owned.batch)?;
    let kept = draft(store, owned)
        .await?
        .map(|(_, shown)| shown)
        .unwrap_or_default();
    let checked = checked(&owned.form(), &request.over(&kept), Mode::OutOfScope)?;
    finish_with(store, owned, user, checked.out_of_scope(explanation)).await
}

/// Finishes the assignment with `finish`, graded first if its task is gold; without a
/// time given, the draft's is kept.
async fn finish_with(
    store: &Store,
    owned: &Owned,
    user: &User,
    (finish, mut extras, time): (Finish, Extras, Option<TimeSpent>),
) -> ServiceResult<Rating> {
    (extras.gold_grade, extras.review_first) = super::gold::assess(
        store,
        &owned.batch,
        owned.assignment.task_id,
        user.id,
        &finish,
        false,
    )
    .await?;
    Ok(store
        .finish(
            owned.assignment.id,
            user.id,
            &finish,
            &extras,
            time.unwrap_or_default(),
            &Plan::of(&owned.batch, &owned.rubric),
        )
        .await??)
}
