//! Accounts: the users API, the admin's users page and API tokens.

use axum::Router;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::{Role, password};
use crate::credentials::password::Hasher;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::state::AppState;
use crate::store::Store;
use verdict_core::user::User;

pub mod api;
pub mod pages;
pub mod token_pages;
pub mod tokens;

/// API routes of this feature (each handler names the role it needs).
pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router().merge(tokens::router())
}

/// Page routes of this feature.
pub fn page_router() -> Router<AppState> {
    pages::router().merge(token_pages::router())
}

/// A user as the API shows them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UserView {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    pub active: bool,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl From<User> for UserView {
    fn from(u: User) -> Self {
        Self {
            id: u.id,
            username: u.username,
            role: u.role,
            active: u.active,
            created_at: u.created_at,
        }
    }
}

pub const MAX_USERNAME_LEN: usize = 64;

/// A valid request for a new account.
#[derive(Debug)]
pub struct NewUser {
    pub username: String,
    pub role: Role,
    pub password: String,
}

/// Why a username is refused, or `None`.
pub fn username_violation(username: &str) -> Option<String> {
    if username.is_empty() {
        Some("is required".into())
    } else if username.chars().count() > MAX_USERNAME_LEN {
        Some(format!("must be at most {MAX_USERNAME_LEN} characters"))
    } else if !username
        .chars()
        .all(|c| c.is_alphanumeric() || "._-@".contains(c))
    {
        Some("may contain only letters, digits and . _ - @".into())
    } else {
        None
    }
}

/// Why a role name is refused, or the role.
pub fn parse_role(role: Option<&str>) -> Result<Role, String> {
    match role {
        None | Some("") => Err("is required (rater, lead or admin)".into()),
        Some(name) => Role::parse(name)
            .ok_or_else(|| format!("unknown role {name:?}: use rater, lead or admin")),
    }
}

impl NewUser {
    /// Checks every field and reports each broken one.
    pub fn parse(
        username: Option<&str>,
        role: Option<&str>,
        password: Option<&str>,
    ) -> Result<Self, FieldErrors> {
        let mut fields = FieldErrors::new();
        let username = username.unwrap_or("").trim();
        if let Some(why) = username_violation(username) {
            fields.insert("username".into(), why);
        }
        let role = parse_role(role)
            .map_err(|why| fields.insert("role".into(), why))
            .ok();
        let password = password.unwrap_or("");
        if let Some(why) = password::policy_violation(password, &[username]) {
            fields.insert("password".into(), why);
        }
        match role {
            Some(role) if fields.is_empty() => Ok(Self {
                username: username.to_owned(),
                role,
                password: password.to_owned(),
            }),
            _ => Err(fields),
        }
    }
}

/// Hashes the password and stores the account; 409 when the username is taken.
/// `actor` is the admin who asked (recorded in the audit log), `None` from the CLI.
pub async fn create(
    store: &Store,
    hasher: &Hasher,
    new: NewUser,
    actor: Option<&User>,
) -> AppResult<User> {
    let hash = hasher.hash(new.password).await?;
    let user = store.create_user(&new.username, new.role, &hash).await?;
    tracing::info!(username = %user.username, role = %user.role, "user created");
    if let Some(actor) = actor {
        let detail = serde_json::json!({ "user_id": user.id, "role": user.role.as_str() });
        crate::services::audit::record(store, actor, "user.create", &user.username, detail).await;
    }
    Ok(user)
}

/// Changes an admin asks for on an account; `None` leaves a part as it is.
#[derive(Debug, Default)]
pub struct Changes {
    pub role: Option<String>,
    /// `false` deactivates the account and ends its sessions.
    pub active: Option<bool>,
    /// A new password; ends every session of the account.
    pub password: Option<String>,
}

/// Applies `changes` to the account `id` on behalf of `admin`, after checking all of them:
/// 422 naming each broken field (nothing is changed then), 404 for an unknown id.
pub async fn update(state: &AppState, admin: &User, id: Uuid, changes: Changes) -> AppResult<User> {
    let user = find(state, id).await?;
    let mut fields = FieldErrors::new();
    let role = match changes
        .role
        .as_deref()
        .map(|r| parse_role(Some(r)))
        .transpose()
    {
        Ok(role) => role,
        Err(why) => {
            fields.insert("role".into(), why);
            None
        }
    };
    if let Some(why) = changes
        .password
        .as_deref()
        .and_then(|p| password::policy_violation(p, &[&user.username]))
    {
        fields.insert("password".into(), why);
    }
    if id == admin.id && changes.active == Some(false) {
        fields.insert(
            "active".into(),
            "an admin cannot deactivate their own account".into(),
        );
    }
    if id == admin.id && role.is_some_and(|r| r < admin.role) {
        fields.insert(
            "role".into(),
            "an admin cannot demote their own account".into(),
        );
    }
    if !fields.is_empty() {
        return Err(AppError::invalid(fields));
    }
    // What really changes, before and after (a password's value never).
    let mut changed: Vec<&str> = Vec::new();
    let (mut before, mut after) = (serde_json::Map::new(), serde_json::Map::new());
    if let Some(role) = role.filter(|r| *r != user.role) {
        changed.push("role");
        before.insert("role".into(), user.role.as_str().into());
        after.insert("role".into(), role.as_str().into());
    }
    if let Some(active) = changes.active.filter(|a| *a != user.active) {
        changed.push("active");
        before.insert("active".into(), user.active.into());
        after.insert("active".into(), active.into());
    }
    if changes.password.is_some() {
        changed.push("password");
    }
    if let Some(role) = role {
        state.store().set_role(user.id, role).await?;
    }
    if let Some(active) = changes.active {
        state.store().set_active(user.id, active).await?;
    }
    if let Some(new_password) = changes.password {
        let hash = state.hasher().hash(new_password).await?;
        state.store().set_password_hash(user.id, &hash).await?;
    }
    tracing::info!(admin = %admin.username, username = %user.username, "user changed");
    if !changed.is_empty() {
        let detail = serde_json::json!({
            "user_id": user.id, "changed": changed, "before": before, "after": after
        });
        crate::services::audit::record(state.store(), admin, "user.update", &user.username, detail)
            .await;
    }
    find(state, id).await
}

/// The user with this id, or 404.
pub async fn find(state: &AppState, id: Uuid) -> AppResult<User> {
    state
        .store()
        .user_by_id(id)
        .await?
        .ok_or(AppError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_user_reports_every_broken_field() {
        let err = NewUser::parse(Some("a b"), Some("owner"), Some("short")).unwrap_err();
        assert_eq!(err.len(), 3, "{err:?}");
        assert!(err["role"].contains("owner"));
        assert!(err["username"].contains("letters"));
        assert!(err["password"].contains("10"));
    }

    #[test]
    fn new_user_trims_the_name_and_accepts_a_good_request() {
        let ok = NewUser::parse(
            Some("  ana.b "),
            Some("lead"),
            Some("violet kettle under moss"),
        )
        .unwrap();
        assert_eq!((ok.username.as_str(), ok.role), ("ana.b", Role::Lead));
    }

    #[test]
    fn a_password_like_the_username_is_refused() {
        let err =
            NewUser::parse(Some("margarethe"), Some("rater"), Some("margarethe1234")).unwrap_err();
        assert!(err["password"].contains("contains the username"), "{err:?}");
    }

    #[test]
    fn missing_fields_are_required() {
        let err = NewUser::parse(None, None, None).unwrap_err();
        assert_eq!(err["username"], "is required");
        assert!(err["role"].starts_with("is required"));
    }
}
