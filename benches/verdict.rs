//! The benchmark harness: starts the real `verdict` binary on a fresh database, seeds it
//! through the product's own paths (the CLI and the HTTP API), measures, and writes
//! `BENCHMARKS.md`. Run with `cargo bench --bench verdict` (add `-- --quick` for a smoke
//! run, `-- --database-url postgres://...` for PostgreSQL).
//!
//! These are measurements, never assertions: nothing here fails because it is slow.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_verdict");
const PASSWORD: &str = "benchmark password";

struct Options {
    quick: bool,
    database_url: Option<String>,
    output: String,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    Options {
        quick: args.iter().any(|a| a == "--quick"),
        database_url: value("--database-url").or_else(|| std::env::var("BENCH_DATABASE_URL").ok()),
        output: value("--output").unwrap_or_else(|| "BENCHMARKS.md".into()),
    }
}

/// A fresh database: a SQLite file in a temporary folder, or a new PostgreSQL database.
struct Database {
    url: String,
    _dir: Option<tempfile::TempDir>,
    postgres: Option<(String, String)>,
}

impl Database {
    async fn fresh(server: Option<&str>) -> Self {
        match server {
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}", dir.path().join("bench.db").display());
                Self {
                    url,
                    _dir: Some(dir),
                    postgres: None,
                }
            }
            Some(server) => {
                let name = format!("verdict_bench_{}", uuid::Uuid::new_v4().simple());
                let admin = sqlx::PgPool::connect(server)
                    .await
                    .expect("connect to PostgreSQL");
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&admin)
                    .await
                    .expect("create");
                admin.close().await;
                let mut url = reqwest::Url::parse(server).expect("URL");
                url.set_path(&name);
                Self {
                    url: url.to_string(),
                    _dir: None,
                    postgres: Some((server.to_owned(), name)),
                }
            }
        }
    }

    async fn drop_it(self) {
        if let Some((server, name)) = self.postgres {
            let admin = sqlx::PgPool::connect(&server).await.expect("connect");
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&admin)
                .await;
            admin.close().await;
        }
    }
}

/// `verdict serve` on a random port.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(db: &Database) -> Self {
        let mut child = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0", "--max-upload-mb", "2048"])
            .env("DATABASE_URL", &db.url)
            .env("RUST_LOG", "warn,verdict::cli=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start verdict");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("verdict printed its address")
                .expect("line");
            if let Some(addr) = line.split("listening on ").nth(1) {
                break addr.split_whitespace().next().expect("address").to_owned();
            }
        };
        // Keep draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
        Self { child, base }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The server's peak resident memory so far, in MiB.
    fn peak_rss_mib(&self) -> f64 {
        self.status_mib("VmHWM:")
    }

    /// The server's resident memory now, in MiB.
    fn rss_mib(&self) -> f64 {
        self.status_mib("VmRSS:")
    }

    fn status_mib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Creates an account with the CLI and returns a client holding a token for it.
fn persona(db: &Database, username: &str, role: &str) -> Client {
    let mut add = Command::new(BIN)
        .args([
            "user",
            "add",
            "--username",
            username,
            "--role",
            role,
            "--password-stdin",
        ])
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("user add");
    add.stdin
        .take()
        .expect("stdin")
        .write_all(format!("{PASSWORD}\n").as_bytes())
        .expect("password");
    assert!(add.wait().expect("user add").success());
    let token = Command::new(BIN)
        .args(["token", "create", "--username", username])
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("token create");
    let token = String::from_utf8(token.stdout)
        .expect("token")
        .trim()
        .to_owned();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header"),
    );
    Client::builder()
        .default_headers(headers)
        .build()
        .expect("client")
}

/// `n` tasks as JSON Lines, each with responses padded to about `bytes` in all.
fn tasks(n: usize, bytes: usize) -> String {
    let filler =
        "Here is the function, with a short note on why it works. ".repeat(bytes / 120 + 1);
    let half = &filler[..(bytes / 2).min(filler.len())];
    let mut out = String::with_capacity(n * (bytes + 200));
    for i in 0..n {
        let task = json!({
            "external_id": format!("task-{i}"),
            "prompt": format!("Write a function that reverses the words of sentence number {i}."),
            "response_a": format!("```python\ndef reverse_words(s):\n    return ' '.join(reversed(s.split()))\n```\n{half}"),
            "response_b": format!("Split, reverse and join: `' '.join(s.split()[::-1])`. {half}"),
            "model_a": "alpha", "model_b": "beta",
            "metadata": {"language": "python", "n": i}
        });
        out.push_str(&task.to_string());
        out.push('\n');
    }
    out
}

