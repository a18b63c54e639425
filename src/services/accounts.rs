//! Accounts and their API tokens: creating an account, changing its role, activation or
//! password, and making or revoking a token. The admin's pages, the API and the command
//! line all change accounts through these functions, so each change is checked and
//! recorded in the audit log the same way whoever asks.

use uuid::Uuid;

use super::audit::{self, Actor};
use super::{FieldErrors, ServiceError, ServiceResult};
use crate::credentials::password::{self, Hasher};
use crate::credentials::tokens;
use crate::store::Store;
use crate::store::tokens::ApiToken;
use verdict_core::role::Role;
use verdict_core::user::User;

/// The longest username accepted, in characters.
pub const MAX_USERNAME_LEN: usize = 64;

/// The longest token name accepted, in characters.
pub const MAX_TOKEN_NAME_LEN: usize = 100;

/// A valid request for a new account.
#[derive(Debug)]
pub struct NewUser {
    /// The name they sign in with, trimmed.
    pub username: String,
    /// What the account may do.
    pub role: Role,
    /// The password as given; only its hash is stored.
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

/// How the logs name whoever asked.
fn name_of<'a>(actor: &Actor<'a>) -> &'a str {
    match actor {
        Actor::User(user) => user.username.as_str(),
        Actor::Cli => "cli",
        Actor::IdentityProvider => "identity provider",
        Actor::Server => "server",
    }
}

/// Hashes the password and stores the account; a taken username is refused as the
/// store's duplicate. `actor` is who asked, recorded in the audit log; `None` records
/// nothing (the accounts the demo and the tests start with).
pub async fn create_user(
    store: &Store,
    hasher: &Hasher,
    new: NewUser,
    actor: Option<Actor<'_>>,
) -> ServiceResult<User> {
    let hash = hasher.hash(new.password).await?;
    let user = store.create_user(&new.username, new.role, &hash).await?;
    tracing::info!(username = %user.username, role = %user.role, "user created");
    if let Some(actor) = actor {
        let detail = serde_json::json!({ "user_id": user.id, "role": user.role.as_str() });
        audit::record(store, actor, "user.create", &user.username, detail).await;
    }
    Ok(user)
}

/// Changes asked for on an account; `None` leaves a part as it is.
#[derive(Debug, Default)]
pub struct Changes {
    /// The new role's name.
    pub role: Option<String>,
    /// `false` deactivates the account and ends its sessions.
    pub active: Option<bool>,
    /// A new password; ends every session of the account.
    pub password: Option<String>,
    /// What the person knows, as given (checked here, and kept trimmed, in lower case
    /// and sorted: see [`verdict_core::routing::parse_skills`]).
    pub skills: Option<Vec<String>>,
    /// What the person says they know, checked as `skills` are: only the person
    /// themself declares it (see [`update_own`]).
    pub declared_skills: Option<Vec<String>>,
}

/// Why a rater's own change of `skills` is refused: a lead sets them.
pub const SKILLS_SET_BY_A_LEAD: &str = "are set by a lead or an admin for a rater; say what you know in \
     declared_skills instead: a batch that prefers skills offers those tasks first, and one \
     that routes strictly goes by the skills a lead set";

/// Applies `changes` to `user`'s own account: only skills and declared skills; a rater's
/// skills are a lead's to set (invalid, naming `skills`), so what a rater says they know
/// is declared and never decides a strictly routed batch.
pub async fn update_own(
    store: &Store,
    hasher: &Hasher,
    user: &User,
    changes: Changes,
) -> ServiceResult<User> {
    if changes.skills.is_some() && !user.sets_own_skills() {
        let mut fields = FieldErrors::new();
        fields.insert("skills".into(), SKILLS_SET_BY_A_LEAD.into());
        return Err(ServiceError::Invalid(fields));
    }
    let own = Changes {
        skills: changes.skills,
        declared_skills: changes.declared_skills,
        ..Changes::default()
    };
    update_user(store, hasher, user.into(), user.id, own).await
}

/// Whether `actor` may make `changes` to account `id`: an admin anything (the rules of
/// [`update_user`] still hold), a lead only a rater's skills; forbidden otherwise.
pub async fn may_change(
    store: &Store,
    actor: &User,
    id: Uuid,
    changes: &Changes,
) -> ServiceResult<()> {
    if actor.can_administer() {
        return Ok(());
    }
    if !actor.can_lead() {
        return Err(ServiceError::Forbidden);
    }
    let only_skills = changes.role.is_none()
        && changes.active.is_none()
        && changes.password.is_none()
        && changes.declared_skills.is_none();
    let target = find_user(store, id).await?;
    if only_skills && target.role == Role::Rater {
        Ok(())
    } else {
        Err(ServiceError::Forbidden)
    }
}

/// The account with this id, or not found.
async fn find_user(store: &Store, id: Uuid) -> ServiceResult<User> {
    store.user_by_id(id).await?.ok_or(ServiceError::NotFound)
}

