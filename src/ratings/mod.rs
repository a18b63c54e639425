//! Ratings after the fact: a rater's history, reading one rating, revising it.

use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::assign::{checked, confirm};
use crate::error::{AppError, AppResult};
use crate::services::finish::{over, scope_explanation, skip_of};
use crate::services::rating::{Access, Viewer, turn_paths};
use crate::state::AppState;
use crate::store::page::{ListKind, Page};
use crate::store::ratings::HistoryRow;
use crate::web::paging::params;
use verdict_core::evidence::Evidence;
use verdict_core::lifecycle::{self, Outcome, Status};
use verdict_core::rating::{Extras, Finish, Rating};
use verdict_core::rubric::{self, Mode, ShownAnswers, TaskAnswers};
use verdict_core::user::User;

pub mod api;
pub mod pages;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> Router<AppState> {
    pages::router()
}

/// Which page of the caller's own ratings to read (the page and the API take the same).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// `next_cursor` of the previous page; absent for the newest ratings.
    pub cursor: Option<String>,
    /// Ratings per page, newest first (default 50, at most 200).
    pub limit: Option<i64>,
}

/// A page of `user`'s own ratings, newest first, and the page length used.
pub async fn history(
    state: &AppState,
    user: &User,
    query: &HistoryQuery,
) -> AppResult<(Page<HistoryRow>, i64)> {
    let (cursor, limit) = params(ListKind::History, query.cursor.as_deref(), query.limit)?;
    let mut page = state
        .store()
        .ratings_of_rater(user.id, cursor, limit)
        .await?;
    page.items = page.items.into_iter().map(|r| r.shown_to(user)).collect();
    Ok((page, limit))
}

/// A rating in its rater's history (the answers are at `GET /api/v1/ratings/{id}`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HistoryItem {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub batch_id: Uuid,
    pub batch: String,
    /// The task's external id; for a rater of a batch that does not show them, a
    /// neutral name of the rater's own instead (`Task 17`).
    pub external_id: String,
    pub outcome: Outcome,
    pub status: Status,
    pub review_comment: Option<String>,
    pub version: i32,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    pub submitted_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl From<HistoryRow> for HistoryItem {
    fn from(row: HistoryRow) -> Self {
        let r = row.rating;
        Self {
            id: r.id,
            assignment_id: r.assignment_id,
            batch_id: r.batch_id,
            batch: row.batch_name,
            external_id: row.external_id,
            outcome: r.outcome,
            status: r.status,
            review_comment: r.review_comment,
            version: r.version,
            created_at: r.created_at,
            updated_at: r.updated_at,
            submitted_at: r.submitted_at,
        }
    }
}

/// One change to a rating: who made it, when, and the rating before and after.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ChangeView {
    /// `draft`, `submit`, `revise`, `review: accept`, ...
    pub action: String,
    /// Who made the change (`null` once the account is gone).
    pub actor: Option<String>,
    pub at: chrono::DateTime<chrono::Utc>,
    /// The rating before the change (`null` for the first entry) and after it: outcome,
    /// status, answers, skip reason, note, active time and version. Answers are in the
    /// caller's orientation, as for the rating itself.
    #[schema(value_type = Option<Object>)]
    pub before: Option<Value>,
    #[schema(value_type = Object)]
    pub after: Value,
}

/// A rating's history, oldest first, answers oriented for the viewer: its rater gets
/// them as they were shown (so a swap is never revealed), a lead canonical.
pub async fn changes(state: &AppState, access: &Access) -> AppResult<Vec<ChangeView>> {
    let turn = access.turn();
    let orient = |mut snapshot: Value| {
        if turn && let Some(Value::Object(answers)) = snapshot.get_mut("answers") {
            // Snapshots hold the answers as ratings do, in the task's own order.
            let task = TaskAnswers::deserialize(Value::Object(std::mem::take(answers)));
            *answers = task
                .unwrap_or_default()
                .into_shown(&access.rubric, true)
                .into_map();
        }
        if let Some(Value::Object(fields)) = snapshot.get_mut("review_fields") {
            let by_path = std::mem::take(fields).into_iter().collect();
            *fields = turn_paths(&by_path, turn).into_iter().collect();
        }
        if let Some(evidence) = snapshot.get_mut("evidence")
            && let Ok(read) = serde_json::from_value::<Evidence>(evidence.clone())
        {
            *evidence = serde_json::to_value(read.oriented(turn)).unwrap_or(Value::Null);
        }
        snapshot
    };
    Ok(state
        .store()
        .rating_history(access.rating.id)
        .await?
        .into_iter()
        .map(|(action, actor, at, before, after)| ChangeView {
            action,
            actor,
            at,
            before: before.map(|b| orient(b.0)),
            after: orient(after.0),
        })
        .collect())
}

/// A revision in progress, as its rater left it: the answers in their orientation, the
/// out-of-scope explanation being written, and the active time so far.
pub struct RevisionDraft {
    pub answers: ShownAnswers,
    pub explanation: Option<String>,
    pub time_spent_s: i32,
}

