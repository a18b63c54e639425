//! Judge-run throughput: the real `verdict` binary runs a judge over a pairwise batch
//! against a scripted OpenAI-compatible server that answers at once, with 64 requests in
//! flight, so what is measured is verdict's own work per call (render the prompt, send it,
//! read and store the answer, combine the two orders into a rating). Writes its section
//! of `BENCHMARKS.md`. Run with `cargo bench --bench judges` (`-- --quick` for a smoke
//! run; `BENCH_DATABASE_URL=postgres://...` adds PostgreSQL).
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
    let run = admin
        .post(server.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .json(&json!({"judge": "bench"}))
        .send()
        .await
        .expect("run");
    assert_eq!(run.status(), StatusCode::ACCEPTED, "run refused");
    let run: Value = run.json().await.expect("JSON");
    let run = run["id"].as_str().expect("id").to_owned();
    let view = loop {
        let view: Value = admin
            .get(server.url(&format!("/api/v1/judge-runs/{run}")))
            .send()
            .await
            .expect("run")
            .json()
            .await
            .expect("JSON");
        if view["status"] == "finished" {
            break view;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
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

fn main() {
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
