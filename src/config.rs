//! Run-time settings, from flags and environment (see `verdict serve --help`).

use std::time::Duration;

use sha2::{Digest, Sha256};

/// Settings of a running server. `Config::default()` suits tests and the demo.
#[derive(Debug, Clone)]
pub struct Config {
    /// Largest request body accepted, in bytes (uploads included).
    pub max_upload_bytes: u64,
    /// Mark the session cookie `Secure` (serve over HTTPS when this is on).
    pub cookie_secure: bool,
    /// A session ends after this long without a request.
    pub session_idle: Duration,
    /// A session ends this long after login, however active.
    pub session_absolute: Duration,
    /// Login attempts allowed per minute for one username from one network address.
    pub login_per_account_and_address_per_min: u32,
    /// Login attempts allowed per minute from one network address, whatever the username.
    pub login_per_address_per_min: u32,
    /// Reverse proxies whose `X-Forwarded-For` is believed: a request from one of them
    /// comes from the right-most forwarded address that is not one of them. Empty: the
    /// connection's peer is the client.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Password hashes (about 19 MiB each) run at once at most; more wait their turn.
    /// Each has a thread of its own that keeps its 19 MiB between hashes.
    pub max_concurrent_hashes: usize,
    /// How long a password check waits for its turn before the request gets 503.
    pub hash_wait: Duration,
    /// A connection must send a request's headers within this long of opening, or of
    /// its previous response (so it also bounds how long a kept-alive connection idles).
    pub header_timeout: Duration,
    /// A request body that sends nothing for this long is abandoned.
    pub body_idle_timeout: Duration,
    /// Open connections at most; further ones wait until one closes.
    pub max_connections: usize,
    /// Heavy reads (metrics, exports) running at once; more wait their turn, so that
    /// leads' reports cannot starve raters of the database and the cores.
    pub max_heavy_reads: usize,
    /// A judge run's worker that has not said it is alive for this long loses the run to
    /// another (its process died).
    pub judge_lease: Duration,
    /// The first wait before a judge call is retried (it doubles each time, with jitter).
    pub judge_retry_delay: Duration,
    /// Where judges may be sent (`--judge-allow-hosts`) and the largest reply limit a
    /// judge may set (`--judge-max-reply-mib`).
    pub judge_endpoints: crate::services::judging::endpoint::EndpointPolicy,
    /// Seals the API keys judges store (`VERDICT_SECRET_KEY`); none: keys come from
    /// environment variables only.
    pub sealing_key: Option<crate::credentials::sealed::SealingKey>,
    /// For tests only (no flag sets it): an export fails after this many rows, as a
    /// database failing part way would make it, to prove the client is told.
    pub export_fault_after_rows: Option<u64>,
    /// Where the vendored Pyodide package lives (`scripts/vendor-pyodide` installs it);
    /// the in-browser code runner's Python is served from it. Missing: Python does not
    /// run, JavaScript still does.
    pub pyodide_dir: std::path::PathBuf,
    /// How webhooks are delivered: how often the outbox is read, the time-out of an
    /// attempt, and the retries.
    pub webhooks: Delivering,
    /// Who may read `/metrics` (`--metrics-token`, `--metrics-open`); by default nobody.
    pub metrics: MetricsAccess,
    /// Sign-in through the team's identity provider (`--oidc-*`); none: passwords only.
    pub oidc: Option<crate::credentials::oidc::OidcConfig>,
    /// Whether people may sign in with a password (`--no-password-sign-in` turns it off
    /// where everyone signs in through the identity provider). API tokens work either way.
    pub password_sign_in: bool,
    /// How long a deleted batch can be restored before it is purged
    /// (`--deleted-retention-days`).
    pub deleted_retention: crate::services::corrections::Retention,
}

/// Where `scripts/vendor-pyodide` installs Pyodide, relative to the working directory.
pub const DEFAULT_PYODIDE_DIR: &str = "vendor/node_modules/pyodide";

/// How long a judge run's worker may stay silent before another takes the run over,
/// unless `--judge-lease-s` says otherwise; the command line's runs use it too.
pub const DEFAULT_JUDGE_LEASE: Duration = Duration::from_secs(30);

/// The first wait before a judge call is retried, for the server and the command line.
pub const DEFAULT_JUDGE_RETRY_DELAY: Duration = Duration::from_secs(1);

/// The most password hashes a server runs at once by default, whatever its cores: the
/// hashing threads keep their memory, 76 MiB for four.
pub const MAX_DEFAULT_CONCURRENT_HASHES: usize = 4;

/// How long a password check waits for its turn by default.
pub const DEFAULT_HASH_WAIT: Duration = Duration::from_secs(10);

/// The machine's cores (2 when it cannot tell): the runtime's workers, one each, and the
/// defaults below (one password hash per core: more would not finish sooner, only take
/// more memory).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_upload_bytes: 256 * 1024 * 1024,
            cookie_secure: false,
            session_idle: Duration::from_secs(12 * 3600),
            session_absolute: Duration::from_secs(7 * 24 * 3600),
            login_per_account_and_address_per_min: 5,
            login_per_address_per_min: 30,
            trusted_proxies: Vec::new(),
            max_concurrent_hashes: cores().min(MAX_DEFAULT_CONCURRENT_HASHES),
            hash_wait: DEFAULT_HASH_WAIT,
            header_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(30),
            max_connections: 512,
            max_heavy_reads: cores().div_ceil(2),
            judge_lease: DEFAULT_JUDGE_LEASE,
            judge_retry_delay: DEFAULT_JUDGE_RETRY_DELAY,
            judge_endpoints: Default::default(),
            sealing_key: None,
            export_fault_after_rows: None,
            pyodide_dir: std::path::PathBuf::from(DEFAULT_PYODIDE_DIR),
            webhooks: Default::default(),
            metrics: MetricsAccess::Off,
            oidc: None,
            password_sign_in: true,
            deleted_retention: Default::default(),
        }
    }
}

