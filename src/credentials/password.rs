//! Password hashing (argon2id), its bound on memory, and the password policy.

use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use tokio::sync::Semaphore;

use crate::config::Config;
use crate::error::AppError;

pub const MIN_PASSWORD_LEN: usize = 10;
/// Argon2 takes any length; the cap keeps a request from making us hash megabytes.
pub const MAX_PASSWORD_LEN: usize = 1024;
/// The least zxcvbn score accepted (0 to 4): 3 is "safely unguessable" for an online
/// attack, about 10^8 guesses or more.
pub const MIN_SCORE: zxcvbn::Score = zxcvbn::Score::Three;
/// zxcvbn looks at this many characters at most: its matching grows faster than the
/// length, and a password whose first hundred characters are strong is strong.
const SCORED_CHARS: usize = 100;

/// What the pages say a password must be, from the limits [`policy_violation`] checks,
/// so the words cannot drift from the rule.
pub fn policy() -> String {
    format!(
        "from {MIN_PASSWORD_LEN} to {MAX_PASSWORD_LEN} characters and hard to guess: not a \
         common password, word, name, date, keyboard pattern or repetition, and not the \
         username (a phrase of a few unrelated words works well)"
    )
}

/// Why a password is refused, or `None` if it is acceptable. `user_inputs` are words a
/// guesser would try first for this account (its username).
pub fn policy_violation(password: &str, user_inputs: &[&str]) -> Option<String> {
    let len = password.chars().count();
    if len < MIN_PASSWORD_LEN {
        return Some(format!("must be at least {MIN_PASSWORD_LEN} characters"));
    }
    if len > MAX_PASSWORD_LEN {
        return Some(format!("must be at most {MAX_PASSWORD_LEN} characters"));
    }
    let scored: String = password.chars().take(SCORED_CHARS).collect();
    let inputs: Vec<&str> = user_inputs
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    let estimate = zxcvbn::zxcvbn(&scored, &inputs);
    if estimate.score() >= MIN_SCORE {
        return None;
    }
    let contains_input = inputs
        .iter()
        .any(|input| scored.to_lowercase().contains(&input.to_lowercase()));
    let why = if contains_input {
        "contains the username".to_owned()
    } else {
        estimate
            .feedback()
            .and_then(|f| f.warning())
            .map(|w| w.to_string().trim_end_matches('.').to_lowercase())
            .unwrap_or_else(|| "it is a guessable pattern".to_owned())
    };
    Some(format!(
        "is too easy to guess ({why}); use a longer phrase of unrelated words"
    ))
}

