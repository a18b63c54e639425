//! Accounts: the users API, the admin's users page and API tokens. What they change,
//! they change through `services::accounts`.

use axum::Router;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::Role;
use crate::state::AppState;
use verdict_core::user::User;

pub mod api;
pub mod pages;
pub mod skills;
pub mod token_pages;
pub mod tokens;

/// API routes of this feature (each handler names the role it needs).
pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router().merge(tokens::router())
}

/// Page routes of this feature.
pub fn page_router() -> Router<AppState> {
    pages::router()
        .merge(token_pages::router())
        .merge(skills::router())
}

/// A user as the API shows them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UserView {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    pub active: bool,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// What the person knows (languages, subjects), trimmed, in lower case and sorted,
    /// as a lead or an admin set it: a batch routed by a task field offers them the tasks
    /// whose value is one of these.
    pub skills: Vec<String>,
    /// What the person says they know: a batch that prefers skills offers those tasks
    /// first too; a batch that routes strictly goes by `skills` alone.
    pub declared_skills: Vec<String>,
}

impl From<User> for UserView {
    fn from(u: User) -> Self {
        Self {
            id: u.id,
            username: u.username,
            role: u.role,
            active: u.active,
            created_at: u.created_at,
            skills: u.skills,
            declared_skills: u.declared_skills,
        }
    }
}
