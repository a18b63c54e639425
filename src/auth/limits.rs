//! Login rate limits, per username and per network address (governor's keyed limiters).

use std::net::IpAddr;
use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::config::Config;
use crate::error::AppError;

pub struct LoginLimiter {
    per_account: DefaultKeyedRateLimiter<String>,
    per_address: DefaultKeyedRateLimiter<IpAddr>,
}

fn per_minute(n: u32) -> Quota {
    Quota::per_minute(NonZeroU32::new(n.max(1)).expect("at least one"))
}

impl LoginLimiter {
    pub fn new(config: &Config) -> Self {
        Self {
            per_account: RateLimiter::keyed(per_minute(config.login_per_account_per_min)),
            per_address: RateLimiter::keyed(per_minute(config.login_per_address_per_min)),
        }
    }

    /// Counts one attempt; `TooManyRequests` when either limit is spent. Usernames are
    /// compared case-insensitively so that case games do not multiply the allowance.
    pub fn check(&self, username: &str, address: IpAddr) -> Result<(), AppError> {
        let refuse = |wait: governor::NotUntil<_>| AppError::TooManyRequests {
            retry_after_s: wait
                .wait_time_from(DefaultClock::default().now())
                .as_secs()
                .max(1),
        };
        self.per_address.check_key(&address).map_err(refuse)?;
        self.per_account
            .check_key(&username.to_lowercase())
            .map_err(refuse)?;
        Ok(())
    }

    /// Forgets keys whose allowance has fully come back, so memory stays bounded.
    pub fn shrink(&self) {
        self.per_account.retain_recent();
        self.per_address.retain_recent();
    }
}
