//! verdict and Label Studio side by side: the same machine, the same harness, the same
//! tasks and answers. Starts each server as its own process on a fresh SQLite database
//! (Label Studio with its defaults: the server `label-studio start` runs and SQLite in
//! its data folder), measures an import, concurrent raters and exports on each, one
//! after the other, and writes the `label-studio` section of `BENCHMARKS.md`.
//!
//! Run with `cargo bench --bench labelstudio -- --label-studio /path/to/label-studio`
//! (or set `LABEL_STUDIO_BIN`; by default `label-studio` is looked up on `PATH`).
//! Options: `--quick` (a smoke run), `--output FILE` (another report), `--tasks N`,
//! `--raters N`, `--seconds S`, `--load-tasks N`, `--annotations N`,
//! `--annotation-raters N` (the sizes), `--label-studio-log FILE` (keep its log).
//!
//! These are measurements, never assertions: counts that do not match are reported in
//! the tables.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{
    Database, PASSWORD, Server, Stats, answers, arg_value, has_flag, machine, persona, rater_token,
    stats, tasks, upload,
};
use futures_util::StreamExt as _;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

const INSTALL: &str = "python3 -m venv /work/ls-venv && /work/ls-venv/bin/pip install label-studio";
const COMMAND: &str =
    "cargo bench --bench labelstudio -- --label-studio /work/ls-venv/bin/label-studio";
/// Per-request timeout of the simulated raters, on both tools.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Timeout of one import or export request: these are measured, not cut short.
const BULK_TIMEOUT: Duration = Duration::from_secs(3600);
/// Accounts are made this many at a time, on both tools.
const ACCOUNT_CONCURRENCY: usize = 4;
const LS_ADMIN: &str = "admin@bench.local";

struct Options {
    output: String,
    label_studio: String,
    /// Tasks of about 6 KB in the import.
    tasks: usize,
    /// Concurrent raters and how long they rate.
    raters: usize,
    seconds: f64,
    /// Tasks of about 200 bytes in the project the raters work on.
    load_tasks: usize,
    /// Annotations submitted before the exports, and by how many raters at once.
    annotations: usize,
    annotation_raters: usize,
    /// Where to keep Label Studio's whole log, if anywhere.
    label_studio_log: Option<String>,
}

fn options() -> Options {
    let value = arg_value;
    let number = |flag: &str, default: usize| {
        value(flag).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{flag} takes a whole number, not {v:?}"))
        })
    };
    let quick = has_flag("--quick");
    let tasks = number("--tasks", if quick { 500 } else { 10_000 });
    Options {
        output: value("--output").unwrap_or_else(|| "BENCHMARKS.md".into()),
        label_studio: value("--label-studio")
            .or_else(|| std::env::var("LABEL_STUDIO_BIN").ok())
            .unwrap_or_else(|| "label-studio".into()),
        tasks,
        raters: number("--raters", if quick { 16 } else { 256 }),
        seconds: value("--seconds").map_or(if quick { 3.0 } else { 20.0 }, |v| {
            v.parse().expect("--seconds takes a number")
        }),
        load_tasks: number("--load-tasks", if quick { 5_000 } else { 100_000 }),
        // Label Studio takes a few annotations a second on two cores: 10,000 would take it
        // about an hour, so the default is smaller (`--annotations N` to change it).
        annotations: number("--annotations", if quick { 500 } else { 2_000 }),
        annotation_raters: number("--annotation-raters", if quick { 4 } else { 8 }),
        label_studio_log: value("--label-studio-log"),
    }
}

