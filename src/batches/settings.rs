//! A batch's settings as the API takes them: the PATCH body, read into the change the
//! settings service checks and applies ([`crate::services::batches::settings`]).

use serde::{Deserialize, Deserializer};

use crate::services::batches::settings::SettingsChange;
use verdict_core::rubric::Classification;

pub use crate::services::batches::settings::{Change, SETTINGS, Settings, describe, label};

/// Settings as a PATCH body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsRequest {
    /// `open` or `closed`.
    #[schema(schema_with = crate::web::openapi::batch_states)]
    pub state: Option<String>,
    #[schema(minimum = 1, maximum = 100)]
    pub overlap: Option<i32>,
    /// The most raters a task is asked of, one more at a time while its answers
    /// disagree by `escalate`; equal to `overlap`, no escalation.
    #[schema(minimum = 1, maximum = 100)]
    pub max_overlap: Option<i32>,
    /// When a task needs one more rater: `side`, `points:<n>`, `no_majority` or
    /// `spread:<n>`, each optionally naming its question (`points:sxs:3`); `null` for the
    /// rubric's default (`side` on its first preference, else `no_majority` on its first
    /// choice).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 200)]
    pub escalate: Option<Option<String>>,
    /// The task field to route tasks by, `metadata.<key>` (e.g. `metadata.language`):
    /// raters are offered the tasks whose value is one of their skills first, or only
    /// (`routing`); `null` or blank routes nothing. Changing it starts the dashboard's
    /// "after routing" counts anew.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub route_by: Option<Option<String>>,
    /// `prefer` (tasks matching a rater's skills first, then any) or `strict` (matching
    /// tasks, and tasks without the field, only; the rest wait for a rater with the
    /// skill).
    #[schema(schema_with = crate::web::openapi::routings)]
    pub routing: Option<String>,
    pub randomize: Option<bool>,
    /// Whether raters see each task's external id; otherwise each task is named to its
    /// rater by its number among theirs (`Task 17`). Leads and admins always see them.
    pub raters_see_external_ids: Option<bool>,
    /// Minutes a task stays with its rater without activity (1 to 1440).
    #[schema(minimum = 1, maximum = 1440)]
    pub lease_minutes: Option<i32>,
    #[schema(minimum = 0, maximum = 1000)]
    pub min_explanation_len: Option<i32>,
    /// Pseudo-wins added each way to every compared pair of models in the metrics'
    /// Bradley-Terry ranking (new batches: 0.5); 0 for the plain maximum-likelihood
    /// fit, which gives no ranking when a group of models never lost to the others.
    #[schema(minimum = 0, maximum = 1000)]
    pub bradley_terry_prior: Option<f64>,
    /// How the final dataset answers a task no lead adjudicated: `majority` (new
    /// batches) or `dawid_skene`.
    pub final_method: Option<String>,
    pub classifications: Option<Vec<Classification>>,
    /// Usernames who may rate; `null` opens the batch to every rater.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub raters: Option<Option<Vec<String>>>,
    /// Usernames who may lead; `null` lets every lead lead it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub leads: Option<Option<Vec<String>>>,
}

/// Tells an absent field (`None`) from an explicit `null` (`Some(None)`).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

impl From<SettingsRequest> for SettingsChange {
    /// The change a PATCH body asks for.
    fn from(r: SettingsRequest) -> Self {
        Self {
            state: r.state,
            overlap: r.overlap,
            max_overlap: r.max_overlap,
            escalate: r.escalate,
            route_by: r.route_by,
            routing: r.routing,
            randomize: r.randomize,
            raters_see_external_ids: r.raters_see_external_ids,
            lease_minutes: r.lease_minutes,
            min_explanation_len: r.min_explanation_len,
            bradley_terry_prior: r.bradley_terry_prior,
            final_method: r.final_method,
            classifications: r.classifications,
            raters: r.raters,
            leads: r.leads,
        }
    }
}
