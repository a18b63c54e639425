//! What proves who someone is, below the web layer: password hashing and its policy,
//! API token and secret generation, and the login rate limits. The app state holds the
//! hasher and the limiter; `auth`'s extractors and pages use them through the state and
//! re-export these modules under `auth`.

pub mod limits;
pub mod password;
pub mod tokens;
