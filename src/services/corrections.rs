//! Corrections: deleting a batch (and restoring or purging it), and withdrawing or
//! correcting a task. Every path (API, pages, command line) comes through here, and each
//! change is audited.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;

use super::audit::{self, Actor};
use super::{ServiceError, ServiceResult};
use crate::store::Store;
use crate::store::corrections::{DeletedBatch, Deletion};

/// How long a deleted batch can be restored by default, after which it is purged
/// (`--deleted-retention-days`).
pub const DEFAULT_RETENTION_DAYS: u64 = 30;

/// How long deleted batches are kept, restorable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention(pub Duration);

impl Default for Retention {
    fn default() -> Self {
        Self::days(DEFAULT_RETENTION_DAYS)
    }
}

impl Retention {
    pub fn days(days: u64) -> Self {
        Self(Duration::from_secs(days.saturating_mul(24 * 3600)))
    }

    /// The oldest deletion still kept at `now`.
    pub fn since(self, now: DateTime<Utc>) -> DateTime<Utc> {
        chrono::Duration::from_std(self.0)
            .ok()
            .and_then(|kept| now.checked_sub_signed(kept))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    /// When a batch deleted at `at` is purged.
    pub fn purge_at(self, at: DateTime<Utc>) -> DateTime<Utc> {
        chrono::Duration::from_std(self.0)
            .ok()
            .and_then(|kept| at.checked_add_signed(kept))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

/// Deletes batch `id` as `actor`, when `confirm` (if the path asks for one: the page
/// does) is its name typed exactly. Its open assignments end; it can be restored until
/// the retention ends.
pub async fn delete_batch<'a>(
    store: &Store,
    id: Uuid,
    confirm: Option<&str>,
    actor: impl Into<Actor<'a>>,
) -> ServiceResult<Deletion> {
    let batch = store.batch(id).await?.ok_or(ServiceError::NotFound)?;
    if let Some(typed) = confirm
        && typed != batch.name
    {
        return Err(ServiceError::field(
            "confirm",
            format!("type the batch's name, {:?}, to delete it", batch.name),
        ));
    }
    let actor = actor.into();
    let (by, _) = actor.ids();
    let deletion = store
        .delete_batch(id, by, Utc::now())
        .await?
        .ok_or(ServiceError::NotFound)?;
    let detail = json!({"id": id, "ended_assignments": deletion.ended});
    audit::record(store, actor, "batch.delete", &deletion.name, detail).await;
    Ok(deletion)
}

/// Restores deleted batch `id` as `actor`, while `retention` keeps it. Its name.
pub async fn restore_batch<'a>(
    store: &Store,
    id: Uuid,
    retention: Retention,
    actor: impl Into<Actor<'a>>,
) -> ServiceResult<String> {
    let Some(name) = store.restore_batch(id, retention.since(Utc::now())).await? else {
        return Err(match store.batch(id).await? {
            Some(_) => ServiceError::Conflict("this batch is not deleted".into()),
            None => ServiceError::NotFound,
        });
    };
    audit::record(store, actor, "batch.restore", &name, json!({"id": id})).await;
    Ok(name)
}

/// Removes for good the deleted batches whose retention is over (or, with `only`, that
/// one deleted batch whatever its age), as `actor`. Their names.
pub async fn purge<'a>(
    store: &Store,
    retention: Retention,
    only: Option<Uuid>,
    actor: impl Into<Actor<'a>>,
) -> ServiceResult<Vec<String>> {
    let before = match only {
        Some(_) => None,
        None => Some(retention.since(Utc::now())),
    };
    let purged = store.purge_batches(before, only).await?;
    let actor = actor.into();
    for name in &purged {
        audit::record(store, actor, "batch.purge", name, json!({})).await;
    }
    Ok(purged)
}

/// The deleted batches, each with when it will be purged.
pub async fn deleted(
    store: &Store,
    retention: Retention,
) -> ServiceResult<Vec<(DeletedBatch, DateTime<Utc>)>> {
    Ok(store
        .deleted_batches()
        .await?
        .into_iter()
        .map(|b| {
            let purge_at = retention.purge_at(b.deleted_at);
            (b, purge_at)
        })
        .collect())
}

