//! Group commit for SQLite: concurrent write transactions share one durable COMMIT.
//!
//! SQLite takes one writer at a time, and with `synchronous=FULL` every COMMIT waits for
//! an fsync, so committing each request's transaction on its own caps writes at the
//! disk's sync rate. Here the single write connection keeps one transaction open while
//! writers queue for it: each writer runs its work inside a savepoint of that
//! transaction (a failing writer rolls back only its own savepoint), and the last writer
//! in line commits for everyone. Nobody is answered before the COMMIT that holds their
//! work has returned, so nothing acknowledged is lost; if that COMMIT fails, every writer
//! of the group gets the error.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as SyncMutex};

use sqlx::{Connection, Executor, SqliteConnection};
use tokio::sync::{Mutex, OwnedMutexGuard, watch};

/// The most writers one COMMIT covers, which bounds how long the first of them waits.
const MAX_GROUP: u32 = 128;

/// How many failed groups are remembered for writers that have not woken yet.
const FAILED_KEPT: usize = 64;

struct Inner {
    /// `None` once closed.
    conn: Option<SqliteConnection>,
    /// Whether a group transaction is open.
    open: bool,
    /// The number of the open group, or of the next one.
    group: u64,
    /// Writers that finished their work in the open group.
    members: u32,
    /// A writer's savepoint may be open: its future was dropped half-way, and the next
    /// writer undoes what it did.
    interrupted: bool,
}

/// The single write connection and its group commit.
pub struct GroupWriter {
    inner: Arc<Mutex<Inner>>,
    /// Writers queued for the connection, so the holder knows whether to commit.
    queued: AtomicUsize,
    /// The number of the last group that was committed or failed.
    finished: watch::Sender<u64>,
    failed: SyncMutex<VecDeque<u64>>,
}

impl GroupWriter {
    /// Writers waiting for the connection right now (for operators' figures).
    pub fn waiting(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
}

impl std::fmt::Debug for GroupWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupWriter").finish_non_exhaustive()
    }
}

/// Counts a writer as queued until it holds the connection or gives up waiting.
struct Queued<'a> {
    writer: &'a Arc<GroupWriter>,
    acquired: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.writer.queued.fetch_sub(1, Ordering::SeqCst);
        if !self.acquired {
            // A writer ahead may have left the commit to this one.
            flush(self.writer);
        }
    }
}

/// Takes a turn that does nothing, in a task of its own, so that a group left waiting
/// by a writer that went away is committed.
fn flush(writer: &Arc<GroupWriter>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let writer = writer.clone();
        runtime.spawn(async move {
            if let Ok(turn) = GroupWriter::enter(&writer).await {
                let _ = turn.leave(Ok::<(), sqlx::Error>(())).await;
            }
        });
    }
}

/// A writer's turn on the connection.
pub struct Turn {
    writer: Arc<GroupWriter>,
    guard: OwnedMutexGuard<Inner>,
    /// Set once the turn ended normally.
    left: bool,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.left {
            return;
        }
        // The writer's future was dropped (its client went away) while it held the
        // connection: the next turn undoes its work, and the group may be waiting for a
        // commit only this writer would have made.
        flush(&self.writer);
    }
}

const FAILED: &str = "the write could not be committed; nothing was saved";

fn closed() -> sqlx::Error {
    sqlx::Error::PoolClosed
}

