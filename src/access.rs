//! Who may do what, in one place. What a role allows is a named check on the user
//! (`can_lead`, `can_administer`), used by handlers and templates alike; which batches a
//! person may see, rate in or lead is one SQL condition per role ([`batch_filter`]), used
//! by every query that lists or opens batches, and the named checks on a batch
//! ([`can_rate`], [`can_review`]) are built on it.

use uuid::Uuid;

use crate::store::users::User;
use crate::store::{Store, StoreResult};
use verdict_core::role::Role;

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

pub use crate::store::batches::batch_filter;

/// Whether `user` is shown the external ids of the batch's tasks: leads and admins
/// always, raters only where the batch says so. An external id can name a benchmark
/// task a rater could look up, and ids that raters compare tell shared (gold) tasks
/// apart; a rater otherwise knows each task by its number among their own.
pub fn sees_external_ids(user: &User, raters_see_external_ids: bool) -> bool {
    user.can_lead() || raters_see_external_ids
}

/// How a task is named to someone working on it: its external id where they may see it
/// (`sees`, from [`sees_external_ids`]), else `Task N`, N counting their own tasks of
/// the batch in the order they were handed out.
pub fn task_name(sees: bool, external_id: &str, number: i64) -> String {
    if sees {
        external_id.to_owned()
    } else {
        format!("Task {number}")
    }
}

/// How a page heads a task named by [`task_name`]: "task d1" for an external id, and a
/// neutral name ("Task 3") as it is, so it never reads "task Task 3".
pub fn task_heading(name: &str) -> String {
    let neutral = name
        .strip_prefix("Task ")
        .is_some_and(|n| n.parse::<u64>().is_ok());
    if neutral {
        name.to_owned()
    } else {
        format!("task {name}")
    }
}

/// Whether `user` may take and work on tasks of the batch: it is open, and opened to
/// them (a lead or admin rates only where a rater could). Asked on every rater request,
/// so it is answered from the access cache, which the request's sign-in has brought up
/// to date.
pub async fn can_rate(store: &Store, batch: Uuid, user: &User) -> StoreResult<bool> {
    store.may_rate(batch, user.id).await
}

/// Whether `user` leads the batch: reviews its ratings, reads its metrics, exports it.
pub async fn can_review(store: &Store, batch: Uuid, user: &User) -> StoreResult<bool> {
    Ok(user.can_lead() && store.batch_matches(batch, user.id, user.role).await?)
}
