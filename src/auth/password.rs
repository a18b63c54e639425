//! Password hashing (argon2id) and the password policy.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use std::sync::LazyLock;

use argon2::Argon2;

use crate::error::AppError;

pub const MIN_PASSWORD_LEN: usize = 10;
/// Argon2 takes any length; the cap keeps a request from making us hash megabytes.
pub const MAX_PASSWORD_LEN: usize = 1024;

/// Why a password is refused, or `None` if it is acceptable.
pub fn policy_violation(password: &str) -> Option<String> {
    let len = password.chars().count();
    if len < MIN_PASSWORD_LEN {
        Some(format!("must be at least {MIN_PASSWORD_LEN} characters"))
    } else if len > MAX_PASSWORD_LEN {
        Some(format!("must be at most {MAX_PASSWORD_LEN} characters"))
    } else {
        None
    }
}

/// Hashes with argon2id (the crate's default algorithm) off the async threads.
pub async fn hash(password: String) -> Result<String, AppError> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
    })
    .await
    .map_err(AppError::internal)?
    .map_err(AppError::internal)
}

/// Checks a password against a stored hash. With no stored hash (unknown user) it still
/// does the work of one check, so the answer takes as long either way.
pub async fn verify(stored: Option<String>, password: String) -> Result<bool, AppError> {
    tokio::task::spawn_blocking(move || {
        let known = stored.is_some();
        let stored = stored.unwrap_or_else(|| DUMMY_HASH.clone());
        let parsed = PasswordHash::new(&stored).map_err(AppError::internal)?;
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        Ok(ok && known)
    })
    .await
    .map_err(AppError::internal)?
}

/// An argon2id hash of a random secret nobody knows, made once with the same parameters
/// as real hashes, so checking against it costs the same.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let salt = SaltString::generate(&mut OsRng);
    let secret = super::tokens::generate();
    Argon2::default()
        .hash_password(secret.as_bytes(), &salt)
        .expect("argon2 with default parameters hashes any input")
        .to_string()
});

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_is_argon2id_and_verifies_only_the_right_password() {
        let hashed = hash("a long enough secret".into()).await.unwrap();
        assert!(hashed.starts_with("$argon2id$"), "{hashed}");
        assert!(
            verify(Some(hashed.clone()), "a long enough secret".into())
                .await
                .unwrap()
        );
        assert!(
            !verify(Some(hashed), "a long enough secreT".into())
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn unknown_user_never_verifies() {
        assert!(!verify(None, "anything at all".into()).await.unwrap());
    }

    #[test]
    fn dummy_hash_uses_default_parameters() {
        let parsed = PasswordHash::new(&DUMMY_HASH).unwrap();
        assert_eq!(parsed.algorithm.as_str(), "argon2id");
        let params = argon2::Params::try_from(&parsed).unwrap();
        let default = argon2::Params::default();
        let costs = |p: &argon2::Params| (p.m_cost(), p.t_cost(), p.p_cost());
        assert_eq!(costs(&params), costs(&default));
    }

    #[test]
    fn policy_names_the_bound() {
        assert_eq!(
            policy_violation("short"),
            Some("must be at least 10 characters".into())
        );
        assert_eq!(policy_violation("long enough!"), None);
        assert!(
            policy_violation(&"x".repeat(1025))
                .unwrap()
                .contains("at most")
        );
    }
}
