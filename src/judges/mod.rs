//! LLM judges as admins configure them and run them over batches: the API and the pages,
//! and the view of a judge they show. What they change goes through
//! `services::judging` (`judges` for the judges' settings, `runs` for their runs), as the
//! command line's does.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::store::judges::Judge;
use verdict_core::judge::{Params, Template};

pub mod api;
pub mod pages;

/// The judges' API routes: `/api/v1/judges` and `/api/v1/judge-runs`.
pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

/// The judges' pages: the admin's list and form, and a run's calls.
pub fn page_router() -> axum::Router<crate::state::AppState> {
    pages::router()
}

/// A judge as the API shows it: never its key.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct JudgeView {
    pub id: Uuid,
    pub name: String,
    pub base_url: String,
    pub model: String,
    /// The environment variable the key is read from, if that is where it comes from.
    pub api_key_env: Option<String>,
    /// Whether a key is stored (sealed); it is never shown.
    pub api_key_stored: bool,
    pub params: Params,
    pub concurrency: i32,
    pub requests_per_minute: i32,
    /// The judge's own templates, by rubric name (the others use the built-in ones).
    pub templates: BTreeMap<String, Template>,
    pub created_at: DateTime<Utc>,
}

impl From<Judge> for JudgeView {
    fn from(j: Judge) -> Self {
        Self {
            id: j.id,
            name: j.name,
            base_url: j.base_url,
            model: j.model,
            api_key_env: j.api_key_env,
            api_key_stored: j.api_key_sealed.is_some(),
            params: j.params.0,
            concurrency: j.concurrency,
            requests_per_minute: j.requests_per_minute,
            templates: j.templates.0,
            created_at: j.created_at,
        }
    }
}
