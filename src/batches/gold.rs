//! A batch's gold settings as its leads read and change them: how often gold tasks are
//! handed out, and the accuracy below which a rater's ratings wait for review first.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppResult;
use crate::state::AppState;
use verdict_core::user::User;

/// A batch's gold settings and how many gold tasks it holds.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GoldSettings {
    /// The share of a rater's new assignments that are gold tasks, 0 to 1 (0: none).
    pub gold_rate: f64,
    /// The gold accuracy (0 to 1) below which a rater's new ratings go to review first;
    /// `null`: never.
    pub review_first_below: Option<f64>,
    /// Gold tasks in the batch (a task is gold when uploaded with `gold`).
    pub gold_tasks: i64,
}

/// Changes to a batch's gold settings; an absent field keeps its value.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldRequest {
    #[schema(minimum = 0, maximum = 1)]
    pub gold_rate: Option<f64>,
    /// `null` turns review first off.
    #[serde(default, deserialize_with = "crate::batches::settings::present")]
    #[schema(value_type = Option<f64>, minimum = 0, maximum = 1)]
    pub review_first_below: Option<Option<f64>>,
}

/// The batch's gold settings, for a lead of it (404 for anyone else, as everywhere).
pub async fn settings(state: &AppState, batch_id: Uuid, lead: &User) -> AppResult<GoldSettings> {
    let batch = crate::services::batches::led(state.store(), batch_id, lead).await?;
    Ok(GoldSettings {
        gold_rate: batch.gold_rate,
        review_first_below: batch.review_first_below,
        gold_tasks: state.store().gold_count(batch_id).await?,
    })
}

/// Changes the batch's gold settings (see [`crate::services::batches::set_gold`]) and
/// returns them as they are now.
pub async fn set(
    state: &AppState,
    batch_id: Uuid,
    lead: &User,
    request: &GoldRequest,
) -> AppResult<GoldSettings> {
    crate::services::batches::set_gold(
        state.store(),
        batch_id,
        lead,
        request.gold_rate,
        request.review_first_below,
    )
    .await?;
    settings(state, batch_id, lead).await
}
