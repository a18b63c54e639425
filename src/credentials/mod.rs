//! What proves who someone is, below the web layer: password hashing and its policy,
//! API token and secret generation, the login rate limits, and sealing of secrets kept
//! in the database. The app state holds the hasher and the limiter; `auth`'s extractors
//! and pages use them through the state and re-export these modules under `auth`.

pub mod limits;
pub mod oidc;
pub mod password;
pub mod sealed;
pub mod tokens;

use crate::store::StoreError;

/// Why a credential check could not be answered (a wrong password is an answer, not an
/// error); the web layer turns it into a response in one `From`.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// Every password check is busy and this one waited its turn too long.
    #[error("every password check is busy")]
    Busy,
    /// A sign-in allowance is spent until this many seconds from now.
    #[error("too many sign-in attempts; try again in {retry_after_s} s")]
    TooManyAttempts { retry_after_s: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored hash that cannot be read, or the hashing threads gone.
    #[error("{0}")]
    Internal(String),
}

impl CredentialError {
    fn internal(err: impl std::fmt::Display) -> Self {
        Self::Internal(err.to_string())
    }
}