impl GroupWriter {
    pub fn new(conn: SqliteConnection) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                conn: Some(conn),
                open: false,
                group: 1,
                members: 0,
                interrupted: false,
            })),
            queued: AtomicUsize::new(0),
            finished: watch::channel(0).0,
            failed: SyncMutex::new(VecDeque::new()),
        }
    }

    /// Waits for the connection, opens the group transaction if none is open, and a
    /// savepoint for this writer.
    pub async fn enter(this: &Arc<Self>) -> Result<Turn, sqlx::Error> {
        this.queued.fetch_add(1, Ordering::SeqCst);
        let mut queued = Queued {
            writer: this,
            acquired: false,
        };
        let guard = this.inner.clone().lock_owned().await;
        queued.acquired = true;
        drop(queued);
        let mut turn = Turn {
            writer: this.clone(),
            guard,
            left: false,
        };
        let inner = &mut *turn.guard;
        let Some(conn) = inner.conn.as_mut() else {
            turn.left = true;
            return Err(closed());
        };
        if inner.interrupted {
            // Fails harmlessly when the savepoint never opened.
            let _ = conn
                .execute("ROLLBACK TO SAVEPOINT writer; RELEASE SAVEPOINT writer")
                .await;
            inner.interrupted = false;
        }
        if !inner.open {
            match conn.execute("BEGIN IMMEDIATE").await {
                Ok(_) => {}
                // An interrupted writer's BEGIN went through after all.
                Err(e) if e.to_string().contains("within a transaction") => {}
                Err(e) => {
                    turn.left = true;
                    return Err(e);
                }
            }
            inner.open = true;
        }
        inner.interrupted = true;
        let opened = conn.execute("SAVEPOINT writer").await;
        if let Err(e) = opened {
            // Ends the turn as a failed one, committing or failing the group as usual.
            let _ = turn
                .leave(Err::<(), _>(sqlx::Error::Protocol(e.to_string())))
                .await;
            return Err(e);
        }
        Ok(turn)
    }

    /// Runs `f` on the connection outside any group, when no group is open (migrations).
    pub async fn exclusive<T>(
        &self,
        f: impl AsyncFnOnce(&mut SqliteConnection) -> T,
    ) -> Result<T, sqlx::Error> {
        let mut guard = self.inner.lock().await;
        debug_assert!(!guard.open, "a group is open between writers only");
        let conn = guard.conn.as_mut().ok_or_else(closed)?;
        Ok(f(conn).await)
    }

    /// Closes the connection, waiting for the writer that holds it.
    pub async fn close(&self) {
        let mut guard = self.inner.lock().await;
        if let Some(conn) = guard.conn.take() {
            let _ = conn.close().await;
        }
    }

    async fn wait_for(&self, group: u64) -> Result<(), sqlx::Error> {
        let mut finished = self.finished.subscribe();
        finished
            .wait_for(|&done| done >= group)
            .await
            .map_err(|_| closed())?;
        if self.failed.lock().expect("lock").contains(&group) {
            return Err(sqlx::Error::Protocol(FAILED.into()));
        }
        Ok(())
    }

    fn finish_group(&self, inner: &mut Inner, committed: bool) {
        if !committed {
            let mut failed = self.failed.lock().expect("lock");
            if failed.len() == FAILED_KEPT {
                failed.pop_front();
            }
            failed.push_back(inner.group);
        }
        self.finished.send_replace(inner.group);
        inner.group += 1;
        inner.members = 0;
        inner.open = false;
    }
}

impl Turn {
    /// The connection, inside this writer's savepoint.
    pub fn conn(&mut self) -> &mut SqliteConnection {
        self.guard.conn.as_mut().expect("open while a turn is held")
    }

    /// Ends the turn with the work's `outcome`: keeps or undoes the savepoint, then
    /// commits the group if nobody is queued behind (or the group is full), or else
    /// leaves the commit to a later writer and waits for it. Returns `outcome` once it
    /// is durable.
    pub async fn leave<T, E: From<sqlx::Error>>(mut self, outcome: Result<T, E>) -> Result<T, E> {
        let writer = self.writer.clone();
        let kept = outcome.is_ok();
        // The savepoint's end and the COMMIT run in a task of their own: were the
        // caller dropped half-way (a client gone, a SIGTERM), a COMMIT that went
        // through would otherwise leave the group marked open with no transaction
        // behind it, and the next writer's work would commit on its own and then fail.
        self.left = true;
        let ended = tokio::spawn(async move { self.end(kept).await });
        let (ended, group) = match ended.await {
            Ok(ended) => ended,
            // The runtime is shutting down: the work may or may not be saved.
            Err(_) => return Err(sqlx::Error::Protocol(FAILED.into()).into()),
        };
        match ended {
            Ended::Failed(e) => Err(e.into()),
            Ended::Uncommitted if kept => Err(sqlx::Error::Protocol(FAILED.into()).into()),
            Ended::Uncommitted | Ended::Committed => outcome,
            Ended::LeftToLater => {
                let value = outcome?;
                writer.wait_for(group).await?;
                Ok(value)
            }
        }
    }

