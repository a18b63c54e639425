//! Rubric documents as admins add them, from the admin page, the API or the command
//! line: a new rubric, or the next version of one.

use serde::Serialize;
use serde_json::Value;

use super::audit::Actor;
use super::{ServiceError, ServiceResult};
use crate::store::rubrics::Added;
use crate::store::{Store, StoreError};
use verdict_core::rubric::{self, document};

/// What adding a document did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AddedView {
    pub name: String,
    pub version: i32,
    /// `false` when the document equals the newest version, which stays as it was.
    pub created: bool,
}

/// Checks a rubric document and stores it as a new rubric, or as the next version of the
/// rubric of its name, recording the new version in the audit log. Every broken rule is
/// reported under its path in the document; a built-in rubric's name is a conflict.
pub async fn add(store: &Store, document: &Value, actor: Actor<'_>) -> ServiceResult<AddedView> {
    let rubric = document::from_value(document).map_err(ServiceError::Invalid)?;
    if rubric::by_name(&rubric.name).is_some() {
        return Err(ServiceError::Conflict(format!(
            "{} is a built-in rubric and changes only with verdict itself: add your version \
             under another name",
            rubric.name
        )));
    }
    let by = match actor {
        Actor::User(user) => Some(user.id),
        Actor::Cli | Actor::IdentityProvider | Actor::Server => None,
    };
    // A first version added twice at once races on the key: the loser looks again.
    let mut attempt = 0;
    let Added { version, created } = loop {
        match store.add_rubric(&rubric, by).await {
            Err(StoreError::Retry) if attempt < 3 => attempt += 1,
            other => break other?,
        }
    };
    if created {
        let detail = serde_json::json!({ "version": version, "title": rubric.title });
        super::audit::record(store, actor, "rubric.add", &rubric.name, detail).await;
    }
    Ok(AddedView {
        name: rubric.name,
        version,
        created,
    })
}