async fn upload(admin: &Client, server: &Server, name: &str, body: String) -> (Value, Duration) {
    let started = Instant::now();
    let response = admin
        .post(server.url(&format!("/api/v1/batches?name={name}&randomize=true")))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .await
        .expect("upload");
    let elapsed = started.elapsed();
    assert_eq!(response.status(), StatusCode::CREATED, "upload refused");
    (response.json().await.expect("JSON"), elapsed)
}

fn answers() -> Value {
    json!({
        "a": {"executability": "yes_fully", "instruction_following": "no_issues", "correctness": "no_issues"},
        "b": {"executability": "no_code", "instruction_following": "no_issues", "correctness": "no_issues"},
        "sxs": 3, "sxs_explanation": "A gives a runnable function; B only a one-liner.", "time_spent_s": 60
    })
}

struct Stats {
    p50: f64,
    p90: f64,
    p99: f64,
    mean: f64,
}

fn stats(mut samples: Vec<f64>) -> Stats {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        mean: samples.iter().sum::<f64>() / samples.len() as f64,
    }
}

struct ImportResult {
    tasks: usize,
    megabytes: f64,
    seconds: f64,
    peak_rss_mib: f64,
}

async fn bench_import(opts: &Options, tasks_n: usize) -> ImportResult {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    let admin = persona(&db, "admin", "admin");
    let server = Server::start(&db);
    let body = tasks(tasks_n, 6000);
    let megabytes = body.len() as f64 / 1e6;
    let (_, elapsed) = upload(&admin, &server, "import", body).await;
    let result = ImportResult {
        tasks: tasks_n,
        megabytes,
        seconds: elapsed.as_secs_f64(),
        peak_rss_mib: server.peak_rss_mib(),
    };
    server.stop();
    db.drop_it().await;
    result
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
        let id = next["assignment_id"].as_str().expect("assignment");
        let done = rater
            .post(server.url(&format!("/api/v1/assignments/{id}/submit")))
            .json(&answers())
            .send()
            .await
            .expect("submit");
        assert_eq!(done.status(), StatusCode::OK);
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
    let (batch, _) = upload(&admin, &server, "metrics", tasks(tasks_n, 200)).await;
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
            sqlx::query("UPDATE tasks SET claimed = 3, is_full = TRUE WHERE batch_id = $1").bind(batch_id).execute(&mut *tx).await.expect("claimed");
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
    metrics_peak_mib: f64,
    exports: Vec<(String, usize, f64, f64)>,
}

