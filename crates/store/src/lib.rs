//! verdict's store, the database seam: one `Store` over SQLite or PostgreSQL, chosen
//! from the URL scheme. It depends on the core and on no part of the app.
//!
//! Query text is written once in the common SQL dialect (`$1` placeholders work on both
//! backends) and run against whichever pool is configured; the `read!`, `write!` and
//! `transaction!` macros expand the same code once per backend so that the types stay
//! concrete (sqlx's `Any` driver does not carry uuid and chrono types).
//!
//! Rows are read into row types of this crate (`RatingRow`, `BatchRow`, ...) and handed
//! out as the core's entities, which know no database. A change reads what it changes
//! inside its transaction, asks the core what to do (`Assignment::finish_step`,
//! `Rating::check_review`, ...) and writes what the core decided: no state is compared
//! here outside SQL text.

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, PgPool, SqlitePool};

use group::GroupWriter;

mod access_cache;
pub mod assignments;
pub mod audit;
pub mod batches;
pub mod corrections;
pub mod final_answers;
pub mod gold;
pub mod group;
pub mod judges;
pub mod login_attempts;
pub mod operations;
pub mod page;
pub mod ratings;
pub mod reports;
pub mod review;
pub mod routing;
pub mod rubrics;
mod scan;
pub mod sessions;
pub mod stalls;
pub mod tokens;
pub mod users;
pub mod webhooks;

/// Which database a store talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone)]
enum Pools {
    /// SQLite allows one writer at a time; a single write connection serialises writers in
    /// the process (and groups their commits) instead of letting them fight over the file
    /// lock, and readers run concurrently beside it thanks to WAL.
    Sqlite {
        write: Arc<GroupWriter>,
        read: SqlitePool,
        /// The database file, for long scans on a connection of their own ([`scan`]).
        path: PathBuf,
    },
    Postgres(PgPool),
}

/// A handle on the database, cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pools: Pools,
    /// Rubric documents read so far, by name and version (see [`rubrics`]).
    rubrics: Arc<RwLock<RubricCache>>,
    /// Sessions, accounts and token owners read so far (see [`access_cache`]).
    auth: Arc<access_cache::AccessCache>,
}

type RubricCache = HashMap<(String, i32), Arc<verdict_core::rubric::Rubric>>;

/// Errors from the data layer that callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} already exists")]
    Duplicate(&'static str),
    /// What the caller checked before writing changed under it (a concurrent request):
    /// nothing was written; check again and retry.
    #[error("changed by a concurrent request; try again")]
    Retry,
    /// The caller withdrew what it was writing part way (an upload one of whose records
    /// failed its check after others were stored): nothing was written.
    #[error("withdrawn by the caller; nothing was written")]
    Withdrawn,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A nullable column holding a name (a skip reason), as read before it is parsed: row
/// types read it with `#[sqlx(try_from = "NullableName")]` into an `Option` of the core's
/// enum, which knows no database.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub struct NullableName(Option<String>);

impl TryFrom<NullableName> for Option<verdict_core::lifecycle::SkipReason> {
    type Error = verdict_core::lifecycle::NotAReason;

    fn try_from(name: NullableName) -> Result<Self, Self::Error> {
        name.0.map(String::try_into).transpose()
    }
}

/// Whether an error says the database cannot serve anyone right now (down, restarting,
/// out of connections, its connection cut, or a SQLite file still locked after the busy
/// timeout) rather than anything about the request: such a request gets 503 and may be
/// retried.
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // PostgreSQL: connection exceptions (class 08), shutting down or starting up
            // (57P01-57P03), too many connections (53300). SQLite: busy (5 and its
            // extended codes), locked (6).
            code.starts_with("08")
                || matches!(
                    code.as_ref(),
                    "57P01" | "57P02" | "57P03" | "53300" | "5" | "261" | "517" | "6"
                )
        }),
        _ => false,
    }
}

/// Runs `$body` with `$pool` bound to a pool that may serve reads.
macro_rules! read {
    ($store:expr, |$pool:ident| $body:expr) => {
        match $store.pools() {
            $crate::PoolRef::Sqlite { read: $pool, .. } => $body,
            $crate::PoolRef::Postgres($pool) => $body,
        }
    };
}

/// Runs `$body`, one write, with `$pool` bound to something that takes it: on SQLite the
/// write connection inside a group commit (see [`group`]), on PostgreSQL the pool. The
/// body evaluates to a `Result` whose error comes from `sqlx::Error`; it is returned once
/// the write is durable.
macro_rules! write {
    ($store:expr, |$pool:ident| $body:expr) => {
        match $store.pools() {
            $crate::PoolRef::Sqlite { write, .. } => {
                match $crate::group::GroupWriter::enter(write).await {
                    Err(e) => Err(e.into()),
                    Ok(mut turn) => {
                        let out = {
                            let $pool = turn.conn();
                            $body
                        };
                        turn.leave(out).await
                    }
                }
            }
            $crate::PoolRef::Postgres($pool) => $body,
        }
    };
}

/// Runs `$body` inside one write transaction, bound to `$tx`; commits when the body
/// finishes, rolls back if it returns early with `?`. On SQLite the transaction is a
/// savepoint in a group commit (see [`group`]); either way the value is returned only
/// once it is durable.
macro_rules! transaction {
    ($store:expr, |$tx:ident| $body:expr) => {
        match $store.pools() {
            $crate::PoolRef::Sqlite { write, .. } => {
                let mut turn = $crate::group::GroupWriter::enter(write).await?;
                let out: Result<_, $crate::StoreError> = async {
                    let $tx = turn.conn();
                    Ok($body)
                }
                .await;
                turn.leave(out).await?
            }
            $crate::PoolRef::Postgres(pool) => {
                let mut $tx = pool.begin().await?;
                let out = $body;
                $tx.commit().await?;
                out
            }
        }
    };
}

