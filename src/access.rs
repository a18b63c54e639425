//! Who may do what, in one place. What a role allows is a named check on the user
//! (`can_lead`, `can_administer`: methods of the core's `User`), used by handlers and
//! templates alike; which batches a person may see, rate in or lead is one SQL condition
//! per role ([`batch_filter`]), used by every query that lists or opens batches, and the
//! named checks on a batch ([`can_rate`], [`can_review`]) are built on it.

use uuid::Uuid;

use crate::store::{Store, StoreResult};
use verdict_core::user::User;

pub use crate::store::batches::batch_filter;

pub use verdict_core::access::{task_heading, task_name};

/// Whether `user` is shown the external ids of the batch's tasks (see
/// [`verdict_core::access::sees_external_ids`]).
pub fn sees_external_ids(user: &User, raters_see_external_ids: bool) -> bool {
    verdict_core::access::sees_external_ids(user.role, raters_see_external_ids)
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
