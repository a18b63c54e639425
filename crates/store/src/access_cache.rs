//! Who may do what, from memory: the session records, accounts, token owners, batches,
//! rater permissions and counts of returned ratings this instance has read, kept while
//! the access epoch stays where it was when they were read.
//!
//! The epoch is one number in the database (`access_epoch`, migration 0010) that
//! triggers move forward in the same transaction as any change to a session, an account,
//! a token, a batch or a batch's members, and as a rating's return for revision or its
//! leaving that state. A signed-in request reads it once
//! ([`Store::refresh_access`], one primary-key read) and the cache forgets everything
//! when it has moved, so a deactivation, a role change, a password change, a revoked
//! token, a sign-out or a closed batch holds from the next request on, on every instance,
//! whichever process made it. Without such a check a cache would keep a signed-out
//! session alive on the instances that did not see the sign-out.
//!
//! Only sessions, accounts and tokens that were found are kept (a flood of made-up
//! tokens or session ids cannot grow the cache), and the cache starts over when any kind
//! holds [`MAX_ENTRIES`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use chrono::Utc;
use tower_sessions::session::{Id, Record};
use uuid::Uuid;

use super::{Store, StoreResult, read};
use verdict_core::batch::Batch;
use verdict_core::role::Role;
use verdict_core::user::User;

/// How many entries of each kind the cache holds before it starts over.
const MAX_ENTRIES: usize = 100_000;

/// The entries read under one epoch.
#[derive(Debug, Default)]
pub struct AccessCache {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    epoch: i64,
    sessions: HashMap<Id, Record>,
    users: HashMap<Uuid, User>,
    /// Token digest to its owner.
    tokens: HashMap<String, User>,
    batches: HashMap<Uuid, Batch>,
    /// Whether a user may rate in a batch, by (batch, user).
    may_rate: HashMap<(Uuid, Uuid), bool>,
    /// How many of a user's ratings were returned for revision.
    returned: HashMap<Uuid, i64>,
}

impl Entries {
    fn full(&self) -> bool {
        [
            self.sessions.len(),
            self.users.len(),
            self.tokens.len(),
            self.batches.len(),
            self.may_rate.len(),
            self.returned.len(),
        ]
        .into_iter()
        .any(|n| n >= MAX_ENTRIES)
    }
}

impl AccessCache {
    /// A poisoned lock only means a holder panicked; every change to the maps is one
    /// step, so they are used as they are.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves to `epoch` if it is newer, forgetting everything read under an older one.
    /// Epochs only grow: a request that read an older one meanwhile does not move back.
    fn advance(&self, epoch: i64) {
        let mut entries = self.lock();
        if epoch > entries.epoch {
            *entries = Entries {
                epoch,
                ..Entries::default()
            };
        }
    }

    /// The epoch a read starting now is filed under. A read from the database that
    /// starts after the cache reached an epoch sees at least the state of that epoch.
    pub(super) fn epoch(&self) -> i64 {
        self.lock().epoch
    }

    /// Files what a read found, unless the epoch moved while it was read (the read may
    /// then predate the change that moved it).
    fn keep(&self, epoch: i64, put: impl FnOnce(&mut Entries)) {
        let mut entries = self.lock();
        if entries.epoch == epoch {
            if entries.full() {
                *entries = Entries {
                    epoch,
                    ..Entries::default()
                };
            }
            put(&mut entries);
        }
    }

    pub(super) fn session(&self, id: &Id) -> Option<Record> {
        let record = self.lock().sessions.get(id).cloned()?;
        (record.expiry_date.unix_timestamp() >= Utc::now().timestamp()).then_some(record)
    }

    pub(super) fn keep_session(&self, epoch: i64, record: &Record) {
        self.keep(epoch, |e| {
            e.sessions.insert(record.id, record.clone());
        });
    }

    /// Drops a session this instance changed or ended.
    pub(super) fn forget_session(&self, id: &Id) {
        self.lock().sessions.remove(id);
    }
}

impl Store {
    /// Reads the access epoch and brings the cache up to it. Called once per request
    /// before the cached reads below: by loading the session, and by the token check,
    /// so every handler with a signed-in user may use them.
    pub async fn refresh_access(&self) -> StoreResult<()> {
        let (epoch,): (i64,) = read!(self, |pool| {
            sqlx::query_as("SELECT version FROM access_epoch WHERE id = 1")
                .fetch_one(pool)
                .await
        })?;
        self.access_cache().advance(epoch);
        Ok(())
    }

    /// One cached read: `get` looks in the cache; on a miss, `read` asks the database
    /// and `put` files what it found under the epoch the cache was at before the read
    /// began (see [`AccessCache::keep`]).
    async fn cached<T>(
        &self,
        get: impl FnOnce(&Entries) -> Option<T>,
        read: impl Future<Output = StoreResult<T>>,
        put: impl FnOnce(&mut Entries, &T),
    ) -> StoreResult<T> {
        let cache = self.access_cache();
        if let Some(found) = get(&cache.lock()) {
            return Ok(found);
        }
        let epoch = cache.epoch();
        let found = read.await?;
        cache.keep(epoch, |e| put(e, &found));
        Ok(found)
    }

