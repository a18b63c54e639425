//! Login rate limits, kept in the database so that they hold across every instance of the
//! app serving one database.
//!
//! Two counters per attempt: one per network address (every account tried from there),
//! and one per account *and* address. Keying the account's limit by address too means a
//! stranger guessing someone's password locks out only their own address, never the
//! owner signing in from theirs; guessing from many addresses is what the password
//! policy (zxcvbn) is for. Each counter allows its number of attempts in a window of a
//! minute that starts at the first attempt.
//!
//! Only failed sign-ins count: every attempt is counted before its password is checked
//! (so concurrent guesses cannot slip past the limit), and a sign-in that succeeds takes
//! its count back. An office signing in at nine does not lock its own address.
//!
//! The address is the client's (see `web::client`): behind a trusted reverse proxy, the
//! one the proxy forwarded, so a flood from one client never limits another.

use std::net::IpAddr;

use super::CredentialError;
use crate::store::Store;

/// How long a window lasts.
const WINDOW_MS: i64 = 60_000;

/// An attempt counted, under each of its keys in the window it was counted in.
#[must_use = "a sign-in that succeeds takes its count back"]
pub struct Counted {
    keys: Vec<String>,
    window_starts: Vec<i64>,
}

pub struct LoginLimiter {
    per_account_and_address: i64,
    per_address: i64,
}

/// The address an allowance belongs to: an IPv4 address, or the /64 network of an IPv6
/// one (a single client usually holds a whole /64). IPv4 written as IPv6 counts as IPv4.
fn address_key(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

impl LoginLimiter {
    /// Allowances per minute: for one account from one address, and for one address.
    pub fn new(per_account_and_address: u32, per_address: u32) -> Self {
        Self {
            per_account_and_address: i64::from(per_account_and_address),
            per_address: i64::from(per_address),
        }
    }

    /// Counts one attempt; `TooManyRequests` when either allowance is spent. Usernames are
    /// compared case-insensitively so that case games do not multiply the allowance. The
    /// attempt counted is returned, for [`LoginLimiter::succeeded`] to take back.
    pub async fn check(
        &self,
        store: &Store,
        username: &str,
        address: IpAddr,
    ) -> Result<Counted, CredentialError> {
        let address = address_key(address);
        let keys = [
            super::tokens::digest(&format!("address\n{address}")),
            super::tokens::digest(&format!("account\n{address}\n{}", username.to_lowercase())),
        ];
        let now = chrono::Utc::now().timestamp_millis();
        let counts = store
            .count_login_attempts(&keys, now, now - WINDOW_MS)
            .await?;
        let limits = [self.per_address, self.per_account_and_address];
        let spent = counts
            .iter()
            .zip(limits)
            .filter(|(attempts, limit)| attempts.count > (*limit).max(1))
            .map(|(attempts, _)| attempts.window_start + WINDOW_MS - now)
            .max();
        match spent {
            Some(wait_ms) => Err(CredentialError::TooManyAttempts {
                retry_after_s: u64::try_from((wait_ms + 999) / 1000).unwrap_or(1).max(1),
            }),
            None => Ok(Counted {
                keys: keys.to_vec(),
                window_starts: counts.iter().map(|c| c.window_start).collect(),
            }),
        }
    }

    /// Takes back the count of an attempt that signed in: only failures count.
    pub async fn succeeded(&self, store: &Store, counted: Counted) -> Result<(), CredentialError> {
        store
            .uncount_login_attempts(&counted.keys, &counted.window_starts)
            .await?;
        Ok(())
    }

    /// Forgets windows that have ended, so the table stays small.
    pub async fn prune(&self, store: &Store) -> Result<u64, CredentialError> {
        let now = chrono::Utc::now().timestamp_millis();
        Ok(store.prune_login_attempts(now - WINDOW_MS).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_counted_by_their_64_network() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), "192.0.2.7");
    }
}
