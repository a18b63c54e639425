//! Run-time settings, from flags and environment (see `verdict serve --help`).

use std::time::Duration;

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

/// One password hash per core: more would not finish sooner, only take more memory.
fn cores() -> usize {
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
        }
    }
}
