//! Which account a sign-in through the identity provider opens (see
//! [`verdict_core::sign_in`]): the one its subject id was linked to; else the one its
//! configured claim names, linked now; else, for an allowed email domain, a new one. A
//! role claim, when configured, sets the role at every sign-in.

use crate::credentials::password::Hasher;
use crate::services::ServiceError;
use crate::services::accounts::{self, Changes, NewUser};
use crate::services::audit::Actor;
use crate::store::{Store, StoreError};
use verdict_core::sign_in::{Claims, Policy, Refused};
use verdict_core::user::User;

/// Why no account was opened: a refusal to show the person, or a failure.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error(transparent)]
    Failed(#[from] ServiceError),
}

impl From<StoreError> for SignInError {
    fn from(e: StoreError) -> Self {
        Self::Failed(e.into())
    }
}

/// The account `claims` open under `policy`, made or updated as the policy says.
pub async fn account_for(
    store: &Store,
    hasher: &Hasher,
    policy: &Policy,
    claims: &Claims,
) -> Result<User, SignInError> {
    let user = match store.user_by_oidc_subject(&claims.subject).await? {
        Some(user) => user,
        None => linked_or_made(store, hasher, policy, claims).await?,
    };
    if !user.active {
        return Err(Refused::Deactivated(user.username).into());
    }
    match policy.role(claims) {
        Some(role) if role != user.role => {
            let changes = Changes {
                role: Some(role.as_str().to_owned()),
                ..Changes::default()
            };
            let changed =
                accounts::update_user(store, hasher, Actor::IdentityProvider, user.id, changes)
                    .await?;
            Ok(changed)
        }
        _ => Ok(user),
    }
}

/// The account the claim names, linked to the subject id now, or a new one.
async fn linked_or_made(
    store: &Store,
    hasher: &Hasher,
    policy: &Policy,
    claims: &Claims,
) -> Result<User, SignInError> {
    let username = policy.username(claims)?;
    match store.sign_in_candidate(&username).await? {
        Some((_, Some(other))) if other != claims.subject => {
            Err(Refused::OtherIdentity(username).into())
        }
        Some((user, _)) => {
            link(store, &user, &claims.subject).await?;
            Ok(user)
        }
        None => {
            let role = policy.may_create(claims, &username)?;
            if accounts::username_violation(&username).is_some() {
                return Err(Refused::NoAccount(username).into());
            }
            // Nobody knows this password: the account signs in through the provider (or
            // gets a password from an admin later).
            let new = NewUser {
                username,
                role,
                password: crate::credentials::tokens::generate(),
            };
            let user =
                accounts::create_user(store, hasher, new, Some(Actor::IdentityProvider)).await?;
            link(store, &user, &claims.subject).await?;
            Ok(user)
        }
    }
}

async fn link(store: &Store, user: &User, subject: &str) -> Result<(), SignInError> {
    match store.link_oidc_subject(user.id, subject).await {
        Ok(_) => Ok(()),
        Err(StoreError::Duplicate(_)) => Err(Refused::OtherIdentity(user.username.clone()).into()),
        Err(e) => Err(e.into()),
    }
}
