//! Recording what admins and leads did: every write path that the audit log covers
//! calls [`record`] after its change, whether it came from a page, the API or the CLI.
//! Reading the log is the `audit` feature's.

use serde_json::Value;

use crate::store::Store;
use verdict_core::user::User;

/// Who did something the audit log records.
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    /// A signed-in account (or its API token).
    User(&'a User),
    /// The command line, run by whoever holds the database.
    Cli,
    /// The team's identity provider, at a sign-in (an account made, a role it gives).
    IdentityProvider,
    /// The server itself, on a schedule (deleted batches purged when their retention
    /// ends).
    Server,
}

impl Actor<'_> {
    /// How the audit log names the actor: its account's id, or another name.
    pub fn ids(&self) -> (Option<uuid::Uuid>, Option<&'static str>) {
        match self {
            Actor::User(user) => (Some(user.id), None),
            Actor::Cli => (None, Some("cli")),
            Actor::IdentityProvider => (None, Some("identity provider")),
            Actor::Server => (None, Some("server")),
        }
    }
}

impl<'a> From<&'a User> for Actor<'a> {
    fn from(user: &'a User) -> Self {
        Self::User(user)
    }
}

/// Records that `actor` did `action` to `target`. The action has already happened, so a
/// failure to record it is logged rather than turned into an error for the caller.
pub async fn record<'a>(
    store: &Store,
    actor: impl Into<Actor<'a>>,
    action: &str,
    target: &str,
    detail: Value,
) {
    let actor = actor.into();
    let (id, name) = actor.ids();
    let who = match actor {
        Actor::User(user) => user.username.as_str(),
        Actor::Cli => "cli",
        Actor::IdentityProvider => "identity provider",
        Actor::Server => "server",
    };
    if let Err(err) = store.record_audit(id, name, action, target, &detail).await {
        tracing::error!(%err, actor = who, action, target, "audit entry not recorded");
    }
}