pub(crate) use {read, transaction, write};

/// Borrowed pools, so the macros can match without cloning.
pub(crate) enum PoolRef<'a> {
    Sqlite {
        write: &'a Arc<GroupWriter>,
        read: &'a SqlitePool,
    },
    Postgres(&'a PgPool),
}

impl Store {
    /// Connects to `url` (`sqlite://file.db` or `postgres://...`), creating a SQLite file
    /// if it does not exist yet. Does not migrate.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        let pools = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options = PgConnectOptions::from_str(url)?;
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await?;
            Pools::Postgres(pool)
        } else if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                // FULL syncs the WAL on every commit: an acknowledged write survives a
                // power cut, not only a process crash.
                .synchronous(SqliteSynchronous::Full)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(10));
            let path = options.get_filename().to_owned();
            let write = Arc::new(GroupWriter::new(options.connect().await?));
            let read = SqlitePoolOptions::new()
                .max_connections(8)
                .connect_with(options.read_only(true))
                .await?;
            Pools::Sqlite { write, read, path }
        } else {
            return Err(StoreError::Db(sqlx::Error::Configuration(
                format!(
                    "unsupported database URL {url:?}: use sqlite://FILE or postgres://USER@HOST/DB"
                )
                .into(),
            )));
        };
        Ok(Self {
            pools,
            rubrics: Arc::default(),
            auth: Arc::default(),
        })
    }

    /// Applies the embedded migrations of this backend.
    pub async fn migrate(&self) -> StoreResult<()> {
        match &self.pools {
            Pools::Sqlite { write, .. } => {
                write
                    .exclusive(async |conn| {
                        sqlx::migrate!("../../migrations/sqlite").run(conn).await
                    })
                    .await??
            }
            Pools::Postgres(pool) => {
                sqlx::migrate!("../../migrations/postgres")
                    .run(pool)
                    .await?
            }
        }
        self.install_built_in_rubrics().await
    }

    /// The rubric cache; a poisoned lock only means a reader panicked, and the map holds
    /// nothing half-written (an insert is one step), so it is used as it is.
    fn rubric_cache(&self) -> RwLockReadGuard<'_, RubricCache> {
        self.rubrics.read().unwrap_or_else(|p| p.into_inner())
    }

    fn rubric_cache_mut(&self) -> RwLockWriteGuard<'_, RubricCache> {
        self.rubrics.write().unwrap_or_else(|p| p.into_inner())
    }

    fn access_cache(&self) -> &access_cache::AccessCache {
        &self.auth
    }

    pub fn backend(&self) -> Backend {
        match self.pools {
            Pools::Sqlite { .. } => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
        }
    }

    /// Answers whether the database takes queries (for `/healthz`).
    pub async fn ping(&self) -> StoreResult<()> {
        read!(self, |pool| sqlx::query("SELECT 1")
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Closes every connection, waiting for queries under way.
    pub async fn close(&self) {
        match &self.pools {
            Pools::Sqlite { write, read, .. } => {
                read.close().await;
                write.close().await;
            }
            Pools::Postgres(pool) => pool.close().await,
        }
    }

    /// What a `SELECT` appends to lock the rows it reads for the rest of the transaction,
    /// waiting for a transaction that holds them. SQLite needs nothing: a write
    /// transaction already excludes every other writer.
    pub(crate) fn lock_clause(&self) -> &'static str {
        match self.backend() {
            Backend::Postgres => " FOR UPDATE",
            Backend::Sqlite => "",
        }
    }

    /// Like [`Store::lock_clause`], for a row whose key stays as it is: on PostgreSQL it
    /// does not conflict with the key-share locks that inserts referring to the row take,
    /// so a transaction that inserted such a row (a rating of a task) and then locks the
    /// row it refers to does not deadlock with another that did the same.
    pub(crate) fn no_key_lock_clause(&self) -> &'static str {
        match self.backend() {
            Backend::Postgres => " FOR NO KEY UPDATE",
            Backend::Sqlite => "",
        }
    }

    /// Like [`Store::lock_clause`], but passing over rows another transaction holds: for
    /// picking any free row, so concurrent pickers do not queue behind each other.
    pub(crate) fn skip_locked_clause(&self) -> &'static str {
        match self.backend() {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        }
    }

    /// Writes a consistent copy of a SQLite database to the new file `to`, beside
    /// running writers (`VACUUM INTO` reads one snapshot).
    pub async fn backup_into(&self, to: &str) -> StoreResult<()> {
        match &self.pools {
            Pools::Sqlite { read, .. } => {
                sqlx::query("VACUUM INTO $1").bind(to).execute(read).await?;
                Ok(())
            }
            Pools::Postgres(_) => Err(StoreError::Db(sqlx::Error::Configuration(
                "backups of PostgreSQL are taken with pg_dump".into(),
            ))),
        }
    }

    /// The SQLite database file, when that is the backend.
    pub(crate) fn sqlite_path(&self) -> Option<PathBuf> {
        match &self.pools {
            Pools::Sqlite { path, .. } => Some(path.clone()),
            Pools::Postgres(_) => None,
        }
    }

    pub(crate) fn pools(&self) -> PoolRef<'_> {
        match &self.pools {
            Pools::Sqlite { write, read, .. } => PoolRef::Sqlite { write, read },
            Pools::Postgres(pool) => PoolRef::Postgres(pool),
        }
    }
}

/// Maps a unique-constraint violation to `Duplicate(what)`, anything else to `Db`.
pub(crate) fn on_unique(err: sqlx::Error, what: &'static str) -> StoreError {
    match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Duplicate(what),
        _ => StoreError::Db(err),
    }
}
