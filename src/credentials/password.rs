//! Password hashing (argon2id), its bound on memory, and the password policy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, mpsc};
use std::time::Duration;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{Output, ParamsString, PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use tokio::sync::Semaphore;

use super::CredentialError;

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

/// Runs argon2 on a fixed set of threads, one per hash that may run at once, each of
/// which keeps its 19 MiB of working memory from one hash to the next. Both the bound and
/// the reuse matter: without a bound a flood of logins takes as much memory as it likes,
/// and with hashes on passing blocking threads the allocator keeps a freed buffer for
/// every thread that ever hashed (a flood left the server hundreds of MB larger). A hash
/// beyond the bound waits its turn, up to a limit, then the request gets 503.
pub struct Hasher {
    permits: Arc<Semaphore>,
    wait: Duration,
    /// Work for the hashing threads; they end when the hasher is dropped.
    jobs: mpsc::Sender<Job>,
    /// Hashes running now, and the most that ever ran at once (for tests and metrics).
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

/// A hash to run, given its thread's working memory.
type Job = Box<dyn FnOnce(&mut Vec<Block>) + Send>;

impl Hasher {
    /// `threads` hash at once (at least one); a check waits at most `wait` for its turn.
    pub fn new(threads: usize, wait: Duration) -> Self {
        let threads = threads.max(1);
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads {
            let queue = queue.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("verdict-hash-{n}"))
                .spawn(move || {
                    let mut memory = Vec::new();
                    loop {
                        // One thread at a time waits on the queue; it lets go once it
                        // has a job, so the next job goes to the next free thread.
                        let job = match queue.lock() {
                            Ok(queue) => queue.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(&mut memory),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(err) = spawned {
                tracing::error!(%err, "cannot start a password hashing thread");
            }
        }
        Self {
            permits: Arc::new(Semaphore::new(threads)),
            wait,
            jobs,
            in_flight: Arc::default(),
            peak: Arc::default(),
        }
    }

    /// The most hashes that ran at the same time so far.
    pub fn peak_in_flight(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Runs `work` on a hashing thread once a permit is free; there are as many permits as
    /// threads, so a thread is free too. The permit moves into the job, so a request that
    /// goes away mid-hash still holds it until the hash ends.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Vec<Block>) -> T + Send + 'static,
    ) -> Result<T, CredentialError> {
        let permit = tokio::time::timeout(self.wait, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| CredentialError::Busy)?
            .map_err(CredentialError::internal)?;
        let (in_flight, peak) = (self.in_flight.clone(), self.peak.clone());
        let (done, answer) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move |memory: &mut Vec<Block>| {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                let out = work(memory);
                in_flight.fetch_sub(1, Ordering::SeqCst);
                drop(permit);
                let _ = done.send(out);
            }))
            .map_err(|_| CredentialError::internal("the password hashing threads have stopped"))?;
        answer
            .await
            .map_err(|_| CredentialError::internal("a password hash did not finish"))
    }

    /// Hashes with argon2id and the crate's default parameters.
    pub async fn hash(&self, password: String) -> Result<String, CredentialError> {
        self.run(move |memory| hash_in(memory, password.as_bytes()))
            .await?
            .map_err(CredentialError::internal)
    }

    /// Checks a password against a stored hash. With no stored hash (unknown user) it
    /// still does the work of one check, so the answer takes as long either way.
    pub async fn verify(
        &self,
        stored: Option<String>,
        password: String,
    ) -> Result<bool, CredentialError> {
        self.run(move |memory| {
            let known = stored.is_some();
            let stored = stored.as_deref().unwrap_or(DUMMY_HASH.as_str());
            let ok = verify_in(memory, stored, password.as_bytes())?;
            Ok(ok && known)
        })
        .await?
    }
}

/// `memory` grown to the blocks `params` need (it is never shrunk: the next hash
/// takes as many), as the slice a hash works in.
fn blocks<'m>(memory: &'m mut Vec<Block>, params: &Params) -> &'m mut [Block] {
    let needed = params.block_count();
    if memory.len() < needed {
        memory.resize(needed, Block::default());
    }
    &mut memory[..needed]
}

/// An argon2id hash of `password` in PHC form, worked out in `memory`.
fn hash_in(memory: &mut Vec<Block>, password: &[u8]) -> Result<String, String> {
    let params = Params::default();
    let salt = SaltString::generate(&mut OsRng);
    let mut raw_salt = [0u8; 64];
    let raw_salt = salt
        .as_salt()
        .decode_b64(&mut raw_salt)
        .map_err(|e| e.to_string())?;
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    Argon2::new(Algorithm::Argon2id, Version::default(), params.clone())
        .hash_password_into_with_memory(password, raw_salt, &mut out, blocks(memory, &params))
        .map_err(|e| e.to_string())?;
    let hash = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::default().into()),
        params: ParamsString::try_from(&params).map_err(|e| e.to_string())?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out).map_err(|e| e.to_string())?),
    };
    Ok(hash.to_string())
}

/// Whether `password` matches the PHC hash `stored`, worked out in `memory`; an error
/// when `stored` is not a readable argon2 hash.
fn verify_in(
    memory: &mut Vec<Block>,
    stored: &str,
    password: &[u8],
) -> Result<bool, CredentialError> {
    let parsed = PasswordHash::new(stored).map_err(CredentialError::internal)?;
    let algorithm = Algorithm::try_from(parsed.algorithm).map_err(CredentialError::internal)?;
    let version = parsed
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(CredentialError::internal)?
        .unwrap_or_default();
    let params = Params::try_from(&parsed).map_err(CredentialError::internal)?;
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return Err(CredentialError::internal(
            "a stored password hash lacks its salt or hash",
        ));
    };
    let mut raw_salt = [0u8; 64];
    let raw_salt = salt
        .decode_b64(&mut raw_salt)
        .map_err(CredentialError::internal)?;
    let mut out = vec![0u8; expected.len()];
    let hashed = Argon2::new(algorithm, version, params.clone()).hash_password_into_with_memory(
        password,
        raw_salt,
        &mut out,
        blocks(memory, &params),
    );
    if hashed.is_err() {
        // A password argon2 refuses (longer than it takes) matches nothing.
        return Ok(false);
    }
    // `Output` compares in constant time.
    Ok(Output::new(&out).is_ok_and(|out| out == expected))
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
        Hasher::new(2, Duration::from_secs(10))
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
    async fn hashes_agree_with_the_argon2_crates_own() {
        use argon2::password_hash::PasswordVerifier;
        let hasher = hasher();
        let ours = hasher.hash("a long enough secret".into()).await.unwrap();
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"a long enough secret", &parsed)
                .is_ok()
        );
        let salt = SaltString::generate(&mut OsRng);
        let theirs = Argon2::default()
            .hash_password(b"another secret", &salt)
            .unwrap()
            .to_string();
        assert!(
            hasher
                .verify(Some(theirs.clone()), "another secret".into())
                .await
                .unwrap()
        );
        assert!(!hasher.verify(Some(theirs), "another".into()).await.unwrap());
        assert!(matches!(
            hasher.verify(Some("not a hash".into()), "x".into()).await,
            Err(CredentialError::Internal(_))
        ));
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
        let hasher = Hasher::new(1, Duration::from_millis(50));
        let held = hasher.permits.clone().acquire_owned().await.unwrap();
        let refused = hasher.verify(None, "anything at all".into()).await;
        assert!(matches!(refused, Err(CredentialError::Busy)), "{refused:?}");
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