    /// Keeps or undoes the savepoint, then commits the group if nobody is queued
    /// behind (or the group is full).
    async fn end(mut self, kept: bool) -> (Ended, u64) {
        let writer = self.writer.clone();
        let inner = &mut *self.guard;
        let Some(conn) = inner.conn.as_mut() else {
            return (Ended::Failed(closed()), inner.group);
        };
        let savepoint = if kept {
            "RELEASE SAVEPOINT writer"
        } else {
            "ROLLBACK TO SAVEPOINT writer; RELEASE SAVEPOINT writer"
        };
        let ended = conn.execute(savepoint).await;
        if ended.is_ok() {
            inner.interrupted = false;
            if kept {
                inner.members += 1;
            }
        }
        let group = inner.group;
        let last = writer.queued.load(Ordering::SeqCst) == 0 || inner.members >= MAX_GROUP;
        if ended.is_ok() && !last {
            return (Ended::LeftToLater, group);
        }
        let committed = ended.is_ok() && conn.execute("COMMIT").await.is_ok();
        if !committed {
            // Whatever the state, leave no transaction behind.
            let _ = conn.execute("ROLLBACK").await;
            inner.interrupted = false;
        }
        writer.finish_group(inner, committed);
        match ended {
            Err(e) => (Ended::Failed(e), group),
            Ok(_) if committed => (Ended::Committed, group),
            Ok(_) => (Ended::Uncommitted, group),
        }
    }
}

/// How a turn ended.
enum Ended {
    /// The savepoint could not be ended; the group was rolled back.
    Failed(sqlx::Error),
    /// This writer committed the group.
    Committed,
    /// This writer's COMMIT failed; nothing of the group was saved.
    Uncommitted,
    /// A writer queued behind commits the group.
    LeftToLater,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sqlx::ConnectOptions;
    use sqlx::sqlite::SqliteConnectOptions;

    use super::*;

