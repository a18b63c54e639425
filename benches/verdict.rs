//! The benchmark harness: starts the real `verdict` binary on a fresh database, seeds it
//! through the product's own paths (the CLI and the HTTP API), measures, and writes
//! `BENCHMARKS.md`. Run with `cargo bench --bench verdict` (add `-- --quick` for a smoke
//! run, `-- --database-url postgres://...` for PostgreSQL).
//!
//! These are measurements, never assertions: nothing here fails because it is slow.

mod common;
mod floor;

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::cpu::{CpuUse, CpuWatch};
use common::{
    Database, PASSWORD, Server, Stats, answers, arg_value, has_flag, load, machine, persona,
    rater_token, stats, tasks, upload, upload_with, write_section,
};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

#[derive(Clone)]
struct Options {
    quick: bool,
    database_url: Option<String>,
    /// Where the report goes; `None` prints it only (a partial run with `--only`).
    output: Option<String>,
    /// The scenarios to run: all when empty.
    only: Vec<String>,
    /// Keep the large batch's database for profiling, and print where it is.
    keep: bool,
}

const SCENARIOS: [&str; 8] = [
    "import", "next", "startup", "floor", "raters", "page", "large", "scaleout",
];

impl Options {
    fn runs(&self, scenario: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == scenario)
    }
}

fn options() -> Options {
    let value = arg_value;
    let only: Vec<String> = value("--only")
        .map(|s| s.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(unknown) = only.iter().find(|s| !SCENARIOS.contains(&s.as_str())) {
        eprintln!(
            "unknown scenario {unknown:?}: choose from {}",
            SCENARIOS.join(",")
        );
        std::process::exit(2);
    }
    let output = value("--output").or_else(|| only.is_empty().then(|| "BENCHMARKS.md".into()));
    Options {
        quick: has_flag("--quick"),
        database_url: value("--database-url").or_else(|| std::env::var("BENCH_DATABASE_URL").ok()),
        output,
        only,
        keep: has_flag("--keep"),
    }
}

struct ImportResult {
    tasks: usize,
    megabytes: f64,
    seconds: f64,
    peak_rss_mib: f64,
    cpu: CpuUse,
    /// SQLite: the time to insert the stored task rows again into an empty database of
    /// the same schema, in one transaction with one prepared statement.
    bare_insert_seconds: Option<f64>,
}

async fn bench_import(opts: &Options, tasks_n: usize) -> ImportResult {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    let admin = persona(&db, "admin", "admin");
    let server = Server::start(&db);
    let body = tasks(tasks_n, 6000);
    let megabytes = body.len() as f64 / 1e6;
    let watch = CpuWatch::start(server.child.id());
    let (_, elapsed) = upload(&admin, &server, "import", body).await;
    let cpu = watch.stop();
    let result = ImportResult {
        tasks: tasks_n,
        megabytes,
        seconds: elapsed.as_secs_f64(),
        peak_rss_mib: server.peak_rss_mib(),
        cpu,
        bare_insert_seconds: None,
    };
    server.stop();
    let bare_insert_seconds = match &db.dir {
        Some(dir) => Some(bare_insert(&dir.path().join("bench.db")).await),
        None => None,
    };
    db.drop_it().await;
    ImportResult {
        bare_insert_seconds,
        ..result
    }
}

/// What storing an import costs at the least: the task rows an upload stored, inserted
/// again into an empty database of the same schema (made by `verdict serve`), in one
/// transaction with one prepared statement, with the app's settings (WAL, full sync,
/// foreign keys). Reading the rows back and copying their batch are not timed.
async fn bare_insert(imported: &std::path::Path) -> f64 {
    let empty = Database::fresh(None).await;
    Server::start(&empty).stop();
    let target = empty.dir.as_ref().expect("SQLite").path().join("bench.db");
    let source = imported.to_owned();
    let seconds = tokio::task::spawn_blocking(move || {
        use rusqlite::types::Value as Cell;
        let from = rusqlite::Connection::open(&source).expect("open the imported database");
        let mut into = rusqlite::Connection::open(&target).expect("open the empty database");
        into.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
        )
        .expect("pragmas");
        let rows = |table: &str| -> (usize, Vec<Vec<Cell>>) {
            let mut read = from
                .prepare(&format!("SELECT * FROM {table}"))
                .expect("select");
            let width = read.column_count();
            let rows = read
                .query_map([], |row| {
                    (0..width).map(|i| row.get::<_, Cell>(i)).collect()
                })
                .expect("rows")
                .collect::<Result<Vec<Vec<Cell>>, _>>()
                .expect("rows");
            (width, rows)
        };
        for table in ["users", "batches"] {
            let (width, found) = rows(table);
            let marks = vec!["?"; width].join(", ");
            for row in found {
                into.execute(
                    &format!("INSERT OR IGNORE INTO {table} VALUES ({marks})"),
                    rusqlite::params_from_iter(row),
                )
                .expect("copy");
            }
        }
        let (width, tasks) = rows("tasks");
        let marks = vec!["?"; width].join(", ");
        let started = Instant::now();
        let tx = into.transaction().expect("begin");
        {
            let mut insert = tx
                .prepare(&format!("INSERT INTO tasks VALUES ({marks})"))
                .expect("prepare");
            for row in tasks {
                insert
                    .execute(rusqlite::params_from_iter(row))
                    .expect("insert");
            }
        }
        tx.commit().expect("commit");
        started.elapsed().as_secs_f64()
    })
    .await
    .expect("bare insert");
    empty.drop_it().await;
    seconds
}

