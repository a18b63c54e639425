//! Gold while ratings are finished: whether a rating is graded (its task is gold) or
//! held for review first (its rater's recent gold accuracy is below the batch's bar).
//! The grading itself is the core's ([`verdict_core::gold`]).

use uuid::Uuid;

use crate::store::{Store, StoreResult};
use verdict_core::batch::Batch;
use verdict_core::gold::{Grade, RECENT, below, grade};
use verdict_core::rating::Finish;

/// How a rating being finished stands with the batch's gold: its grade when its task is
/// gold (rated answers only: out of scope on a gold task is not graded), and whether it
/// goes to review first. A rating waits for review first when it was held already, or
/// when the batch sets a threshold and its rater's accuracy over their latest
/// [`RECENT`] graded gold ratings (at least [`FEWEST_TO_HOLD`](verdict_core::gold::FEWEST_TO_HOLD)) is below it. A gold
/// rating is never held: it counts in no metric anyway.
pub async fn assess(
    store: &Store,
    batch: &Batch,
    task_id: Uuid,
    rater_id: Uuid,
    finish: &Finish,
    held_before: bool,
) -> StoreResult<(Option<Grade>, bool)> {
    if matches!(finish, Finish::Skipped { .. }) {
        return Ok((None, false));
    }
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
