//! The shared application state handed to every handler.

use std::sync::Arc;

use crate::config::Config;
use crate::credentials::limits::LoginLimiter;
use crate::credentials::oidc::Oidc;
use crate::credentials::password::Hasher;
use crate::heavy::HeavyReads;
use crate::heavy::live::LiveMetrics;
use crate::services::judging::Judging;
use crate::store::Store;
use crate::telemetry::Telemetry;

/// Cheap to clone: one `Arc` around the parts.
#[derive(Clone)]
pub struct AppState(Arc<App>);

pub struct App {
    /// The database.
    store: Store,
    /// Settings fixed at start-up.
    config: Config,
    /// Counts login attempts per address, and per account and address (in the database).
    login_limiter: LoginLimiter,
    /// Runs password hashes, a bounded number at a time.
    hasher: Hasher,
    /// Metrics and exports, a bounded number at a time.
    heavy_reads: HeavyReads,
    /// The judge runs this process works.
    judging: Judging,
    /// Batches' metrics kept folded, brought up to date on each request.
    live_metrics: LiveMetrics,
    /// Requests counted and timed, for `/metrics`.
    telemetry: Telemetry,
    /// The identity provider's relying party, when sign-in through one is set up.
    oidc: Option<Oidc>,
}

impl AppState {
    pub fn new(store: Store, config: Config) -> Self {
        let login_limiter = LoginLimiter::new(
            config.login_per_account_and_address_per_min,
            config.login_per_address_per_min,
        );
        let hasher = Hasher::new(config.max_concurrent_hashes, config.hash_wait);
        let heavy_reads = HeavyReads::new(config.max_heavy_reads);
        let judging = Judging::new(
            store.clone(),
            config.judge_lease,
            config.judge_retry_delay,
            config.sealing_key.clone(),
            config.judge_endpoints.clone(),
        );
        // The settings were checked when they were read (`verdict serve`); a test's
        // config that does not hold up leaves sign-in through a provider off, and says so.
        let oidc = config.oidc.clone().and_then(|settings| {
            Oidc::new(settings)
                .map_err(
                    |why| tracing::error!(%why, "sign-in through the identity provider is off"),
                )
                .ok()
        });
        Self(Arc::new(App {
            store,
            config,
            login_limiter,
            hasher,
            heavy_reads,
            judging,
            live_metrics: LiveMetrics::default(),
            telemetry: Telemetry::default(),
            oidc,
        }))
    }

    pub fn store(&self) -> &Store {
        &self.0.store
    }

    pub fn config(&self) -> &Config {
        &self.0.config
    }

    pub fn login_limiter(&self) -> &LoginLimiter {
        &self.0.login_limiter
    }

    pub fn hasher(&self) -> &Hasher {
        &self.0.hasher
    }

    pub fn heavy_reads(&self) -> &HeavyReads {
        &self.0.heavy_reads
    }

    pub fn judging(&self) -> &Judging {
        &self.0.judging
    }

    pub fn live_metrics(&self) -> &LiveMetrics {
        &self.0.live_metrics
    }

    pub fn telemetry(&self) -> &Telemetry {
        &self.0.telemetry
    }

    pub fn oidc(&self) -> Option<&Oidc> {
        self.0.oidc.as_ref()
    }
}
