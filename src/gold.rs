//! Gold in the running app: whether a rating being finished is graded or held for review
//! first (which reads the rater's recent grades from the store), and a batch's gold
//! settings as leads read and change them. The grading itself is in the core
//! ([`verdict_core::gold`]).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use verdict_core::gold::*;

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::batches::Batch;
use crate::store::ratings::Finish;
use crate::store::users::User;
use verdict_core::fields::FieldErrors;

/// How a rating being finished stands with the batch's gold: its grade when its task is
/// gold (rated answers only: out of scope on a gold task is not graded), and whether it
/// goes to review first. A rating waits for review first when it was held already, or
/// when the batch sets a threshold and its rater's accuracy over their latest
/// [`RECENT`] graded gold ratings (at least [`FEWEST_TO_HOLD`]) is below it. A gold
/// rating is never held: it counts in no metric anyway.
pub async fn assess(
    state: &AppState,
    batch: &Batch,
    task_id: Uuid,
    rater_id: Uuid,
    finish: &Finish,
    held_before: bool,
) -> AppResult<(Option<Grade>, bool)> {
    if matches!(finish, Finish::Skipped { .. }) {
        return Ok((None, false));
    }
    let store = state.store();
    let expected = if batch.has_gold {
        store.gold_expected(task_id).await?
    } else {
        None
    };
    if let Some(expected) = expected {
        let grade = match finish {
            Finish::Rated { answers } => Some(grade(&expected, answers)),
            _ => None,
        };
        return Ok((grade, false));
    }
    if held_before {
        return Ok((None, true));
    }
    let Some(threshold) = batch.review_first_below else {
        return Ok((None, false));
    };
    let limit = i64::try_from(RECENT).unwrap_or(i64::MAX);
    let recent = store.recent_gold(batch.id, rater_id, limit).await?;
    let passed = recent.iter().filter(|g| g.passed()).count();
    Ok((None, below(passed, recent.len(), threshold)))
}

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
    let batch = led(state, batch_id, lead).await?;
    Ok(GoldSettings {
        gold_rate: batch.gold_rate,
        review_first_below: batch.review_first_below,
        gold_tasks: state.store().gold_count(batch_id).await?,
    })
}

/// Changes the batch's gold settings: every bad value is named and nothing changes.
pub async fn set(
    state: &AppState,
    batch_id: Uuid,
    lead: &User,
    request: &GoldRequest,
) -> AppResult<GoldSettings> {
    let batch = led(state, batch_id, lead).await?;
    let mut errors = FieldErrors::new();
    let gold_rate = request.gold_rate.unwrap_or(batch.gold_rate);
    if !(0.0..=1.0).contains(&gold_rate) {
        errors.insert(
            "gold_rate".into(),
            "must be a share from 0 to 1, e.g. 0.1 for one task in ten".into(),
        );
    }
    let review_first_below = request
        .review_first_below
        .unwrap_or(batch.review_first_below);
    if review_first_below.is_some_and(|t| !(t > 0.0 && t <= 1.0)) {
        errors.insert(
            "review_first_below".into(),
            "must be an accuracy above 0 and at most 1, e.g. 0.7, or null for never".into(),
        );
    }
    if !errors.is_empty() {
        return Err(AppError::invalid(errors));
    }
    state
        .store()
        .set_gold_settings(batch_id, gold_rate, review_first_below)
        .await?;
    let detail = serde_json::json!({
        "batch_id": batch_id, "gold_rate": gold_rate, "review_first_below": review_first_below,
    });
    crate::audit::record(state, lead, "batch.gold", &batch.name, detail).await;
    settings(state, batch_id, lead).await
}

async fn led(state: &AppState, batch_id: Uuid, lead: &User) -> AppResult<Batch> {
    if !crate::access::can_review(state.store(), batch_id, lead).await? {
        return Err(AppError::NotFound);
    }
    state
        .store()
        .batch(batch_id)
        .await?
        .ok_or(AppError::NotFound)
}
