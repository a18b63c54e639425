//! Who may do what, in one place. What a role allows is a named check on the user
//! (`can_lead`, `can_administer`), used by handlers and templates alike; which batches a
//! person may see, rate in or lead is one SQL condition per role ([`batch_filter`]), used
//! by every query that lists or opens batches, and the named checks on a batch
//! ([`can_rate`], [`can_review`]) are built on it.

use uuid::Uuid;

use crate::auth::Role;
use crate::store::users::User;
use crate::store::{Store, StoreResult};

impl User {
    /// Leads and admins: review, metrics, exports, the per-task view, releasing tasks.
    pub fn can_lead(&self) -> bool {
        self.role >= Role::Lead
    }

    /// Admins: accounts, batches and their settings, every token, the audit log.
    pub fn can_administer(&self) -> bool {
        self.role >= Role::Admin
    }
}

/// The SQL condition (on a batch `b`, with the user's id as `$1`) for the batches a
/// person of `role` may see as that role: as a rater the open ones opened to them (or to
/// everyone), as a lead the ones they lead (or that every lead leads), as an admin all.
pub fn batch_filter(role: Role) -> &'static str {
    match role {
        Role::Rater => {
            "(b.state = 'open' AND (NOT b.raters_restricted OR EXISTS (
                 SELECT 1 FROM batch_members m
                 WHERE m.batch_id = b.id AND m.user_id = $1 AND m.role = 'rater')))"
        }
        Role::Lead => {
            "(NOT b.leads_restricted OR EXISTS (
                 SELECT 1 FROM batch_members m
                 WHERE m.batch_id = b.id AND m.user_id = $1 AND m.role = 'lead'))"
        }
        // Still names $1, so every role binds the same arguments.
        Role::Admin => "(b.id IS NOT NULL OR $1 IS NULL)",
    }
}

/// Whether `user` may take and work on tasks of the batch: it is open, and opened to
/// them (a lead or admin rates only where a rater could).
pub async fn can_rate(store: &Store, batch: Uuid, user: &User) -> StoreResult<bool> {
    store.batch_matches(batch, user.id, Role::Rater).await
}

/// Whether `user` leads the batch: reviews its ratings, reads its metrics, exports it.
pub async fn can_review(store: &Store, batch: Uuid, user: &User) -> StoreResult<bool> {
    Ok(user.can_lead() && store.batch_matches(batch, user.id, user.role).await?)
}