/// Metrics and exports of a batch of `ratings` ratings, each on a freshly started server
/// so that its peak memory belongs to that one request.
async fn bench_large_batch(opts: &Options, ratings: usize) -> LargeBatchResult {
    let (db, batch) = seed_ratings(opts, ratings).await;
    let lead_client = persona(&db, "lead", "lead");
    let server = Server::start(&db);
    let started = Instant::now();
    let metrics: Value = lead_client
        .get(server.url(&format!("/api/v1/batches/{batch}/metrics")))
        .send()
        .await
        .expect("metrics")
        .json()
        .await
        .expect("JSON");
    let metrics_seconds = started.elapsed().as_secs_f64();
    assert_eq!(
        metrics["counts"]["included"].as_u64(),
        Some(ratings as u64),
        "every seeded rating counts"
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
        server.stop();
    }
    db.drop_it().await;
    LargeBatchResult {
        ratings,
        metrics_seconds,
        metrics_peak_mib,
        exports,
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

/// `raters` simulated raters, each taking the next task and submitting it, as fast as
/// they can for `seconds`.
async fn bench_concurrent_raters(opts: &Options, raters: usize, seconds: f64) -> Throughput {
    let db = Database::fresh(opts.database_url.as_deref()).await;
    let admin = persona(&db, "admin", "admin");
    let server = Server::start(&db);
    let (batch, _) = upload(&admin, &server, "load", tasks(100_000, 200)).await;
    let batch = batch["id"].as_str().expect("id").to_owned();
    let mut clients = Vec::with_capacity(raters);
    for i in 0..raters {
        let name = format!("load{i}");
        let made = admin
            .post(server.url("/api/v1/users"))
            .json(&json!({"username": name, "role": "rater", "password": PASSWORD}))
            .send()
            .await
            .expect("user");
        assert_eq!(made.status(), StatusCode::CREATED);
        let token: Value = admin
            .post(server.url("/api/v1/tokens"))
            .json(&json!({"name": "load", "username": name}))
            .send()
            .await
            .expect("token")
            .json()
            .await
            .expect("JSON");
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "authorization",
            format!("Bearer {}", token["token"].as_str().expect("token"))
                .parse()
                .expect("header"),
        );
        clients.push(
            Client::builder()
                .default_headers(headers)
                .pool_max_idle_per_host(1)
                .build()
                .expect("client"),
        );
    }
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for client in clients {
        let next_url = server.url(&format!("/api/v1/batches/{batch}/next"));
        let base = server.base.clone();
        workers.spawn(async move {
            let (mut next_ms, mut submit_ms, mut errors) = (Vec::new(), Vec::new(), 0usize);
            while Instant::now() < deadline {
                let t = Instant::now();
                let Ok(response) = client.post(&next_url).send().await else {
                    errors += 1;
                    continue;
                };
                if response.status() != StatusCode::OK {
                    errors += 1;
                    continue;
                }
                let Ok(next) = response.json::<Value>().await else {
                    errors += 1;
                    continue;
                };
                next_ms.push(t.elapsed().as_secs_f64() * 1000.0);
                let id = next["assignment_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
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
                    _ => errors += 1,
                }
            }
            (next_ms, submit_ms, errors)
        });
    }
    let (mut next_ms, mut submit_ms, mut errors) = (Vec::new(), Vec::new(), 0);
    while let Some(done) = workers.join_next().await {
        let (n, s, e) = done.expect("worker");
        next_ms.extend(n);
        submit_ms.extend(s);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    server.stop();
    db.drop_it().await;
    let ratings = submit_ms.len();
    Throughput {
        raters,
        ratings,
        seconds: elapsed,
        errors,
        submit: stats(submit_ms),
        next: stats(next_ms),
    }
}

/// Requests per second and latency of `url` under `connections` concurrent clients.
async fn load(client: &Client, url: &str, connections: usize, seconds: f64) -> (f64, Stats) {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (client, url) = (client.clone(), url.to_owned());
        workers.spawn(async move {
            let mut ms = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                let response = client.get(&url).send().await.expect("request");
                assert!(
                    response.status().is_success(),
                    "{url}: {}",
                    response.status()
                );
                let _ = response.bytes().await.expect("body");
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            ms
        });
    }
    let mut all = Vec::new();
    while let Some(done) = workers.join_next().await {
        all.extend(done.expect("worker"));
    }
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    (rate, stats(all))
}

/// The rater's task page (rendered Markdown and code) against a static file, both under
/// `connections` concurrent clients.
async fn bench_task_page(
    opts: &Options,
    connections: usize,
    seconds: f64,
) -> ((f64, Stats), (f64, Stats)) {
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
        .split("href=\"")
        .find_map(|s| s.split('"').next().filter(|h| h.ends_with("/next")))
        .expect("next link");
    let form = browser.get(server.url(next)).send().await.expect("form");
    let page_url = form.url().to_string();
    assert!(page_url.contains("/assignments/"), "{page_url}");
    let page = load(&browser, &page_url, connections, seconds).await;
    let file = load(
        &browser,
        &server.url("/static/app.css"),
        connections,
        seconds,
    )
    .await;
    server.stop();
    db.drop_it().await;
    (page, file)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!("{cpu}, {cores} cores, {memory:.0} GiB")
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
        (10_000, &[1_000, 10_000, 100_000], 300, 1_000_000)
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
    for (backend, url) in &backends {
        let run = Options {
            database_url: url.clone(),
            quick: opts.quick,
            output: String::new(),
        };
        eprintln!("import: {import_tasks} tasks of about 6 KB ({backend})");
        let import = runtime.block_on(bench_import(&run, import_tasks));
        let _ = writeln!(
            import_rows,
            "| {backend} | {} | {:.1} MB | {:.2} s | {:.1} MB/s | {:.0} MiB |",
            import.tasks,
            import.megabytes,
            import.seconds,
            import.megabytes / import.seconds,
            import.peak_rss_mib
        );
        for &size in sizes {
            eprintln!("next-task latency: batch of {size} tasks ({backend})");
            let s = runtime.block_on(bench_next(&run, size, iterations));
            let _ = writeln!(
                next_rows,
                "| {backend} | {size} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
                s.p50, s.p90, s.p99, s.mean
            );
        }
        eprintln!("start-up and idle memory ({backend})");
        let (first_ms, idle_mib) = runtime.block_on(bench_startup(&run));
        let _ = writeln!(
            startup_rows,
            "| {backend} | {first_ms:.0} ms | {idle_mib:.1} MiB |"
        );
        eprintln!("{load_raters} concurrent raters for {load_seconds} s ({backend})");
        let t = runtime.block_on(bench_concurrent_raters(&run, load_raters, load_seconds));
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
        eprintln!("task page under 64 connections ({backend})");
        let ((page_rate, page), (file_rate, file)) =
            runtime.block_on(bench_task_page(&run, 64, load_seconds / 2.0));
        let _ = writeln!(
            page_rows,
            "| {backend} | {page_rate:.0} req/s | {:.1} ms | {:.1} ms | {file_rate:.0} req/s | {:.1} ms | {:.0}% |",
            page.p50,
            page.p99,
            file.p99,
            100.0 * page_rate / file_rate
        );
        eprintln!("metrics and exports: {large} ratings ({backend})");
        let big = runtime.block_on(bench_large_batch(&run, large));
        let _ = writeln!(
            large_rows,
            "| {backend} | {} | {:.2} s | {:.0} MiB |",
            big.ratings, big.metrics_seconds, big.metrics_peak_mib
        );
        for (label, rows, seconds, peak) in big.exports {
            let _ = writeln!(
                export_rows,
                "| {backend} | {label} | {rows} | {seconds:.2} s | {:.0} rows/s | {peak:.0} MiB |",
                rows as f64 / seconds
            );
        }
    }
    let _ = writeln!(md, "## Batch import\n");
    let _ = writeln!(
        md,
        "One HTTP upload of JSON Lines, end to end: every record checked, then all stored in one transaction.\n"
    );
    let _ = writeln!(
        md,
        "| database | tasks | file | time | throughput | server peak memory |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let _ = writeln!(md, "{import_rows}");
    let _ = writeln!(md, "## Next-task latency by batch size\n");
    let _ = writeln!(
        md,
        "{iterations} calls of `POST /api/v1/batches/{{id}}/next` by one rater, each followed by a submit so that \
         every call picks a new task (after 20 warm-up calls).\n"
    );
    let _ = writeln!(md, "| database | tasks in batch | p50 | p90 | p99 | mean |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let _ = writeln!(md, "{next_rows}");
    let _ = writeln!(md, "## Start-up and idle memory\n");
    let _ = writeln!(
        md,
        "From starting `verdict serve` (database already migrated) to the first 200 from `/healthz`, and resident memory after a second idle.\n"
    );
    let _ = writeln!(md, "| database | start-up to first answer | idle memory |");
    let _ = writeln!(md, "|---|---|---|");
    let _ = writeln!(md, "{startup_rows}");
    let _ = writeln!(md, "## Concurrent raters\n");
    let _ = writeln!(
        md,
        "{load_raters} simulated raters, each with its own token and connection, taking the next task and submitting it \
         in a loop for {load_seconds} s (100,000 tasks, overlap 1, durable commits). The load generator runs on the same 2 cores.\n"
    );
    let _ = writeln!(
        md,
        "| database | raters | ratings | throughput | next p50 | next p99 | submit p50 | submit p99 | errors |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    let _ = writeln!(md, "{load_rows}");
    let _ = writeln!(md, "## Rater task page\n");
    let _ = writeln!(
        md,
        "`GET /assignments/{{id}}` (a task of about 6 KB: prompt and two answers rendered from Markdown with highlighted \
         code) under 64 concurrent connections, against `GET /static/app.css` under the same load.\n"
    );
    let _ = writeln!(
        md,
        "| database | task page | p50 | p99 | static file | static p99 | page / static |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let _ = writeln!(md, "{page_rows}");
    let _ = writeln!(md, "## Metrics of a large batch\n");
    let _ = writeln!(
        md,
        "`GET /api/v1/batches/{{id}}/metrics` on a batch of {large} submitted ratings (overlap 3, 30 raters), on a \
         freshly started server. The ratings are seeded by bulk SQL (tasks and accounts through the product).\n"
    );
    let _ = writeln!(md, "| database | ratings | time | server peak memory |");
    let _ = writeln!(md, "|---|---|---|---|");
    let _ = writeln!(md, "{large_rows}");
    let _ = writeln!(md, "## Exports\n");
    let _ = writeln!(
        md,
        "Streamed downloads of the same batch, each on a freshly started server; peak memory staying \
         level from a small export to the whole batch shows the export does not grow with its size.\n"
    );
    let _ = writeln!(
        md,
        "| database | export | rows | time | throughput | server peak memory |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let _ = write!(md, "{export_rows}");
    std::fs::write(&opts.output, &md).expect("write the report");
    println!("{md}");
}
