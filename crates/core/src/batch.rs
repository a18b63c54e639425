//! Batches: a set of tasks rated under one rubric, with the settings that say who rates
//! them, how many times, and how.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::lifecycle::BatchState;
use crate::routing::{RouteBy, Routing};
use crate::rubric::{Classification, Subject};

/// A batch and its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub id: Uuid,
    pub name: String,
    pub rubric: String,
    /// The version of the rubric the batch was created with: its ratings follow it.
    pub rubric_version: i32,
    /// Raters per task, first.
    pub overlap: i32,
    /// The most raters a task is asked of when its answers disagree (see
    /// [`crate::overlap`]); `None`: always `overlap`.
    pub max_overlap: Option<i32>,
    /// The rule for one more rater, as written (see [`crate::overlap::Escalation`]);
    /// `None`: the rubric's default.
    pub escalate: Option<String>,
    /// Whether each assignment shows A and B in a random order.
    pub randomize: bool,
    pub state: BatchState,
    pub lease_minutes: i32,
    pub min_explanation_len: i32,
    /// The batch's own questions, asked beside the rubric's.
    pub classifications: Vec<Classification>,
    pub raters_restricted: bool,
    pub leads_restricted: bool,
    pub created_at: DateTime<Utc>,
    /// The share of a rater's new assignments that are gold tasks (0: none).
    pub gold_rate: f64,
    /// The gold accuracy below which a rater's new ratings go to review first.
    pub review_first_below: Option<f64>,
    /// Whether the batch holds gold tasks, so that a rating in a batch without any is
    /// not checked against them.
    pub has_gold: bool,
    /// Whether raters see its tasks' external ids; otherwise a neutral number of their
    /// own (see [`crate::access::task_name`]). Leads and admins always see them.
    pub raters_see_external_ids: bool,
    /// Pseudo-wins added each way to every compared pair of models in its Bradley-Terry
    /// ranking (see [`crate::metrics::bradley_terry`]).
    pub bradley_terry_prior: f64,
    /// How the final dataset answers a task no lead adjudicated (see
    /// [`crate::metrics::aggregate`]).
    pub final_method: FinalMethod,
    /// The task field its tasks are routed by (see [`crate::routing`]); `None`: no
    /// routing, tasks in upload order to anyone.
    pub route_by: Option<RouteBy>,
    /// How it routes, when it routes.
    pub routing: Routing,
    /// When its routing last changed (route or mode): skips before and after it are
    /// compared on its dashboard.
    pub routed_since: Option<DateTime<Utc>>,
    /// The round of gold tasks a rater must pass before its real tasks (see
    /// [`crate::qualification`]); `None`: none.
    pub qualification: Option<crate::qualification::Qualification>,
}

impl Batch {
    /// The shortest explanation its rubric's checks accept, in characters.
    pub fn min_explanation(&self) -> usize {
        usize::try_from(self.min_explanation_len).unwrap_or(0)
    }

    /// The most raters a task is asked of: `overlap` when the batch does not escalate.
    pub fn most_raters(&self) -> i32 {
        self.max_overlap.unwrap_or(self.overlap).max(self.overlap)
    }
}

/// The settings a new batch starts with.
#[derive(Debug, Clone)]
pub struct NewBatch {
    pub name: String,
    pub rubric: String,
    /// The rubric's version a new batch pins (its newest when the upload was checked).
    pub rubric_version: i32,
    /// What its tasks hold: two responses or one.
    pub subject: Subject,
    /// Raters per task; `None` asks for the default of a new batch (1) and accepts an
    /// existing batch's.
    pub overlap: Option<i32>,
    /// The most raters per task; `None` asks for the default of a new batch (its
    /// overlap) and accepts an existing batch's.
    pub max_overlap: Option<i32>,
    /// The rule for one more rater, checked and written out whole; `None` asks for the
    /// default of a new batch (the rubric's) and accepts an existing batch's.
    pub escalate: Option<String>,
    /// A/B randomisation; `None` asks for the default of a new batch (on) and accepts an
    /// existing batch's.
    pub randomize: Option<bool>,
    /// Whether raters see external ids; `None` asks for the default of a new batch (off)
    /// and accepts an existing batch's.
    pub raters_see_external_ids: Option<bool>,
    /// The task field to route by; `None` asks for no routing in a new batch and
    /// accepts an existing batch's.
    pub route_by: Option<RouteBy>,
    /// How to route; `None` asks for the default of a new batch (prefer) and accepts an
    /// existing batch's.
    pub routing: Option<Routing>,
    /// The admin who uploaded it (`None` from the command line).
    pub created_by: Option<Uuid>,
}

impl NewBatch {
    /// Whether an upload asking for these settings may add tasks to `batch`: the same
    /// rubric, and the same overlap and randomisation where it names them.
    pub fn fits(&self, batch: &Batch) -> bool {
        self.rubric == batch.rubric
            && self.overlap.is_none_or(|o| o == batch.overlap)
            && self.max_overlap.is_none_or(|m| m == batch.most_raters())
            && self
                .escalate
                .as_ref()
                .is_none_or(|e| Some(e) == batch.escalate.as_ref())
            && self.randomize.is_none_or(|r| r == batch.randomize)
            && self
                .raters_see_external_ids
                .is_none_or(|r| r == batch.raters_see_external_ids)
            && self
                .route_by
                .as_ref()
                .is_none_or(|r| Some(r) == batch.route_by.as_ref())
            && self.routing.is_none_or(|r| r == batch.routing)
    }
}

/// How the final dataset answers a task no lead adjudicated: by majority vote or by
/// Dawid-Skene over the ratings that count (see [`crate::metrics::aggregate`], which
/// runs it).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FinalMethod {
    #[default]
    Majority,
    DawidSkene,
}

impl FinalMethod {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "majority" => Some(Self::Majority),
            "dawid_skene" => Some(Self::DawidSkene),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Majority => "majority",
            Self::DawidSkene => "dawid_skene",
        }
    }
}