/// Latency of `next` (each followed by a submit, so every call picks a new task) in a
/// batch of `size` tasks.
async fn bench_next(opts: &Options, size: usize, iterations: usize) -> Stats {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    let admin = persona(&db, "admin", "admin");
    let rater = persona(&db, "rater", "rater");
    let server = Server::start(&db);
    let (batch, _) = upload(&admin, &server, "next", tasks(size, 200)).await;
    let batch = batch["id"].as_str().expect("id").to_owned();
    // Half the batch is done already, as in a programme under way: the pick must not
    // step over finished tasks to find an open one.
    db.mark_full(batch.parse().expect("uuid"), size / 2).await;
    let next_url = server.url(&format!("/api/v1/batches/{batch}/next"));
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..iterations + 20 {
        let started = Instant::now();
        let next: Value = rater
            .post(&next_url)
            .send()
            .await
            .expect("next")
            .json()
            .await
            .expect("JSON");
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        if i >= 20 {
            samples.push(elapsed);
        }
        submit(&rater, &server, &next).await;
    }
    server.stop();
    db.drop_it().await;
    stats(samples)
}

/// Seeds `ratings` submitted ratings (overlap 3, 30 raters) into a fresh database: tasks
/// through the upload API, raters through the CLI, and the ratings themselves by bulk
/// SQL, since a million rating sessions over HTTP would take the benchmark hours.
/// Returns the database and the batch id.
async fn seed_ratings(opts: &Options, ratings: usize) -> (Database, String) {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    let admin = persona(&db, "admin", "admin");
    let raters: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
    for r in &raters {
        persona(&db, r, "rater");
    }
    let server = Server::start(&db);
    let tasks_n = ratings.div_ceil(3);
    let (batch, _) = upload_with(
        &admin,
        &server,
        "name=metrics&randomize=true&overlap=3",
        tasks(tasks_n, 200),
    )
    .await;
    server.stop();
    let batch = batch["id"].as_str().expect("id").to_owned();
    let store = verdict::Store::connect(&db.url).await.expect("connect");
    let batch_id: uuid::Uuid = batch.parse().expect("uuid");
    seed_sql(&store, &db, batch_id, &raters, ratings).await;
    store.close().await;
    (db, batch)
}

async fn seed_sql(
    store: &verdict::Store,
    db: &Database,
    batch_id: uuid::Uuid,
    raters: &[String],
    ratings: usize,
) {
    let _ = store;
    let options = ["yes_fully", "yes_partially", "no", "no_code"];
    let scales = [
        "no_issues",
        "minor_issues",
        "major_issues",
        "not_applicable",
    ];
    macro_rules! seed {
        ($pool:expr) => {{
            let pool = $pool;
            let tasks: Vec<(uuid::Uuid,)> = sqlx::query_as("SELECT id FROM tasks WHERE batch_id = $1 ORDER BY seq")
                .bind(batch_id).fetch_all(&pool).await.expect("tasks");
            let mut rater_ids = Vec::new();
            for r in raters {
                let (id,): (uuid::Uuid,) = sqlx::query_as("SELECT id FROM users WHERE username = $1").bind(r).fetch_one(&pool).await.expect("rater");
                rater_ids.push(id);
            }
            let now = chrono::Utc::now();
            let mut rows = Vec::new();
            for (t, (task_id,)) in tasks.iter().enumerate() {
                for k in 0..3 {
                    let n = t * 3 + k;
                    if n == ratings {
                        break;
                    }
                    let rater = rater_ids[(t + k * 7) % rater_ids.len()];
                    let sxs = 1 + ((t * 5 + k * 3) % 7) as i64;
                    let answers = json!({
                        "a": {"executability": options[n % 4], "instruction_following": scales[(n / 4) % 4], "correctness": scales[(n / 3) % 4]},
                        "b": {"executability": options[(n + 1) % 4], "instruction_following": scales[(n / 5) % 4], "correctness": scales[(n / 7) % 4]},
                        "sxs": sxs, "sxs_explanation": "A seeded explanation of the preference, long enough."
                    });
                    rows.push((uuid::Uuid::now_v7(), *task_id, rater, n % 2 == 1, answers, 30 + (n % 900) as i32));
                }
            }
            let mut tx = pool.begin().await.expect("begin");
            // 13 values a row, well under both backends' limits on bound parameters.
            for chunk in rows.chunks(1000) {
                let mut assignments = sqlx::QueryBuilder::new(
                    "INSERT INTO assignments (id, task_id, batch_id, rater_id, swapped, state, lease_expires_at, created_at, updated_at) ");
                assignments.push_values(chunk, |mut b, (id, task_id, rater, swapped, _, _)| {
                    b.push_bind(*id).push_bind(*task_id).push_bind(batch_id).push_bind(*rater).push_bind(*swapped)
                        .push_bind("done").push_bind(now).push_bind(now).push_bind(now);
                });
                assignments.build().execute(&mut *tx).await.expect("assignments");
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO ratings (id, assignment_id, task_id, batch_id, rater_id, outcome, status, answers, time_spent_s, version, created_at, updated_at, submitted_at) ");
                insert.push_values(chunk, |mut b, (id, task_id, rater, _, answers, time)| {
                    b.push_bind(uuid::Uuid::now_v7()).push_bind(*id).push_bind(*task_id).push_bind(batch_id).push_bind(*rater)
                        .push_bind("rated").push_bind("submitted").push_bind(sqlx::types::Json(answers)).push_bind(*time)
                        .push_bind(1).push_bind(now).push_bind(now).push_bind(now);
                });
                insert.build().execute(&mut *tx).await.expect("ratings");
            }
            // A last task left short of three ratings stays open, for one more rating.
            sqlx::query("UPDATE tasks SET claimed = 3, is_full = TRUE WHERE batch_id = $1").bind(batch_id).execute(&mut *tx).await.expect("claimed");
            if let Some((last,)) = tasks.last().filter(|_| ratings % 3 != 0) {
                sqlx::query("UPDATE tasks SET claimed = $2, is_full = FALSE WHERE id = $1")
                    .bind(*last).bind((ratings % 3) as i32).execute(&mut *tx).await.expect("open task");
            }
            tx.commit().await.expect("commit");
            pool.close().await;
        }};
    }
    if db.postgres.is_some() {
        seed!(sqlx::PgPool::connect(&db.url).await.expect("connect"));
    } else {
        seed!(sqlx::SqlitePool::connect(&db.url).await.expect("connect"));
    }
}