/// The `label-studio` executable: a path, or a name looked up on `PATH`.
fn find_executable(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let path = Path::new(name);
        return path.is_file().then(|| path.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A client with the given `Authorization` header.
fn client_with(authorization: &str, timeout: Duration) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", authorization.parse().expect("header"));
    Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(1)
        .timeout(timeout)
        .build()
        .expect("client")
}

fn peak_rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

// ---------------------------------------------------------------------------------------
// Label Studio: the server, its project, its accounts, its tasks and annotations.

/// `label-studio start` on loopback, a free port and a fresh data folder, in its own
/// process group so that stopping it stops anything it started.
struct LabelStudio {
    child: Child,
    base: String,
    token: String,
    version: String,
    /// Requests that failed on "database is locked" so far (each logged once as an
    /// error; its middleware then runs the request again).
    locked: Arc<AtomicUsize>,
    log: Arc<Mutex<VecDeque<String>>>,
    _dir: tempfile::TempDir,
}

impl LabelStudio {
    async fn start(bin: &Path, log_file: Option<&str>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let token = uuid::Uuid::new_v4().simple().to_string();
        let mut child = Command::new(bin)
            .args(["start", "--no-browser", "--internal-host", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .arg("--data-dir")
            .arg(&data)
            .args(["--username", LS_ADMIN, "--password", PASSWORD])
            .args(["--user-token", &token, "--enable-legacy-api-token"])
            .env("LABEL_STUDIO_BASE_DATA_DIR", &data)
            // Its default database: SQLite in the data folder, whatever the environment says.
            .env_remove("DJANGO_DB")
            .env_remove("LABEL_STUDIO_DJANGO_DB")
            .env_remove("DATABASE_NAME")
            .env_remove("LABEL_STUDIO_DATABASE_NAME")
            // So that the line with its address arrives when it is printed.
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
        let locked = Arc::new(AtomicUsize::new(0));
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let log_file = log_file.map(|path| {
            Arc::new(Mutex::new(std::io::BufWriter::new(
                std::fs::File::create(path).unwrap_or_else(|e| panic!("create {path}: {e}")),
            )))
        });
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let (locked, log, address_tx) = (locked.clone(), log.clone(), address_tx.clone());
            let log_file = log_file.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if line.contains("[ERROR]") && line.contains("database is locked") {
                        locked.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Some(file) = &log_file {
                        let mut file = file.lock().expect("log file");
                        let _ = writeln!(file, "{line}");
                        let _ = file.flush();
                    }
                    if let Some(url) = line.split("Starting development server at ").nth(1) {
                        let _ = address_tx.send(url.trim().trim_end_matches('/').to_owned());
                    }
                    let mut log = log.lock().expect("log");
                    if log.len() == 40 {
                        log.pop_front();
                    }
                    log.push_back(line);
                }
            });
        }
        let started = Instant::now();
        let tail = |log: &Mutex<VecDeque<String>>| {
            log.lock()
                .expect("log")
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        };
        let base = loop {
            if let Ok(url) = address_rx.recv_timeout(Duration::from_millis(200)) {
                break url;
            }
            if let Ok(Some(status)) = child.try_wait() {
                kill_group(child.id());
                panic!(
                    "Label Studio exited ({status}) before serving:\n{}",
                    tail(&log)
                );
            }
            if started.elapsed() > Duration::from_secs(600) {
                kill_group(child.id());
                panic!(
                    "Label Studio did not start within 10 minutes:\n{}",
                    tail(&log)
                );
            }
        };
        let mut server = Self {
            child,
            base,
            token,
            version: String::new(),
            locked,
            log,
            _dir: dir,
        };
        let probe = Client::new();
        loop {
            if let Ok(r) = probe.get(server.url("/health")).send().await
                && r.status().is_success()
            {
                break;
            }
            if started.elapsed() > Duration::from_secs(600) {
                kill_group(server.child.id());
                panic!(
                    "Label Studio does not answer /health:\n{}",
                    tail(&server.log)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!(
            "Label Studio answers at {} after {:.0} s",
            server.base,
            started.elapsed().as_secs_f64()
        );
        let version = match server
            .admin(REQUEST_TIMEOUT)
            .get(server.url("/api/version/"))
            .send()
            .await
        {
            Ok(r) => r.json::<Value>().await.unwrap_or_default(),
            Err(_) => Value::Null,
        };
        server.version = version["release"].as_str().unwrap_or("unknown").to_owned();
        server
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn locked(&self) -> usize {
        self.locked.load(Ordering::SeqCst)
    }

    fn admin(&self, timeout: Duration) -> Client {
        client_with(&format!("Token {}", self.token), timeout)
    }

    /// Stops Label Studio and anything it started: SIGTERM to its process group, then,
    /// if anything in the group still runs after 20 s, SIGKILL. The server is reaped only
    /// at the end, so the group id stays ours until then.
    fn stop(mut self) {
        let pgid = self.child.id();
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{pgid}")])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while running_in_group(pgid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if running_in_group(pgid) {
            kill_group(pgid);
        }
        let _ = self.child.wait();
    }
}

/// Whether a process of the group `pgid` is still running (not a zombie).
fn running_in_group(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // "pid (name) state ppid pgrp ...": the name may hold spaces and parentheses.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
        fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z"
    })
}

/// Kills the process group `pgid` (Label Studio and anything it started).
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// The labeling configuration equivalent to verdict's blackhat form: three choices per
/// answer, the side-by-side score as a 1-7 rating, and its explanation.
fn label_config() -> String {
    let fields: [(&str, &[&str]); 3] = [
        (
            "executability",
            &["yes_fully", "yes_partially", "no", "no_code"],
        ),
        (
            "instruction_following",
            &[
                "no_issues",
                "minor_issues",
                "major_issues",
                "not_applicable",
            ],
        ),
        (
            "correctness",
            &[
                "no_issues",
                "minor_issues",
                "major_issues",
                "cannot_assess",
                "not_applicable",
            ],
        ),
    ];
    let mut xml = String::from(
        "<View>\n  <Text name=\"prompt\" value=\"$prompt\"/>\n  \
         <Text name=\"response_a\" value=\"$response_a\"/>\n  \
         <Text name=\"response_b\" value=\"$response_b\"/>\n",
    );
    for side in ["a", "b"] {
        for (field, choices) in fields {
            let _ = write!(
                xml,
                "  <Choices name=\"{side}_{field}\" toName=\"response_{side}\" choice=\"single\" required=\"true\">"
            );
            for choice in choices {
                let _ = write!(xml, "<Choice value=\"{choice}\"/>");
            }
            xml.push_str("</Choices>\n");
        }
    }
    xml.push_str(
        "  <Rating name=\"sxs\" toName=\"prompt\" maxRating=\"7\" required=\"true\"/>\n  \
         <TextArea name=\"sxs_explanation\" toName=\"prompt\" required=\"true\"/>\n</View>\n",
    );
    xml
}

/// The annotation equivalent to `answers` (verdict's submit body) in Label Studio's form.
fn ls_annotation(answers: &Value) -> Value {
    let mut result = Vec::new();
    for side in ["a", "b"] {
        for (field, value) in answers[side].as_object().expect("answers per side") {
            result.push(json!({
                "from_name": format!("{side}_{field}"), "to_name": format!("response_{side}"),
                "type": "choices", "value": {"choices": [value]}
            }));
        }
    }
    result.push(json!({
        "from_name": "sxs", "to_name": "prompt", "type": "rating",
        "value": {"rating": answers["sxs"]}
    }));
    result.push(json!({
        "from_name": "sxs_explanation", "to_name": "prompt", "type": "textarea",
        "value": {"text": [answers["sxs_explanation"]]}
    }));
    json!({"result": result, "lead_time": answers["time_spent_s"]})
}

/// The JSON Lines tasks as one Label Studio import: an array of `{"data": record}`.
fn ls_tasks(jsonl: &str) -> String {
    let tasks: Vec<Value> = jsonl
        .lines()
        .map(|line| json!({"data": serde_json::from_str::<Value>(line).expect("task")}))
        .collect();
    serde_json::to_string(&tasks).expect("JSON")
}

async fn ls_project(ls: &LabelStudio, title: &str) -> String {
    let response = ls
        .admin(BULK_TIMEOUT)
        .post(ls.url("/api/projects/"))
        .json(&json!({"title": title, "label_config": label_config()}))
        .send()
        .await
        .expect("create project");
    let status = response.status();
    let body: Value = response.json().await.unwrap_or_default();
    assert_eq!(status, StatusCode::CREATED, "create project: {body}");
    body["id"].as_i64().expect("project id").to_string()
}

async fn ls_task_count(ls: &LabelStudio, project: &str) -> Option<u64> {
    let project: Value = ls
        .admin(REQUEST_TIMEOUT)
        .get(ls.url(&format!("/api/projects/{project}/")))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    project["task_number"].as_u64()
}

/// Posts the tasks in one request and waits until the project holds all of them.
/// Returns the time to that point, the tasks stored, and what went wrong if anything.
async fn ls_import(
    ls: &LabelStudio,
    project: &str,
    body: String,
    n: usize,
) -> (Duration, u64, Option<String>) {
    let started = Instant::now();
    let response = ls
        .admin(BULK_TIMEOUT)
        .post(ls.url(&format!("/api/projects/{project}/import")))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    let (mut problem, reported) = match response {
        Ok(r) if r.status().is_success() => {
            let body: Value = r.json().await.unwrap_or_default();
            (None, body["task_count"].as_u64())
        }
        Ok(r) => {
            let status = r.status();
            let problem = format!("HTTP {}: {}", status.as_u16(), detail(r).await);
            (Some(problem), None)
        }
        Err(e) => (Some(transport(&e)), None),
    };
    // The community edition imports while the request runs and answers with the count;
    // other editions answer first and import in the background: then the clock runs
    // until the project holds every task.
    let mut elapsed = started.elapsed();
    let synchronous = reported == Some(n as u64);
    let mut stored = 0;
    loop {
        stored = ls_task_count(ls, project).await.unwrap_or(stored);
        if stored >= n as u64
            || synchronous
            || problem.is_some()
            || started.elapsed() > elapsed + Duration::from_secs(300)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if !synchronous {
        elapsed = started.elapsed();
    }
    if problem.is_none() && stored != n as u64 {
        problem = Some(format!("{stored} of {n} tasks stored"));
    }
    (elapsed, stored, problem)
}

/// One Label Studio account per rater, made the way a person joins: the sign-up form
/// (which puts them in the one organisation), then their API token from
/// `/api/current-user/token` with the session that form started.
async fn ls_account(ls: &LabelStudio, email: String) -> Client {
    use reqwest::cookie::CookieStore as _;
    let jar = Arc::new(reqwest::cookie::Jar::default());
    let browser = Client::builder()
        .cookie_provider(jar.clone())
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("client");
    let url: reqwest::Url = ls.url("/").parse().expect("URL");
    let csrf = || {
        jar.cookies(&url)
            .and_then(|h| {
                h.to_str().ok().and_then(|cookies| {
                    cookies
                        .split("; ")
                        .find_map(|c| c.strip_prefix("csrftoken=").map(str::to_owned))
                })
            })
            .unwrap_or_default()
    };
    for (page, fields) in [("/user/signup/", "signup"), ("/user/login/", "login")] {
        let _ = browser.get(ls.url(page)).send().await;
        let token = csrf();
        let mut form = vec![
            ("csrfmiddlewaretoken", token.as_str()),
            ("email", email.as_str()),
            ("password", PASSWORD),
        ];
        if fields == "login" {
            form.push(("persist_session", "on"));
        }
        let _ = browser.post(ls.url(page)).form(&form).send().await;
        if let Ok(r) = browser.get(ls.url("/api/current-user/token")).send().await
            && r.status().is_success()
            && let Ok(token) = r.json::<Value>().await
            && let Some(token) = token["token"].as_str()
        {
            return client_with(&format!("Token {token}"), REQUEST_TIMEOUT);
        }
    }
    panic!("could not make the Label Studio account {email}");
}

// ---------------------------------------------------------------------------------------
// verdict's side of the same steps.

async fn verdict_account(admin: &Client, server: &Server, username: String) -> Client {
    let token = rater_token(admin, server, &username).await;
    client_with(&format!("Bearer {token}"), REQUEST_TIMEOUT)
}

async fn verdict_task_count(admin: &Client, server: &Server, batch: &str) -> u64 {
    let batch: Value = admin
        .get(server.url(&format!("/api/v1/batches/{batch}")))
        .send()
        .await
        .expect("batch")
        .json()
        .await
        .expect("JSON");
    batch["progress"]["tasks"].as_u64().unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// The harness both tools go through.

#[derive(Clone, Copy, PartialEq)]
enum Tool {
    Verdict,
    LabelStudio,
}

/// Where raters take their next task and submit it: a verdict batch or a Label Studio
/// project.
#[derive(Clone)]
struct Queue {
    tool: Tool,
    base: String,
    id: String,
    /// The submit body, serialised once.
    body: Arc<String>,
}

impl Queue {
    fn verdict(server: &Server, batch: &str) -> Self {
        Self {
            tool: Tool::Verdict,
            base: server.base.clone(),
            id: batch.to_owned(),
            body: Arc::new(answers().to_string()),
        }
    }

    fn label_studio(ls: &LabelStudio, project: &str) -> Self {
        Self {
            tool: Tool::LabelStudio,
            base: ls.base.clone(),
            id: project.to_owned(),
            body: Arc::new(ls_annotation(&answers()).to_string()),
        }
    }

    /// The next task's id (verdict: the assignment), `None` when nothing is left, or
    /// what went wrong.
    async fn next(&self, client: &Client) -> Result<Option<String>, String> {
        let request = match self.tool {
            Tool::Verdict => client.post(format!("{}/api/v1/batches/{}/next", self.base, self.id)),
            Tool::LabelStudio => {
                client.get(format!("{}/api/projects/{}/next/", self.base, self.id))
            }
        };
        let response = request.send().await.map_err(|e| transport(&e))?;
        let status = response.status();
        let empty = match self.tool {
            Tool::Verdict => status == StatusCode::NO_CONTENT,
            Tool::LabelStudio => status == StatusCode::NOT_FOUND,
        };
        if empty {
            return Ok(None);
        }
        if status != StatusCode::OK {
            return Err(format!(
                "next: HTTP {}: {}",
                status.as_u16(),
                detail(response).await
            ));
        }
        let next: Value = response.json().await.map_err(|e| transport(&e))?;
        let id = match self.tool {
            Tool::Verdict => next["assignment_id"].as_str().map(str::to_owned),
            Tool::LabelStudio => next["id"].as_i64().map(|id| id.to_string()),
        };
        id.map(Some).ok_or_else(|| "next: no task id".to_owned())
    }

    async fn submit(&self, client: &Client, id: &str) -> Result<(), String> {
        let (url, expected) = match self.tool {
            Tool::Verdict => (
                format!("{}/api/v1/assignments/{id}/submit", self.base),
                StatusCode::OK,
            ),
            Tool::LabelStudio => (
                format!("{}/api/tasks/{id}/annotations/", self.base),
                StatusCode::CREATED,
            ),
        };
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .body(self.body.as_str().to_owned())
            .send()
            .await
            .map_err(|e| transport(&e))?;
        let status = response.status();
        if status == expected {
            let _ = response.bytes().await;
            Ok(())
        } else {
            Err(format!(
                "submit: HTTP {}: {}",
                status.as_u16(),
                detail(response).await
            ))
        }
    }
}

fn transport(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("timeout ({} s)", REQUEST_TIMEOUT.as_secs())
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        "transport error".into()
    }
}

/// The error message of a refused request, short: `detail` (Label Studio) or `error`
/// (verdict), else the start of the body.
async fn detail(response: reqwest::Response) -> String {
    let body = response.text().await.unwrap_or_default();
    let message = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| {
            v["detail"]
                .as_str()
                .or_else(|| v["error"].as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| {
            if body.trim_start().starts_with('<') {
                "an HTML page".into()
            } else {
                body
            }
        });
    message.chars().take(70).collect()
}

/// When the raters stop: at a time, or once this many submits have succeeded.
#[derive(Clone, Copy)]
enum Until {
    Deadline(Instant),
    Count(usize),
}

struct Run {
    raters: usize,
    ratings: usize,
    seconds: f64,
    errors: BTreeMap<String, usize>,
    next_ms: Vec<f64>,
    submit_ms: Vec<f64>,
    ran_out: bool,
    gave_up: bool,
    /// Label Studio: requests its database refused as locked meanwhile (then retried).
    locked: Option<usize>,
}

impl Run {
    fn error_count(&self) -> usize {
        self.errors.values().sum()
    }

    fn rate(&self) -> f64 {
        self.ratings as f64 / self.seconds
    }
}

/// Each client a rater looping "take the next task, submit it" until `until`.
async fn rate(queue: &Queue, clients: &[Client], until: Until) -> Run {
    // In a counted run, a rater claims one of the `n` submits before taking a task and
    // gives the claim back if it fails; too many failures end the run.
    let claimed = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for client in clients {
        let (client, queue) = (client.clone(), queue.clone());
        let (claimed, failures, stop) = (claimed.clone(), failures.clone(), stop.clone());
        workers.spawn(async move {
            let mut next_ms = Vec::new();
            let mut submit_ms = Vec::new();
            let mut errors: BTreeMap<String, usize> = BTreeMap::new();
            let mut ran_out = false;
            let give_back = || {
                if let Until::Count(_) = until {
                    claimed.fetch_sub(1, Ordering::SeqCst);
                }
            };
            let fail = |kind: String, errors: &mut BTreeMap<String, usize>| {
                *errors.entry(kind).or_default() += 1;
                let total = failures.fetch_add(1, Ordering::SeqCst) + 1;
                if let Until::Count(n) = until
                    && total > n.max(1000)
                {
                    stop.store(true, Ordering::SeqCst);
                }
            };
            while !stop.load(Ordering::SeqCst) {
                match until {
                    Until::Deadline(deadline) if Instant::now() >= deadline => break,
                    Until::Count(n) => {
                        if claimed.fetch_add(1, Ordering::SeqCst) >= n {
                            claimed.fetch_sub(1, Ordering::SeqCst);
                            break;
                        }
                    }
                    Until::Deadline(_) => {}
                }
                let t = Instant::now();
                let id = match queue.next(&client).await {
                    Ok(Some(id)) => id,
                    Ok(None) => {
                        give_back();
                        ran_out = true;
                        break;
                    }
                    Err(kind) => {
                        give_back();
                        fail(kind, &mut errors);
                        continue;
                    }
                };
                next_ms.push(t.elapsed().as_secs_f64() * 1000.0);
                let t = Instant::now();
                match queue.submit(&client, &id).await {
                    Ok(()) => submit_ms.push(t.elapsed().as_secs_f64() * 1000.0),
                    Err(kind) => {
                        give_back();
                        fail(kind, &mut errors);
                    }
                }
            }
            (next_ms, submit_ms, errors, ran_out)
        });
    }
    let mut run = Run {
        raters: clients.len(),
        ratings: 0,
        seconds: 0.0,
        errors: BTreeMap::new(),
        next_ms: Vec::new(),
        submit_ms: Vec::new(),
        ran_out: false,
        gave_up: false,
        locked: None,
    };
    while let Some(done) = workers.join_next().await {
        let (next_ms, submit_ms, errors, ran_out) = done.expect("rater");
        run.next_ms.extend(next_ms);
        run.submit_ms.extend(submit_ms);
        for (kind, n) in errors {
            *run.errors.entry(kind).or_default() += n;
        }
        run.ran_out |= ran_out;
    }
    run.seconds = started.elapsed().as_secs_f64();
    run.ratings = run.submit_ms.len();
    run.gave_up = stop.load(Ordering::SeqCst);
    run
}

struct Import {
    megabytes: f64,
    seconds: f64,
    stored: u64,
    peak_mib: f64,
    problem: Option<String>,
    locked: Option<usize>,
}

struct Export {
    label: &'static str,
    rows: usize,
    megabytes: f64,
    seconds: f64,
    problem: Option<String>,
}

/// Everything measured on one tool.
struct Results {
    import: Import,
    accounts_seconds: f64,
    annotate: Run,
    exports: Vec<Export>,
    load: Run,
    /// Label Studio: tasks given more than one annotation, by one rater twice and by
    /// different raters.
    duplicates: Option<(usize, usize)>,
}

/// Downloads an export in full; the rows are counted after the clock stops.
async fn download(client: &Client, url: String) -> (Result<Vec<u8>, String>, f64) {
    let started = Instant::now();
    let result = async {
        let response = client
            .get(url)
            .header("accept-encoding", "identity")
            .send()
            .await
            .map_err(|e| transport(&e))?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            return Err(format!("HTTP {status}: {}", detail(response).await));
        }
        response
            .bytes()
            .await
            .map(|b| b.to_vec())
            .map_err(|e| transport(&e))
    }
    .await;
    (result, started.elapsed().as_secs_f64())
}

fn csv_rows(body: &[u8]) -> Result<usize, String> {
    let mut rows = 0;
    for record in csv::Reader::from_reader(body).byte_records() {
        record.map_err(|e| format!("bad CSV: {e}"))?;
        rows += 1;
    }
    Ok(rows)
}

fn export_result(
    label: &'static str,
    downloaded: (Result<Vec<u8>, String>, f64),
    count: impl Fn(&[u8]) -> Result<usize, String>,
    expected: usize,
) -> Export {
    let (body, seconds) = downloaded;
    let (rows, megabytes, problem) = match body {
        Ok(body) => match count(&body) {
            Ok(rows) if rows == expected => (rows, body.len() as f64 / 1e6, None),
            Ok(rows) => (
                rows,
                body.len() as f64 / 1e6,
                Some(format!("{rows} rows for {expected} annotations")),
            ),
            Err(e) => (0, body.len() as f64 / 1e6, Some(e)),
        },
        Err(e) => (0, 0.0, Some(e)),
    };
    Export {
        label,
        rows,
        megabytes,
        seconds,
        problem,
    }
}

async fn bench_verdict(opts: &Options) -> Results {
    let db = Database::fresh(None).await;
    let admin = persona(&db, "admin", "admin");
    let server = Server::start(&db);

    eprintln!("verdict: import of {} tasks of about 6 KB", opts.tasks);
    let body = tasks(opts.tasks, 6000);
    let megabytes = body.len() as f64 / 1e6;
    let (batch, elapsed) = upload(&admin, &server, "import", body).await;
    let batch = batch["id"].as_str().expect("id").to_owned();
    let stored = verdict_task_count(&admin, &server, &batch).await;
    let import = Import {
        megabytes,
        seconds: elapsed.as_secs_f64(),
        stored,
        peak_mib: server.peak_rss_mib(),
        problem: (stored != opts.tasks as u64)
            .then(|| format!("{stored} of {} tasks stored", opts.tasks)),
        locked: None,
    };

    let accounts = opts.raters.max(opts.annotation_raters);
    eprintln!("verdict: {accounts} rater accounts");
    let started = Instant::now();
    let clients: Vec<Client> = futures_util::stream::iter(0..accounts)
        .map(|i| verdict_account(&admin, &server, format!("rater{i}")))
        .buffered(ACCOUNT_CONCURRENCY)
        .collect()
        .await;
    let accounts_seconds = started.elapsed().as_secs_f64();

    eprintln!(
        "verdict: {} ratings by {} raters",
        opts.annotations, opts.annotation_raters
    );
    let queue = Queue::verdict(&server, &batch);
    let annotate = rate(
        &queue,
        &clients[..opts.annotation_raters],
        Until::Count(opts.annotations),
    )
    .await;
    eprintln!("verdict: exports");
    let mut exports = Vec::new();
    for (label, format) in [("JSON (verdict: JSON Lines)", "jsonl"), ("CSV", "csv")] {
        let url = server.url(&format!("/api/v1/batches/{batch}/export?format={format}"));
        let downloaded = download(&admin, url).await;
        let count = |body: &[u8]| -> Result<usize, String> {
            if format == "csv" {
                csv_rows(body)
            } else {
                Ok(body
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .count())
            }
        };
        exports.push(export_result(label, downloaded, count, annotate.ratings));
    }

    eprintln!(
        "verdict: {} raters for {} s on {} tasks",
        opts.raters, opts.seconds, opts.load_tasks
    );
    let (load_batch, _) = upload(&admin, &server, "load", tasks(opts.load_tasks, 200)).await;
    let queue = Queue::verdict(&server, load_batch["id"].as_str().expect("id"));
    let deadline = Instant::now() + Duration::from_secs_f64(opts.seconds);
    let load = rate(&queue, &clients[..opts.raters], Until::Deadline(deadline)).await;

    server.stop();
    db.drop_it().await;
    Results {
        import,
        accounts_seconds,
        annotate,
        exports,
        load,
        duplicates: None,
    }
}

async fn bench_label_studio(opts: &Options, ls: &LabelStudio) -> Results {
    let admin = ls.admin(BULK_TIMEOUT);
    let project = ls_project(ls, "import").await;
    eprintln!("Label Studio: import of {} tasks of about 6 KB", opts.tasks);
    let jsonl = tasks(opts.tasks, 6000);
    let megabytes = jsonl.len() as f64 / 1e6;
    let body = ls_tasks(&jsonl);
    drop(jsonl);
    let locked = ls.locked();
    let (elapsed, stored, problem) = ls_import(ls, &project, body, opts.tasks).await;
    let import = Import {
        megabytes,
        seconds: elapsed.as_secs_f64(),
        stored,
        peak_mib: peak_rss_mib(ls.child.id()),
        problem,
        locked: Some(ls.locked() - locked),
    };

    let accounts = opts.raters.max(opts.annotation_raters);
    eprintln!("Label Studio: {accounts} rater accounts");
    let started = Instant::now();
    let clients: Vec<Client> = futures_util::stream::iter(0..accounts)
        .map(|i| ls_account(ls, format!("rater{i}@bench.local")))
        .buffered(ACCOUNT_CONCURRENCY)
        .collect()
        .await;
    let accounts_seconds = started.elapsed().as_secs_f64();

    eprintln!(
        "Label Studio: {} annotations by {} raters",
        opts.annotations, opts.annotation_raters
    );
    let queue = Queue::label_studio(ls, &project);
    let locked = ls.locked();
    let mut annotate = rate(
        &queue,
        &clients[..opts.annotation_raters],
        Until::Count(opts.annotations),
    )
    .await;
    annotate.locked = Some(ls.locked() - locked);
    eprintln!("Label Studio: exports");
    let mut exports = Vec::new();
    let mut duplicates = None;
    for (label, format) in [("JSON", "JSON"), ("CSV", "CSV")] {
        let url = ls.url(&format!(
            "/api/projects/{project}/export?exportType={format}"
        ));
        let downloaded = download(&admin, url).await;
        if format == "JSON"
            && let Ok(body) = &downloaded.0
            && let Ok(Value::Array(tasks)) = serde_json::from_slice::<Value>(body)
        {
            let (mut same, mut different) = (0, 0);
            for task in &tasks {
                let raters: Vec<&Value> = task["annotations"].as_array().map_or(Vec::new(), |a| {
                    a.iter().map(|a| &a["completed_by"]).collect()
                });
                if raters.len() > 1 {
                    if raters.iter().all(|r| *r == raters[0]) {
                        same += 1;
                    } else {
                        different += 1;
                    }
                }
            }
            duplicates = Some((same, different));
        }
        let count = |body: &[u8]| -> Result<usize, String> {
            if format == "CSV" {
                return csv_rows(body);
            }
            let tasks: Vec<Value> =
                serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
            Ok(tasks
                .iter()
                .map(|t| t["annotations"].as_array().map_or(0, Vec::len))
                .sum())
        };
        exports.push(export_result(label, downloaded, count, annotate.ratings));
    }

    eprintln!(
        "Label Studio: {} raters for {} s on {} tasks",
        opts.raters, opts.seconds, opts.load_tasks
    );
    let load_project = ls_project(ls, "load").await;
    let (_, stored, problem) = ls_import(
        ls,
        &load_project,
        ls_tasks(&tasks(opts.load_tasks, 200)),
        opts.load_tasks,
    )
    .await;
    if let Some(problem) = problem {
        eprintln!("Label Studio: the load project has {stored} tasks: {problem}");
    }
    let queue = Queue::label_studio(ls, &load_project);
    let deadline = Instant::now() + Duration::from_secs_f64(opts.seconds);
    let locked = ls.locked();
    let mut load = rate(&queue, &clients[..opts.raters], Until::Deadline(deadline)).await;
    load.locked = Some(ls.locked() - locked);

    Results {
        import,
        accounts_seconds,
        annotate,
        exports,
        load,
        duplicates,
    }
}

// ---------------------------------------------------------------------------------------
// The report.

fn percentiles(samples: &[f64]) -> Option<Stats> {
    (!samples.is_empty()).then(|| stats(samples.to_vec()))
}

fn ms(stats: &Option<Stats>, pick: fn(&Stats) -> f64) -> String {
    stats
        .as_ref()
        .map_or("n/a".into(), |s| format!("{:.1} ms", pick(s)))
}

/// How many times more `verdict` does than `other` (both "more is better").
fn times(verdict: f64, other: f64) -> String {
    if other > 0.0 && verdict > 0.0 {
        format!("{:.1}×", verdict / other)
    } else {
        "n/a".into()
    }
}

fn errors(run: &Run) -> String {
    if run.errors.is_empty() {
        return "0".into();
    }
    let kinds: Vec<String> = run
        .errors
        .iter()
        .map(|(kind, n)| format!("{n} × {}", kind.replace('|', "/")))
        .collect();
    format!("{} ({})", run.error_count(), kinds.join("; "))
}

fn check(problem: &Option<String>) -> String {
    problem
        .as_deref()
        .map_or("ok".into(), |p| p.replace('|', "/"))
}

fn locked(n: Option<usize>) -> String {
    n.map_or("–".into(), |n| n.to_string())
}

fn report(opts: &Options, v: &Results, l: &Results, ls: &LabelStudioInfo) -> String {
    let mut md = String::new();
    let both = [("verdict", v), ("Label Studio", l)];
    let _ = writeln!(md, "## Compared with Label Studio\n");
    let _ = writeln!(
        md,
        "Measured on {} by `{}`, after installing Label \
         Studio {} with `{INSTALL}`. The benchmark starts each server as its own process on loopback, one after \
         the other, and drives both with the same client code from the same machine. verdict runs as \
         `verdict serve` on a fresh SQLite database (release build). Label Studio runs as `label-studio start \
         --no-browser --internal-host 127.0.0.1 --port PORT --data-dir FRESH_DIR --username … --password … \
         --user-token … --enable-legacy-api-token`, that is out of the box: the server `label-studio start` runs \
         (Django's threaded development server) and its default SQLite database in the data folder, nothing \
         tuned; it was answering {:.0} s after starting (first start: it creates its database).\n",
        machine(),
        ls.command,
        ls.version,
        ls.startup_seconds,
    );
    let _ = writeln!(
        md,
        "Both get the same generated tasks (a prompt and two answers) and the same answers. Label Studio gets \
         each JSON Lines record as a task's `data`, a labeling configuration equivalent to verdict's form \
         (choices for executability, instruction following and correctness of A and of B, a 1-7 rating for the \
         side-by-side score, a text area for its explanation), and annotations carrying the same values as \
         verdict's submit.\n"
    );

    let _ = writeln!(md, "### Import\n");
    let _ = writeln!(
        md,
        "{} tasks of about 6 KB in one HTTP upload, timed until they are stored: verdict `POST /api/v1/batches` \
         (JSON Lines; it answers once they are committed), Label Studio `POST /api/projects/{{id}}/import` (the \
         same records as a JSON array of tasks; its community edition stores them before answering with their \
         count, and were it to answer first, the clock would run until the project's task count is {}). The \
         stored count is read back from each tool afterwards.\n",
        opts.tasks, opts.tasks
    );
    let _ = writeln!(
        md,
        "| | tasks stored | data | time | throughput | server peak memory | \"database is locked\", retried | check |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for (name, r) in both {
        let i = &r.import;
        let _ = writeln!(
            md,
            "| {name} | {} | {:.1} MB | {:.2} s | {:.1} MB/s | {:.0} MiB | {} | {} |",
            i.stored,
            i.megabytes,
            i.seconds,
            i.megabytes / i.seconds,
            i.peak_mib,
            locked(i.locked),
            check(&i.problem)
        );
    }
    let _ = writeln!(
        md,
        "| **verdict / Label Studio** | | | | **{} faster** | | | |\n",
        times(l.import.seconds, v.import.seconds)
    );

    let _ = writeln!(md, "### Concurrent raters\n");
    let _ = writeln!(
        md,
        "{} simulated raters, each with its own account, token and connection, each taking the next task and \
         submitting it in a loop for {} s on a project of {} tasks of about 200 bytes (one rating per task): \
         verdict `POST /api/v1/batches/{{id}}/next` then `POST /api/v1/assignments/{{id}}/submit`, Label Studio \
         `GET /api/projects/{{id}}/next/` then `POST /api/tasks/{{id}}/annotations/`. Errors are answers other \
         than success, and requests without an answer after {} s. The throughput counts successful submits \
         over the whole run, including the wait for requests still under way at the end.\n",
        opts.raters,
        opts.seconds,
        opts.load_tasks,
        REQUEST_TIMEOUT.as_secs(),
    );
    let _ = writeln!(
        md,
        "| | raters | ratings | throughput | next p50 | next p99 | submit p50 | submit p99 | errors | \"database is locked\", retried |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    for (name, r) in both {
        let run = &r.load;
        let (next, submit) = (percentiles(&run.next_ms), percentiles(&run.submit_ms));
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {:.1} ratings/s | {} | {} | {} | {} | {} | {} |",
            run.raters,
            run.ratings,
            run.rate(),
            ms(&next, |s| s.p50),
            ms(&next, |s| s.p99),
            ms(&submit, |s| s.p50),
            ms(&submit, |s| s.p99),
            errors(run),
            locked(run.locked),
        );
    }
    let faster = |pick: fn(&Stats) -> f64, of: fn(&Run) -> &Vec<f64>| match (
        percentiles(of(&v.load)),
        percentiles(of(&l.load)),
    ) {
        (Some(vs), Some(ls)) => format!("{} faster", times(pick(&ls), pick(&vs))),
        _ => "n/a".into(),
    };
    let _ = writeln!(
        md,
        "| **verdict / Label Studio** | | | **{} the throughput** | {} | {} | {} | {} | | |\n",
        times(v.load.rate(), l.load.rate()),
        faster(|s| s.p50, |r| &r.next_ms),
        faster(|s| s.p99, |r| &r.next_ms),
        faster(|s| s.p50, |r| &r.submit_ms),
        faster(|s| s.p99, |r| &r.submit_ms),
    );
    for (name, r) in both {
        if r.load.ran_out {
            let _ = writeln!(
                md,
                "{name}'s raters ran out of tasks before the time was up.\n"
            );
        }
    }

    let _ = writeln!(md, "### Export\n");
    let _ = writeln!(
        md,
        "First {} raters submit {} ratings on the imported tasks, each taking the next task and submitting it \
         until that many have succeeded. Then one full export of them as JSON and as CSV, timed to the last \
         byte, each tool's own export over its API: verdict `GET /api/v1/batches/{{id}}/export?format=jsonl|csv` \
         (one row per rating, answers without the task text), Label Studio \
         `GET /api/projects/{{id}}/export?exportType=JSON|CSV` (JSON: an array of tasks, each with its data and \
         annotations; CSV: a row per annotation with the task's data). Rows are annotations (verdict's lines \
         and records, the annotations in Label Studio's JSON and the records of its CSV); the check compares \
         them with the ratings submitted.\n",
        opts.annotation_raters, opts.annotations
    );
    let _ = writeln!(
        md,
        "| | ratings submitted | time | throughput | errors | \"database is locked\", retried |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for (name, r) in both {
        let a = &r.annotate;
        let stopped = if a.gave_up {
            " (stopped: too many errors)"
        } else if a.ran_out {
            " (ran out of tasks)"
        } else {
            ""
        };
        let _ = writeln!(
            md,
            "| {name} | {}{stopped} | {:.1} s | {:.1} ratings/s | {} | {} |",
            a.ratings,
            a.seconds,
            a.rate(),
            errors(a),
            locked(a.locked),
        );
    }
    let _ = writeln!(
        md,
        "| **verdict / Label Studio** | | | **{} the throughput** | | |\n",
        times(v.annotate.rate(), l.annotate.rate())
    );
    let _ = writeln!(
        md,
        "| export | verdict rows | size | time | throughput | Label Studio rows | size | time | throughput | verdict / Label Studio | check |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    for (ve, le) in v.exports.iter().zip(&l.exports) {
        let (vr, lr) = (ve.rows as f64 / ve.seconds, le.rows as f64 / le.seconds);
        let problems: Vec<String> = [("verdict", &ve.problem), ("Label Studio", &le.problem)]
            .into_iter()
            .filter(|(_, p)| p.is_some())
            .map(|(name, p)| format!("{name}: {}", check(p)))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} MB | {:.2} s | {vr:.0} rows/s | {} | {:.1} MB | {:.2} s | {lr:.0} rows/s | **{} faster** | {} |",
            ve.label,
            ve.rows,
            ve.megabytes,
            ve.seconds,
            le.rows,
            le.megabytes,
            le.seconds,
            times(vr, lr),
            if problems.is_empty() {
                "ok".into()
            } else {
                problems.join("; ")
            }
        );
    }
    let _ = writeln!(md);

    let _ = writeln!(md, "### Notes\n");
    let _ = writeln!(
        md,
        "- Label Studio {} takes its users' API tokens (`Authorization: Token …`) only where the organisation \
         enables legacy tokens, hence `--enable-legacy-api-token`; its newer personal access tokens are JWT \
         refresh tokens a client has to exchange for short-lived access tokens.",
        ls.version
    );
    let _ = writeln!(
        md,
        "- Its community edition has no roles: every rater is an ordinary member of its one organisation, made \
         through its sign-up form (`/user/signup/`), with the token read from `/api/current-user/token` in that \
         session. Making {} accounts, {} at a time, took verdict {:.1} s (`POST /api/v1/users` and \
         `/api/v1/tokens`) and Label Studio {:.1} s; not part of any timing.",
        opts.raters.max(opts.annotation_raters),
        ACCOUNT_CONCURRENCY,
        v.accounts_seconds,
        l.accounts_seconds,
    );
    let _ = writeln!(
        md,
        "- On SQLite, Label Studio answers a request that fails with \"database is locked\" by running it again \
         after a pause (`DatabaseIsLockedRetryMiddleware`: 1 s, then 1.5 times longer each time, up to 15 \
         times), so lock contention shows up as latency rather than as errors; the tables count those failed \
         attempts from its log."
    );
    if let Some((same, different)) = l.duplicates
        && same + different > 0
    {
        let _ = writeln!(
            md,
            "- Label Studio stored more than one annotation on {} of the exported tasks although the project asks \
             for one ({same} by the same rater twice, {different} by different raters); they count as rows.",
            same + different
        );
    }
    let _ = writeln!(
        md,
        "- Label Studio accepts an annotation without checking it against the labeling configuration (an \
         unknown field or choice is stored as sent); verdict checks every answer against the rubric."
    );
    let _ = writeln!(
        md,
        "- Label Studio, as installed, sends its errors to Sentry and asks PyPI for its latest version at start; \
         from a machine without other internet access the Sentry reports fail (and are retried) in the \
         background."
    );
    md
}