    async fn writer(dir: &tempfile::TempDir) -> (Arc<GroupWriter>, SqliteConnectOptions) {
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("group.db"))
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
        let mut conn = options.connect().await.expect("connect");
        conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .await
            .expect("table");
        (Arc::new(GroupWriter::new(conn)), options)
    }

    async fn insert(writer: &Arc<GroupWriter>, n: i64, fail: bool) -> Result<i64, sqlx::Error> {
        let mut turn = GroupWriter::enter(writer).await?;
        let out = async {
            sqlx::query("INSERT INTO t (n) VALUES ($1)")
                .bind(n)
                .execute(&mut *turn.conn())
                .await?;
            if fail {
                return Err(sqlx::Error::Protocol("refused".into()));
            }
            Ok(n)
        }
        .await;
        turn.leave(out).await
    }

    /// What another connection sees: only committed rows.
    async fn stored(options: &SqliteConnectOptions) -> Vec<i64> {
        let mut conn = options.connect().await.expect("connect");
        sqlx::query_scalar("SELECT n FROM t ORDER BY n")
            .fetch_all(&mut conn)
            .await
            .expect("rows")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writers_share_commits_and_a_failing_one_undoes_only_itself() {
        let dir = tempfile::tempdir().expect("dir");
        let (writer, options) = writer(&dir).await;
        let mut set = tokio::task::JoinSet::new();
        for n in 0..200 {
            let writer = writer.clone();
            set.spawn(async move { (n, insert(&writer, n, n % 3 == 0).await) });
        }
        let mut acknowledged = Vec::new();
        while let Some(done) = set.join_next().await {
            let (n, result) = done.expect("task");
            assert_eq!(result.is_ok(), n % 3 != 0, "writer {n}: {result:?}");
            if result.is_ok() {
                acknowledged.push(n);
            }
        }
        acknowledged.sort();
        // Every acknowledged row is committed (another connection sees it), no other.
        assert_eq!(stored(&options).await, acknowledged);
        let groups = *writer.finished.borrow();
        assert!(
            groups < 200,
            "{groups} commits for 200 writers: they were not grouped"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writer_dropped_half_way_is_undone_and_does_not_hold_up_the_group() {
        let dir = tempfile::tempdir().expect("dir");
        let (writer, options) = writer(&dir).await;
        // The first writer finishes its work while a second is queued, so it leaves the
        // commit to the second, which is then dropped in the middle of its work.
        let mut first = GroupWriter::enter(&writer).await.expect("enter");
        sqlx::query("INSERT INTO t (n) VALUES (1)")
            .execute(&mut *first.conn())
            .await
            .expect("insert");
        let dropped = {
            let writer = writer.clone();
            tokio::spawn(async move {
                let mut turn = GroupWriter::enter(&writer).await.expect("enter");
                sqlx::query("INSERT INTO t (n) VALUES (2)")
                    .execute(&mut *turn.conn())
                    .await
                    .expect("insert");
                std::future::pending::<()>().await;
            })
        };
        while writer.queued.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let first = tokio::spawn(async move { first.leave(Ok::<_, sqlx::Error>(1)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        dropped.abort();
        let first = tokio::time::timeout(Duration::from_secs(5), first)
            .await
            .expect("the first writer was answered")
            .expect("task");
        assert_eq!(first.expect("committed"), 1);
        assert_eq!(stored(&options).await, vec![1]);
        // The connection is usable again.
        assert_eq!(insert(&writer, 3, false).await.expect("insert"), 3);
        assert_eq!(stored(&options).await, vec![1, 3]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writer_dropped_at_any_point_leaves_the_next_writers_work_committed() {
        let dir = tempfile::tempdir().expect("dir");
        let (writer, options) = writer(&dir).await;
        let mut acknowledged = Vec::new();
        for round in 0..300_i64 {
            // Dropped after a varying number of polls: in its work, its savepoint's
            // end, its COMMIT or after.
            let dropped = {
                let writer = writer.clone();
                tokio::spawn(async move { insert(&writer, round, false).await })
            };
            for _ in 0..round % 23 {
                tokio::task::yield_now().await;
            }
            dropped.abort();
            if let Ok(Ok(n)) = dropped.await {
                acknowledged.push(n);
            }
            let next = 1000 + round;
            let saved = insert(&writer, next, false).await;
            assert_eq!(saved.ok(), Some(next), "round {round}");
            acknowledged.push(next);
        }
        let stored = stored(&options).await;
        for n in &acknowledged {
            assert!(stored.contains(n), "{n} was acknowledged but is not stored");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writer_that_gives_up_waiting_does_not_hold_up_the_group() {
        let dir = tempfile::tempdir().expect("dir");
        let (writer, options) = writer(&dir).await;
        let mut first = GroupWriter::enter(&writer).await.expect("enter");
        sqlx::query("INSERT INTO t (n) VALUES (1)")
            .execute(&mut *first.conn())
            .await
            .expect("insert");
        // A second writer queues, then goes away before its turn.
        let queued = {
            let writer = writer.clone();
            tokio::spawn(async move {
                let _ = GroupWriter::enter(&writer).await;
                std::future::pending::<()>().await;
            })
        };
        while writer.queued.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let first = tokio::spawn(async move { first.leave(Ok::<_, sqlx::Error>(1)).await });
        queued.abort();
        let first = tokio::time::timeout(Duration::from_secs(5), first)
            .await
            .expect("the first writer was answered")
            .expect("task");
        assert_eq!(first.expect("committed"), 1);
        assert_eq!(stored(&options).await, vec![1]);
    }
}
