//! A lead's decisions on ratings: accept, return to the rater (with comments, on the
//! rating or on single answers) or reject, checked against the version the lead saw and
//! recorded with their history and audit entry.

use std::collections::BTreeMap;

use super::rating::{Access, Viewer};
use super::{FieldErrors, ServiceError, ServiceResult};
use crate::store::Store;
use crate::store::review::ReviewNote;
use verdict_core::lifecycle;
use verdict_core::rating::Rating;
use verdict_core::user::User;

/// The longest comment on a rating, in characters.
pub const MAX_COMMENT_CHARS: usize = 5000;
/// The longest comment on one answer, in characters.
pub const MAX_FIELD_COMMENT_CHARS: usize = 2000;

/// The answer paths a lead may comment on: every question (of each response) and its
/// explanation, and the batch's classification questions.
pub fn commentable(access: &Access) -> Vec<Commentable> {
    let mut paths = Vec::new();
    for slot in access.rubric.slots() {
        if matches!(slot, verdict_core::rubric::Slot::Asked { .. }) {
            paths.push(Commentable {
                path: slot.path(),
                side: slot.side().map(|s| s.key()),
                label: slot.label().to_owned(),
            });
        }
        if let Some(path) = slot.explanation_path() {
            paths.push(Commentable {
                path,
                side: slot.side().map(|s| s.key()),
                label: format!("{}: explanation", slot.label()),
            });
        }
    }
    for q in &access.batch.classifications {
        paths.push(Commentable {
            path: format!("classifications.{}", q.key),
            side: None,
            label: q.label.clone(),
        });
    }
    paths
}

/// An answer a lead may comment on: its path (canonical), the response it is of (`a`,
/// `b`, or none), and its question.
pub struct Commentable {
    pub path: String,
    pub side: Option<&'static str>,
    pub label: String,
}

/// The field comments of a decision, trimmed, empty ones dropped; every unknown path or
/// over-long comment named as `field_comments.<path>`.
fn field_comments(
    access: &Access,
    given: &BTreeMap<String, String>,
    fields: &mut FieldErrors,
) -> BTreeMap<String, String> {
    let known = commentable(access);
    let mut kept = BTreeMap::new();
    for (path, comment) in given {
        let at = format!("field_comments.{path}");
        let comment = comment.trim();
        if !known.iter().any(|k| k.path == *path) {
            fields.insert(
                at,
                "is not an answer of this rating (name it as a.KEY, b.KEY, KEY, its \
                 explanation as a.KEY_explanation, or classifications.KEY)"
                    .into(),
            );
        } else if comment.chars().count() > MAX_FIELD_COMMENT_CHARS {
            fields.insert(
                at,
                format!("must be at most {MAX_FIELD_COMMENT_CHARS} characters"),
            );
        } else if !comment.is_empty() {
            kept.insert(path.clone(), comment.to_owned());
        }
    }
    kept
}

/// A lead's decision on a rating, as the API body or the review page gives it.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// `accept`, `return` or `reject`, as given (checked here).
    pub decision: String,
    /// For the rater; required to return a rating without a comment on an answer.
    pub comment: Option<String>,
    /// Comments on single answers, by answer path in the task's canonical orientation.
    pub field_comments: BTreeMap<String, String>,
    /// The rating version the lead saw: a rating changed since is refused as stale.
    pub version: i32,
}

/// Checks and records a decision on a rating the lead may review (not their own), with
/// its audit entry. Every bad field is named; a rating changed since the lead saw it,
/// or no longer waiting, is refused.
pub async fn decide(
    store: &Store,
    access: &Access,
    lead: &User,
    decision: &ReviewRequest,
) -> ServiceResult<Rating> {
    if access.viewer != Viewer::Lead || !lead.can_lead() {
        return Err(ServiceError::Forbidden);
    }
    let mut fields = FieldErrors::new();
    let chosen = decision.decision.parse::<lifecycle::Decision>();
    if let Err(unknown) = &chosen {
        fields.insert("decision".into(), unknown.to_string());
    }
    let comment = decision
        .comment
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    let field_comments = field_comments(access, &decision.field_comments, &mut fields);
    if chosen.as_ref().is_ok_and(|d| d.needs_comment())
        && comment.is_none()
        && field_comments.is_empty()
    {
        fields.insert(
            "comment".into(),
            "is required when returning a rating (or a comment on one of its answers): \
             tell the rater what to change"
                .into(),
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
        _ => return Err(ServiceError::Invalid(fields)),
    };
    let outcome = store
        .review(
            access.rating.id,
            lead.id,
            chosen,
            ReviewNote {
                comment,
                field_comments: &field_comments,
            },
            decision.version,
            access.batch.overlap,
        )
        .await?;
    match outcome {
        Ok(rating) => {
            tracing::info!(lead = %lead.username, rating = %rating.id, decision = %chosen, "rating reviewed");
            let detail = serde_json::json!({
                "decision": chosen, "batch": access.batch.name, "batch_id": access.batch.id,
                "comment": comment, "field_comments": field_comments
            });
            let target = rating.id.to_string();
            super::audit::record(store, lead, "rating.review", &target, detail).await;
            Ok(rating)
        }
        Err(refusal) => Err(refusal.into()),
    }
}