struct LargeBatchResult {
    ratings: usize,
    metrics_seconds: f64,
    /// The same request after one more rating, on the same server.
    one_more_seconds: f64,
    metrics_peak_mib: f64,
    exports: Vec<(String, usize, f64, f64)>,
    /// The floor: a bare read of the batch's ratings, rows and seconds.
    scan: (usize, f64),
    /// Where the processor time went in each request, by the request's label.
    cpu: Vec<(String, CpuUse)>,
}

/// Submits the standard answers for the task `next` handed `rater`.
async fn submit(rater: &Client, server: &Server, next: &Value) {
    let id = next["assignment_id"].as_str().expect("assignment");
    let done = rater
        .post(server.url(&format!("/api/v1/assignments/{id}/submit")))
        .json(&answers())
        .send()
        .await
        .expect("submit");
    assert_eq!(done.status(), StatusCode::OK);
}

/// A batch's metrics as `lead` gets them from `server`.
async fn metrics_of(lead: &Client, server: &Server, batch: &str) -> Value {
    lead.get(server.url(&format!("/api/v1/batches/{batch}/metrics")))
        .send()
        .await
        .expect("metrics")
        .json()
        .await
        .expect("JSON")
}

/// Metrics and exports of a batch of `ratings` ratings, each on a freshly started server
/// so that its peak memory belongs to that one request.
async fn bench_large_batch(opts: &Options, ratings: usize) -> LargeBatchResult {
    let (db, batch) = seed_ratings(opts, ratings).await;
    let lead_client = persona(&db, "lead", "lead");
    let scan = floor::scan_ratings(&db, batch.parse().expect("uuid")).await;
    let server = Server::start(&db);
    let mut cpu = Vec::new();
    let watch = CpuWatch::start(server.child.id());
    let started = Instant::now();
    let metrics = metrics_of(&lead_client, &server, &batch).await;
    let metrics_seconds = started.elapsed().as_secs_f64();
    cpu.push(("metrics, cold".to_owned(), watch.stop()));
    assert_eq!(
        metrics["counts"]["included"].as_u64(),
        Some(ratings as u64),
        "every seeded rating counts"
    );
    // One more rating through the product (the seed leaves the last task short of its
    // three), then the metrics again: the server folds in only what changed.
    let late = persona(&db, "late", "rater");
    let next: Value = late
        .post(server.url(&format!("/api/v1/batches/{batch}/next")))
        .send()
        .await
        .expect("next")
        .json()
        .await
        .expect("a task left open (the batch size must not be a multiple of 3)");
    submit(&late, &server, &next).await;
    let watch = CpuWatch::start(server.child.id());
    let started = Instant::now();
    let metrics = metrics_of(&lead_client, &server, &batch).await;
    let one_more_seconds = started.elapsed().as_secs_f64();
    cpu.push(("metrics, after one more rating".to_owned(), watch.stop()));
    assert_eq!(
        metrics["counts"]["included"].as_u64(),
        Some(ratings as u64 + 1),
        "the new rating counts"
    );
    let metrics_peak_mib = server.peak_rss_mib();
    server.stop();
    let mut exports = Vec::new();
    for (label, query) in [
        ("CSV, one rater's share", "format=csv&rater=r0"),
        ("CSV, all", "format=csv"),
        ("JSONL, all", "format=jsonl"),
    ] {
        let server = Server::start(&db);
        let watch = CpuWatch::start(server.child.id());
        let started = Instant::now();
        let mut response = lead_client
            .get(server.url(&format!("/api/v1/batches/{batch}/export?{query}")))
            .header("accept-encoding", "identity")
            .send()
            .await
            .expect("export");
        let mut lines = 0usize;
        while let Some(chunk) = response.chunk().await.expect("chunk") {
            lines += chunk.iter().filter(|b| **b == b'\n').count();
        }
        let seconds = started.elapsed().as_secs_f64();
        let rows = if query.starts_with("format=csv") {
            lines.saturating_sub(1)
        } else {
            lines
        };
        exports.push((label.to_owned(), rows, seconds, server.peak_rss_mib()));
        cpu.push((format!("export, {label}"), watch.stop()));
        server.stop();
    }
    if opts.keep {
        eprintln!("kept the large batch {batch} in {}", db.keep());
    } else {
        db.drop_it().await;
    }
    LargeBatchResult {
        ratings,
        metrics_seconds,
        one_more_seconds,
        metrics_peak_mib,
        exports,
        scan,
        cpu,
    }
}

