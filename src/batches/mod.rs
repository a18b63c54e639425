//! Batches: uploading tasks, settings, and who may work on them.

use axum::Router;
use serde::Serialize;
use uuid::Uuid;

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::batches::{BatchSummary, Progress};
use verdict_core::lifecycle::BatchState;
use verdict_core::rubric::Classification;
use verdict_core::user::User;

pub mod api;
pub mod deletion;
pub mod gold;
pub mod pages;
pub mod qualification;
pub mod settings;

pub use settings::SettingsRequest;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> Router<AppState> {
    pages::router()
        .merge(qualification::router())
        .merge(deletion::router())
}

pub use crate::services::batches::UploadParams;

/// A batch as the API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BatchView {
    pub id: Uuid,
    pub name: String,
    pub rubric: String,
    /// The version of the rubric the batch was created with; its ratings follow it.
    pub rubric_version: i32,
    pub state: BatchState,
    /// How many distinct raters must rate each task, first.
    pub overlap: i32,
    /// The most raters a task is asked of, one more at a time while its answers
    /// disagree (`overlap`: no escalation).
    pub max_overlap: i32,
    /// The rule for one more rater, written out (`side:sxs`); `null` for the rubric's
    /// default.
    pub escalate: Option<String>,
    /// The task field tasks are routed by (`metadata.language`); `null`: no routing.
    pub route_by: Option<String>,
    /// `prefer` (tasks matching a rater's skills first) or `strict` (only those).
    #[schema(schema_with = crate::web::openapi::routings)]
    pub routing: String,
    /// Show each assignment's A and B in a random order.
    pub randomize: bool,
    /// Raters see each task's external id; otherwise each task is named to its rater by
    /// its number among theirs (`Task 17`). Leads and admins always see them.
    pub raters_see_external_ids: bool,
    /// Minutes an untouched assignment is held before it returns to the pool.
    pub lease_minutes: i32,
    /// Shortest explanation accepted, in characters.
    pub min_explanation_len: i32,
    /// Pseudo-wins added each way to every compared pair of models in the metrics'
    /// Bradley-Terry ranking (0: none).
    pub bradley_terry_prior: f64,
    /// How the final dataset (`export?final=true`) answers a task no lead adjudicated:
    /// `majority` or `dawid_skene`.
    pub final_method: verdict_core::batch::FinalMethod,
    pub classifications: Vec<Classification>,
    /// Usernames the batch is restricted to; `null` means every rater (leads and admins
    /// only see this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raters: Option<Option<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads: Option<Option<Vec<String>>>,
    pub progress: Progress,
    /// Tasks that need more ratings than the people who could take them now can give,
    /// by reason, with what would unstick them (leads and admins, on one batch's view).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled: Option<verdict_core::stall::Stalled>,
    /// Tasks this caller has completed or skipped.
    pub mine: i64,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// Builds the view of a batch; members are shown to leads and admins only.
pub async fn view(state: &AppState, summary: BatchSummary, viewer: &User) -> AppResult<BatchView> {
    let BatchSummary {
        batch,
        progress,
        mine,
    } = summary;
    let (raters, leads) = if viewer.can_lead() {
        let members = state.store().batch_members(batch.id).await?;
        let of = |role: &str, restricted: bool| {
            restricted.then(|| {
                members
                    .iter()
                    .filter(|(r, _)| r == role)
                    .map(|(_, u)| u.clone())
                    .collect()
            })
        };
        (
            Some(of("rater", batch.raters_restricted)),
            Some(of("lead", batch.leads_restricted)),
        )
    } else {
        (None, None)
    };
    let max_overlap = batch.most_raters();
    Ok(BatchView {
        id: batch.id,
        name: batch.name,
        rubric: batch.rubric,
        rubric_version: batch.rubric_version,
        state: batch.state,
        overlap: batch.overlap,
        max_overlap,
        escalate: batch.escalate,
        route_by: batch.route_by.as_ref().map(ToString::to_string),
        routing: batch.routing.to_string(),
        randomize: batch.randomize,
        raters_see_external_ids: batch.raters_see_external_ids,
        lease_minutes: batch.lease_minutes,
        min_explanation_len: batch.min_explanation_len,
        bradley_terry_prior: batch.bradley_terry_prior,
        final_method: batch.final_method,
        classifications: batch.classifications,
        raters,
        leads,
        progress,
        stalled: None,
        mine,
        created_at: batch.created_at,
    })
}

/// The batch alone, if this user may see it (404 otherwise), without the progress
/// [`visible`] counts over all its tasks and ratings: for a request that needs only the
/// batch's settings (an export of a million ratings spent seconds on those counts first).
pub async fn visible_settings(
    state: &AppState,
    id: Uuid,
    user: &User,
) -> AppResult<verdict_core::batch::Batch> {
    let store = state.store();
    if !store.batch_matches(id, user.id, user.role).await? {
        return Err(AppError::NotFound);
    }
    store.batch(id).await?.ok_or(AppError::NotFound)
}

/// The batch, if this user may see it (404 otherwise: its existence is not revealed).
pub async fn visible(state: &AppState, id: Uuid, user: &User) -> AppResult<BatchSummary> {
    state
        .store()
        .visible_batch(id, user.id, user.role)
        .await?
        .ok_or(AppError::NotFound)
}
