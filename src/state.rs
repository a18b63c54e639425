//! The shared application state handed to every handler.

use std::sync::Arc;

use crate::auth::limits::LoginLimiter;
use crate::config::Config;
use crate::store::Store;

/// Cheap to clone: one `Arc` around the parts.
#[derive(Clone)]
pub struct AppState(Arc<App>);

pub struct App {
    /// The database.
    store: Store,
    /// Settings fixed at start-up.
    config: Config,
    /// Counts login attempts per account and per address.
    login_limiter: LoginLimiter,
}

impl AppState {
    pub fn new(store: Store, config: Config) -> Self {
        let login_limiter = LoginLimiter::new(&config);
        Self(Arc::new(App {
            store,
            config,
            login_limiter,
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
}