/// The floor of one database: durable commits on it, and a static file over HTTP from a
/// server on it under the raters' and the task page's connections.
struct Floor {
    commits: floor::Commits,
    /// Requests per second of `/static/app.css` under 256 (or the quick run's raters) and
    /// 64 connections.
    static_raters: f64,
    static_page: f64,
}

async fn bench_floor(opts: &Options, raters: usize, seconds: f64) -> Floor {
    let commits = match &opts.database_url {
        Some(url) => floor::postgres_commits(url, seconds).await,
        None => floor::sqlite_commits(seconds).await,
    };
    let db = Database::fresh(opts.database_url.as_deref()).await;
    // The server migrates the fresh database itself; the floor serves only a static file.
    let server = Server::start(&db);
    let rates = floor::static_file(&server, &[raters, 64], seconds).await;
    server.stop();
    db.drop_it().await;
    Floor {
        commits,
        static_raters: rates[0],
        static_page: rates[1],
    }
}

/// What one database's run measured, for the shares of the floor.
#[derive(Default)]
struct Figures {
    floor: Option<Floor>,
    /// Ratings per second of the concurrent raters.
    raters: Option<f64>,
    /// Task pages per second, and the static file's under the same load.
    page: Option<(f64, f64)>,
    import: Option<(f64, f64)>,
    large: Option<LargeBatchResult>,
}

impl Figures {
    /// Rows of the table of shares: figure, verdict, floor, share.
    fn shares(&self, backend: &str, raters: usize) -> String {
        let mut rows = String::new();
        let mut row = |figure: &str, verdict: String, floor: String, share: f64| {
            let _ = writeln!(
                rows,
                "| {backend} | {figure} | {verdict} | {floor} | {:.0}% |",
                share * 100.0
            );
        };
        if let (Some(rate), Some(floor)) = (self.raters, &self.floor) {
            let disk = floor.commits.grouped_rows;
            let http = floor.static_raters / 2.0;
            row(
                &format!("ratings, {raters} raters"),
                format!("{rate:.0}/s"),
                format!(
                    "{:.0}/s: the lower of {disk:.0} durable rows/s in groups of {} and {http:.0}/s, \
                     two static requests each",
                    disk.min(http),
                    floor::GROUP
                ),
                rate / disk.min(http),
            );
        }
        if let Some((page, file)) = self.page {
            row(
                "task page, 64 connections",
                format!("{page:.0} req/s"),
                format!("{file:.0} req/s, the static file"),
                page / file,
            );
        }
        if let Some(large) = &self.large {
            let (rows_read, scan) = large.scan;
            row(
                &format!("metrics of {} ratings, cold", large.ratings),
                format!("{:.2} s", large.metrics_seconds),
                format!("{scan:.2} s, a bare read of {rows_read} ratings"),
                scan / large.metrics_seconds,
            );
            let scan_rate = rows_read as f64 / scan;
            for (label, exported, seconds, _) in large.exports.iter().skip(1) {
                let rate = *exported as f64 / seconds;
                row(
                    &format!("export, {label}"),
                    format!("{rate:.0} rows/s"),
                    format!("{scan_rate:.0} rows/s, the bare read"),
                    rate / scan_rate,
                );
            }
        }
        if let Some((upload, bare)) = self.import {
            row(
                "import of tasks of 6 KB",
                format!("{upload:.2} s"),
                format!("{bare:.2} s, the rows in one transaction"),
                bare / upload,
            );
        }
        rows
    }
}

