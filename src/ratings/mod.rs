//! Ratings after the fact: a rater's history, reading one rating and its changes, and
//! revising it (through [`crate::services::revision`]).

use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::error::AppResult;
use crate::services::rating::{Access, turn_paths};
use crate::state::AppState;
use crate::store::page::{ListKind, Page};
use crate::store::ratings::HistoryRow;
use crate::web::paging::params;
use verdict_core::evidence::Evidence;
use verdict_core::lifecycle::{Outcome, Status};
use verdict_core::rubric::TaskAnswers;
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
