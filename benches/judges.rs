//! Judge-run throughput: the real `verdict` binary runs a judge over a pairwise batch
//! against a scripted OpenAI-compatible server that answers at once, with 64 requests in
//! flight, so what is measured is verdict's own work per call (render the prompt, send it,
//! read and store the answer, combine the two orders into a rating). Writes its section
//! of `BENCHMARKS.md`. Run with `cargo bench --bench judges` (`-- --quick` for a smoke
//! run; `BENCH_DATABASE_URL=postgres://...` adds PostgreSQL).
//!
//! With `-- --real-model` (and `LLAMA_SERVER`, `LLAMA_MODEL` naming a `llama-server` and
//! a GGUF model, as `.ci/llama-server` prints them) it measures instead how often a small
//! real model gives a readable answer with the settings README suggests, over 20
//! HumanEval-like tasks per built-in rubric (`benches/data/humaneval-like.jsonl`), and
//! writes that section.
//!
//! A measurement, never an assertion: nothing here fails because it is slow.

mod common;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::post;
use common::{Database, Server, has_flag, machine, persona, tasks, write_section};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Requests in flight at once.
const CONCURRENCY: usize = 64;

/// Answers every chat completion at once with a valid six-aspect verdict.
async fn scripted_server() -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(|Json(body): Json<Value>| async move {
            let content = json!({"rationale": "Both answers are right and equally clear.",
                "choices": {"helpfulness": "tie", "clarity": "tie", "factuality": "tie",
                            "depth": "tie", "engagement": "tie", "safety": "tie"}})
            .to_string();
            Json(json!({
                "id": "chatcmpl-bench", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960}
            }))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/v1")
}

/// The CPU time a process has used, in seconds (user and system, from /proc).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are the 14th and 15th fields of the line: 12th and 13th here.
    (ticks(11) + ticks(12)) / 100.0
}