    /// The account of a signed-in session, from the cache when it holds it. The caller
    /// has refreshed the epoch in this request (loading the session does).
    pub async fn signed_in_user(&self, id: Uuid) -> StoreResult<Option<User>> {
        self.cached(
            |e| e.users.get(&id).cloned().map(Some),
            self.user_by_id(id),
            |e, found| {
                if let Some(user) = found {
                    e.users.insert(id, user.clone());
                }
            },
        )
        .await
    }

    /// The owner of a live token with this digest, from the cache when it holds it;
    /// refreshes the epoch first.
    pub async fn token_user(&self, token_hash: &str) -> StoreResult<Option<User>> {
        self.refresh_access().await?;
        self.cached(
            |e| e.tokens.get(token_hash).cloned().map(Some),
            self.user_by_token_hash(token_hash),
            |e, found| {
                if let Some(user) = found {
                    e.tokens.insert(token_hash.to_owned(), user.clone());
                }
            },
        )
        .await
    }

    /// A batch's settings, from the cache when it holds it; for a signed-in request
    /// (which has refreshed the epoch).
    pub async fn access_batch(&self, id: Uuid) -> StoreResult<Option<Batch>> {
        self.cached(
            |e| e.batches.get(&id).cloned().map(Some),
            self.batch(id),
            |e, found| {
                if let Some(batch) = found {
                    e.batches.insert(id, batch.clone());
                }
            },
        )
        .await
    }

    /// Whether the user may take and work on tasks of the batch (see
    /// `access::can_rate`), from the cache when it holds the answer; for a signed-in
    /// request.
    pub async fn may_rate(&self, batch: Uuid, user: Uuid) -> StoreResult<bool> {
        self.cached(
            |e| e.may_rate.get(&(batch, user)).copied(),
            self.batch_matches(batch, user, Role::Rater),
            |e, may| {
                e.may_rate.insert((batch, user), *may);
            },
        )
        .await
    }

    /// How many of the user's ratings wait for revision (the count every page shows),
    /// from the cache when it holds it; for a signed-in request. Returning a rating and
    /// finishing its revision move the epoch (migration 0012).
    pub async fn returned_for(&self, user: Uuid) -> StoreResult<i64> {
        self.cached(
            |e| e.returned.get(&user).copied(),
            self.returned_count(user),
            |e, n| {
                e.returned.insert(user, *n);
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> User {
        User {
            id: Uuid::now_v7(),
            username: "ana".into(),
            role: Role::Rater,
            active: true,
            created_at: Utc::now(),
            password_changed_at: Utc::now(),
            skills: Vec::new(),
            declared_skills: Vec::new(),
        }
    }

    #[test]
    fn a_newer_epoch_forgets_everything_and_an_older_one_changes_nothing() {
        let cache = AccessCache::default();
        let ana = user();
        cache.keep(0, |e| {
            e.users.insert(ana.id, ana.clone());
        });
        cache.advance(0);
        assert!(cache.lock().users.contains_key(&ana.id));
        cache.advance(3);
        assert!(cache.lock().users.is_empty());
        cache.keep(3, |e| {
            e.users.insert(ana.id, ana.clone());
        });
        cache.advance(2);
        assert_eq!(cache.epoch(), 3);
        assert!(cache.lock().users.contains_key(&ana.id));
    }

    #[test]
    fn a_read_filed_under_an_epoch_that_has_moved_is_dropped() {
        let cache = AccessCache::default();
        let ana = user();
        let epoch = cache.epoch();
        cache.advance(epoch + 1);
        cache.keep(epoch, |e| {
            e.users.insert(ana.id, ana.clone());
        });
        assert!(cache.lock().users.is_empty());
    }

    #[test]
    fn an_expired_session_is_not_served() {
        let cache = AccessCache::default();
        let mut record = Record {
            id: Id::default(),
            data: HashMap::new(),
            expiry_date: time::OffsetDateTime::now_utc() - time::Duration::seconds(5),
        };
        cache.keep_session(0, &record);
        assert!(cache.session(&record.id).is_none());
        record.expiry_date = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
        cache.keep_session(0, &record);
        assert_eq!(cache.session(&record.id).map(|r| r.id), Some(record.id));
    }

    #[test]
    fn a_full_cache_starts_over() {
        let cache = AccessCache::default();
        for _ in 0..MAX_ENTRIES {
            let one = user();
            cache.keep(0, |e| {
                e.users.insert(one.id, one.clone());
            });
        }
        assert_eq!(cache.lock().users.len(), MAX_ENTRIES);
        let last = user();
        cache.keep(0, |e| {
            e.users.insert(last.id, last.clone());
        });
        assert_eq!(cache.lock().users.len(), 1);
    }
}
