//! What leads do with ratings: the review queue, decisions with optimistic concurrency,
//! and a task's ratings side by side.

use std::sync::Arc;

use axum::Router;
use serde::Deserialize;
use uuid::Uuid;

use crate::error::{AppError, AppResult};
use crate::lifecycle;
use crate::rubric::Rubric;
use crate::services::rating::{Access, Viewer};
use crate::state::AppState;
use crate::store::batches::BatchSummary;
use crate::store::page::{ListKind, Page};
use crate::store::ratings::Rating;
use crate::store::review::{QueueRow, TaskRating};
use crate::store::users::User;
use crate::web::paging::params;

pub mod api;
pub mod pages;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> Router<AppState> {
    pages::router()
}

/// A lead's decision, as sent.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// `accept`, `return` (with a comment for the rater) or `reject`.
    #[schema(schema_with = crate::web::openapi::decisions)]
    pub decision: String,
    #[schema(max_length = 5000)]
    pub comment: Option<String>,
    /// The rating version the lead saw.
    #[schema(minimum = 1)]
    pub version: i32,
}

/// Which part of the review queue to read: one batch or all the lead leads, a page at a
/// time (the page and `GET /api/v1/review` take the same parameters).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    /// Only this batch (its id).
    pub batch: Option<String>,
    /// `next_cursor` of the previous page; absent for the oldest ratings.
    pub cursor: Option<String>,
    /// Ratings per page, oldest first (default 50, at most 200).
    pub limit: Option<i64>,
}

/// A page of the review queue `lead` may work on, and the page length used. A batch
/// they cannot see is a 404, as everywhere.
pub async fn queue(
    state: &AppState,
    lead: &User,
    query: &QueueQuery,
) -> AppResult<(Page<QueueRow>, Option<Uuid>, i64)> {
    let (cursor, limit) = params(ListKind::ReviewQueue, query.cursor.as_deref(), query.limit)?;
    let batch = match query
        .batch
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty())
    {
        None => None,
        Some(text) => {
            let id = Uuid::parse_str(text)
                .map_err(|_| AppError::field("batch", "must be a batch id"))?;
            crate::batches::visible(state, id, lead).await?;
            Some(id)
        }
    };
    let page = state
        .store()
        .review_queue(lead.id, lead.role, batch, cursor, limit)
        .await?;
    Ok((page, batch, limit))
}

pub const MAX_COMMENT_CHARS: usize = 5000;

/// Checks and records a decision on a rating the lead may review (not their own).
pub async fn decide(
    state: &AppState,
    access: &Access,
    lead: &User,
    decision: &Decision,
) -> AppResult<Rating> {
    if access.viewer != Viewer::Lead || !lead.can_lead() {
        return Err(AppError::Forbidden);
    }
    let mut fields = crate::error::FieldErrors::new();
    let chosen = decision.decision.parse::<lifecycle::Decision>();
    if let Err(unknown) = &chosen {
        fields.insert("decision".into(), unknown.to_string());
    }
    let comment = decision
        .comment
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    if chosen.as_ref().is_ok_and(|d| d.needs_comment()) && comment.is_none() {
        fields.insert(
            "comment".into(),
            "is required when returning a rating: tell the rater what to change".into(),
        );
    }
    if comment.is_some_and(|c| c.chars().count() > MAX_COMMENT_CHARS) {
        fields.insert(
            "comment".into(),
            format!("must be at most {MAX_COMMENT_CHARS} characters"),
        );
    }
    let chosen = match chosen {
        Ok(chosen) if fields.is_empty() => chosen,
        _ => return Err(AppError::invalid(fields)),
    };
    let outcome = state
        .store()
        .review(
            access.rating.id,
            lead.id,
            chosen,
            comment,
            decision.version,
            access.batch.overlap,
        )
        .await?;
    match outcome {
        Ok(rating) => {
            tracing::info!(lead = %lead.username, rating = %rating.id, decision = %chosen, "rating reviewed");
            let detail = serde_json::json!({
                "decision": chosen, "batch": access.batch.name, "batch_id": access.batch.id,
                "comment": comment
            });
            let target = rating.id.to_string();
            crate::audit::record(state, lead, "rating.review", &target, detail).await;
            Ok(rating)
        }
        Err(refusal) => Err(refusal.into()),
    }
}

/// A task of a batch the lead may see, with every rating of it (drafts aside), answers in
/// the task's canonical orientation: the disagreement view. 404 for a batch the lead
/// does not lead or a task it does not hold.
pub async fn task_ratings(
    state: &AppState,
    lead: &User,
    batch_id: Uuid,
    external_id: &str,
) -> AppResult<(BatchSummary, Arc<Rubric>, Uuid, Vec<TaskRating>)> {
    let summary = crate::batches::visible(state, batch_id, lead).await?;
    let rubric = state.store().batch_rubric(&summary.batch).await?;
    let task_id = state
        .store()
        .task_by_external_id(batch_id, external_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let ratings = state.store().task_ratings(task_id).await?;
    Ok((summary, rubric, task_id, ratings))
}

/// A rating a lead may review: 404 unless they lead its batch; 403 for their own.
pub async fn reviewable(state: &AppState, id: Uuid, lead: &User) -> AppResult<Access> {
    let access = crate::services::rating::access(state.store(), id, lead).await?;
    if access.viewer == Viewer::Owner {
        return Err(AppError::Forbidden);
    }
    Ok(access)
}