/// Starts a run of `judge` over `batch` and polls it (every `poll`) until it is over:
/// the run's id and its last view.
async fn run_to_end(
    admin: &reqwest::Client,
    server: &Server,
    batch: &str,
    judge: &str,
    poll: Duration,
) -> (String, Value) {
    let run = admin
        .post(server.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .json(&json!({"judge": judge}))
        .send()
        .await
        .expect("run");
    assert_eq!(run.status(), StatusCode::ACCEPTED, "run refused");
    let run: Value = run.json().await.expect("JSON");
    let run = run["id"].as_str().expect("id").to_owned();
    loop {
        let view: Value = admin
            .get(server.url(&format!("/api/v1/judge-runs/{run}")))
            .send()
            .await
            .expect("run")
            .json()
            .await
            .expect("JSON");
        if view["status"] != "running" {
            return (run, view);
        }
        tokio::time::sleep(poll).await;
    }
}

struct RunResult {
    calls: u64,
    seconds: f64,
    cpu_seconds: f64,
    ratings: i64,
    peak_mib: f64,
}

async fn bench_run(database_url: Option<&str>, tasks_n: usize) -> RunResult {
    let db = Database::fresh(database_url).await;
    let admin = persona(&db, "admin", "admin");
    let server = Server::start(&db);
    let judge_url = scripted_server().await;
    let upload = admin
        .post(server.url("/api/v1/batches?name=judged&rubric=pairwise-aspects&randomize=true"))
        .header("content-type", "application/x-ndjson")
        .body(tasks(tasks_n, 2000))
        .send()
        .await
        .expect("upload");
    assert_eq!(upload.status(), StatusCode::CREATED, "upload refused");
    let batch: Value = upload.json().await.expect("JSON");
    let batch = batch["id"].as_str().expect("id").to_owned();
    let judge = admin
        .post(server.url("/api/v1/judges"))
        .json(
            &json!({"name": "bench", "base_url": judge_url, "model": "scripted",
                      "concurrency": CONCURRENCY, "requests_per_minute": 1_000_000}),
        )
        .send()
        .await
        .expect("judge");
    assert_eq!(judge.status(), StatusCode::CREATED, "judge refused");
    let pid = server.child.id();
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let (_, view) = run_to_end(&admin, &server, &batch, "bench", Duration::from_millis(20)).await;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    let metrics: Value = admin
        .get(server.url(&format!("/api/v1/batches/{batch}/metrics")))
        .send()
        .await
        .expect("metrics")
        .json()
        .await
        .expect("JSON");
    let result = RunResult {
        calls: view["answered"].as_u64().unwrap_or(0),
        seconds,
        cpu_seconds: cpu,
        ratings: metrics["judges"]["bench"]["rated"].as_i64().unwrap_or(0),
        peak_mib: server.peak_rss_mib(),
    };
    server.stop();
    db.drop_it().await;
    result
}

/// The settings README gives for trying a judge on a local model.
fn readme_settings() -> Value {
    json!({"temperature": 0, "seed": 7, "max_tokens": 700, "structured_output": true,
           "concurrency": 2})
}

/// `llama-server` on a free port, loaded; killed when dropped.
struct ModelServer(std::process::Child, String);

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn model_server() -> ModelServer {
    let server = std::env::var("LLAMA_SERVER").expect("LLAMA_SERVER (see .ci/llama-server)");
    let model = std::env::var("LLAMA_MODEL").expect("LLAMA_MODEL (see .ci/llama-server)");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = std::process::Command::new(server)
        .args([
            "-m",
            &model,
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-c", "8192", "-np", "2", "--no-webui"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start llama-server");
    let running = ModelServer(child, format!("http://127.0.0.1:{port}/v1"));
    let health = format!("http://127.0.0.1:{port}/health");
    let client = reqwest::Client::new();
    loop {
        if let Ok(r) = client.get(&health).send().await
            && r.status() == StatusCode::OK
        {
            return running;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One rubric's run against the real model: calls, how they were read, and the time.
struct Readable {
    rubric: &'static str,
    tasks: usize,
    calls: i64,
    answered: i64,
    unparsed: i64,
    failed: i64,
    seconds: f64,
    /// Why calls were not read: the first status of each that is not `parsed`.
    why: std::collections::BTreeMap<String, usize>,
}

async fn readable_share() -> Vec<Readable> {
    let model = model_server().await;
    let db = Database::fresh(None).await;
    let admin = persona(&db, "admin", "admin");
    let server = Server::start(&db);
    let mut body = readme_settings();
    body["name"] = json!("smollm");
    body["base_url"] = json!(model.1);
    body["model"] = json!("smollm2");
    let judge = admin
        .post(server.url("/api/v1/judges"))
        .json(&body)
        .send()
        .await
        .expect("judge");
    assert_eq!(judge.status(), StatusCode::CREATED, "judge refused");
    let pairs = include_str!("data/humaneval-like.jsonl");
    let singles: String = pairs
        .lines()
        .map(|line| {
            let task: Value = serde_json::from_str(line).expect("a task");
            let single = json!({"external_id": task["external_id"], "prompt": task["prompt"],
                                "response": task["response_a"], "model": task["model_a"]});
            format!("{single}\n")
        })
        .collect();
    let mut out = Vec::new();
    for (rubric, tasks) in [
        ("additive-5", &singles),
        ("pairwise-aspects", &pairs.to_owned()),
        ("blackhat", &pairs.to_owned()),
    ] {
        let upload = admin
            .post(server.url(&format!(
                "/api/v1/batches?name=real-{rubric}&rubric={rubric}"
            )))
            .header("content-type", "application/x-ndjson")
            .body(tasks.clone())
            .send()
            .await
            .expect("upload");
        assert_eq!(upload.status(), StatusCode::CREATED, "upload refused");
        let batch: Value = upload.json().await.expect("JSON");
        let batch = batch["id"].as_str().expect("id").to_owned();
        let started = Instant::now();
        let (run, view) =
            run_to_end(&admin, &server, &batch, "smollm", Duration::from_secs(1)).await;
        let seconds = started.elapsed().as_secs_f64();
        let calls: Value = admin
            .get(server.url(&format!(
                "/api/v1/judge-runs/{run}/calls?status=unparsed&limit=1000"
            )))
            .send()
            .await
            .expect("calls")
            .json()
            .await
            .expect("JSON");
        let mut why = std::collections::BTreeMap::new();
        for call in calls["calls"].as_array().into_iter().flatten() {
            let first = call["fields"]
                .as_object()
                .into_iter()
                .flatten()
                .find(|(_, s)| *s != "parsed")
                .map(|(path, status)| {
                    let status = status.as_str().unwrap_or_default();
                    let status = status.split(" (has").next().unwrap_or(status);
                    format!("{path}: {status}")
                })
                .unwrap_or_default();
            *why.entry(first).or_insert(0) += 1;
        }
        let count = |key: &str| view[key].as_i64().unwrap_or(0);
        eprintln!("{rubric}: {view}");
        out.push(Readable {
            rubric,
            tasks: tasks.lines().count(),
            calls: count("calls"),
            answered: count("answered"),
            unparsed: count("unparsed"),
            failed: count("failed"),
            seconds,
            why,
        });
    }
    server.stop();
    db.drop_it().await;
    out
}

fn real_model() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let results = runtime.block_on(readable_share());
    let mut md = String::new();
    let _ = writeln!(md, "## Judges on a real model\n");
    let _ = writeln!(
        md,
        "Measured by `cargo bench --bench judges -- --real-model` (with `eval \"$(.ci/llama-server)\"`) on {}. \
         SmolLM2-135M-Instruct (the smallest instruction-tuned model there is, Q8_0) served by llama.cpp's \
         `llama-server` on the same 2 cores, asked with README's settings ({}) and the built-in template \
         of each rubric, over 20 HumanEval-like tasks (`benches/data/humaneval-like.jsonl`: a small Python \
         function to write, one response right and one wrong, sides alternating). A pair rubric is asked in \
         both orders. *Readable* is a call whose every answer was read and valid by the rubric's rules \
         (`answered`); the others are `unparsed`, with why. Whether the answers are *right* is another \
         question: this model's are mostly not.\n",
        machine(),
        readme_settings()
    );
    let _ = writeln!(
        md,
        "| rubric | tasks | calls | readable | unparsed | failed | readable share | time | not read, why |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    for r in &results {
        let why = if r.why.is_empty() {
            "-".to_owned()
        } else {
            r.why
                .iter()
                .map(|(k, n)| format!("{n} × `{k}`"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} | {:.0}% | {:.0} s | {why} |",
            r.rubric,
            r.tasks,
            r.calls,
            r.answered,
            r.unparsed,
            r.failed,
            100.0 * r.answered as f64 / r.calls.max(1) as f64,
            r.seconds
        );
    }
    write_section("BENCHMARKS.md", "judges-model", &md);
    println!("{md}");
}

fn main() {
    if has_flag("--real-model") {
        real_model();
        return;
    }
    let quick = has_flag("--quick");
    let tasks_n = if quick { 200 } else { 5_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut backends: Vec<(&str, Option<String>)> = vec![("SQLite", None)];
    if let Ok(url) = std::env::var("BENCH_DATABASE_URL") {
        backends.push(("PostgreSQL", Some(url)));
    }
    let mut rows = String::new();
    for (backend, url) in &backends {
        eprintln!("judge run: {tasks_n} pairwise tasks, {CONCURRENCY} in flight ({backend})");
        let r = runtime.block_on(bench_run(url.as_deref(), tasks_n));
        let _ = writeln!(
            rows,
            "| {backend} | {} | {} | {:.2} s | {:.0} calls/s | {:.2} ms | {:.2} ms | {:.0} MiB |",
            r.calls,
            r.ratings,
            r.seconds,
            r.calls as f64 / r.seconds,
            1000.0 * r.seconds / r.calls as f64,
            1000.0 * r.cpu_seconds / r.calls as f64,
            r.peak_mib
        );
    }
    let command = if quick { " -- --quick" } else { "" };
    let mut md = String::new();
    let _ = writeln!(md, "## Judge runs\n");
    let _ = writeln!(
        md,
        "Measured by `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench judges{command}` \
         on {}. A judge over a batch of {tasks_n} pairwise tasks (each asked in both orders), {CONCURRENCY} requests in \
         flight, against a scripted OpenAI-compatible server in the benchmark's process that answers at once: the \
         time is verdict's own per call (render the prompt, send it, read and store the answer, rate the task once \
         both orders are in), on the same 2 cores as the scripted server and the poller.\n",
        machine()
    );
    let _ = writeln!(
        md,
        "| database | calls | judge ratings | time | throughput | wall time per call | server CPU per call | server peak memory |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let _ = write!(md, "{rows}");
    write_section("BENCHMARKS.md", "judges", &md);
    println!("{md}");
}