/// `cargo bench` with this run's arguments (the ones that change what is measured) and
/// the Label Studio executable it used.
fn command_line(bin: &Path) -> String {
    let mut args = vec![
        "cargo bench --bench labelstudio -- --label-studio".to_owned(),
        bin.display().to_string(),
    ];
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        match arg.as_str() {
            "--bench" => {}
            "--output" | "--label-studio" | "--label-studio-log" => {
                given.next();
            }
            _ => args.push(arg),
        }
    }
    args.join(" ")
}

struct LabelStudioInfo {
    /// The command line of this run, as someone would type it.
    command: String,
    version: String,
    startup_seconds: f64,
}

fn main() {
    let opts = options();
    let Some(bin) = find_executable(&opts.label_studio) else {
        eprintln!(
            "Label Studio was not found at {:?}.\n\
             Install it outside the repository with\n\n    {INSTALL}\n\n\
             then run\n\n    {COMMAND}\n\n\
             (or set LABEL_STUDIO_BIN to the label-studio executable).",
            opts.label_studio
        );
        std::process::exit(2);
    };
    assert!(
        opts.raters >= opts.annotation_raters.max(1),
        "--raters must be at least --annotation-raters"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let verdict = runtime.block_on(bench_verdict(&opts));

    eprintln!("Label Studio: starting {}", bin.display());
    let started = Instant::now();
    let ls = runtime.block_on(LabelStudio::start(&bin, opts.label_studio_log.as_deref()));
    let info = LabelStudioInfo {
        command: command_line(&bin),
        version: ls.version.clone(),
        startup_seconds: started.elapsed().as_secs_f64(),
    };
    // Stop Label Studio even if a step panics.
    let label_studio = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(bench_label_studio(&opts, &ls))
    }));
    ls.stop();
    let label_studio = match label_studio {
        Ok(results) => results,
        Err(panic) => std::panic::resume_unwind(panic),
    };

    let md = report(&opts, &verdict, &label_studio, &info);
    common::write_section(&opts.output, "label-studio", &md);
    println!("{md}");
}
