//! The floor: what this machine does at best for each kind of work verdict's figures are
//! made of, measured in the benchmark's own process beside the figures themselves, so that
//! a slow day on a shared machine moves both sides of each share.
//!
//! - durable commits on this disk, with the app's SQLite settings (WAL, `synchronous =
//!   FULL`), one row per transaction and in groups as large as the app's group commit;
//! - the same on PostgreSQL, from one connection and from as many as the app's pool has;
//! - a static file over HTTP from the same server, under the load's connection counts;
//! - a bare read of the `ratings` table, every column of every row of the batch.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{Database, Server, load};

/// Rows in one of the floor's grouped transactions: the app's most writers per COMMIT
/// (`MAX_GROUP` in the store's group commit).
pub const GROUP: usize = 128;

/// The connections of the app's PostgreSQL pool.
pub const PG_CONNECTIONS: usize = 16;

/// A row about the size of a stored rating: an id and its answers.
fn payload(n: usize) -> String {
    format!(
        "{{\"a\":{{\"executability\":\"yes_fully\",\"instruction_following\":\"no_issues\",\
         \"correctness\":\"no_issues\"}},\"b\":{{\"executability\":\"no_code\",\
         \"instruction_following\":\"minor_issues\",\"correctness\":\"no_issues\"}},\
         \"sxs\":{},\"sxs_explanation\":\"A floor row about as long as a rating's answers, number {n}.\"}}",
        1 + n % 7
    )
}

/// Durable writes per second: single-row transactions, and rows in transactions of
/// [`GROUP`] rows. On PostgreSQL also single-row transactions from the pool's number of
/// connections at once (the server shares WAL flushes between them).
#[derive(Clone, Copy, Default)]
pub struct Commits {
    pub single: f64,
    pub parallel: Option<f64>,
    pub grouped_rows: f64,
}

/// Durable commits on a fresh SQLite file beside the benchmark's databases, with the
/// app's settings, each kind for `seconds`.
pub async fn sqlite_commits(seconds: f64) -> Commits {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("floor.db");
    tokio::task::spawn_blocking(move || sqlite_commits_on(&path, seconds))
        .await
        .expect("SQLite floor")
}

fn sqlite_commits_on(path: &Path, seconds: f64) -> Commits {
    let mut conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;
         CREATE TABLE floor (id INTEGER PRIMARY KEY, answers TEXT NOT NULL);",
    )
    .expect("set up");
    let mut run = |rows: usize| -> f64 {
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let started = Instant::now();
        let mut written = 0usize;
        while Instant::now() < deadline {
            let tx = conn.transaction().expect("begin");
            {
                let mut insert = tx
                    .prepare_cached("INSERT INTO floor (answers) VALUES (?1)")
                    .expect("prepare");
                for _ in 0..rows {
                    insert.execute([payload(written)]).expect("insert");
                    written += 1;
                }
            }
            tx.commit().expect("commit");
        }
        written as f64 / started.elapsed().as_secs_f64()
    };
    let single = run(1);
    let grouped_rows = run(GROUP);
    Commits {
        single,
        parallel: None,
        grouped_rows,
    }
}

/// Durable commits on a fresh PostgreSQL database of `server`, each kind for `seconds`.
pub async fn postgres_commits(server: &str, seconds: f64) -> Commits {
    let db = Database::fresh(Some(server)).await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(PG_CONNECTIONS as u32)
        .connect(&db.url)
        .await
        .expect("connect");
    sqlx::query("CREATE TABLE floor (id BIGSERIAL PRIMARY KEY, answers JSONB NOT NULL)")
        .execute(&pool)
        .await
        .expect("table");
    // One writer, one row per transaction; then the pool's connections at once.
    let writers = |count: usize| {
        let pool = pool.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs_f64(seconds);
            let started = Instant::now();
            let mut set = tokio::task::JoinSet::new();
            for w in 0..count {
                let pool = pool.clone();
                set.spawn(async move {
                    let mut written = 0usize;
                    while Instant::now() < deadline {
                        sqlx::query("INSERT INTO floor (answers) VALUES ($1::jsonb)")
                            .bind(payload(w * 1_000_000 + written))
                            .execute(&pool)
                            .await
                            .expect("insert");
                        written += 1;
                    }
                    written
                });
            }
            let mut written = 0;
            while let Some(n) = set.join_next().await {
                written += n.expect("writer");
            }
            written as f64 / started.elapsed().as_secs_f64()
        }
    };
    let single = writers(1).await;
    let parallel = writers(PG_CONNECTIONS).await;
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut written = 0usize;
    while Instant::now() < deadline {
        let mut insert = sqlx::QueryBuilder::new("INSERT INTO floor (answers) ");
        insert.push_values(0..GROUP, |mut row, i| {
            row.push_bind(payload(written + i))
                .push_unseparated("::jsonb");
        });
        insert.build().execute(&pool).await.expect("insert");
        written += GROUP;
    }
    let grouped_rows = written as f64 / started.elapsed().as_secs_f64();
    pool.close().await;
    db.drop_it().await;
    Commits {
        single,
        parallel: Some(parallel),
        grouped_rows,
    }
}

/// Requests per second for `/static/app.css` from `server` under each of `connections`
/// concurrent clients, each for `seconds`.
pub async fn static_file(server: &Server, connections: &[usize], seconds: f64) -> Vec<f64> {
    let client = reqwest::Client::new();
    let mut rates = Vec::new();
    for &n in connections {
        let (rate, _) = load(&client, &server.url("/static/app.css"), n, seconds).await;
        rates.push(rate);
    }
    rates
}

/// A bare read of a batch's ratings: every column of every row, in one statement, from
/// the database's own client library with nothing decoded (rusqlite on SQLite, sqlx on
/// PostgreSQL). Returns the rows and the seconds.
pub async fn scan_ratings(db: &Database, batch: uuid::Uuid) -> (usize, f64) {
    if db.postgres.is_some() {
        use futures_util::TryStreamExt as _;
        use sqlx::Row as _;
        let pool = sqlx::PgPool::connect(&db.url).await.expect("connect");
        let started = Instant::now();
        let mut rows = sqlx::query("SELECT * FROM ratings WHERE batch_id = $1")
            .bind(batch)
            .fetch(&pool);
        let (mut count, mut bytes) = (0usize, 0usize);
        while let Some(row) = rows.try_next().await.expect("row") {
            for i in 0..row.len() {
                let raw = row.try_get_raw(i).expect("column");
                // NULL has no bytes.
                bytes += raw.as_bytes().map_or(0, <[u8]>::len);
            }
            count += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        drop(rows);
        pool.close().await;
        std::hint::black_box(bytes);
        (count, seconds)
    } else {
        let path = db.dir.as_ref().expect("SQLite").path().join("bench.db");
        tokio::task::spawn_blocking(move || {
            let conn = rusqlite::Connection::open(path).expect("open");
            let started = Instant::now();
            let mut read = conn
                .prepare("SELECT * FROM ratings WHERE batch_id = ?1")
                .expect("prepare");
            let width = read.column_count();
            // sqlx keeps a UUID in SQLite as its 16 bytes.
            let mut rows = read.query([batch.as_bytes().as_slice()]).expect("query");
            let (mut count, mut bytes) = (0usize, 0usize);
            while let Some(row) = rows.next().expect("row") {
                for i in 0..width {
                    bytes += match row.get_ref(i).expect("column") {
                        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                            t.len()
                        }
                        _ => 8,
                    };
                }
                count += 1;
            }
            std::hint::black_box(bytes);
            (count, started.elapsed().as_secs_f64())
        })
        .await
        .expect("SQLite scan")
    }
}
