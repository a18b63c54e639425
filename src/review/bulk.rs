//! Bulk decisions: every waiting rating the queue's filters keep (or those the lead
//! picked of them), each decided as a normal review, skipping (and reporting) those that
//! changed since the lead saw them. Accepting all is the API's; the queue page also
//! returns (one comment for all) and rejects the ratings a lead ticks.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::queue::{FilterText, filters, matching};
use super::reviewable;
use crate::error::{AppError, AppResult};
use crate::services::review::{ReviewRequest, decide};
use crate::state::AppState;
use verdict_core::lifecycle;
use verdict_core::user::User;

/// A rating the lead saw in the queue, with the version they saw.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Seen {
    pub rating_id: Uuid,
    #[schema(minimum = 1)]
    pub version: i32,
}

/// Accept every waiting rating the queue's filters keep (the filters of `GET
/// /api/v1/review`, status aside: only submitted ratings are accepted).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkAccept {
    /// Only this batch (its id).
    pub batch: Option<String>,
    /// Only this rater's ratings (their username).
    pub rater: Option<String>,
    /// `rated` or `out_of_scope`.
    pub outcome: Option<String>,
    /// With `answer`: an answer's path, e.g. `sxs`.
    pub question: Option<String>,
    /// The stored value `question` must have.
    pub answer: Option<String>,
    /// Only ratings that disagree with the others of their task.
    pub disagrees: Option<bool>,
    /// Only ratings whose rater confirmed this warning of the rubric (its id), or `any`.
    pub warning: Option<String>,
    /// Only ratings held for review first.
    pub review_first: Option<bool>,
    /// The ratings the lead looked at, each with the version seen: only these are
    /// accepted, and one that changed since (or no longer matches) is skipped. Absent:
    /// every matching rating as it is now.
    pub seen: Option<Vec<Seen>>,
}

/// A rating a bulk accept left alone, and why.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SkippedRating {
    pub rating_id: Uuid,
    pub reason: String,
}

/// What a bulk accept did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BulkAccepted {
    /// How many ratings were accepted.
    pub accepted: usize,
    pub accepted_ids: Vec<Uuid>,
    /// Ratings that changed meanwhile or no longer match, left as they are.
    pub skipped: Vec<SkippedRating>,
}

/// Accepts every waiting rating `filters` keep (or those of `seen` among them), each as
/// a normal review with its history and audit entry. A rating that changed meanwhile is
/// skipped and reported, never overwritten.
pub async fn accept_all(
    state: &AppState,
    lead: &User,
    text: FilterText<'_>,
    seen: Option<&[Seen]>,
) -> AppResult<BulkAccepted> {
    let (accepted_ids, skipped) =
        decide_all(state, lead, text, seen, lifecycle::Decision::Accept, None).await?;
    Ok(BulkAccepted {
        accepted: accepted_ids.len(),
        accepted_ids,
        skipped,
    })
}

/// Decides every waiting rating `filters` keep (or those of `seen` among them) the same
/// way, each as a normal review with its history and audit entry; a return needs the
/// `comment` every rater gets. Returns the ratings decided and those left alone (changed
/// meanwhile, no longer waiting), never overwritten.
pub async fn decide_all(
    state: &AppState,
    lead: &User,
    text: FilterText<'_>,
    seen: Option<&[Seen]>,
    decision: lifecycle::Decision,
    comment: Option<String>,
) -> AppResult<(Vec<Uuid>, Vec<SkippedRating>)> {
    let comment = comment.filter(|c| !c.trim().is_empty());
    if decision == lifecycle::Decision::Return && comment.is_none() {
        return Err(AppError::field(
            "comment",
            "is required to return ratings: tell the raters what to change",
        ));
    }
    if let Some(at) = seen.and_then(|seen| seen.iter().position(|s| s.version < 1)) {
        return Err(AppError::field(
            &format!("seen[{at}].version"),
            "must be at least 1: a rating's versions start at 1",
        ));
    }
    let filters = filters(
        state,
        lead,
        FilterText {
            status: None,
            ..text
        },
    )
    .await?;
    let items = matching(state, lead, &filters).await?;
    let mut skipped = Vec::new();
    let chosen: Vec<(Uuid, i32)> = match seen {
        None => items.iter().map(|i| (i.rating_id, i.version)).collect(),
        Some(seen) => {
            let mut chosen = Vec::new();
            for s in seen {
                match items.iter().find(|i| i.rating_id == s.rating_id) {
                    Some(item) if item.version == s.version => {
                        chosen.push((s.rating_id, s.version))
                    }
                    Some(item) => skipped.push(SkippedRating {
                        rating_id: s.rating_id,
                        reason: format!(
                            "changed since you saw it (version {} is now {})",
                            s.version, item.version
                        ),
                    }),
                    None => skipped.push(SkippedRating {
                        rating_id: s.rating_id,
                        reason:
                            "no longer waits under these filters (decided or changed meanwhile)"
                                .into(),
                    }),
                }
            }
            chosen
        }
    };
    let mut decided = Vec::new();
    for (id, version) in chosen {
        let decision = ReviewRequest {
            decision: decision.to_string(),
            comment: comment.clone(),
            field_comments: Default::default(),
            version,
        };
        let outcome = match reviewable(state, id, lead).await {
            Ok(access) => decide(state.store(), &access, lead, &decision)
                .await
                .map(|_| ())
                .map_err(AppError::from),
            Err(err) => Err(err),
        };
        match outcome {
            Ok(()) => decided.push(id),
            Err(err @ (AppError::Conflict(_) | AppError::NotFound | AppError::Forbidden)) => {
                skipped.push(SkippedRating {
                    rating_id: id,
                    reason: err.to_string(),
                });
            }
            Err(other) => return Err(other),
        }
    }
    Ok((decided, skipped))
}
