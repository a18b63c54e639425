//! What both benchmarks share: a fresh database, the `verdict` server as its own
//! process, accounts with tokens, generated tasks, latency statistics and the report.

#![allow(dead_code)] // each benchmark uses its own part of this module

pub mod cpu;

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_verdict");
pub const PASSWORD: &str = "benchmark password";

/// A fresh database: a SQLite file in a temporary folder, or a new PostgreSQL database.
pub struct Database {
    pub url: String,
    pub dir: Option<tempfile::TempDir>,
    pub postgres: Option<(String, String)>,
}

impl Database {
    pub async fn fresh(server: Option<&str>) -> Self {
        match server {
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}", dir.path().join("bench.db").display());
                Self {
                    url,
                    dir: Some(dir),
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
                    dir: None,
                    postgres: Some((server.to_owned(), name)),
                }
            }
        }
    }

    /// Marks the first `n` tasks of `batch` as full, as if rated (by SQL: seeding that
    /// many ratings through the API would take longer than the measurement).
    pub async fn mark_full(&self, batch: uuid::Uuid, n: usize) {
        let sql = "UPDATE tasks SET claimed = 1, is_full = TRUE WHERE batch_id = $1 AND seq < $2";
        let n = n as i64;
        if self.postgres.is_some() {
            let pool = sqlx::PgPool::connect(&self.url).await.expect("connect");
            let done = sqlx::query(sql).bind(batch).bind(n).execute(&pool).await;
            done.expect("mark full");
            // What autovacuum does soon after in a real programme, where tasks fill
            // gradually: without it the pick would step over the bulk update's dead rows.
            let vacuum = sqlx::query("VACUUM ANALYZE tasks").execute(&pool).await;
            vacuum.expect("vacuum");
            pool.close().await;
        } else {
            let pool = sqlx::SqlitePool::connect(&self.url).await.expect("connect");
            let done = sqlx::query(sql).bind(batch).bind(n).execute(&pool).await;
            done.expect("mark full");
            pool.close().await;
        }
    }

    /// What the database holds after a load: submitted ratings, tasks with more ratings
    /// than `overlap`, and tasks whose claimed count differs from their open and finished
    /// assignments.
    pub async fn holds(&self, overlap: usize) -> (i64, i64, i64) {
        let stored = "SELECT COUNT(*) FROM ratings WHERE status = 'submitted'";
        let over_k = format!(
            "SELECT COUNT(*) FROM (SELECT task_id FROM ratings WHERE status <> 'draft'
               GROUP BY task_id HAVING COUNT(*) > {overlap}) over"
        );
        let bad_claims = "SELECT COUNT(*) FROM tasks t WHERE t.claimed <>
             (SELECT COUNT(*) FROM assignments a WHERE a.task_id = t.id AND a.state IN ('open', 'done'))";
        macro_rules! count {
            ($pool:expr, $sql:expr) => {
                sqlx::query_scalar::<_, i64>($sql)
                    .fetch_one(&$pool)
                    .await
                    .expect("count")
            };
        }
        if self.postgres.is_some() {
            let pool = sqlx::PgPool::connect(&self.url).await.expect("connect");
            let held = (
                count!(pool, stored),
                count!(pool, &over_k),
                count!(pool, bad_claims),
            );
            pool.close().await;
            held
        } else {
            let pool = sqlx::SqlitePool::connect(&self.url).await.expect("connect");
            let held = (
                count!(pool, stored),
                count!(pool, &over_k),
                count!(pool, bad_claims),
            );
            pool.close().await;
            held
        }
    }

    /// Leaves the database in place (for profiling) and returns its URL.
    pub fn keep(self) -> String {
        if let Some(dir) = self.dir {
            let _ = dir.keep();
        }
        self.url
    }

    pub async fn drop_it(self) {
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
pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Server {
    pub fn start(db: &Database) -> Self {
        let mut child = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0", "--max-upload-mb", "2048"])
            .env("DATABASE_URL", &db.url)
            .env("RUST_LOG", "warn,verdict::cli=info")
            .env("VERDICT_NO_PYODIDE_INSTALL", "1")
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

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The server's peak resident memory so far, in MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        self.status_mib("VmHWM:")
    }

    /// The server's resident memory now, in MiB.
    pub fn rss_mib(&self) -> f64 {
        self.status_mib("VmRSS:")
    }

    pub fn status_mib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }

    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Creates an account with the CLI and returns a client holding a token for it.
pub fn persona(db: &Database, username: &str, role: &str) -> Client {
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
    bearer(&token)
}

/// A client that sends `token` as its bearer token.
pub fn bearer(token: &str) -> Client {
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

/// The value after `flag` on the command line, if given.
pub fn arg_value(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// Whether `flag` is on the command line.
pub fn has_flag(flag: &str) -> bool {
    std::env::args().any(|a| a == flag)
}

/// Creates a rater through the API and returns a token of theirs.
pub async fn rater_token(admin: &Client, server: &Server, username: &str) -> String {
    let made = admin
        .post(server.url("/api/v1/users"))
        .json(&json!({"username": username, "role": "rater", "password": PASSWORD}))
        .send()
        .await
        .expect("user");
    assert_eq!(made.status(), StatusCode::CREATED, "create {username}");
    let token: Value = admin
        .post(server.url("/api/v1/tokens"))
        .json(&json!({"name": "load", "username": username}))
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("JSON");
    token["token"].as_str().expect("token").to_owned()
}

/// `n` tasks as JSON Lines, each with responses padded to about `bytes` in all.
pub fn tasks(n: usize, bytes: usize) -> String {
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

pub async fn upload(
    admin: &Client,
    server: &Server,
    name: &str,
    body: String,
) -> (Value, Duration) {
    upload_with(admin, server, &format!("name={name}&randomize=true"), body).await
}

/// Uploads a batch with the settings `query` gives (`name=...&overlap=...`).
pub async fn upload_with(
    admin: &Client,
    server: &Server,
    query: &str,
    body: String,
) -> (Value, Duration) {
    let started = Instant::now();
    let response = admin
        .post(server.url(&format!("/api/v1/batches?{query}")))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .await
        .expect("upload");
    let elapsed = started.elapsed();
    assert_eq!(response.status(), StatusCode::CREATED, "upload refused");
    (response.json().await.expect("JSON"), elapsed)
}

pub fn answers() -> Value {
    json!({
        "a": {"executability": "yes_fully", "instruction_following": "no_issues", "correctness": "no_issues"},
        "b": {"executability": "no_code", "instruction_following": "no_issues", "correctness": "no_issues"},
        "sxs": 3, "sxs_explanation": "A gives a runnable function; B only a one-liner.", "time_spent_s": 60
    })
}

pub struct Stats {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
}

/// Percentiles and mean of `samples`; NaN for none.
pub fn stats(mut samples: Vec<f64>) -> Stats {
    if samples.is_empty() {
        return Stats {
            p50: f64::NAN,
            p90: f64::NAN,
            p99: f64::NAN,
            mean: f64::NAN,
        };
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        mean: samples.iter().sum::<f64>() / samples.len() as f64,
    }
}

/// Requests per second and latency of `url` under `connections` concurrent clients.
pub async fn load(client: &Client, url: &str, connections: usize, seconds: f64) -> (f64, Stats) {
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

pub fn machine() -> String {
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

/// Replaces the part of the report at `path` between this section's markers, or appends
/// it, so that each benchmark rewrites only its own sections.
pub fn write_section(path: &str, name: &str, content: &str) {
    let begin = format!("<!-- begin {name} -->");
    let end = format!("<!-- end {name} -->");
    let section = format!("{begin}\n{}\n{end}", content.trim_end());
    let report = std::fs::read_to_string(path).unwrap_or_default();
    let report = match (report.find(&begin), report.find(&end)) {
        (Some(b), Some(e)) if b < e => {
            format!("{}{section}{}", &report[..b], &report[e + end.len()..])
        }
        _ if report.trim().is_empty() => format!("{section}\n"),
        _ => format!("{}\n\n{section}\n", report.trim_end()),
    };
    std::fs::write(path, report).expect("write the report");
}
