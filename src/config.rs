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
    /// Login attempts allowed per minute for one username.
    pub login_per_account_per_min: u32,
    /// Login attempts allowed per minute from one network address.
    pub login_per_address_per_min: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_upload_bytes: 256 * 1024 * 1024,
            cookie_secure: false,
            session_idle: Duration::from_secs(12 * 3600),
            session_absolute: Duration::from_secs(7 * 24 * 3600),
            login_per_account_per_min: 5,
            login_per_address_per_min: 30,
        }
    }
}
