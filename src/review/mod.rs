//! What leads do with ratings: the review queue, decisions with optimistic concurrency,
//! and a task's ratings side by side.

use axum::Router;
use serde::Deserialize;
use uuid::Uuid;

use crate::error::{AppError, AppResult};
use crate::ratings::{Access, Viewer};
use crate::state::AppState;
use crate::store::ratings::Rating;
use crate::store::users::User;

pub mod api;
pub mod pages;

pub fn api_router() -> crate::api::ApiRouter {
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
    #[schema(schema_with = crate::api::decisions)]
    pub decision: String,
    #[schema(max_length = 5000)]
    pub comment: Option<String>,
    /// The rating version the lead saw.
    #[schema(minimum = 1)]
    pub version: i32,
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
    if !matches!(decision.decision.as_str(), "accept" | "return" | "reject") {
        fields.insert(
            "decision".into(),
            format!(
                "unknown decision {:?}: use accept, return or reject",
                decision.decision
            ),
        );
    }
    let comment = decision
        .comment
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    if decision.decision == "return" && comment.is_none() {
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
    if !fields.is_empty() {
        return Err(AppError::invalid(fields));
    }
    let outcome = state
        .store()
        .review(
            access.rating.id,
            lead.id,
            &decision.decision,
            comment,
            decision.version,
            access.batch.overlap,
        )
        .await?;
    match outcome {
        Ok(rating) => {
            tracing::info!(lead = %lead.username, rating = %rating.id, decision = %decision.decision, "rating reviewed");
            let detail = serde_json::json!({
                "decision": decision.decision, "batch": access.batch.name, "comment": comment
            });
            let target = rating.id.to_string();
            crate::audit::record(state, lead, "rating.review", &target, detail).await;
            Ok(rating)
        }
        Err(refusal) => Err(refusal.into()),
    }
}

/// A rating a lead may review: 404 unless they lead its batch; 403 for their own.
pub async fn reviewable(state: &AppState, id: Uuid, lead: &User) -> AppResult<Access> {
    let access = crate::ratings::access(state, id, lead).await?;
    if access.viewer == Viewer::Owner {
        return Err(AppError::Forbidden);
    }
    Ok(access)
}
