//! What leads do with ratings: the review queue and its filters, decisions with
//! optimistic concurrency, bulk accept, a batch's tasks by disagreement, and a task's
//! ratings side by side.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::Router;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{AppError, AppResult};
use crate::services::rating::{Access, Viewer};
use crate::state::AppState;
use crate::store::batches::BatchSummary;
use crate::store::review::TaskRating;
use verdict_core::lifecycle;
use verdict_core::rubric::{Answers, Rubric, TaskAnswers};
use verdict_core::user::User;

pub mod api;
mod bulk;
pub mod disagreement;
pub mod pages;
mod queue;
pub mod table;

pub use bulk::{BulkAccept, BulkAccepted, Seen, SkippedRating, accept_all, decide_all};
pub use queue::{
    FilterText, Filters, FoundPage, QueueItem, QueueQuery, filters, matching, next_after, queue,
    value_text,
};

pub fn api_router() -> crate::web::openapi::ApiRouter {
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
    #[schema(schema_with = crate::web::openapi::decisions)]
    pub decision: String,
    #[schema(max_length = 5000)]
    pub comment: Option<String>,
    /// Comments on single answers, by answer path in the task's canonical orientation
    /// (`b.correctness_explanation`, `sxs`, `classifications.language`): the rater sees
    /// each beside its field.
    #[serde(default)]
    pub field_comments: BTreeMap<String, String>,
    /// The rating version the lead saw.
    #[schema(minimum = 1)]
    pub version: i32,
}

pub use crate::services::review::{
    Commentable, MAX_COMMENT_CHARS, MAX_FIELD_COMMENT_CHARS, ReviewRequest, commentable,
};

impl From<Decision> for ReviewRequest {
    /// The decision as the review service takes it.
    fn from(d: Decision) -> Self {
        Self {
            decision: d.decision,
            comment: d.comment,
            field_comments: d.field_comments,
            version: d.version,
        }
    }
}

/// A task of a batch the lead may see, with every rating of it (drafts aside), answers in
/// the task's canonical orientation: the disagreement view. 404 for a batch the lead
/// does not lead or a task it does not hold.
pub async fn task_ratings(
    state: &AppState,
    lead: &User,
    batch_id: Uuid,
    external_id: &str,
) -> AppResult<(BatchSummary, Arc<Rubric>, Uuid, Vec<TaskRating>)> {
    let summary = crate::batches::visible(state, batch_id, lead).await?;
    let rubric = state.store().batch_rubric(&summary.batch).await?;
    let task_id = state
        .store()
        .task_by_external_id(batch_id, external_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let ratings = state.store().task_ratings(task_id).await?;
    Ok((summary, rubric, task_id, ratings))
}

/// One judge's answer to a task beside the raters': the calls of the run standing for it
/// over the batch (`store::judges::standing_run`), and what they combine into.
pub struct JudgeOnTask {
    pub judge: String,
    /// Canonical orientation; only what was read (consistently, for a pair).
    pub answers: TaskAnswers,
    /// Per answer path: parsed, or why not.
    pub fields: verdict_core::judge::Fields,
    /// Whether it is a whole rating (stored as the judge's).
    pub complete: bool,
    pub calls: Vec<crate::store::judges::Call>,
}

/// Every judge's answer to a task of the batch, by judge name.
pub async fn task_judges(
    state: &AppState,
    batch: &verdict_core::batch::Batch,
    rubric: &Rubric,
    task_id: Uuid,
) -> AppResult<Vec<JudgeOnTask>> {
    let calls = state.store().judge_calls_of_task(batch.id, task_id).await?;
    let min_explanation = batch.min_explanation();
    let mut judges: Vec<JudgeOnTask> = Vec::new();
    for (judge, call) in calls {
        match judges.last_mut() {
            Some(last) if last.judge == judge => last.calls.push(call),
            _ => judges.push(JudgeOnTask {
                judge,
                answers: TaskAnswers::default(),
                fields: Default::default(),
                complete: false,
                calls: vec![call],
            }),
        }
    }
    for judge in &mut judges {
        let asked: Vec<verdict_core::judge::Asked<'_>> = judge
            .calls
            .iter()
            .filter(|c| c.status != lifecycle::CallStatus::Failed)
            .map(|c| verdict_core::judge::Asked {
                swapped: c.swapped,
                answers: &c.answers.0,
                fields: &c.fields.0,
            })
            .collect();
        let combined = verdict_core::judge::combine(rubric, &asked, min_explanation);
        judge.complete = combined.complete();
        judge.answers = combined.answers;
        judge.fields = combined.fields;
    }
    Ok(judges)
}

/// A rating a lead may review: 404 unless they lead its batch; 403 for their own.
pub async fn reviewable(state: &AppState, id: Uuid, lead: &User) -> AppResult<Access> {
    let access = crate::services::rating::access(state.store(), id, lead).await?;
    if access.viewer == Viewer::Owner {
        return Err(AppError::Forbidden);
    }
    Ok(access)
}

/// How far the raters of one task are apart.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TaskSpread {
    pub external_id: String,
    /// Counted ratings of the task.
    pub raters: usize,
    /// How many of them disagree with the others (see the queue's rule).
    pub disagreeing: usize,
    /// The largest spread as a share of its question's range (0 to 1): the order.
    pub largest_share: f64,
    pub questions: Vec<disagreement::QuestionSpread>,
}

/// The tasks of a batch that two or more counted ratings answered, most disagreement
/// first (see [`disagreement::SPREAD_RULE`]). 404 for a batch the lead does not lead.
pub async fn disagreements(
    state: &AppState,
    lead: &User,
    batch_id: Uuid,
) -> AppResult<(BatchSummary, Vec<TaskSpread>)> {
    let summary = crate::batches::visible(state, batch_id, lead).await?;
    let rubric = state.store().batch_rubric(&summary.batch).await?;
    let ratings = state.store().batch_ratings(batch_id).await?;
    let mut by_task: HashMap<&str, Vec<&Answers>> = HashMap::new();
    for rating in ratings.iter().filter(|r| r.counts_in_metrics()) {
        by_task
            .entry(&rating.external_id)
            .or_default()
            .push(&rating.answers.0);
    }
    let mut tasks: Vec<TaskSpread> = by_task
        .into_iter()
        .filter(|(_, sets)| sets.len() >= 2)
        .map(|(external_id, sets)| {
            let questions = disagreement::spreads(&rubric, &sets);
            let disagreeing = (0..sets.len())
                .filter(|&i| {
                    let others: Vec<&Answers> = sets
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .map(|(_, s)| *s)
                        .collect();
                    disagreement::disagrees(&rubric, sets[i], &others)
                })
                .count();
            TaskSpread {
                external_id: external_id.to_owned(),
                raters: sets.len(),
                disagreeing,
                largest_share: disagreement::largest_share(&questions),
                questions,
            }
        })
        .collect();
    tasks.sort_by(|x, y| {
        y.largest_share
            .total_cmp(&x.largest_share)
            .then(y.disagreeing.cmp(&x.disagreeing))
            .then_with(|| x.external_id.cmp(&y.external_id))
    });
    Ok((summary, tasks))
}