/// Start-up to first answer, and resident memory once idle.
async fn bench_startup(opts: &Options) -> (f64, f64) {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    // Migrate first, so start-up measures serving, not creating the schema.
    persona(&db, "admin", "admin");
    let started = Instant::now();
    let server = Server::start(&db);
    let client = Client::new();
    loop {
        if let Ok(r) = client.get(server.url("/healthz")).send().await
            && r.status() == StatusCode::OK
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let first_answer_ms = started.elapsed().as_secs_f64() * 1000.0;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = server.rss_mib();
    server.stop();
    db.drop_it().await;
    (first_answer_ms, idle)
}

struct Throughput {
    raters: usize,
    ratings: usize,
    seconds: f64,
    errors: usize,
    submit: Stats,
    next: Stats,
}

/// How raters spread over several instances fared, and what the database holds after.
struct ScaleOut {
    load: Throughput,
    /// Errors of the raters on the instance that was killed (after it died).
    errors_killed: usize,
    /// Submits answered 200, and submitted ratings stored.
    acknowledged: usize,
    stored: i64,
    /// Tasks with more ratings than the overlap, and tasks whose claimed count differs
    /// from their open and finished assignments.
    over_k: i64,
    bad_claims: i64,
    /// Where the processor time went, with one instance.
    cpu: Option<CpuUse>,
}

/// The setting of a run of simulated raters.
struct Load {
    raters: usize,
    seconds: f64,
    /// `verdict serve` processes on the one database; rater `i` talks to `i % instances`.
    instances: usize,
    overlap: usize,
    /// Kill the last instance (SIGKILL) this long into the run.
    kill_after: Option<f64>,
}

/// `raters` simulated raters, each taking the next task and submitting it, as fast as
/// they can for `seconds`, on one instance.
async fn bench_concurrent_raters(
    opts: &Options,
    raters: usize,
    seconds: f64,
) -> (Throughput, CpuUse) {
    let setting = Load {
        raters,
        seconds,
        instances: 1,
        overlap: 1,
        kill_after: None,
    };
    let run = rater_load(opts, &setting).await;
    (run.load, run.cpu.unwrap_or_default())
}

/// One rater's loop: next, then submit, until the deadline. Stops early when its
/// instance was killed (its requests can only fail from then on).
async fn rater_loop(
    client: Client,
    base: String,
    batch: String,
    deadline: Instant,
    killed: Option<Arc<AtomicBool>>,
) -> (Vec<f64>, Vec<f64>, usize, usize) {
    let next_url = format!("{base}/api/v1/batches/{batch}/next");
    let (mut next_ms, mut submit_ms) = (Vec::new(), Vec::new());
    let (mut errors, mut errors_killed) = (0usize, 0usize);
    let dead = || killed.as_ref().is_some_and(|k| k.load(Ordering::SeqCst));
    while Instant::now() < deadline {
        let mut failed = || {
            if dead() {
                errors_killed += 1;
            } else {
                errors += 1;
            }
        };
        let t = Instant::now();
        let next = match client.post(&next_url).send().await {
            Ok(response) if response.status() == StatusCode::OK => {
                response.json::<Value>().await.ok()
            }
            _ => None,
        };
        let Some(next) = next else {
            failed();
            if dead() {
                break;
            }
            continue;
        };
        next_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let id = next["assignment_id"].as_str().unwrap_or_default();
        let t = Instant::now();
        match client
            .post(format!("{base}/api/v1/assignments/{id}/submit"))
            .json(&answers())
            .send()
            .await
        {
            Ok(r) if r.status() == StatusCode::OK => {
                submit_ms.push(t.elapsed().as_secs_f64() * 1000.0)
            }
            _ => {
                failed();
                if dead() {
                    break;
                }
            }
        }
    }
    (next_ms, submit_ms, errors, errors_killed)
}

/// Raters spread over `setting.instances` servers on one fresh database, one of them
/// killed mid-run if asked; then what the database holds is checked against what was
/// acknowledged and against the overlap.
async fn rater_load(opts: &Options, setting: &Load) -> ScaleOut {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    let admin = persona(&db, "admin", "admin");
    let mut servers: Vec<Server> = (0..setting.instances).map(|_| Server::start(&db)).collect();
    let (batch, _) = upload_with(
        &admin,
        &servers[0],
        &format!("name=load&randomize=true&overlap={}", setting.overlap),
        tasks(100_000, 200),
    )
    .await;
    let batch = batch["id"].as_str().expect("id").to_owned();
    let mut clients = Vec::with_capacity(setting.raters);
    for i in 0..setting.raters {
        let token = rater_token(&admin, &servers[0], &format!("load{i}")).await;
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "authorization",
            format!("Bearer {token}").parse().expect("header"),
        );
        clients.push(
            Client::builder()
                .default_headers(headers)
                .pool_max_idle_per_host(1)
                .timeout(Duration::from_secs(30))
                .build()
                .expect("client"),
        );
    }
    let victim = setting.instances - 1;
    let killed = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs_f64(setting.seconds);
    let watch = (setting.instances == 1).then(|| CpuWatch::start(servers[0].child.id()));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for (i, client) in clients.into_iter().enumerate() {
        let on = i % setting.instances;
        let base = servers[on].base.clone();
        let watch = (setting.kill_after.is_some() && on == victim).then(|| Arc::clone(&killed));
        workers.spawn(rater_loop(client, base, batch.clone(), deadline, watch));
    }
    if let Some(after) = setting.kill_after {
        tokio::time::sleep(Duration::from_secs_f64(after)).await;
        let _ = servers[victim].child.kill();
        killed.store(true, Ordering::SeqCst);
    }
    let (mut next_ms, mut submit_ms, mut errors, mut errors_killed) =
        (Vec::new(), Vec::new(), 0, 0);
    while let Some(done) = workers.join_next().await {
        let (n, s, e, k) = done.expect("worker");
        next_ms.extend(n);
        submit_ms.extend(s);
        errors += e;
        errors_killed += k;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = watch.map(CpuWatch::stop);
    for server in servers.drain(..) {
        server.stop();
    }
    let acknowledged = submit_ms.len();
    let (stored, over_k, bad_claims) = db.holds(setting.overlap).await;
    db.drop_it().await;
    ScaleOut {
        load: Throughput {
            raters: setting.raters,
            ratings: acknowledged,
            seconds: elapsed,
            errors,
            submit: stats(submit_ms),
            next: stats(next_ms),
        },
        errors_killed,
        acknowledged,
        stored,
        over_k,
        bad_claims,
        cpu,
    }
}

/// The rater's task page (rendered Markdown and code) against a static file, both under
/// `connections` concurrent clients.
async fn bench_task_page(opts: &Options, connections: usize, seconds: f64) -> TaskPage {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    let admin = persona(&db, "admin", "admin");
    persona(&db, "reader", "rater");
    let server = Server::start(&db);
    upload(&admin, &server, "pages", tasks(100, 6000)).await;
    let browser = Client::builder()
        .cookie_store(true)
        .build()
        .expect("client");
    let login = browser
        .get(server.url("/login"))
        .send()
        .await
        .expect("login page")
        .text()
        .await
        .expect("body");
    let marker = "name=\"csrf_token\" value=\"";
    let start = login.find(marker).expect("token") + marker.len();
    let token = &login[start..start + login[start..].find('"').expect("quote")];
    browser
        .post(server.url("/login"))
        .form(&[
            ("csrf_token", token),
            ("username", "reader"),
            ("password", PASSWORD),
        ])
        .send()
        .await
        .expect("login");
    let queue = browser
        .get(server.url("/"))
        .send()
        .await
        .expect("queue")
        .text()
        .await
        .expect("body");
    let next = queue
        .split("action=\"")
        .find_map(|s| s.split('"').next().filter(|h| h.ends_with("/next")))
        .expect("next task button");
    let start = queue.find(marker).expect("token") + marker.len();
    let token = &queue[start..start + queue[start..].find('"').expect("quote")];
    let form = browser
        .post(server.url(next))
        .form(&[("csrf_token", token)])
        .send()
        .await
        .expect("form");
    let page_url = form.url().to_string();
    assert!(page_url.contains("/assignments/"), "{page_url}");
    let watch = CpuWatch::start(server.child.id());
    let page = load(&browser, &page_url, connections, seconds).await;
    let page_cpu = watch.stop();
    let watch = CpuWatch::start(server.child.id());
    let file = load(
        &browser,
        &server.url("/static/app.css"),
        connections,
        seconds,
    )
    .await;
    let file_cpu = watch.stop();
    server.stop();
    db.drop_it().await;
    TaskPage {
        page,
        file,
        cpu: [page_cpu, file_cpu],
    }
}

/// The task page and the static file under the same load: each's rate and latency, and
/// where the processor time went (the page's, then the file's).
struct TaskPage {
    page: (f64, Stats),
    file: (f64, Stats),
    cpu: [CpuUse; 2],
}

/// A section of the report: its title, what it measures, and its table, left out when
/// the run measured none of it.
fn section(md: &mut String, title: &str, intro: &str, header: &[&str], rows: &str) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(md, "## {title}\n\n{intro}\n");
    let _ = writeln!(md, "| {} |", header.join(" | "));
    let _ = writeln!(md, "|{}", "---|".repeat(header.len()));
    let _ = writeln!(md, "{rows}");
}