/// Applies `changes` to the account `id` on behalf of `actor`, after checking all of
/// them: invalid naming each broken field (nothing is changed then), not found for an
/// unknown id. An admin may not deactivate or demote their own account. What really
/// changed goes in the audit log (a password's value never).
pub async fn update_user(
    store: &Store,
    hasher: &Hasher,
    actor: Actor<'_>,
    id: Uuid,
    changes: Changes,
) -> ServiceResult<User> {
    let user = find_user(store, id).await?;
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
    let mut checked = |field: &str, given: Option<&[String]>| match given
        .map(verdict_core::routing::parse_skills)
    {
        Some(Ok(skills)) => Some(skills),
        Some(Err(why)) => {
            fields.insert(field.into(), why);
            None
        }
        None => None,
    };
    let skills = checked("skills", changes.skills.as_deref());
    let declared = checked("declared_skills", changes.declared_skills.as_deref());
    if let Actor::User(admin) = actor
        && admin.id == id
    {
        if changes.active == Some(false) {
            fields.insert(
                "active".into(),
                "an admin cannot deactivate their own account".into(),
            );
        }
        if role.is_some_and(|r| r < admin.role) {
            fields.insert(
                "role".into(),
                "an admin cannot demote their own account".into(),
            );
        }
    }
    if !fields.is_empty() {
        return Err(ServiceError::Invalid(fields));
    }
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
    if let Some(skills) = skills.as_ref().filter(|s| **s != user.skills) {
        changed.push("skills");
        before.insert("skills".into(), user.skills.clone().into());
        after.insert("skills".into(), skills.clone().into());
    }
    if let Some(declared) = declared.as_ref().filter(|s| **s != user.declared_skills) {
        changed.push("declared_skills");
        before.insert(
            "declared_skills".into(),
            user.declared_skills.clone().into(),
        );
        after.insert("declared_skills".into(), declared.clone().into());
    }
    if let Some(role) = role {
        store.set_role(user.id, role).await?;
    }
    if let Some(active) = changes.active {
        store.set_active(user.id, active).await?;
    }
    if let Some(skills) = &skills {
        store.set_skills(user.id, skills).await?;
    }
    if let Some(declared) = &declared {
        store.set_declared_skills(user.id, declared).await?;
    }
    if let Some(new_password) = changes.password {
        let hash = hasher.hash(new_password).await?;
        store.set_password_hash(user.id, &hash).await?;
    }
    tracing::info!(admin = name_of(&actor), username = %user.username, "user changed");
    if !changed.is_empty() {
        let detail = serde_json::json!({
            "user_id": user.id, "changed": changed, "before": before, "after": after
        });
        audit::record(store, actor, "user.update", &user.username, detail).await;
    }
    find_user(store, id).await
}

/// Makes a token for `owner` and returns its secret, with no audit entry: a token the
/// owner makes for themself.
pub async fn issue_token(
    store: &Store,
    owner: &User,
    name: &str,
) -> ServiceResult<(ApiToken, String)> {
    let secret = tokens::generate();
    let token = store
        .create_token(owner, name, &tokens::digest(&secret))
        .await?;
    tracing::info!(username = %owner.username, token = %token.id, "API token created");
    Ok((token, secret))
}

/// Makes a token for `owner` on behalf of someone else (an admin, or the command
/// line), recorded in the audit log; returns its secret.
pub async fn issue_token_for(
    store: &Store,
    actor: Actor<'_>,
    owner: &User,
    name: &str,
) -> ServiceResult<(ApiToken, String)> {
    let (token, secret) = issue_token(store, owner, name).await?;
    let detail = serde_json::json!({ "name": token.name });
    audit::record(store, actor, "token.create", &owner.username, detail).await;
    Ok((token, secret))
}

/// Checks a request for a token and makes it: for the caller, or for `username` (an
/// admin only). Invalid naming `name`, forbidden for a non-admin asking for someone
/// else, not found for an unknown user. Tokens made for someone else go in the audit
/// log.
pub async fn create_token(
    store: &Store,
    caller: &User,
    name: Option<&str>,
    username: Option<&str>,
) -> ServiceResult<(ApiToken, String)> {
    let name = name.map(str::trim).unwrap_or("").to_owned();
    if name.is_empty() || name.chars().count() > MAX_TOKEN_NAME_LEN {
        return Err(ServiceError::field(
            "name",
            format!("is required, at most {MAX_TOKEN_NAME_LEN} characters"),
        ));
    }
    let owner = match username.map(str::trim).filter(|u| !u.is_empty()) {
        Some(username) if username != caller.username => {
            if caller.role < Role::Admin {
                return Err(ServiceError::Forbidden);
            }
            store
                .user_by_name(username)
                .await?
                .ok_or(ServiceError::NotFound)?
        }
        _ => caller.clone(),
    };
    if owner.id == caller.id {
        issue_token(store, &owner, &name).await
    } else {
        issue_token_for(store, caller.into(), &owner, &name).await
    }
}

/// The live tokens the caller may see and revoke: their own, or with `all` every
/// user's (admin). Forbidden for `all` from anyone else.
pub async fn visible_tokens(
    store: &Store,
    caller: &User,
    all: bool,
) -> ServiceResult<Vec<ApiToken>> {
    if all && caller.role < Role::Admin {
        return Err(ServiceError::Forbidden);
    }
    Ok(store.list_tokens((!all).then_some(caller.id)).await?)
}

/// Revokes a token: one of the caller's, or anyone's for an admin (recorded in the
/// audit log when it is someone else's). Not found for a token that is not live or
/// not the caller's to revoke.
pub async fn revoke_token(store: &Store, caller: &User, id: Uuid) -> ServiceResult<ApiToken> {
    let admin = caller.role >= Role::Admin;
    let token = store
        .revoke_token((!admin).then_some(caller.id), id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    tracing::info!(by = %caller.username, owner = %token.username, token = %token.id, "API token revoked");
    if token.username != caller.username {
        let detail = serde_json::json!({ "name": token.name });
        audit::record(store, caller, "token.revoke", &token.username, detail).await;
    }
    Ok(token)
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
