//! Nothing acknowledged is lost: raters take tasks and submit them while the server is
//! killed with SIGKILL at random moments and started again, cycle after cycle. Every
//! rating the server answered 200 for is there afterwards, once, and the database is
//! consistent.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::store::Backend;

use crate::cli::{BIN, verdict};
use crate::helpers::{TestDb, bearer, complete_answers, db_test, tasks_jsonl};

const CYCLES: usize = 12;
const RATERS: usize = 48;
/// Tasks in the batch at first, and how many each top-up adds.
const DURABLE_TASKS: usize = 5000;
/// How long a test waits for a server that should answer, before calling it hung: far
/// beyond what the slowest machine takes (a busy one of two cores starts the server and
/// answers its first ratings in seconds), so that only a hang reaches it.
pub(crate) const HANG: Duration = Duration::from_secs(300);

/// `verdict serve` on a free port; returns the process and its base URL.
fn serve(db: &TestDb) -> (Child, String) {
    serve_with(db, &[])
}

/// `verdict serve` on a free port with more environment; returns the process and its
/// base URL.
pub(crate) fn serve_with(db: &TestDb, env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "warn,verdict::cli=info")
        // A test never installs Pyodide into the checkout it runs in.
        .env("VERDICT_NO_PYODIDE_INSTALL", "1")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start verdict");
    let (tx, rx) = mpsc::channel();
    let lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let Some(addr) = line.split("listening on ").nth(1) {
                let _ = tx.send(addr.split_whitespace().next().unwrap_or("").to_owned());
            }
        }
    });
    let base = rx
        .recv_timeout(HANG)
        .expect("the server reports its address");
    (child, base)
}

