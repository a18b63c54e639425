//! Managing rubric documents: listing them with their versions, reading one, adding a
//! new one or a new version, and saying which questions two versions share. The API, the
//! admin page and the command line call these.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::services::ServiceError;
use crate::store::Store;
use verdict_core::rubric::{self, Rubric, Subject, document};

pub mod api;
pub mod pages;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> axum::Router<crate::state::AppState> {
    pages::router()
}

/// One stored version of a rubric.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VersionView {
    pub version: i32,
    pub created_at: DateTime<Utc>,
    /// Who added it; absent for a built-in version or one added from the command line.
    pub created_by: Option<String>,
}

/// A rubric with its versions, newest last.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RubricSummary {
    pub name: String,
    /// The newest version's title.
    pub title: String,
    /// `pair` (A and B) or `single` (one response).
    #[schema(value_type = String)]
    pub subject: Subject,
    /// Shipped with verdict: its name cannot be taken by an added rubric.
    pub built_in: bool,
    pub latest: i32,
    pub versions: Vec<VersionView>,
}

/// Every rubric a batch can use, built-in ones first.
pub async fn list(store: &Store) -> AppResult<Vec<RubricSummary>> {
    let versions = store.rubric_versions().await?;
    let mut out = Vec::new();
    for name in store.rubric_names().await? {
        let mine: Vec<VersionView> = versions
            .iter()
            .filter(|v| v.name == name)
            .map(|v| VersionView {
                version: v.version,
                created_at: v.created_at,
                created_by: v.created_by.clone(),
            })
            .collect();
        let Some(latest) = mine.last().map(|v| v.version) else {
            continue;
        };
        let Some(rubric) = store.rubric(&name, latest).await? else {
            continue;
        };
        out.push(RubricSummary {
            built_in: rubric::by_name(&name).is_some(),
            title: rubric.title.clone(),
            subject: rubric.subject,
            name,
            latest,
            versions: mine,
        });
    }
    Ok(out)
}

/// The rubric `name` at `version`, or at its newest version; 404 when there is none.
pub async fn get(store: &Store, name: &str, version: Option<i32>) -> AppResult<(i32, Arc<Rubric>)> {
    let found = match version {
        Some(v) => store.rubric(name, v).await?.map(|r| (v, r)),
        None => store.latest_rubric(name).await?,
    };
    found.ok_or(AppError::NotFound)
}

pub use crate::services::rubrics::AddedView;

/// The error a refused rubric document answers with: its broken rules under their paths
/// in the document, said as such.
pub fn refusal(err: ServiceError) -> AppError {
    match err {
        ServiceError::Invalid(fields) => AppError::Validation {
            message: format!(
                "the rubric document breaks {} rule{}; nothing was stored",
                fields.len(),
                if fields.len() == 1 { "" } else { "s" }
            ),
            fields,
        },
        other => other.into(),
    }
}

/// What two versions of a rubric have in common: ratings made under either can be
/// compared on the `comparable` questions.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Comparison {
    pub name: String,
    pub from: i32,
    pub to: i32,
    /// Questions (and derived answers) whose key, place, answers, labels, swap and role
    /// are the same in both.
    pub comparable: Vec<String>,
    /// In both, but changed: not comparable.
    pub changed: Vec<String>,
    /// Only in `from`.
    pub removed: Vec<String>,
    /// Only in `to`.
    pub added: Vec<String>,
}

pub async fn compare(store: &Store, name: &str, from: i32, to: i32) -> AppResult<Comparison> {
    let (_, old) = get(store, name, Some(from)).await?;
    let (_, new) = get(store, name, Some(to)).await?;
    let keys = |r: &Rubric| -> Vec<String> {
        r.questions
            .iter()
            .map(|q| q.key.clone())
            .chain(r.derived.iter().map(|d| d.key.clone()))
            .collect()
    };
    let (old_keys, new_keys) = (keys(&old), keys(&new));
    let comparable = document::comparable(&old, &new);
    Ok(Comparison {
        name: name.to_owned(),
        from,
        to,
        changed: old_keys
            .iter()
            .filter(|k| new_keys.contains(k) && !comparable.contains(k))
            .cloned()
            .collect(),
        removed: old_keys
            .iter()
            .filter(|k| !new_keys.contains(k))
            .cloned()
            .collect(),
        added: new_keys
            .iter()
            .filter(|k| !old_keys.contains(k))
            .cloned()
            .collect(),
        comparable,
    })
}
