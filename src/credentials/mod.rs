//! What proves who someone is, below the web layer: password hashing and its policy,
//! API token and secret generation, the login rate limits, and sealing of secrets kept
//! in the database. The app state holds the hasher and the limiter; `auth`'s extractors
//! and pages use them through the state and re-export these modules under `auth`.

pub mod limits;
pub mod password;
pub mod sealed;
pub mod tokens;