/// Uploads JSON Lines to the instance at `base` as a new batch (`query` names it and
/// sets its settings); returns the batch's id.
pub(crate) async fn upload_batch(
    admin: &reqwest::Client,
    base: &str,
    query: &str,
    jsonl: String,
) -> String {
    let upload = admin
        .post(format!("{base}/api/v1/batches?{query}"))
        .header("content-type", "application/x-ndjson")
        .body(jsonl)
        .send()
        .await
        .expect("upload");
    assert_eq!(upload.status(), StatusCode::CREATED);
    upload.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// Adds `n` raters (`rater0`, ...) through the API as `admin`, each through the next of
/// `bases` in turn; returns an API token of each.
pub(crate) async fn add_raters(admin: &reqwest::Client, bases: &[String], n: usize) -> Vec<String> {
    let mut tokens = Vec::new();
    for i in 0..n {
        let name = format!("rater{i}");
        let base = &bases[i % bases.len()];
        let made = admin
            .post(format!("{base}/api/v1/users"))
            .json(&json!({"username": name, "role": "rater", "password": "a rater password"}))
            .send()
            .await
            .expect("user");
        assert_eq!(made.status(), StatusCode::CREATED);
        let token: Value = admin
            .post(format!("{base}/api/v1/tokens"))
            .json(&json!({"name": "load", "username": name}))
            .send()
            .await
            .expect("token")
            .json()
            .await
            .expect("JSON");
        tokens.push(token["token"].as_str().expect("token").to_owned());
    }
    tokens
}

pub(crate) fn kill_9(child: &mut Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

/// A pseudo-random number below `n`, different each call.
fn random_below(n: u64) -> u64 {
    (uuid::Uuid::new_v4().as_u128() % u128::from(n)) as u64
}

/// What a crowd of raters has done so far, for a test to wait on: how many ratings the
/// server acknowledged, and how many raters stopped.
#[derive(Default)]
pub(crate) struct Progress {
    acknowledged: AtomicUsize,
    ended: AtomicUsize,
    changed: tokio::sync::Notify,
}

impl Progress {
    fn acknowledge(&self) {
        self.acknowledged.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn end(&self) {
        self.ended.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Waits until the server has acknowledged `n` ratings, or all `raters` have stopped
    /// (then fewer may have come); returns how many were acknowledged. Fails the test if
    /// neither happens within [`HANG`].
    pub(crate) async fn acknowledged(&self, n: usize, raters: usize) -> usize {
        let waited = tokio::time::timeout(HANG, async {
            loop {
                // Registered before the check, so a change between the two is not missed.
                let changed = self.changed.notified();
                let acknowledged = self.acknowledged.load(Ordering::SeqCst);
                if acknowledged >= n || self.ended.load(Ordering::SeqCst) >= raters {
                    return acknowledged;
                }
                changed.await;
            }
        })
        .await;
        waited.unwrap_or_else(|_| {
            panic!(
                "the server hung: {} of {n} ratings acknowledged in {HANG:?}",
                self.acknowledged.load(Ordering::SeqCst)
            )
        })
    }
}

/// How a rater's run ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Ended {
    /// `next` answered 204: nothing left for them.
    Done,
    /// Anything else: the instance went away, or answered an error.
    Broke(String),
}

/// Takes tasks and rates them through `base` until nothing is left or something fails;
/// returns the ratings acknowledged (assignment id to rating id) and how it ended.
pub(crate) async fn rate_all(
    base: String,
    token: String,
    batch: String,
) -> (Vec<(String, String)>, Ended) {
    rate_reporting(base, token, batch, Arc::default()).await
}

/// [`rate_all`], telling `progress` of each acknowledgement and of the end.
pub(crate) async fn rate_reporting(
    base: String,
    token: String,
    batch: String,
    progress: Arc<Progress>,
) -> (Vec<(String, String)>, Ended) {
    let rated = rate_each(&base, &token, &batch, &progress).await;
    progress.end();
    rated
}

async fn rate_each(
    base: &str,
    token: &str,
    batch: &str,
    progress: &Progress,
) -> (Vec<(String, String)>, Ended) {
    let client = bearer(token);
    let mut acknowledged = Vec::new();
    loop {
        let next = match client
            .post(format!("{base}/api/v1/batches/{batch}/next"))
            .send()
            .await
        {
            Ok(next) => next,
            Err(e) => return (acknowledged, Ended::Broke(e.to_string())),
        };
        match next.status() {
            StatusCode::NO_CONTENT => return (acknowledged, Ended::Done),
            StatusCode::OK => {}
            other => return (acknowledged, Ended::Broke(format!("next answered {other}"))),
        }
        let Ok(next) = next.json::<Value>().await else {
            return (acknowledged, Ended::Broke("next's body was cut off".into()));
        };
        let assignment = next["assignment_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let done = match client
            .post(format!("{base}/api/v1/assignments/{assignment}/submit"))
            .json(&complete_answers())
            .send()
            .await
        {
            Ok(done) => done,
            Err(e) => return (acknowledged, Ended::Broke(e.to_string())),
        };
        if done.status() != StatusCode::OK {
            return (
                acknowledged,
                Ended::Broke(format!("submit answered {}", done.status())),
            );
        }
        // A 200 whose body the kill cut off still counts as acknowledged.
        let rating = match done.json::<Value>().await {
            Ok(body) => body["rating_id"].as_str().unwrap_or_default().to_owned(),
            Err(_) => String::new(),
        };
        acknowledged.push((assignment, rating));
        progress.acknowledge();
    }
}

/// Adds an account with the command line; returns an API token of it.
pub(crate) fn account(db: &TestDb, name: &str, role: &str) -> String {
    let added = verdict(
        db,
        &[
            "user",
            "add",
            "--username",
            name,
            "--role",
            role,
            "--password-stdin",
        ],
        Some("a long enough password for tests\n"),
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let token = verdict(db, &["token", "create", "--username", name], None);
    assert!(token.status.success());
    String::from_utf8_lossy(&token.stdout).trim().to_owned()
}

/// Runs `$body` with `$pool` bound to a pool on the test database, whichever backend.
macro_rules! with_pool {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db.backend {
            Backend::Sqlite => {
                let $pool = sqlx::SqlitePool::connect(&$db.url).await.expect("connect");
                let out = $body;
                $pool.close().await;
                out
            }
            Backend::Postgres => {
                let $pool = sqlx::PgPool::connect(&$db.url).await.expect("connect");
                let out = $body;
                $pool.close().await;
                out
            }
        }
    };
}

async fn acknowledged_ratings_survive_sigkill_at_random_moments(db: &TestDb) {
    let admin = bearer(&account(db, "admin", "admin"));

    let (mut server, base) = serve(db);
    let batch = upload_batch(
        &admin,
        &base,
        "name=durable&randomize=true",
        tasks_jsonl(DURABLE_TASKS),
    )
    .await;
    let tokens = add_raters(&admin, std::slice::from_ref(&base), RATERS).await;
    kill_9(&mut server);

    let mut acknowledged: HashMap<String, String> = HashMap::new();
    let mut uploaded = DURABLE_TASKS;
    for _ in 0..CYCLES {
        let (mut server, base) = serve(db);
        // However fast the raters are, every cycle has work to be killed in the middle of.
        if uploaded - acknowledged.len() < DURABLE_TASKS / 2 {
            let topped_up = admin
                .post(format!("{base}/api/v1/batches?name=durable&randomize=true"))
                .header("content-type", "application/x-ndjson")
                .body(crate::helpers::tasks_jsonl_from(
                    uploaded + 1,
                    DURABLE_TASKS,
                ))
                .send()
                .await
                .expect("upload");
            assert_eq!(topped_up.status(), StatusCode::CREATED);
            uploaded += DURABLE_TASKS;
        }
        let progress = Arc::new(Progress::default());
        let raters: Vec<_> = tokens
            .iter()
            .map(|t| {
                let run = rate_reporting(base.clone(), t.clone(), batch.clone(), progress.clone());
                tokio::spawn(run)
            })
            .collect();
        // The moment of the kill is drawn once the server has acknowledged its first
        // rating of the cycle, not from its start: however slowly a busy machine starts
        // the server, every kill comes while work is under way.
        let answered = progress.acknowledged(1, raters.len()).await;
        tokio::time::sleep(Duration::from_millis(random_below(600))).await;
        kill_9(&mut server);
        let mut ends = Vec::new();
        for rater in raters {
            let (rated, ended) = rater.await.expect("rater");
            for (assignment, rating) in rated {
                let before = acknowledged.insert(assignment.clone(), rating);
                assert!(before.is_none(), "{assignment} was acknowledged twice");
            }
            ends.push(ended);
        }
        assert!(
            answered > 0,
            "every rater stopped before the server acknowledged a rating: {ends:?}"
        );
    }

    // Start once more, so recovery runs as it would in production, and take an online
    // backup beside the running server (SQLite; PostgreSQL is backed up with pg_dump).
    let (mut server, base) = serve(db);
    let health = reqwest::get(format!("{base}/healthz"))
        .await
        .expect("health");
    assert_eq!(health.status(), StatusCode::OK);
    let backup = tempfile::tempdir().expect("dir");
    let backup_file = backup.path().join("backup.db");
    let taken = verdict(
        db,
        &["backup", "--to", backup_file.to_str().expect("path")],
        None,
    );
    let said = String::from_utf8_lossy(&taken.stderr).into_owned();
    match db.backend {
        Backend::Sqlite => assert!(taken.status.success(), "{said}"),
        Backend::Postgres => {
            assert!(!taken.status.success());
            assert!(said.contains("pg_dump --format=custom"), "{said}");
        }
    }
    let again = verdict(
        db,
        &["backup", "--to", backup_file.to_str().expect("path")],
        None,
    );
    assert!(
        !again.status.success(),
        "an existing file is never overwritten"
    );
    kill_9(&mut server);
    check_stored(db, &acknowledged).await;
    if db.backend == Backend::Sqlite {
        // The copy, opened as a database of its own, holds the same.
        let copy = TestDb::at(format!("sqlite://{}", backup_file.display()));
        check_stored(&copy, &acknowledged).await;
    }
}
db_test!(acknowledged_ratings_survive_sigkill_at_random_moments: TestDb);

/// Every acknowledged rating is stored, once, and the database is consistent.
async fn check_stored(db: &TestDb, acknowledged: &HashMap<String, String>) {
    let (stored, duplicates, bad_claims, integrity) = with_pool!(db, |pool| {
        let stored: Vec<(uuid::Uuid, uuid::Uuid, String)> =
            sqlx::query_as("SELECT assignment_id, id, status FROM ratings WHERE outcome = 'rated'")
                .fetch_all(&pool)
                .await
                .expect("ratings");
        let duplicates: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM (SELECT task_id FROM ratings GROUP BY task_id HAVING COUNT(*) > 1) d",
        )
        .fetch_one(&pool)
        .await
        .expect("duplicates");
        // Overlap 1: a task's claimed count is its open and finished assignments.
        let bad_claims: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM tasks t WHERE t.claimed <>
               (SELECT COUNT(*) FROM assignments a WHERE a.task_id = t.id AND a.state IN ('open', 'done'))",
        )
        .fetch_one(&pool)
        .await
        .expect("claims");
        let integrity: String = match db.backend {
            Backend::Sqlite => sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_one(&pool)
                .await
                .expect("integrity"),
            Backend::Postgres => "ok".to_owned(),
        };
        (stored, duplicates, bad_claims, integrity)
    });
    let stored: HashMap<String, (String, String)> = stored
        .into_iter()
        .map(|(a, r, s)| (a.to_string(), (r.to_string(), s)))
        .collect();
    // Only a 200 whose body the kill cut off comes without the rating's id.
    assert!(
        acknowledged.values().any(|rating| !rating.is_empty()),
        "the acknowledgements carry the ratings' ids"
    );
    for (assignment, rating) in acknowledged {
        let (id, status) = stored
            .get(assignment)
            .unwrap_or_else(|| panic!("acknowledged rating of {assignment} was lost"));
        assert_eq!(status, "submitted", "{assignment}");
        if !rating.is_empty() {
            assert_eq!(
                id, rating,
                "{assignment}: the rating acknowledged is the one stored"
            );
        }
    }
    assert_eq!(
        duplicates, 0,
        "a task with overlap 1 has one rating at most"
    );
    assert_eq!(
        bad_claims, 0,
        "every task's claimed count matches its assignments"
    );
    assert_eq!(integrity, "ok");
}

/// `pg_ctlcluster` on the machine's one PostgreSQL cluster (`stop` or `start`).
fn pg_cluster(action: &str) {
    let version = std::fs::read_dir("/etc/postgresql")
        .expect("a Debian PostgreSQL cluster in /etc/postgresql")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .next()
        .expect("a cluster version");
    let mut command = Command::new("pg_ctlcluster");
    command.args(["--skip-systemctl-redirect", &version, "main", action]);
    if action == "stop" {
        // Fast shutdown: open connections are cut, as a crash or a restart would.
        command.args(["--", "-m", "fast"]);
    }
    let status = command.status().expect("pg_ctlcluster");
    assert!(status.success(), "pg_ctlcluster {action}");
}

/// What the raters saw while PostgreSQL went away and came back.
#[derive(Default)]
struct Outage {
    /// Assignments whose submit got 200.
    acknowledged: Vec<String>,
    /// Ratings acknowledged before PostgreSQL was stopped.
    before_outage: usize,
    /// Ratings acknowledged after PostgreSQL was back.
    after_recovery: usize,
    /// How many answers were 503.
    unavailable: usize,
    /// How many times `next` answered 204 (every task taken until the next top-up): a
    /// normal answer, counted only to be reported.
    empty: usize,
    /// Anything other than 2xx or 503, with the request.
    unexpected: Vec<String>,
}

/// Tasks in the batch at the start, and how many each top-up adds.
const RESTART_TASKS: usize = 500;
/// The batch is topped up whenever fewer tasks than this are left untaken.
const RESTART_LOW_WATER: usize = 250;
/// Ratings to see acknowledged before the outage, and again after it.
const RESTART_RATINGS_PER_PHASE: usize = 40;

/// Waits until `done` holds of what the raters saw, for at most [`HANG`]: the phases of the
/// restart test last as long as the work they need takes, however slow the machine.
async fn wait_until(
    outage: &tokio::sync::Mutex<Outage>,
    what: &str,
    done: impl Fn(&Outage) -> bool,
) {
    let deadline = std::time::Instant::now() + HANG;
    loop {
        {
            let seen = outage.lock().await;
            if done(&seen) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{what} did not happen within {HANG:?} ({} ratings acknowledged, {} answers \
                 503, unexpected: {:?})",
                seen.acknowledged.len(),
                seen.unavailable,
                seen.unexpected
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "stops and starts the machine's PostgreSQL server: run alone, as .ci/run does"]
async fn postgresql_restarted_mid_load_gives_503_and_the_app_recovers() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use tokio::sync::Mutex;

    let app = crate::helpers::TestApp::with_config(Backend::Postgres, verdict::Config::default())
        .await
        .expect("set TEST_DATABASE_URL to a PostgreSQL server this test may restart");
    let admin = app.admin().await;
    let batch = app
        .batch(&admin, "restart", &tasks_jsonl(RESTART_TASKS), "&overlap=1")
        .await;
    // 0: before the outage, 1: during it, 2: PostgreSQL answers again.
    let phase = Arc::new(AtomicU8::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let outage = Arc::new(Mutex::new(Outage::default()));

    // The raters never run out of work, however fast they are: the batch is topped up with
    // new tasks whenever few are left. An upload that meets the outage answers 503 and is
    // sent again; a repeated upload of the same tasks changes nothing.
    let feeder = {
        let (stop, outage) = (stop.clone(), outage.clone());
        let url = app.url("/api/v1/batches?name=restart&overlap=1");
        let admin = admin.api.clone();
        tokio::spawn(async move {
            let mut uploaded = RESTART_TASKS;
            while !stop.load(Ordering::Relaxed) {
                let taken = outage.lock().await.acknowledged.len();
                if uploaded.saturating_sub(taken) >= RESTART_LOW_WATER {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                let sent = admin
                    .post(&url)
                    .header("content-type", "application/x-ndjson")
                    .body(crate::helpers::tasks_jsonl_from(
                        uploaded + 1,
                        RESTART_TASKS,
                    ))
                    .send()
                    .await
                    .expect("the app answers");
                match sent.status() {
                    StatusCode::CREATED => uploaded += RESTART_TASKS,
                    StatusCode::SERVICE_UNAVAILABLE => {
                        outage.lock().await.unavailable += 1;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    other => {
                        let text = sent.text().await.unwrap_or_default();
                        outage
                            .lock()
                            .await
                            .unexpected
                            .push(format!("upload: {other} {text}"));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
            uploaded
        })
    };

    let mut raters = Vec::new();
    for i in 0..16 {
        let rater = app
            .persona(&format!("rater{i}"), verdict::auth::Role::Rater)
            .await;
        let (next_url, base) = (
            app.url(&format!("/api/v1/batches/{batch}/next")),
            app.url("/api/v1/assignments"),
        );
        let (phase, stop, outage) = (phase.clone(), stop.clone(), outage.clone());
        raters.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let next = rater
                    .api
                    .post(&next_url)
                    .send()
                    .await
                    .expect("the app answers");
                let status = next.status();
                let body: Value = next.json().await.unwrap_or_default();
                if status != StatusCode::OK {
                    let mut seen = outage.lock().await;
                    match status {
                        StatusCode::SERVICE_UNAVAILABLE => seen.unavailable += 1,
                        StatusCode::NO_CONTENT => seen.empty += 1,
                        other => seen.unexpected.push(format!("next: {other} {body}")),
                    }
                    drop(seen);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                let assignment = body["assignment_id"].as_str().expect("id").to_owned();
                let done = rater
                    .api
                    .post(format!("{base}/{assignment}/submit"))
                    .json(&complete_answers())
                    .send()
                    .await
                    .expect("the app answers");
                let status = done.status();
                let mut seen = outage.lock().await;
                match status {
                    StatusCode::OK => {
                        seen.acknowledged.push(assignment);
                        match phase.load(Ordering::Relaxed) {
                            0 => seen.before_outage += 1,
                            2 => seen.after_recovery += 1,
                            _ => {}
                        }
                    }
                    StatusCode::SERVICE_UNAVAILABLE => seen.unavailable += 1,
                    other => {
                        let text = done.text().await.unwrap_or_default();
                        seen.unexpected.push(format!("submit: {other} {text}"));
                    }
                }
            }
        }));
    }

    wait_until(&outage, "ratings before the outage", |seen| {
        seen.before_outage >= RESTART_RATINGS_PER_PHASE
    })
    .await;
    phase.store(1, Ordering::Relaxed);
    let unavailable_before = outage.lock().await.unavailable;
    tokio::task::spawn_blocking(|| pg_cluster("stop"))
        .await
        .expect("stop");
    let health = reqwest::get(app.url("/healthz")).await.expect("health");
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);
    // The raters keep asking while the database is away, and are answered 503.
    wait_until(&outage, "a 503 during the outage", |seen| {
        seen.unavailable > unavailable_before
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::spawn_blocking(|| pg_cluster("start"))
        .await
        .expect("start");
    // The app reconnects by itself: no restart, no operator.
    let mut healthy = false;
    for _ in 0..120 {
        let health = reqwest::get(app.url("/healthz")).await.expect("health");
        if health.status() == StatusCode::OK {
            healthy = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(healthy, "the app did not recover within 30 s");
    phase.store(2, Ordering::Relaxed);
    wait_until(&outage, "ratings after recovery", |seen| {
        seen.after_recovery >= RESTART_RATINGS_PER_PHASE
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for rater in raters {
        rater.await.expect("rater");
    }
    let uploaded = feeder.await.expect("feeder");

    let outage = outage.lock().await;
    assert!(
        outage.unexpected.is_empty(),
        "answers other than 2xx and 503: {:?}",
        outage.unexpected
    );
    for assignment in &outage.acknowledged {
        let stored = app
            .count(&format!(
                "SELECT COUNT(*) FROM ratings WHERE assignment_id = '{assignment}'
                 AND status = 'submitted'"
            ))
            .await;
        assert_eq!(stored, 1, "acknowledged rating of {assignment}");
    }
    let duplicates = app
        .count(
            "SELECT COUNT(*) FROM (SELECT task_id FROM ratings GROUP BY task_id
             HAVING COUNT(*) > 1) d",
        )
        .await;
    assert_eq!(
        duplicates, 0,
        "a task with overlap 1 has one rating at most"
    );
    eprintln!(
        "restart: {} ratings acknowledged ({} before the outage, {} after recovery), {} answers \
         503, {} empty answers from next, {uploaded} tasks uploaded",
        outage.acknowledged.len(),
        outage.before_outage,
        outage.after_recovery,
        outage.unavailable,
        outage.empty
    );
}
