//! Where raters stand with a batch's qualification (see [`verdict_core::qualification`]):
//! worked out from their graded gold ratings of the batch, for `next`, for the rater's
//! own page and API, and for the batch's leads.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::ServiceResult;
use crate::store::Store;
use verdict_core::batch::Batch;
use verdict_core::gold::{Grade, Tolerance};
use verdict_core::qualification::{Qualification, Standing};
use verdict_core::rubric::answer_at;
use verdict_core::user::User;

/// `user`'s standing with `batch`'s qualification `q`, from their grades alone (what
/// `next` asks on every call; [`for_rater`] reads the answers too).
pub async fn standing_of(
    store: &Store,
    batch: &Batch,
    q: &Qualification,
    user: &User,
) -> ServiceResult<Standing> {
    // Every graded gold rating, newest first: turned to oldest first, as tries count.
    let mut grades = store.recent_gold(batch.id, user.id, i64::MAX).await?;
    grades.reverse();
    let right: Vec<bool> = grades.iter().map(Grade::passed).collect();
    Ok(q.standing(&right))
}

/// A rater's qualification as they see it: the settings, where they stand, and, when
/// the batch reveals them, each gold task of a try that is over with its expected answers
/// and their explanation.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RaterQualification {
    pub qualification: Qualification,
    /// The fewest right of a try's tasks that pass it.
    pub needed: i32,
    pub standing: Standing,
    /// Empty unless the batch reveals answers; only tries that are over.
    pub revealed: Vec<Revealed>,
}

/// A gold task of a try that is over, as the rater who rated it sees it afterwards.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Revealed {
    /// The try it was part of, from 1.
    #[serde(rename = "try")]
    pub try_number: i32,
    /// The task's external id where the viewer may see it, else `Task N` (see
    /// [`crate::access::sees_external_ids`]).
    pub external_id: String,
    pub right: bool,
    /// The answers it expects, by path (in the task's own orientation, A as uploaded).
    #[schema(value_type = Object)]
    pub expected: BTreeMap<String, Tolerance>,
    /// The rater's answers at those paths as they were graded, when the rating was first
    /// sent (task's own orientation).
    #[schema(value_type = Object)]
    pub given: BTreeMap<String, Value>,
    /// The paths they answered wrong.
    pub wrong: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// `user`'s view of `batch`'s qualification `q`.
pub async fn for_rater(
    store: &Store,
    batch: &Batch,
    q: &Qualification,
    user: &User,
) -> ServiceResult<RaterQualification> {
    let results = store.gold_results(batch.id, user.id).await?;
    let right: Vec<bool> = results.iter().map(|r| r.grade.0.passed()).collect();
    let standing = q.standing(&right);
    let size = usize::try_from(q.tasks).unwrap_or(1).max(1);
    let sees_external_ids = crate::access::sees_external_ids(user, batch.raters_see_external_ids);
    let mut revealed = Vec::new();
    if q.reveal {
        for t in standing.tries.iter().filter(|t| t.passed.is_some()) {
            let first = usize::try_from(t.number - 1).unwrap_or(0) * size;
            for result in results.iter().skip(first).take(size) {
                let graded = result.graded_answers();
                let given = result
                    .expected
                    .0
                    .keys()
                    .map(|path| {
                        let value = answer_at(&graded, path);
                        (path.clone(), value.cloned().unwrap_or(Value::Null))
                    })
                    .collect();
                revealed.push(Revealed {
                    try_number: t.number,
                    external_id: crate::access::task_name(
                        sees_external_ids,
                        &result.external_id,
                        result.task_number,
                    ),
                    right: result.grade.0.passed(),
                    expected: result.expected.0.clone(),
                    given,
                    wrong: result.grade.0.wrong.clone(),
                    explanation: result.explanation.clone(),
                });
            }
        }
    }
    Ok(RaterQualification {
        qualification: *q,
        needed: q.needed(),
        standing,
        revealed,
    })
}

/// Every rater's standing with batch `batch_id`'s qualification `q`, by username: those who have
/// graded gold ratings of it.
pub async fn standings(
    store: &Store,
    batch_id: uuid::Uuid,
    q: &Qualification,
) -> ServiceResult<BTreeMap<String, Standing>> {
    let mut right: BTreeMap<String, Vec<bool>> = BTreeMap::new();
    // Oldest first within each rater.
    for graded in store.gold_grades(batch_id).await? {
        right
            .entry(graded.rater)
            .or_default()
            .push(graded.grade.0.passed());
    }
    Ok(right
        .into_iter()
        .map(|(rater, right)| (rater, q.standing(&right)))
        .collect())
}