fn main() {
    let opts = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (import_tasks, sizes, iterations, large): (usize, &[usize], usize, usize) = if opts.quick {
        (500, &[1_000, 5_000], 50, 20_000)
    } else {
        (100_000, &[1_000, 100_000, 1_000_000], 300, 1_000_000)
    };
    let (load_raters, load_seconds) = if opts.quick { (16, 3.0) } else { (256, 20.0) };
    // SQLite always; PostgreSQL too when a server is named.
    let mut backends: Vec<(&str, Option<String>)> = vec![("SQLite", None)];
    if let Some(url) = &opts.database_url {
        backends.push(("PostgreSQL", Some(url.clone())));
    }

    let mut md = String::new();
    let command = if opts.quick { " -- --quick" } else { "" };
    let _ = writeln!(md, "# Benchmarks\n");
    let _ = writeln!(
        md,
        "Measured by `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench verdict{command}` \
         on {} (release build; the server runs as its own process, the load comes from the same machine). \
         Without `BENCH_DATABASE_URL` only SQLite is measured.\n",
        machine()
    );
    let mut import_rows = String::new();
    let mut next_rows = String::new();
    let mut large_rows = String::new();
    let mut export_rows = String::new();
    let mut load_rows = String::new();
    let mut page_rows = String::new();
    let mut startup_rows = String::new();
    let mut scale_rows = String::new();
    let mut floor_rows = String::new();
    let mut share_rows = String::new();
    let mut cpu_rows = String::new();
    for (backend, url) in &backends {
        let run = Options {
            database_url: url.clone(),
            ..opts.clone()
        };
        let mut figures = Figures::default();
        if run.runs("import") {
            eprintln!("import: {import_tasks} tasks of about 6 KB ({backend})");
            let import = runtime.block_on(bench_import(&run, import_tasks));
            let bare = import.bare_insert_seconds.map_or_else(
                || "– | –".to_owned(),
                |bare| format!("{bare:.2} s | {:.2}x", import.seconds / bare),
            );
            let _ = writeln!(
                import_rows,
                "| {backend} | {} | {:.1} MB | {:.2} s | {:.1} MB/s | {:.0} MiB | {bare} |",
                import.tasks,
                import.megabytes,
                import.seconds,
                import.megabytes / import.seconds,
                import.peak_rss_mib
            );
            cpu_rows.push_str(&import.cpu.row("import", backend));
            figures.import = import
                .bare_insert_seconds
                .map(|bare| (import.seconds, bare));
        }
        if run.runs("next") {
            for &size in sizes {
                eprintln!("next-task latency: batch of {size} tasks ({backend})");
                let s = runtime.block_on(bench_next(&run, size, iterations));
                let _ = writeln!(
                    next_rows,
                    "| {backend} | {size} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
                    s.p50, s.p90, s.p99, s.mean
                );
            }
        }
        if run.runs("startup") {
            eprintln!("start-up and idle memory ({backend})");
            let (first_ms, idle_mib) = runtime.block_on(bench_startup(&run));
            let _ = writeln!(
                startup_rows,
                "| {backend} | {first_ms:.0} ms | {idle_mib:.1} MiB |"
            );
        }
        if run.runs("floor") {
            eprintln!("the floor: durable commits and a static file ({backend})");
            let f = runtime.block_on(bench_floor(&run, load_raters, load_seconds / 4.0));
            let parallel = f
                .commits
                .parallel
                .map_or_else(|| "–".to_owned(), |p| format!("{p:.0}/s"));
            let _ = writeln!(
                floor_rows,
                "| {backend} | {:.0}/s | {parallel} | {:.0} rows/s | {:.0} req/s | {:.0} req/s |",
                f.commits.single, f.commits.grouped_rows, f.static_raters, f.static_page
            );
            figures.floor = Some(f);
        }
        if run.runs("raters") {
            eprintln!("{load_raters} concurrent raters for {load_seconds} s ({backend})");
            let (t, cpu) =
                runtime.block_on(bench_concurrent_raters(&run, load_raters, load_seconds));
            cpu_rows.push_str(&cpu.row(&format!("{load_raters} raters"), backend));
            let _ = writeln!(
                load_rows,
                "| {backend} | {} | {} | {:.0} ratings/s | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
                t.raters,
                t.ratings,
                t.ratings as f64 / t.seconds,
                t.next.p50,
                t.next.p99,
                t.submit.p50,
                t.submit.p99,
                t.errors
            );
            figures.raters = Some(t.ratings as f64 / t.seconds);
        }
        if run.runs("page") {
            eprintln!("task page under 64 connections ({backend})");
            let TaskPage {
                page: (page_rate, page),
                file: (file_rate, file),
                cpu: [page_cpu, file_cpu],
            } = runtime.block_on(bench_task_page(&run, 64, load_seconds / 2.0));
            cpu_rows.push_str(&page_cpu.row("task page, 64 connections", backend));
            cpu_rows.push_str(&file_cpu.row("static file, 64 connections", backend));
            let _ = writeln!(
                page_rows,
                "| {backend} | {page_rate:.0} req/s | {:.1} ms | {:.1} ms | {file_rate:.0} req/s | {:.1} ms | {:.0}% |",
                page.p50,
                page.p99,
                file.p99,
                100.0 * page_rate / file_rate
            );
            figures.page = Some((page_rate, file_rate));
        }
        if run.runs("scaleout") && url.is_some() {
            for (instances, kill_after) in [
                (1, None),
                (2, None),
                (3, None),
                (3, Some(load_seconds / 2.0)),
            ] {
                eprintln!("{load_raters} raters over {instances} instances ({backend})");
                let setting = Load {
                    raters: load_raters,
                    seconds: load_seconds,
                    instances,
                    overlap: 2,
                    kill_after,
                };
                let run = runtime.block_on(rater_load(&run, &setting));
                let t = &run.load;
                let (label, errors) = match kill_after {
                    None => (instances.to_string(), t.errors.to_string()),
                    Some(after) => (
                        format!("{instances}, one killed after {after:.0} s"),
                        format!("{} (and {} on the killed one)", t.errors, run.errors_killed),
                    ),
                };
                let _ = writeln!(
                    scale_rows,
                    "| {label} | {} | {:.0} ratings/s | {:.1} ms | {:.1} ms | {errors} | {} / {} | {} | {} |",
                    t.raters,
                    t.ratings as f64 / t.seconds,
                    t.next.p99,
                    t.submit.p99,
                    run.acknowledged,
                    run.stored,
                    run.over_k,
                    run.bad_claims
                );
            }
        }
        if run.runs("large") {
            eprintln!("metrics and exports: {large} ratings ({backend})");
            let big = runtime.block_on(bench_large_batch(&run, large));
            let _ = writeln!(
                large_rows,
                "| {backend} | {} | {:.2} s | {:.1} ms | {:.0} MiB |",
                big.ratings,
                big.metrics_seconds,
                big.one_more_seconds * 1000.0,
                big.metrics_peak_mib
            );
            for (label, rows, seconds, peak) in &big.exports {
                let _ = writeln!(
                    export_rows,
                    "| {backend} | {label} | {rows} | {seconds:.2} s | {:.0} rows/s | {peak:.0} MiB |",
                    *rows as f64 / seconds
                );
            }
            for (label, cpu) in &big.cpu {
                cpu_rows.push_str(&cpu.row(label, backend));
            }
            figures.large = Some(big);
        }
        share_rows.push_str(&figures.shares(backend, load_raters));
    }
    section(
        &mut md,
        "Batch import",
        "One HTTP upload of JSON Lines, end to end: every record checked while the tasks that passed are stored in one \
         transaction, which is kept only if every record passed. \
         On SQLite the same task rows are then inserted again into an empty database of the same schema, in one \
         transaction with one prepared statement (rusqlite, the app's WAL, full sync and foreign keys): the least \
         that storing them can cost, against which the whole upload is compared.",
        &[
            "database",
            "tasks",
            "file",
            "time",
            "throughput",
            "server peak memory",
            "the rows in one transaction",
            "upload / that",
        ],
        &import_rows,
    );
    section(
        &mut md,
        "Next-task latency by batch size",
        &format!(
            "{iterations} calls of `POST /api/v1/batches/{{id}}/next` by one rater, each followed by a submit so that \
             every call picks a new task (after 20 warm-up calls), in a batch whose first half is already \
             full (marked so by SQL)."
        ),
        &["database", "tasks in batch", "p50", "p90", "p99", "mean"],
        &next_rows,
    );
    section(
        &mut md,
        "Start-up and idle memory",
        "From starting `verdict serve` (database already migrated) to the first 200 from `/healthz`, and resident \
         memory after a second idle.",
        &["database", "start-up to first answer", "idle memory"],
        &startup_rows,
    );
    section(
        &mut md,
        "The floor",
        &format!(
            "What this machine does at best, measured in the same run just before the raters: durable commits of \
             rows about the size of a rating's answers (SQLite: a fresh file on the same disk with the app's \
             settings, WAL and `synchronous = FULL`, through rusqlite; PostgreSQL: a fresh database through sqlx), \
             one row per transaction, from as many connections as the app's pool has ({pg}, PostgreSQL), and in \
             transactions of {group} rows, the most the app's group commit puts in one; then `GET /static/app.css` \
             from `verdict serve` under {load_raters} and 64 connections. Each for {secs} s.",
            pg = floor::PG_CONNECTIONS,
            group = floor::GROUP,
            secs = load_seconds / 4.0,
        ),
        &[
            "database",
            "one-row commits",
            &format!("from {} connections", floor::PG_CONNECTIONS),
            &format!("rows in groups of {}", floor::GROUP),
            &format!("static file, {load_raters} connections"),
            "static file, 64 connections",
        ],
        &floor_rows,
    );
    section(
        &mut md,
        "Concurrent raters",
        &format!(
            "{load_raters} simulated raters, each with its own token and connection, taking the next task and submitting it \
             in a loop for {load_seconds} s (100,000 tasks, overlap 1, durable commits). The load generator runs on the same 2 cores."
        ),
        &[
            "database",
            "raters",
            "ratings",
            "throughput",
            "next p50",
            "next p99",
            "submit p50",
            "submit p99",
            "errors",
        ],
        &load_rows,
    );
    section(
        &mut md,
        "Several instances on one PostgreSQL",
        &format!(
            "The same {load_raters} raters and {load_seconds} s, spread evenly over 1, 2 and 3 `verdict serve` \
             processes on one PostgreSQL database (100,000 tasks, overlap 2), then over 3 of which one is killed \
             with SIGKILL halfway. Afterwards the database is checked: every submit answered 200 must be stored \
             (at most one more per rater of the killed instance, sent but unanswered), no task may have more than \
             2 ratings, and every task's claimed count must equal its open and finished assignments."
        ),
        &[
            "instances",
            "raters",
            "throughput",
            "next p99",
            "submit p99",
            "errors",
            "acknowledged / stored",
            "tasks over k",
            "claims off",
        ],
        &scale_rows,
    );
    section(
        &mut md,
        "Rater task page",
        "`GET /assignments/{id}` (a task of about 6 KB: prompt and two answers rendered from Markdown with highlighted \
         code) under 64 concurrent connections, against `GET /static/app.css` under the same load.",
        &[
            "database",
            "task page",
            "p50",
            "p99",
            "static file",
            "static p99",
            "page / static",
        ],
        &page_rows,
    );
    section(
        &mut md,
        "Metrics of a large batch",
        &format!(
            "`GET /api/v1/batches/{{id}}/metrics` on a batch of {large} submitted ratings (overlap 3, 30 raters), on a \
             freshly started server (cold: every rating read and folded), then again on the same server after one more \
             rating is taken and submitted through the API (only the changed ratings are read and folded in). The \
             ratings are seeded by bulk SQL (tasks and accounts through the product). Peak memory is the server's after \
             both requests."
        ),
        &[
            "database",
            "ratings",
            "cold",
            "after one more rating",
            "server peak memory",
        ],
        &large_rows,
    );
    section(
        &mut md,
        "Exports",
        "Streamed downloads of the same batch, each on a freshly started server; peak memory staying \
         level from a small export to the whole batch shows the export does not grow with its size.",
        &[
            "database",
            "export",
            "rows",
            "time",
            "throughput",
            "server peak memory",
        ],
        &export_rows,
    );
    section(
        &mut md,
        "Each figure as a share of its floor",
        "The floor of the raters is the lower of two: the durable rows per second in groups (one row per \
         rating, where verdict writes several) and half the static file's requests per second under the same \
         connections (a rating takes two requests). Metrics and exports are set against a bare read of the \
         batch's ratings made just before them (every column of every row, nothing decoded: rusqlite on \
         SQLite, a streamed sqlx query on PostgreSQL); the import against its rows inserted in one \
         transaction. A share is verdict's rate over the floor's (for times, the floor's time over \
         verdict's): 100% would be the floor itself.",
        &[
            "database",
            "figure",
            "verdict",
            "floor",
            "share of the floor",
        ],
        &share_rows,
    );
    section(
        &mut md,
        "Where the processor time went",
        "For each scenario above, read from `/proc` at the start and the end of its timed window: how many of the \
         machine's cores were busy on average (every process), and how many of them went to verdict's server (all \
         its threads; those that ended within the window too), to its busiest threads by name (`verdict-async`: \
         the async runtime's workers, one per core; `verdict-block`: its blocking pool, where the SQLite scans of \
         metrics and exports, the fold of the metrics and the import's checking run; `sqlx-sqlite-wor`: sqlx's \
         thread of a SQLite connection), to PostgreSQL's processes and to this benchmark's own process, which generates the \
         load. A machine busy on every core is bound by the processor, and the columns say who holds it; a thread \
         at one core is bound by that thread alone.",
        &common::cpu::HEADER,
        &cpu_rows,
    );
    if let Some(output) = &opts.output {
        write_section(output, "verdict", &md);
    }
    println!("{md}");
}