/// Runs argon2 with a bound on how many hashes run at once: each takes about 19 MiB for
/// its duration, so without one a flood of logins takes as much memory as it likes. A
/// hash beyond the bound waits its turn, up to a limit, then the request gets 503.
pub struct Hasher {
    permits: Arc<Semaphore>,
    wait: Duration,
    /// Hashes running now, and the most that ever ran at once (for tests and metrics).
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl Hasher {
    pub fn new(config: &Config) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(config.max_concurrent_hashes.max(1))),
            wait: config.hash_wait,
            in_flight: Arc::default(),
            peak: Arc::default(),
        }
    }

    /// The most hashes that ran at the same time so far.
    pub fn peak_in_flight(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Runs `work` on a blocking thread once a permit is free. The permit moves into the
    /// thread, so a request that goes away mid-hash still holds it until the hash ends.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        let permit = tokio::time::timeout(self.wait, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| AppError::Busy)?
            .map_err(AppError::internal)?;
        let (in_flight, peak) = (self.in_flight.clone(), self.peak.clone());
        tokio::task::spawn_blocking(move || {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let out = work();
            in_flight.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
            out
        })
        .await
        .map_err(AppError::internal)
    }

    /// Hashes with argon2id (the crate's default algorithm).
    pub async fn hash(&self, password: String) -> Result<String, AppError> {
        self.run(move || {
            let salt = SaltString::generate(&mut OsRng);
            Argon2::default()
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
        })
        .await?
        .map_err(AppError::internal)
    }

    /// Checks a password against a stored hash. With no stored hash (unknown user) it
    /// still does the work of one check, so the answer takes as long either way.
    pub async fn verify(&self, stored: Option<String>, password: String) -> Result<bool, AppError> {
        self.run(move || {
            let known = stored.is_some();
            let stored = stored.unwrap_or_else(|| DUMMY_HASH.clone());
            let parsed = PasswordHash::new(&stored).map_err(AppError::internal)?;
            let ok = Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok();
            Ok(ok && known)
        })
        .await?
    }
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

    #[test]
    fn the_stated_policy_gives_the_lengths_the_check_enforces() {
        let stated = policy();
        assert!(stated.contains(&format!("from {MIN_PASSWORD_LEN} to {MAX_PASSWORD_LEN}")));
        let short = "q".repeat(MIN_PASSWORD_LEN - 1);
        assert_eq!(
            policy_violation(&short, &[]),
            Some(format!("must be at least {MIN_PASSWORD_LEN} characters"))
        );
        let long = "q".repeat(MAX_PASSWORD_LEN + 1);
        assert!(policy_violation(&long, &[]).is_some());
    }

    fn hasher() -> Hasher {
        Hasher::new(&Config::default())
    }

    #[tokio::test]
    async fn hash_is_argon2id_and_verifies_only_the_right_password() {
        let hasher = hasher();
        let hashed = hasher.hash("a long enough secret".into()).await.unwrap();
        assert!(hashed.starts_with("$argon2id$"), "{hashed}");
        assert!(
            hasher
                .verify(Some(hashed.clone()), "a long enough secret".into())
                .await
                .unwrap()
        );
        assert!(
            !hasher
                .verify(Some(hashed), "a long enough secreT".into())
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn unknown_user_never_verifies() {
        assert!(
            !hasher()
                .verify(None, "anything at all".into())
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn a_hash_waits_for_a_permit_and_gives_up_with_busy() {
        let config = Config {
            max_concurrent_hashes: 1,
            hash_wait: Duration::from_millis(50),
            ..Config::default()
        };
        let hasher = Hasher::new(&config);
        let held = hasher.permits.clone().acquire_owned().await.unwrap();
        let refused = hasher.verify(None, "anything at all".into()).await;
        assert!(matches!(refused, Err(AppError::Busy)), "{refused:?}");
        drop(held);
        assert!(!hasher.verify(None, "anything at all".into()).await.unwrap());
        assert_eq!(hasher.peak_in_flight(), 1);
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
            policy_violation("short", &[]),
            Some("must be at least 10 characters".into())
        );
        assert_eq!(policy_violation("violet kettle under moss", &[]), None);
        assert!(
            policy_violation(&"x".repeat(1025), &[])
                .unwrap()
                .contains("at most")
        );
    }

    #[test]
    fn guessable_passwords_are_refused_with_the_reason() {
        for weak in [
            "          ",
            "1234567890",
            "password123",
            "qwertyuiop",
            "aaaaaaaaaaaa",
            "iloveyou2024",
        ] {
            let why = policy_violation(weak, &["ana"]).unwrap_or_default();
            assert!(why.starts_with("is too easy to guess ("), "{weak:?}: {why}");
        }
        let why = policy_violation("margarethe.k", &["margarethe.k"]).unwrap();
        assert!(why.contains("contains the username"), "{why}");
        let why = policy_violation("margarethe.k1", &["margarethe.k"]).unwrap();
        assert!(why.contains("contains the username"), "{why}");
        assert_eq!(policy_violation("violet kettle under moss", &["ana"]), None);
    }

    #[test]
    fn a_long_password_is_scored_quickly() {
        let started = std::time::Instant::now();
        let long = "abcdefgh1".repeat(113);
        let _ = policy_violation(&long, &["someone"]);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