/// Who may read `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MetricsAccess {
    /// Not served: `/metrics` is not found.
    #[default]
    Off,
    /// Served to anyone who can reach it (a scraper on a private network).
    Open,
    /// Served to requests with `Authorization: Bearer <token>`; the SHA-256 of the token is
    /// kept, and compared with the digest of what a request sends.
    Token([u8; 32]),
}

/// Why a request may not read `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsRefusal {
    /// The server does not serve it at all.
    NotServed,
    /// It is served to holders of the token, and the request holds none, or another.
    NoToken,
}

/// The shortest `--metrics-token` accepted: a token a scraper keeps in a file, not one a
/// person types, so nothing guessable.
pub const MIN_TOKEN_LEN: usize = 24;

impl MetricsAccess {
    /// The access that `--metrics-token` and `--metrics-open` ask for; a token shorter
    /// than [`MIN_TOKEN_LEN`] or given with `--metrics-open` is refused.
    pub fn from_settings(token: Option<&str>, open: bool) -> Result<Self, String> {
        match (token.map(str::trim).filter(|t| !t.is_empty()), open) {
            (Some(_), true) => Err(
                "--metrics-token and --metrics-open cannot both be set: a token would not be asked for"
                    .into(),
            ),
            (Some(token), false) if token.chars().count() < MIN_TOKEN_LEN => Err(format!(
                "--metrics-token must be at least {MIN_TOKEN_LEN} characters long"
            )),
            (Some(token), false) => Ok(Self::Token(Sha256::digest(token.as_bytes()).into())),
            (None, true) => Ok(Self::Open),
            (None, false) => Ok(Self::Off),
        }
    }

    /// Whether a request sending `bearer` (its `Authorization: Bearer` token, if any)
    /// may read the figures: `Err` says why not.
    pub fn admits(&self, bearer: Option<&str>) -> Result<(), MetricsRefusal> {
        let expected = match self {
            Self::Off => return Err(MetricsRefusal::NotServed),
            Self::Open => return Ok(()),
            Self::Token(digest) => digest,
        };
        let given = bearer.ok_or(MetricsRefusal::NoToken)?;
        // Digests of equal length are compared whole, so the time taken says nothing
        // about how much of the token was right.
        let given: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
        let differences = given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differences == 0 {
            Ok(())
        } else {
            Err(MetricsRefusal::NoToken)
        }
    }
}

/// How webhooks are delivered: how often the outbox is read, how long a receiver has,
/// the retries and where receivers may be (`--webhook-timeout-s`, `--webhook-attempts`,
/// `--webhook-allow-hosts`).
#[derive(Debug, Clone)]
pub struct Delivering {
    /// How often the outbox is looked at.
    pub poll: Duration,
    /// The longest an attempt waits for the receiver's answer.
    pub timeout: Duration,
    pub retries: verdict_core::webhook::Retries,
    /// Where receivers may be: public addresses, and the internal ones an admin allows.
    pub endpoints: crate::services::judging::endpoint::EndpointPolicy,
    /// The most subscriptions one person may make, and the most one batch may have
    /// (`--webhook-max-per-owner`, `--webhook-max-per-batch`).
    pub max_per_owner: i64,
    pub max_per_batch: i64,
    /// How often open batches someone asked `batch.stalled` of are looked at for a stall
    /// (`--stall-check-s`).
    pub stall_check: Duration,
}

impl Delivering {
    /// How long a claim holds a delivery: longer than an attempt can take (the
    /// receiver's time-out, and as long again for looking the subscription up and
    /// recording the attempt). An instance that dies holding one gives it up this late.
    pub fn lease(&self) -> Duration {
        self.timeout * 2 + Duration::from_secs(1)
    }
}

impl Default for Delivering {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            retries: Default::default(),
            endpoints: crate::services::judging::endpoint::EndpointPolicy::webhooks(None),
            max_per_owner: 50,
            stall_check: Duration::from_secs(30),
            max_per_batch: 100,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_settings_choose_the_access_and_refuse_what_cannot_be_meant() {
        assert_eq!(
            MetricsAccess::from_settings(None, false),
            Ok(MetricsAccess::Off)
        );
        assert_eq!(
            MetricsAccess::from_settings(Some("  "), false),
            Ok(MetricsAccess::Off)
        );
        assert_eq!(
            MetricsAccess::from_settings(None, true),
            Ok(MetricsAccess::Open)
        );
        let short = MetricsAccess::from_settings(Some("short-token"), false).unwrap_err();
        assert!(short.contains("at least 24 characters"), "{short}");
        let both = MetricsAccess::from_settings(Some("a-token-of-enough-length-1234"), true);
        assert!(both.unwrap_err().contains("cannot both be set"));
    }

    #[test]
    fn a_metrics_token_admits_only_itself() {
        let access =
            MetricsAccess::from_settings(Some("scraper-token-0123456789abcdef"), false).unwrap();
        assert_eq!(
            access.admits(Some("scraper-token-0123456789abcdef")),
            Ok(())
        );
        assert_eq!(
            access.admits(Some("scraper-token-0123456789abcdeF")),
            Err(MetricsRefusal::NoToken)
        );
        assert_eq!(access.admits(None), Err(MetricsRefusal::NoToken));
        assert_eq!(
            MetricsAccess::Off.admits(None),
            Err(MetricsRefusal::NotServed)
        );
        assert_eq!(MetricsAccess::Open.admits(None), Ok(()));
    }
}