/// The error for a batch that is not there: 410 naming it if it was deleted (for whoever
/// still holds work on it), else not found.
pub async fn gone_or_not_found(store: &Store, id: Uuid) -> ServiceResult<ServiceError> {
    Ok(match store.deleted_batch_name(id).await? {
        Some(name) => ServiceError::Gone(format!(
            "the batch {name:?} was deleted; nothing more can be done on its tasks"
        )),
        None => ServiceError::NotFound,
    })
}

/// A change to one task: withdrawn or put back, and/or its content corrected (a new
/// version). Content fields left out keep what the task holds; a pair's task takes
/// `response_a`, `response_b`, `model_a` and `model_b`, a single answer's `response` and
/// `model`.
#[derive(Debug, Default, Clone, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskPatch {
    /// `true` takes the task out of serving, the metrics and the aggregates; `false`
    /// puts it back.
    #[serde(default)]
    pub withdrawn: Option<bool>,
    /// A string, or a list of `{role, content}` messages.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub prompt: Option<serde_json::Value>,
    #[serde(default)]
    pub response: Option<String>,
    #[serde(default)]
    pub response_a: Option<String>,
    #[serde(default)]
    pub response_b: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub model_a: Option<String>,
    #[serde(default)]
    pub model_b: Option<String>,
}