/// Saves what the rater has written into a revision so far, checked as a draft is (any
/// answer may be missing), without changing the rating itself; returns when it was saved.
pub async fn save_revision_draft(
    state: &AppState,
    access: &Access,
    input: &Value,
) -> AppResult<chrono::DateTime<chrono::Utc>> {
    if access.viewer != Viewer::Owner {
        return Err(AppError::Forbidden);
    }
    access.rating.check_revise()?;
    let mut given = input.as_object().cloned().unwrap_or_default();
    let explanation = match given.remove("explanation") {
        Some(Value::String(text)) => Some(text),
        _ => None,
    };
    // Evidence and confirmations count when the revision is sent, not in its draft.
    for key in [
        "outcome",
        "reason",
        "note",
        "evidence",
        "confirmed_warnings",
    ] {
        given.remove(key);
    }
    let min = access.batch.min_explanation();
    let questions = &access.batch.classifications;
    let mut answers = rubric::validate(
        &access.rubric,
        questions,
        &Value::Object(given),
        Mode::Draft,
        min,
    )
    .map_err(AppError::invalid)?;
    // Checked by `validate`: a whole number of seconds in range.
    let time = rubric::take_time_spent(&mut answers).unwrap_or(0);
    let draft = serde_json::json!({
        "answers": ShownAnswers::new(answers).into_task(&access.rubric, access.turn()),
        "explanation": explanation,
    });
    state
        .store()
        .save_revision_draft(access.rating.id, &draft, time)
        .await?
        .ok_or_else(|| {
            lifecycle::Refusal::Closed("a lead has already decided on this rating".into()).into()
        })
}

/// The revision its rater is writing, if they saved one.
pub async fn revision_draft(state: &AppState, access: &Access) -> AppResult<Option<RevisionDraft>> {
    let Some((draft, time_spent_s)) = state.store().revision_draft(access.rating.id).await? else {
        return Ok(None);
    };
    // Saved in the task's own order, as ratings are.
    let answers = draft
        .get("answers")
        .and_then(|answers| TaskAnswers::deserialize(answers).ok())
        .unwrap_or_default();
    Ok(Some(RevisionDraft {
        answers: answers.into_shown(&access.rubric, access.turn()),
        explanation: draft
            .get("explanation")
            .and_then(Value::as_str)
            .map(str::to_owned),
        time_spent_s,
    }))
}

/// Revises a rating with answers in the viewer's orientation. The body may also change
/// its outcome (`"outcome": "rated"`, `"out_of_scope"` or `"skipped"`), with what that
/// outcome needs: `explanation` for out of scope, `reason` (and a `note`) for a skip.
/// Answers are checked as a submission, or as out of scope (laid over the answers kept,
/// so a new explanation alone is enough). The change is kept in its history.
pub async fn revise(
    state: &AppState,
    access: &Access,
    user: &User,
    input: &Value,
) -> AppResult<Rating> {
    // Leads may read a rating; only its rater may change it.
    if access.viewer != Viewer::Owner {
        return Err(AppError::Forbidden);
    }
    access.rating.check_revise()?;
    let Some(given) = input.as_object() else {
        return Err(AppError::field("answers", "must be a JSON object"));
    };
    let mut given = given.clone();
    let mut text = |key: &str| -> AppResult<Option<String>> {
        match given.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(AppError::field(key, "must be a string")),
        }
    };
    let outcome = text("outcome")?;
    let (explanation, reason, note) = (text("explanation")?, text("reason")?, text("note")?);
    let outcome = match outcome {
        None => access.rating.outcome,
        Some(name) => name.parse::<Outcome>().map_err(|_| {
            AppError::field(
                "outcome",
                format!("unknown outcome {name:?}: use rated, out_of_scope or skipped"),
            )
        })?,
    };
    let time = given
        .get("time_spent_s")
        .and_then(Value::as_i64)
        .and_then(|t| i32::try_from(t).ok());
    let form = crate::assign::Form {
        rubric: &access.rubric,
        batch: &access.batch,
        swapped: access.turn(),
    };
    let (finish, extras) = match outcome {
        Outcome::Rated => {
            let mut checked = checked(&form, &Value::Object(given), Mode::Submit)?;
            confirm(&mut checked)?;
            let finish = Finish::Rated {
                answers: checked.answers,
            };
            (finish, checked.extras)
        }
        Outcome::OutOfScope => {
            let kept_note = (access.rating.outcome == Outcome::OutOfScope)
                .then(|| access.rating.note.clone())
                .flatten();
            let explanation = explanation.or(kept_note).unwrap_or_default();
            let explanation = scope_explanation(&explanation, &access.batch)?;
            let merged = over(&access.shown_answers(), &Value::Object(given));
            let checked = checked(&form, &merged, Mode::OutOfScope)?;
            let finish = Finish::OutOfScope {
                answers: checked.answers,
                explanation,
            };
            // Warnings are about rated answers: out of scope, none is recorded.
            let extras = Extras {
                confirmed_warnings: vec![],
                ..checked.extras
            };
            (finish, extras)
        }
        Outcome::Skipped => (
            skip_of(reason.as_deref().unwrap_or(""), note.as_deref())?,
            Extras::default(),
        ),
    };
    let mut extras = extras;
    (extras.gold_grade, extras.review_first) = crate::services::gold::assess(
        state.store(),
        &access.batch,
        access.rating.task_id,
        access.rating.rater_id,
        &finish,
        access.rating.review_first,
    )
    .await?;
    Ok(state
        .store()
        .revise(
            access.rating.id,
            user.id,
            &finish,
            &extras,
            time,
            access.batch.overlap,
        )
        .await??)
}
