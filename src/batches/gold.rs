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
    /// The round of gold tasks a rater must pass before the batch's real tasks; `null`:
    /// none.
    pub qualification: Option<verdict_core::qualification::Qualification>,
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
    /// Gold tasks a rater must rate in a qualification try before the batch's real
    /// tasks (1 to 50); `null` asks for no qualification.
    #[serde(default, deserialize_with = "crate::batches::settings::present")]
    #[schema(value_type = Option<i32>, minimum = 1, maximum = 50)]
    pub qualify_tasks: Option<Option<i32>>,
    /// The share of a try's tasks that must be right (every expected answer within its
    /// tolerance) to pass: above 0, at most 1 (new: 0.8).
    #[schema(maximum = 1)]
    pub qualify_pass: Option<f64>,
    /// Tries a rater has (1 to 10; new: 1).
    #[schema(minimum = 1, maximum = 10)]
    pub qualify_tries: Option<i32>,
    /// Whether a rater sees each gold task's expected answers, with its explanation,
    /// once a try is over (new: false).
    pub qualify_reveal: Option<bool>,
}

/// The batch's gold settings, for a lead of it (404 for anyone else, as everywhere).
pub async fn settings(state: &AppState, batch_id: Uuid, lead: &User) -> AppResult<GoldSettings> {
    let batch = crate::services::batches::led(state.store(), batch_id, lead).await?;
    Ok(GoldSettings {
        gold_rate: batch.gold_rate,
        review_first_below: batch.review_first_below,
        gold_tasks: state.store().gold_count(batch_id).await?,
        qualification: batch.qualification,
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
        crate::services::batches::QualificationChange {
            tasks: request.qualify_tasks,
            pass_mark: request.qualify_pass,
            tries: request.qualify_tries,
            reveal: request.qualify_reveal,
        },
    )
    .await?;
    settings(state, batch_id, lead).await
}