impl TaskPatch {
    /// The content fields it sets, by name.
    fn content(&self) -> Vec<(&'static str, serde_json::Value)> {
        let text = |name: &'static str, v: &Option<String>| {
            v.as_ref()
                .map(|t| (name, serde_json::Value::from(t.as_str())))
        };
        [
            self.prompt.as_ref().map(|p| ("prompt", p.clone())),
            text("response", &self.response),
            text("response_a", &self.response_a),
            text("response_b", &self.response_b),
            text("model", &self.model),
            text("model_a", &self.model_a),
            text("model_b", &self.model_b),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Where a task stands after a change.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct TaskState {
    pub external_id: String,
    /// 1 as uploaded, one more with each correction.
    pub version: i32,
    pub withdrawn: bool,
    /// Ratings this change set aside (made stale, or withdrawn) or brought back.
    pub ratings_changed: u64,
    /// Assignments raters held on it, ended by this change.
    pub ended_assignments: u64,
}

/// Changes task `external_id` of `batch` as `actor` (see [`TaskPatch`]): its content
/// first (a new version; the ratings so far become stale), then whether it is withdrawn.
/// Gold tasks are graded against their expected answers and are changed by neither.
pub async fn change_task<'a>(
    store: &Store,
    batch: &verdict_core::batch::Batch,
    external_id: &str,
    patch: &TaskPatch,
    actor: impl Into<Actor<'a>>,
) -> ServiceResult<TaskState> {
    let actor = actor.into();
    let task = store
        .task_to_correct(batch.id, external_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let content = patch.content();
    if content.is_empty() && patch.withdrawn.is_none() {
        return Err(ServiceError::field(
            "withdrawn",
            "give withdrawn (true or false), or the corrected prompt, responses or models",
        ));
    }
    if task.gold {
        return Err(ServiceError::Conflict(
            "a gold task is graded against its expected answers: it is neither withdrawn nor \
             corrected (upload a new gold task instead)"
                .into(),
        ));
    }
    let mut state = TaskState {
        external_id: task.external_id.clone(),
        version: task.version,
        withdrawn: task.withdrawn_at.is_some(),
        ratings_changed: 0,
        ended_assignments: 0,
    };
    let now = Utc::now();
    if !content.is_empty() {
        let rubric = store.batch_rubric(batch).await?;
        let corrected = corrected(&task, rubric.subject, &content)?;
        let (by, _) = actor.ids();
        let change = store
            .correct_task(task.id, task.version, &corrected, by, now)
            .await?
            .ok_or_else(|| {
                ServiceError::Conflict(
                    "the task was corrected by another request at the same time; read it again"
                        .into(),
                )
            })?;
        state.version = task.version + 1;
        state.ratings_changed += change.ratings;
        state.ended_assignments += change.ended;
        let fields: Vec<&str> = content.iter().map(|(name, _)| *name).collect();
        let detail = json!({
            "batch": batch.name, "version": state.version, "fields": fields,
            "stale_ratings": change.ratings, "ended_assignments": change.ended,
        });
        let target = format!("{}/{}", batch.name, task.external_id);
        audit::record(store, actor, "task.correct", &target, detail).await;
    }
    if let Some(withdrawn) = patch.withdrawn {
        let change = store.set_withdrawn(task.id, withdrawn, now).await?;
        state.withdrawn = withdrawn;
        state.ratings_changed += change.ratings;
        state.ended_assignments += change.ended;
        if change.changed {
            let action = if withdrawn {
                "task.withdraw"
            } else {
                "task.put_back"
            };
            let detail = json!({
                "batch": batch.name, "ratings": change.ratings,
                "ended_assignments": change.ended,
            });
            let target = format!("{}/{}", batch.name, task.external_id);
            audit::record(store, actor, action, &target, detail).await;
        }
    }
    Ok(state)
}

/// Task `task` with the corrected fields `content` laid over it, checked as an upload's
/// record is (so a correction can hold nothing an upload could not), with its new hash.
fn corrected(
    task: &crate::store::corrections::TaskContent,
    subject: verdict_core::rubric::Subject,
    content: &[(&'static str, serde_json::Value)],
) -> ServiceResult<crate::store::corrections::NewContent> {
    use verdict_core::import::{self, Responses};
    use verdict_core::rubric::Subject;
    let (responses, fields): (Responses, &[&str]) = match subject {
        Subject::Pair => (
            Responses::Two,
            &["prompt", "response_a", "response_b", "model_a", "model_b"],
        ),
        Subject::Single => (Responses::One, &["prompt", "response", "model"]),
    };
    let mut errors = super::FieldErrors::new();
    for (name, _) in content {
        if !fields.contains(name) {
            errors.insert(
                (*name).to_owned(),
                format!(
                    "is not a field of this batch's tasks (they have {})",
                    fields.join(", ")
                ),
            );
        }
    }
    if !errors.is_empty() {
        return Err(ServiceError::Invalid(errors));
    }
    let stored = |text: &str| serde_json::from_str::<serde_json::Value>(text);
    let prompt = stored(&task.prompt).map_err(|e| ServiceError::Internal(e.to_string()))?;
    let metadata = stored(&task.metadata).map_err(|e| ServiceError::Internal(e.to_string()))?;
    let mut record = serde_json::Map::new();
    record.insert("external_id".into(), task.external_id.clone().into());
    record.insert("prompt".into(), prompt);
    record.insert("metadata".into(), metadata);
    let optional =
        |model: &Option<String>| model.clone().map_or(serde_json::Value::Null, Into::into);
    match subject {
        Subject::Pair => {
            record.insert("response_a".into(), task.response_a.clone().into());
            record.insert("response_b".into(), task.response_b.clone().into());
            record.insert("model_a".into(), optional(&task.model_a));
            record.insert("model_b".into(), optional(&task.model_b));
        }
        Subject::Single => {
            record.insert("response".into(), task.response_a.clone().into());
            record.insert("model".into(), optional(&task.model_a));
        }
    }
    for (name, value) in content {
        record.insert((*name).to_owned(), value.clone());
    }
    let new = import::parse_task(&serde_json::Value::Object(record), responses).map_err(|why| {
        // The check names the field first where it can.
        let field = fields
            .iter()
            .find(|f| why.starts_with(**f))
            .copied()
            .unwrap_or("task");
        ServiceError::field(field, why)
    })?;
    if new.content_hash == task.content_hash {
        return Err(ServiceError::field(
            "task",
            "the corrected content is what the task holds already: nothing to correct",
        ));
    }
    Ok(crate::store::corrections::NewContent {
        prompt: new.prompt.to_string(),
        response_a: new.response_a,
        response_b: new.response_b,
        model_a: new.model_a,
        model_b: new.model_b,
        content_hash: new.content_hash,
    })
}
