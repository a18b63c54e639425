//! LLM judges: configured through the API, run over batches against a scripted
//! OpenAI-compatible server (the faults a real model server cannot be made to produce on
//! demand), every call stored, outputs read strictly, pairs asked in both orders, runs
//! paused, resumed, and taken over after the server is killed; judge ratings kept apart
//! from the human figures and measured against them. The same path against a real
//! `llama-server` is `judge_model.rs`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{
    Fixture, Go, Persona, TestApp, TestDb, db_test, json_with, jsonl, page_text, pair_task,
    single_task,
};
use crate::judge_server::{Reply, ScriptedJudge, prefers_good, shown_first};

/// The app with quick retries (20 ms at first) and a short lease, so the fault tests
/// spend their time on what they test.
pub struct QuickApp(pub TestApp);

impl Fixture for QuickApp {
    async fn setup(backend: Backend) -> Option<Self> {
        let config = Config {
            judge_retry_delay: Duration::from_millis(20),
            judge_lease: Duration::from_secs(2),
            ..Config::default()
        };
        TestApp::with_config(backend, config).await.map(Self)
    }

    async fn teardown(self) {
        self.0.teardown().await;
    }
}

/// Configures a judge named `name` at `base_url`, with more settings from `extra`.
pub async fn add_judge(
    app: &TestApp,
    admin: &Persona,
    name: &str,
    base_url: &str,
    extra: Value,
) -> String {
    let mut body = json!({"name": name, "base_url": base_url, "model": "scripted"});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let response = admin
        .api
        .post(app.url("/api/v1/judges"))
        .json(&body)
        .go()
        .await;
    json_with(response, StatusCode::CREATED).await["id"]
        .as_str()
        .expect("judge id")
        .to_owned()
}

/// Starts a run of `judge` over `batch`; returns its id.
pub async fn start_run(app: &TestApp, admin: &Persona, batch: &str, judge: &str) -> String {
    let response = admin
        .api
        .post(app.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .json(&json!({ "judge": judge }))
        .go()
        .await;
    let started = json_with(response, StatusCode::ACCEPTED).await;
    assert_eq!(started["status"], "running");
    started["id"].as_str().expect("run id").to_owned()
}

/// Waits (at most two minutes: the work takes as long as it takes) until the run has
/// `status`; returns the run.
pub async fn wait_for(app: &TestApp, who: &Persona, run: &str, status: &str) -> Value {
    wait_for_within(app, who, run, status, Duration::from_secs(120)).await
}

/// [`wait_for`], for at most `limit`.
pub async fn wait_for_within(
    app: &TestApp,
    who: &Persona,
    run: &str,
    status: &str,
    limit: Duration,
) -> Value {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let response = who
            .api
            .get(app.url(&format!("/api/v1/judge-runs/{run}")))
            .go()
            .await;
        let view = json_with(response, StatusCode::OK).await;
        if view["status"] == status {
            return view;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "run never became {status}: {view}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Posts `action` (pause, resume or cancel) to a run as `who`.
async fn run_action(app: &TestApp, who: &Persona, run: &str, action: &str) -> reqwest::Response {
    who.api
        .post(app.url(&format!("/api/v1/judge-runs/{run}/{action}")))
        .go()
        .await
}

/// The batch's export as JSON Lines, a row each.
pub async fn export_rows(app: &TestApp, who: &Persona, batch: &str) -> Vec<Value> {
    let export = who
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format=jsonl")))
        .go()
        .await;
    assert_eq!(export.status(), StatusCode::OK);
    export
        .text()
        .await
        .expect("export")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

/// Every call of a run, in task order (optionally of one status).
pub async fn calls(app: &TestApp, who: &Persona, run: &str, status: Option<&str>) -> Vec<Value> {
    let query = status.map_or(String::new(), |s| format!("?status={s}"));
    let response = who
        .api
        .get(app.url(&format!("/api/v1/judge-runs/{run}/calls{query}")))
        .go()
        .await;
    let page = json_with(response, StatusCode::OK).await;
    page["calls"].as_array().expect("calls").clone()
}

/// Pairwise tasks `(id, response A, response B)` that ask to sum a list, A by model
/// alpha and B by beta.
pub fn pair_tasks(tasks: &[(&str, &str, &str)]) -> String {
    jsonl(tasks.iter().map(|(id, a, b)| {
        pair_task(
            id,
            &format!("Task {id}: sum a list."),
            [a, b],
            ["alpha", "beta"],
        )
    }))
}

/// Single-response tasks `(id, response)` that ask to explain recursion, by model alpha.
fn single_tasks(tasks: &[(&str, &str)]) -> String {
    jsonl(tasks.iter().map(|(id, response)| {
        single_task(
            id,
            &format!("Task {id}: explain recursion."),
            response,
            "alpha",
        )
    }))
}

/// A human's answers to a pairwise task as `next` showed it: helpfulness `a` where
/// response A is marked GOOD, else `b`, and a tie on every other aspect.
pub fn humans_prefer_good(next: &Value) -> Value {
    let shown_a = next["task"]["response_a"].as_str().unwrap_or("");
    let help = if shown_a.contains("GOOD") { "a" } else { "b" };
    json!({"helpfulness": help, "clarity": "tie", "factuality": "tie",
        "depth": "tie", "engagement": "tie", "safety": "tie",
        "rationale": "Read both and ran the code of each."})
}

async fn a_pair_is_asked_in_both_orders_and_mapped_back(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let scripted = ScriptedJudge::start(prefers_good).await;
    let batch = app
        .batch(
            &admin,
            "orders",
            &pair_tasks(&[
                ("p1", "GOOD: sum(xs)", "a loop that skips the last item"),
                ("p2", "a loop that skips the last item", "GOOD: sum(xs)"),
                // A response that spells a placeholder is sent as written.
                (
                    "p3",
                    "print('{$candidate_B}')",
                    "GOOD: print the text {$instruction}",
                ),
            ]),
            "&rubric=pairwise-aspects",
        )
        .await;
    assert_eq!(app.rate_all(&rater, &batch, humans_prefer_good).await, 3);
    let judge = add_judge(
        app,
        &admin,
        "scripted",
        &scripted.base_url,
        json!({"concurrency": 2}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "scripted").await;
    let view = wait_for(app, &admin, &run, "finished").await;
    assert_eq!(
        (view["tasks"].as_i64(), view["calls"].as_i64()),
        (Some(3), Some(6))
    );
    assert_eq!(
        (view["answered"].as_i64(), view["unparsed"].as_i64()),
        (Some(6), Some(0))
    );
    assert_eq!(view["tokens"]["prompt"], 600);

    // Each task was asked twice, once with each response shown first.
    let seen = scripted.seen();
    assert_eq!(seen.len(), 6);
    for id in ["p1", "p2", "p3"] {
        let asked: Vec<&str> = seen
            .iter()
            .map(|s| s.prompt())
            .filter(|p| p.contains(&format!("Task {id}:")))
            .map(shown_first)
            .collect();
        assert_eq!(asked.len(), 2, "{id}");
        assert!(
            asked.iter().filter(|first| first.contains("GOOD")).count() == 1,
            "{id}: {asked:?}"
        );
    }
    let p3 = seen
        .iter()
        .find(|s| s.prompt().contains("Task p3:"))
        .expect("p3 asked");
    assert!(
        p3.prompt().contains("print('{$candidate_B}')"),
        "{}",
        p3.prompt()
    );
    assert!(p3.prompt().contains("print the text {$instruction}"));
    assert!(
        seen.iter().all(|s| s.authorization.is_none()),
        "no key was configured"
    );

    let stored = calls(app, &admin, &run, None).await;
    assert_eq!(stored.len(), 6);
    for call in &stored {
        assert_eq!(call["status"], "answered", "{call}");
        assert_eq!(call["fields"]["helpfulness"], "parsed");
        assert_eq!(call["model"], "scripted");
        assert_eq!(call["prompt_sha256"].as_str().map(str::len), Some(64));
        assert!(
            call["raw_output"]
                .as_str()
                .unwrap_or("")
                .contains("rationale")
        );
    }
    let (straight, turned): (Vec<&Value>, Vec<&Value>) =
        stored.iter().partition(|c| c["swapped"] == false);
    assert_eq!((straight.len(), turned.len()), (3, 3));
    // As shown, the judge said A for p1 straight and B for p1 turned: both the task's A.
    let p1: Vec<&Value> = stored.iter().filter(|c| c["external_id"] == "p1").collect();
    let shown: Vec<(&Value, &Value)> = p1
        .iter()
        .map(|c| (&c["swapped"], &c["answers"]["helpfulness"]))
        .collect();
    assert_eq!(
        shown,
        vec![(&json!(false), &json!("a")), (&json!(true), &json!("b"))]
    );

    // The judge's ratings, in the task's own orientation, marked as a judge's.
    let rows = export_rows(app, &admin, &batch).await;
    let judged: HashMap<&str, &Value> = rows
        .iter()
        .filter(|r| r["rater_kind"] == "judge")
        .map(|r| (r["external_id"].as_str().unwrap(), r))
        .collect();
    assert_eq!(judged.len(), 3, "{rows:?}");
    assert_eq!(judged["p1"]["answers"]["helpfulness"], "a");
    assert_eq!(judged["p2"]["answers"]["helpfulness"], "b");
    assert_eq!(judged["p3"]["answers"]["helpfulness"], "b");
    assert_eq!(judged["p1"]["rater"], "judge:scripted");
    assert_eq!(
        rows.iter().filter(|r| r["rater_kind"] == "human").count(),
        3
    );

    // Human metrics count the three human ratings only; the judge is measured beside.
    let metrics = app.metrics(&admin, &batch).await;
    assert_eq!(metrics["counts"]["ratings"], 3, "{metrics}");
    assert_eq!(metrics["helpfulness"]["n"], 3);
    let raters: Vec<&Value> = metrics["raters"].as_array().unwrap().iter().collect();
    assert_eq!(raters.len(), 1);
    assert_eq!(raters[0]["rater"], rater.username);
    let j = &metrics["judges"]["scripted"];
    assert_eq!(j["coverage"], 1.0, "{j}");
    assert_eq!(j["rated"], 3);
    assert_eq!(j["position_consistency"]["value"], 1.0);
    let help = &j["fields"]["helpfulness"];
    assert_eq!(help["n"], 3);
    assert_eq!(help["agreement"], 1.0);
    assert_eq!(help["raters"][&rater.username]["agreement"], 1.0);
    // The lead sees the same.
    let lead = app.lead().await;
    let led = lead
        .api
        .get(app.url(&format!("/api/v1/judge-runs/{run}")))
        .go()
        .await;
    assert_eq!(led.status(), StatusCode::OK);
    // A rater sees no run, and no judge rating enters the review queue.
    let refused = rater
        .api
        .get(app.url(&format!("/api/v1/judge-runs/{run}")))
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let queue = lead.api.get(app.url("/api/v1/review")).go().await;
    let queue = json_with(queue, StatusCode::OK).await;
    assert!(!queue.to_string().contains("judge:scripted"), "{queue}");
    let _ = judge;

    // The side-by-side view shows the judge's answer and raw outputs beside the raters'.
    let side = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/tasks/p2")))
        .go()
        .await;
    let side = json_with(side, StatusCode::OK).await;
    assert_eq!(
        side["ratings"].as_array().map(Vec::len),
        Some(1),
        "raters only: {side}"
    );
    let beside = &side["judges"][0];
    assert_eq!(beside["judge"], "scripted");
    assert_eq!(beside["complete"], true);
    assert_eq!(beside["answers"]["helpfulness"], "b");
    assert_eq!(beside["fields"]["helpfulness"], "parsed");
    assert_eq!(beside["calls"].as_array().map(Vec::len), Some(2));
    assert!(
        beside["calls"][1]["raw_output"]
            .as_str()
            .unwrap()
            .contains("\"helpfulness\":\"A\"")
    );
    let browser = lead.browser_for(app).await;
    let page =
        crate::helpers::page_text(app, &browser, &format!("/batches/{batch}/tasks/p2")).await;
    assert!(page.contains("LLM judges"), "{page}");
    assert!(page.contains("a whole rating"));
    assert!(page.contains("B first: answered (raw output)"));
}
db_test!(a_pair_is_asked_in_both_orders_and_mapped_back: TestApp);

/// Outputs by marker in the task's response: each exercises one way of reading.
fn additive_outputs(body: &Value, _: usize) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
    let marker = ["PLAIN", "CONFLICT", "NOSCORE", "CUT", "FENCED", "RANGE"]
        .into_iter()
        .find(|m| prompt.contains(&format!("<response>{m}")))
        .unwrap_or("");
    match marker {
        "PLAIN" => Reply::text("score: 3\nIt answers the basic question usefully."),
        "CONFLICT" => Reply::text("score: 2\nOn reflection, more.\nscore: 4"),
        "NOSCORE" => Reply::text("A fine answer, I would say."),
        "CUT" => Reply::Content(
            "score: 4\nThe response is well organised and".into(),
            "length",
        ),
        "FENCED" => Reply::text(
            "Here it is:\n```json\n{\"score\": 5, \"justification\": \"Expert, exact and well organised.\"}\n```\nDone.",
        ),
        _ => Reply::text("score: 7\nBeyond the scale."),
    }
}

async fn unparsed_outputs_never_count_as_a_score(app: &TestApp) {
    let admin = app.admin().await;
    let scripted = ScriptedJudge::start(additive_outputs).await;
    let batch = app
        .batch(
            &admin,
            "additive",
            &single_tasks(&[
                ("s1", "PLAIN answer"),
                ("s2", "CONFLICT answer"),
                ("s3", "NOSCORE answer"),
                ("s4", "CUT answer"),
                ("s5", "FENCED answer"),
                ("s6", "RANGE answer"),
            ]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    add_judge(app, &admin, "scorer", &scripted.base_url, json!({})).await;
    let run = start_run(app, &admin, &batch, "scorer").await;
    let view = wait_for(app, &admin, &run, "finished").await;
    assert_eq!(
        (view["calls"].as_i64(), view["answered"].as_i64()),
        (Some(6), Some(2))
    );
    assert_eq!(
        (view["unparsed"].as_i64(), view["failed"].as_i64()),
        (Some(4), Some(0))
    );
    assert_eq!(scripted.seen().len(), 6, "one order for a single response");

    let unparsed = calls(app, &admin, &run, Some("unparsed")).await;
    let why: HashMap<&str, (&Value, &Value)> = unparsed
        .iter()
        .map(|c| {
            (
                c["external_id"].as_str().unwrap(),
                (&c["fields"]["relevant"], &c["raw_output"]),
            )
        })
        .collect();
    assert_eq!(why.len(), 4);
    assert_eq!(why["s2"].0, "conflicting");
    assert_eq!(why["s3"].0, "missing");
    assert_eq!(why["s4"].0, "truncated");
    assert_eq!(why["s6"].0, "invalid: 7 is not from 0 to 5");
    assert_eq!(
        why["s3"].1, "A fine answer, I would say.",
        "the raw output is kept"
    );
    for call in &unparsed {
        assert_eq!(call["answers"].get("score"), None, "{call}");
    }

    let stored: i64 = app
        .count("SELECT COUNT(*) FROM ratings WHERE rater_kind = 'judge'")
        .await;
    assert_eq!(stored, 2, "only whole answers are ratings");
    let rows = export_rows(app, &admin, &batch).await;
    let scores: HashMap<String, Value> = rows
        .iter()
        .map(|r| {
            (
                r["external_id"].as_str().unwrap().to_owned(),
                r["answers"]["score"].clone(),
            )
        })
        .collect();
    assert_eq!(scores.len(), 2, "{rows:?}");
    assert_eq!(scores["s1"], 3);
    assert_eq!(scores["s5"], 5);

    let metrics = app.metrics(&admin, &batch).await;
    assert_eq!(
        metrics["counts"]["ratings"], 0,
        "judge ratings are not human ratings"
    );
    let j = &metrics["judges"]["scorer"];
    assert_eq!(
        (j["answered"].as_u64(), j["unparsed"].as_u64()),
        (Some(2), Some(4))
    );
    assert_eq!(j["coverage"], 2.0 / 6.0);
    assert_eq!(j["fields"]["score"]["parsed"], 2);
    assert_eq!(j["fields"]["score"]["asked"], 6);
}
db_test!(unparsed_outputs_never_count_as_a_score: TestApp);

/// Fails each marked task's first request as its marker says, then answers.
fn faults() -> impl Fn(&Value, usize) -> Reply + Send + Sync {
    let tries: Mutex<HashMap<String, usize>> = Mutex::new(HashMap::new());
    move |body, _| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        let marker = ["R429", "R500", "SLOW", "R400"]
            .into_iter()
            .find(|m| prompt.contains(&format!("<response>{m}")))
            .unwrap_or("OK");
        let n = {
            let mut tries = tries.lock().expect("tries");
            let n = tries.entry(marker.to_owned()).or_default();
            *n += 1;
            *n
        };
        let answer = Reply::text("score: 2\nCovers part of the question.");
        match (marker, n) {
            ("R429", 1) => Reply::Status(429, Some("2")),
            ("R500", 1 | 2) => Reply::Status(500, None),
            ("SLOW", 1) => Reply::After(Duration::from_secs(4), Box::new(answer)),
            ("R400", _) => Reply::Status(400, None),
            _ => answer,
        }
    }
}

async fn calls_are_retried_honouring_retry_after(fixture: &QuickApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    let scripted = ScriptedJudge::start(faults()).await;
    let batch = app
        .batch(
            &admin,
            "faults",
            &single_tasks(&[
                ("f1", "R429 answer"),
                ("f2", "R500 answer"),
                ("f3", "SLOW answer"),
                ("f4", "R400 answer"),
            ]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    add_judge(
        app,
        &admin,
        "flaky",
        &scripted.base_url,
        json!({"timeout_s": 1, "concurrency": 4}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "flaky").await;
    let view = wait_for(app, &admin, &run, "finished").await;
    assert_eq!(
        (view["answered"].as_i64(), view["failed"].as_i64()),
        (Some(3), Some(1)),
        "{view}"
    );
    // Answers and a failure: the run finished, not failed, and keeps the latest error it
    // met (which one came last depends on the timing of the retries).
    assert_eq!(
        (&view["retrying"], &view["attempt"]),
        (&json!(false), &Value::Null)
    );
    let met = [
        "HTTP 429 Too Many Requests from the endpoint",
        "HTTP 500 Internal Server Error from the endpoint",
        "timed out waiting for the reply (none after 1 s, the judge's timeout_s)",
        "HTTP 400 Bad Request from the endpoint",
    ];
    assert!(
        met.iter().any(|e| view["last_error"] == *e),
        "the latest error is one the run met: {view}"
    );

    let stored: HashMap<String, Value> = calls(app, &admin, &run, None)
        .await
        .into_iter()
        .map(|c| (c["external_id"].as_str().unwrap().to_owned(), c))
        .collect();
    assert_eq!(stored["f1"]["attempts"], 2, "429 once, then answered");
    assert_eq!(stored["f2"]["attempts"], 3, "500 twice, then answered");
    assert_eq!(stored["f3"]["attempts"], 2, "timed out once, then answered");
    assert_eq!(stored["f4"]["status"], "failed");
    assert_eq!(stored["f4"]["attempts"], 1, "a 400 is not retried");
    assert!(
        stored["f4"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("HTTP 400")
    );

    // The retry after the 429 came no sooner than its Retry-After of 2 s, though the
    // backoff alone would have waited about 20 ms.
    let seen = scripted.seen();
    let r429: Vec<std::time::Instant> = seen
        .iter()
        .filter(|s| s.prompt().contains("<response>R429"))
        .map(|s| s.at)
        .collect();
    assert_eq!(r429.len(), 2);
    let waited = r429[1] - r429[0];
    assert!(waited >= Duration::from_secs(2), "retried after {waited:?}");
    let r500: Vec<std::time::Instant> = seen
        .iter()
        .filter(|s| s.prompt().contains("<response>R500"))
        .map(|s| s.at)
        .collect();
    assert_eq!(r500.len(), 3);

    // Resuming the finished run asks again only the call that failed.
    let resumed = run_action(app, &admin, &run, "resume").await;
    assert_eq!(resumed.status(), StatusCode::OK);
    wait_for(app, &admin, &run, "finished").await;
    let asked_again = scripted.seen().len() - seen.len();
    assert_eq!(asked_again, 1, "only the failed call is asked again");
}
db_test!(calls_are_retried_honouring_retry_after: QuickApp);

async fn a_run_against_a_failing_endpoint_says_it_retries_and_ends_failed(fixture: &QuickApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    let batch = app
        .batch(
            &admin,
            "down",
            &single_tasks(&[("d1", "PLAIN answer one"), ("d2", "PLAIN answer two")]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    // Down behind its proxy: every request answers 503, which is retried (a refused
    // port is not: see judge_endpoints.rs).
    let failing = ScriptedJudge::start(|_: &Value, _| Reply::Status(503, None)).await;
    let judge = add_judge(
        app,
        &admin,
        "down",
        &failing.base_url,
        json!({"concurrency": 1}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "down").await;

    // While its calls wait to be asked again, the run says so: the attempt each waits
    // for, and the error it met.
    let mut attempts = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + crate::durability::HANG;
    let view = loop {
        let response = admin
            .api
            .get(app.url(&format!("/api/v1/judge-runs/{run}")))
            .go()
            .await;
        let view = json_with(response, StatusCode::OK).await;
        if view["status"] != "running" {
            break view;
        }
        if view["retrying"] == true {
            let attempt = view["attempt"].as_i64().expect("the attempt");
            assert!((2..=6).contains(&attempt), "{view}");
            attempts.insert(attempt);
            assert_eq!(
                view["last_error"], "HTTP 503 Service Unavailable from the endpoint",
                "{view}"
            );
            assert!(view["last_error_at"].is_string(), "{view}");
        } else {
            assert_eq!(view["attempt"], Value::Null, "{view}");
        }
        assert_eq!(
            (view["answered"].as_i64(), view["unparsed"].as_i64()),
            (Some(0), Some(0))
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the run never ended: {view}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert!(
        attempts.len() >= 2,
        "the attempt was seen to go up: {attempts:?}"
    );

    // Nothing came of any call: the run failed, and says why.
    assert_eq!(view["status"], "failed", "{view}");
    assert_eq!(
        (
            view["answered"].as_i64(),
            view["unparsed"].as_i64(),
            view["failed"].as_i64()
        ),
        (Some(0), Some(0), Some(2)),
        "{view}"
    );
    assert_eq!(
        (&view["retrying"], &view["attempt"]),
        (&json!(false), &Value::Null)
    );
    let error = view["last_error"].as_str().expect("the last error is kept");
    assert_eq!(
        error, "HTTP 503 Service Unavailable from the endpoint",
        "{view}"
    );
    assert!(view["finished_at"].is_string(), "{view}");
    for call in calls(app, &admin, &run, None).await {
        assert_eq!(
            (&call["status"], &call["attempts"]),
            (&json!("failed"), &json!(6)),
            "{call}"
        );
    }
    assert_eq!(failing.seen().len(), 12, "each call asked six times");
    let listed = admin
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .go()
        .await;
    let listed = json_with(listed, StatusCode::OK).await;
    assert_eq!(listed[0]["status"], "failed");
    assert_eq!(listed[0]["last_error"], error);
    // The batch page's row says the same.
    let browser = admin.browser_for(app).await;
    let html = page_text(app, &browser, &format!("/batches/{batch}")).await;
    assert!(
        html.contains(">failed · HTTP 503 Service Unavailable from the endpoint"),
        "{html}"
    );

    // A failed run holds nothing: the judge can start another over the batch. While that
    // one is open, the failed run cannot be resumed beside it; cancelled, it can.
    let second = start_run(app, &admin, &batch, "down").await;
    let refused = run_action(app, &admin, &run, "resume").await;
    assert_eq!(refused.status(), StatusCode::CONFLICT);
    let refused = refused.text().await.expect("why");
    assert!(refused.contains("already has an open run"), "{refused}");
    let cancelled = run_action(app, &admin, &second, "cancel").await;
    assert_eq!(cancelled.status(), StatusCode::OK);
    assert_eq!(
        run_action(app, &admin, &run, "pause").await.status(),
        StatusCode::CONFLICT
    );
    assert_eq!(
        run_action(app, &admin, &run, "cancel").await.status(),
        StatusCode::CONFLICT
    );

    // The endpoint is back (somewhere else): resuming the failed run asks its calls
    // again, and this time it finishes. The error it met is still its latest.
    let scripted = ScriptedJudge::start(additive_outputs).await;
    let moved = admin
        .api
        .patch(app.url(&format!("/api/v1/judges/{judge}")))
        .json(&json!({"base_url": scripted.base_url}))
        .go()
        .await;
    assert_eq!(moved.status(), StatusCode::OK);
    let resumed = run_action(app, &admin, &run, "resume").await;
    let resumed = json_with(resumed, StatusCode::OK).await;
    assert_eq!(resumed["status"], "running");
    assert_eq!(resumed["finished_at"], Value::Null);
    let view = wait_for(app, &admin, &run, "finished").await;
    assert_eq!(
        (view["answered"].as_i64(), view["failed"].as_i64()),
        (Some(2), Some(0)),
        "{view}"
    );
    assert_eq!(view["last_error"], error);
    assert_eq!(scripted.seen().len(), 2, "each call asked again, once");
}
db_test!(a_run_against_a_failing_endpoint_says_it_retries_and_ends_failed: QuickApp);

async fn judges_are_configured_with_every_bad_field_named(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let bad = admin
        .api
        .post(app.url("/api/v1/judges"))
        .json(
            &json!({"name": "no spaces please", "base_url": "ftp://host/v1/chat/completions",
            "temperature": 3, "concurrency": 0, "api_key": "sk-123", "colour": "red",
            "templates": {"blackhat": {"text": "{$instruction} {$response}", "format": "answers"},
                          "nope": {"text": "x", "format": "answers"}}}),
        )
        .go()
        .await;
    let bad = json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    let fields = bad["fields"].as_object().expect("fields");
    for field in [
        "name",
        "base_url",
        "model",
        "temperature",
        "concurrency",
        "api_key",
        "colour",
        "templates.blackhat.text",
        "templates.nope",
    ] {
        assert!(fields.contains_key(field), "{field} in {bad}");
    }
    assert!(
        fields["templates.blackhat.text"]
            .as_str()
            .unwrap()
            .contains("{$response}")
    );
    assert!(
        fields["api_key"]
            .as_str()
            .unwrap()
            .contains("VERDICT_SECRET_KEY")
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM judges").await,
        0,
        "nothing stored"
    );

    let template = json!({"text": "Q {$instruction}\nA {$candidate_A}\nB {$candidate_B}\nAnswer JSON.",
                          "format": "answers"});
    let id = add_judge(
        app,
        &admin,
        "good",
        "http://127.0.0.1:9/v1",
        json!({"api_key_env": "VERDICT_JUDGE_KEY_SOME", "templates": {"blackhat": template}}),
    )
    .await;
    let taken = admin
        .api
        .post(app.url("/api/v1/judges"))
        .json(&json!({"name": "good", "base_url": "http://127.0.0.1:9/v1", "model": "m"}))
        .go()
        .await;
    assert_eq!(taken.status(), StatusCode::CONFLICT);
    let list = admin.api.get(app.url("/api/v1/judges")).go().await;
    let list = json_with(list, StatusCode::OK).await;
    assert_eq!(list[0]["name"], "good");
    assert_eq!(list[0]["api_key_env"], "VERDICT_JUDGE_KEY_SOME");
    assert_eq!(list[0]["api_key_stored"], false);
    assert_eq!(list[0]["templates"]["blackhat"]["format"], "answers");
    let changed = admin
        .api
        .patch(app.url(&format!("/api/v1/judges/{id}")))
        .json(&json!({"concurrency": 8, "temperature": 0.5}))
        .go()
        .await;
    let changed = json_with(changed, StatusCode::OK).await;
    assert_eq!(changed["concurrency"], 8);
    assert_eq!(changed["params"]["temperature"], 0.5);
    assert_eq!(
        changed["api_key_env"], "VERDICT_JUDGE_KEY_SOME",
        "unchanged fields stay"
    );
    let renamed = admin
        .api
        .patch(app.url(&format!("/api/v1/judges/{id}")))
        .json(&json!({"name": "other"}))
        .go()
        .await;
    assert_eq!(renamed.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let forbidden = lead.api.get(app.url("/api/v1/judges")).go().await;
    assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);

    // A run needs its key's variable on the server, and a judge that exists.
    let batch = app
        .batch(&admin, "keys", &crate::helpers::tasks_jsonl(2), "")
        .await;
    let no_key = admin
        .api
        .post(app.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .json(&json!({"judge": "good"}))
        .go()
        .await;
    let no_key = json_with(no_key, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        no_key["fields"]["judge"]
            .as_str()
            .unwrap()
            .contains("VERDICT_JUDGE_KEY_SOME"),
        "{no_key}"
    );
    let unknown = admin
        .api
        .post(app.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .json(&json!({"judge": "nobody"}))
        .go()
        .await;
    let unknown = json_with(unknown, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        unknown["fields"]["judge"]
            .as_str()
            .unwrap()
            .contains("nobody")
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM judge_runs").await, 0);
    // Judge accounts are nobody's to sign in with or manage.
    let users = admin.api.get(app.url("/api/v1/users")).go().await;
    let users = json_with(users, StatusCode::OK).await;
    assert!(!users.to_string().contains("judge:"), "{users}");
}
db_test!(judges_are_configured_with_every_bad_field_named: TestApp);

/// Answers slowly (each call takes 300 ms), so that a run can be paused or its server
/// killed part way.
fn slow(body: &Value, _: usize) -> Reply {
    let _ = body;
    Reply::After(
        Duration::from_millis(300),
        Box::new(Reply::text("score: 1\nRelevant, little more.")),
    )
}

async fn a_paused_run_asks_nothing_until_resumed(fixture: &QuickApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    let scripted = ScriptedJudge::start(slow).await;
    let tasks: Vec<(String, String)> = (1..=12)
        .map(|i| (format!("s{i}"), format!("answer {i}")))
        .collect();
    let tasks: Vec<(&str, &str)> = tasks
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let batch = app
        .batch(
            &admin,
            "paused",
            &single_tasks(&tasks),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    add_judge(
        app,
        &admin,
        "slow",
        &scripted.base_url,
        json!({"concurrency": 1}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "slow").await;
    let again = admin
        .api
        .post(app.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .json(&json!({"judge": "slow"}))
        .go()
        .await;
    assert_eq!(
        again.status(),
        StatusCode::CONFLICT,
        "one open run per judge and batch"
    );
    while scripted.seen().len() < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let paused = run_action(app, &admin, &run, "pause").await;
    let paused = json_with(paused, StatusCode::OK).await;
    assert_eq!(paused["status"], "paused");
    // The call under way finishes and is kept; then nothing more is asked.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let view = admin
            .api
            .get(app.url(&format!("/api/v1/judge-runs/{run}")))
            .go()
            .await;
        let view = json_with(view, StatusCode::OK).await;
        if view["answered"].as_u64() == Some(scripted.seen().len() as u64) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "calls under way never ended: {view}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let asked = scripted.seen().len();
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(scripted.seen().len(), asked, "a paused run asks nothing");
    let twice = run_action(app, &admin, &run, "pause").await;
    assert_eq!(twice.status(), StatusCode::CONFLICT);
    let resumed = run_action(app, &admin, &run, "resume").await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let view = wait_for(app, &admin, &run, "finished").await;
    assert_eq!(view["answered"], 12);
    assert_eq!(scripted.seen().len(), 12, "nothing asked twice");
    let cancel = run_action(app, &admin, &run, "cancel").await;
    assert_eq!(
        cancel.status(),
        StatusCode::CONFLICT,
        "a finished run is over"
    );
}
db_test!(a_paused_run_asks_nothing_until_resumed: QuickApp);

/// Judge calls stored so far, as (external id, order) pairs.
async fn stored_calls(db: &TestDb) -> Vec<(String, bool)> {
    let sql = "SELECT t.external_id, c.swapped FROM judge_calls c JOIN tasks t ON t.id = c.task_id
               WHERE c.status = 'answered'";
    match db.backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&db.url).await.expect("connect");
            let rows = sqlx::query_as(sql).fetch_all(&pool).await.expect(sql);
            pool.close().await;
            rows
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&db.url).await.expect("connect");
            let rows = sqlx::query_as(sql).fetch_all(&pool).await.expect(sql);
            pool.close().await;
            rows
        }
    }
}

async fn a_killed_server_resumes_its_run_without_asking_again(db: &TestDb) {
    killed_mid_run(db, false).await;
}
db_test!(a_killed_server_resumes_its_run_without_asking_again: TestDb);

/// Two instances on one database: the run is worked by one at a time, and when the
/// instance working it is killed, the other (running all along) takes it over.
async fn another_instance_takes_over_the_run_of_a_killed_one(db: &TestDb) {
    killed_mid_run(db, true).await;
}
db_test!(another_instance_takes_over_the_run_of_a_killed_one: TestDb);

/// A run killed part way: taken over by a server started again (`sibling` false) or by
/// a second instance that was serving beside the first all along (`sibling` true). What
/// was answered is never asked again.
async fn killed_mid_run(db: &TestDb, sibling: bool) {
    use crate::durability::{account, kill_9, serve_with};
    let admin = crate::helpers::bearer(&account(db, "admin", "admin"));
    let scripted = ScriptedJudge::start(|body: &Value, _| {
        Reply::After(Duration::from_millis(250), Box::new(prefers_good(body, 0)))
    })
    .await;
    let lease = [("VERDICT_JUDGE_LEASE_S", "2")];
    let (mut server, base) = serve_with(db, &lease);
    let mut other = sibling.then(|| serve_with(db, &lease));
    let tasks: Vec<(String, String, String)> = (1..=8)
        .map(|i| {
            (
                format!("k{i}"),
                format!("GOOD answer {i}"),
                format!("weak answer {i}"),
            )
        })
        .collect();
    let tasks: Vec<(&str, &str, &str)> = tasks
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    let batch = crate::durability::upload_batch(
        &admin,
        &base,
        "name=killed&rubric=pairwise-aspects",
        pair_tasks(&tasks),
    )
    .await;
    let judge = admin
        .post(format!("{base}/api/v1/judges"))
        .json(&json!({"name": "steady", "base_url": scripted.base_url, "model": "m", "concurrency": 1}))
        .send()
        .await
        .expect("judge");
    assert_eq!(judge.status(), StatusCode::CREATED);
    let started = admin
        .post(format!("{base}/api/v1/batches/{batch}/judge-runs"))
        .json(&json!({"judge": "steady"}))
        .send()
        .await
        .expect("run");
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let run = started.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();

    // Killed with calls answered and more to ask.
    let deadline = std::time::Instant::now() + crate::durability::HANG;
    while stored_calls(db).await.len() < 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "the run made no progress"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill_9(&mut server);
    let before_kill = stored_calls(db).await;
    assert!(before_kill.len() < 16, "killed part way");

    let (mut server, base) = match other.take() {
        Some(running) => running,
        None => serve_with(db, &lease),
    };
    let deadline = std::time::Instant::now() + crate::durability::HANG;
    let view = loop {
        let view: Value = admin
            .get(format!("{base}/api/v1/judge-runs/{run}"))
            .send()
            .await
            .expect("run")
            .json()
            .await
            .expect("JSON");
        if view["status"] == "finished" {
            break view;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run was not taken over: {view}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    kill_9(&mut server);
    assert_eq!(view["answered"], 16, "{view}");
    // What was answered before the kill was asked once; at most the one call under way
    // at the kill was asked twice.
    let seen = scripted.seen();
    for (task, swapped) in &before_kill {
        let asked = seen
            .iter()
            .filter(|s| s.prompt().contains(&format!("Task {task}:")))
            .filter(|s| shown_first(s.prompt()).contains("GOOD") != *swapped)
            .count();
        assert_eq!(asked, 1, "{task} (swapped: {swapped}) was asked again");
    }
    assert!(seen.len() <= 17, "{} requests for 16 calls", seen.len());
    assert_eq!(stored_calls(db).await.len(), 16);
}

/// Runs `verdict` with `args` on `db` off the test's async threads (the scripted judge
/// answers on them meanwhile); returns whether it succeeded, its stdout and its stderr.
async fn verdict_cli(db: &TestDb, args: &[&str]) -> (bool, String, String) {
    verdict_cli_with(db, args, &[]).await
}

/// [`verdict_cli`] with more environment.
async fn verdict_cli_with(
    db: &TestDb,
    args: &[&str],
    env: &[(&str, &str)],
) -> (bool, String, String) {
    let (url, args): (String, Vec<String>) = (
        db.url.clone(),
        args.iter().map(|a| (*a).to_owned()).collect(),
    );
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(crate::cli::BIN)
            .args(&args)
            .env("DATABASE_URL", url)
            .env("RUST_LOG", "warn")
            .envs(env)
            .output()
            .expect("run verdict")
    })
    .await
    .expect("joined");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn the_command_line_adds_a_judge_and_runs_it(db: &TestDb) {
    let scripted = ScriptedJudge::start(additive_outputs).await;
    let file = tempfile::NamedTempFile::with_suffix(".jsonl").expect("temp file");
    std::fs::write(
        file.path(),
        single_tasks(&[("c1", "PLAIN answer"), ("c2", "NOSCORE answer")]),
    )
    .expect("write tasks");
    let path = file.path().to_str().expect("path");
    let (ok, _, err) = verdict_cli(
        db,
        &[
            "import",
            "--name",
            "cli",
            "--rubric",
            "additive-5",
            "--no-randomize",
            path,
        ],
    )
    .await;
    assert!(ok, "{err}");
    let (ok, out, err) = verdict_cli(
        db,
        &[
            "judge",
            "add",
            "--name",
            "cli-judge",
            "--base-url",
            &scripted.base_url,
            "--model",
            "m",
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.contains("created judge cli-judge"), "{out}");
    let (ok, _, err) = verdict_cli(
        db,
        &[
            "judge",
            "add",
            "--name",
            "bad judge",
            "--base-url",
            "nowhere",
            "--model",
            "m",
        ],
    )
    .await;
    assert!(!ok);
    assert!(err.contains("name:") && err.contains("base_url:"), "{err}");
    let (ok, out, err) = verdict_cli(
        db,
        &["judge", "run", "--batch", "cli", "--judge", "cli-judge"],
    )
    .await;
    assert!(ok, "{err}");
    assert!(
        out.contains("finished — 1 of 2 tasks rated, 0 orders disagreed")
            && out.contains("; 1 answered, 1 unparsed, 0 failed of 2 calls"),
        "{out}"
    );
    let (ok, out, _) = verdict_cli(db, &["judge", "list"]).await;
    assert!(ok);
    assert!(
        out.contains("cli-judge") && out.contains(&scripted.base_url),
        "{out}"
    );
    assert_eq!(scripted.seen().len(), 2);
    // Run again: the finished run is not open, so a new one asks both again.
    let (ok, _, err) = verdict_cli(
        db,
        &["judge", "run", "--batch", "cli", "--judge", "cli-judge"],
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(scripted.seen().len(), 4);
    let (ok, _, err) =
        verdict_cli(db, &["judge", "run", "--batch", "cli", "--judge", "nobody"]).await;
    assert!(!ok);
    assert!(err.contains("nobody"), "{err}");

    // A judge whose endpoint refuses every call: the run failed, the command says why
    // and fails with it.
    let refusing = ScriptedJudge::start(|_: &Value, _| Reply::Status(400, None)).await;
    let (ok, _, err) = verdict_cli(
        db,
        &[
            "judge",
            "add",
            "--name",
            "cli-refused",
            "--base-url",
            &refusing.base_url,
            "--model",
            "m",
        ],
    )
    .await;
    assert!(ok, "{err}");
    let (ok, out, err) = verdict_cli(
        db,
        &["judge", "run", "--batch", "cli", "--judge", "cli-refused"],
    )
    .await;
    assert!(!ok, "a failed run fails the command: {out}");
    assert!(
        out.contains(
            "failed · HTTP 400 Bad Request from the endpoint — 0 of 2 tasks rated, 0 orders disagreed; 0 answered, 0 unparsed, 2 failed of 2 calls"
        ),
        "{out}"
    );
    assert!(err.contains("the run failed"), "{err}");
}
db_test!(the_command_line_adds_a_judge_and_runs_it: TestDb);

/// `verdict judge run` working a run in the background, its stderr gathered as it comes.
struct Working {
    child: std::process::Child,
    stderr: std::sync::Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Working {
    fn start(db: &TestDb, batch: &str, judge: &str, lease_s: &str) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(crate::cli::BIN)
            .args(["judge", "run", "--batch", batch, "--judge", judge])
            .env("DATABASE_URL", &db.url)
            .env("RUST_LOG", "warn")
            .env("VERDICT_JUDGE_LEASE_S", lease_s)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start verdict judge run");
        let stderr = std::sync::Arc::new(Mutex::new(String::new()));
        let lines = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let gathered = std::sync::Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            for line in lines.split(b'\n').map_while(Result::ok) {
                let mut all = gathered.lock().expect("stderr");
                all.push_str(&String::from_utf8_lossy(&line));
                all.push('\n');
            }
        });
        Self {
            child,
            stderr,
            reader: Some(reader),
        }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Sends `signal` (`STOP`, `TERM`, ...) with kill(1).
    fn signal(&self, signal: &str) {
        let sent = std::process::Command::new("kill")
            .args([format!("-{signal}"), self.pid()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -{signal}");
    }

    /// Waits for it to exit; whether it succeeded, and its stderr.
    async fn exit(mut self) -> (bool, String) {
        let mut child = self.child;
        let status = tokio::task::spawn_blocking(move || child.wait().expect("waited"))
            .await
            .expect("joined");
        if let Some(reader) = self.reader.take() {
            reader.join().expect("stderr read");
        }
        let stderr = self.stderr.lock().expect("stderr").clone();
        (status.success(), stderr)
    }
}

/// A batch `name` of 12 single-response tasks on `db` and a judge `name` at `base_url`
/// answering one call at a time, both added with the command line.
async fn cli_batch_and_judge(db: &TestDb, name: &str, base_url: &str) {
    let tasks: Vec<(String, String)> = (1..=12)
        .map(|i| (format!("w{i}"), format!("answer {i}")))
        .collect();
    let tasks: Vec<(&str, &str)> = tasks
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let file = tempfile::NamedTempFile::with_suffix(".jsonl").expect("temp file");
    std::fs::write(file.path(), single_tasks(&tasks)).expect("write tasks");
    let path = file.path().to_str().expect("path");
    let (ok, _, err) = verdict_cli(
        db,
        &[
            "import",
            "--name",
            name,
            "--rubric",
            "additive-5",
            "--no-randomize",
            path,
        ],
    )
    .await;
    assert!(ok, "{err}");
    let (ok, _, err) = verdict_cli(
        db,
        &[
            "judge",
            "add",
            "--name",
            name,
            "--base-url",
            base_url,
            "--model",
            "m",
            "--concurrency",
            "1",
        ],
    )
    .await;
    assert!(ok, "{err}");
}

/// Waits until `n` calls are answered (of every run on `db`).
async fn until_answered(db: &TestDb, n: usize) {
    let deadline = std::time::Instant::now() + crate::durability::HANG;
    while stored_calls(db).await.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the run made no progress"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The command line's run whose process hangs (stopped with SIGSTOP: alive, silent) is
/// taken over by the next `verdict judge run` once it has been silent for the lease
/// (`VERDICT_JUDGE_LEASE_S`), counting down meanwhile; while the first still works it,
/// `--no-wait` says who holds it and fails.
async fn the_command_line_takes_over_a_run_whose_worker_fell_silent(db: &TestDb) {
    let scripted = ScriptedJudge::start(slow).await;
    cli_batch_and_judge(db, "silent", &scripted.base_url).await;
    let first = Working::start(db, "silent", "silent", "3");
    until_answered(db, 2).await;

    let lease = [("VERDICT_JUDGE_LEASE_S", "3")];
    let run = ["judge", "run", "--batch", "silent", "--judge", "silent"];
    let (ok, _, err) = verdict_cli_with(db, &[&run[..], &["--no-wait"]].concat(), &lease).await;
    assert!(!ok, "held by a live worker, --no-wait fails: {err}");
    assert!(
        err.contains(&format!("is held by process {} on ", first.pid()))
            && err.contains("without --no-wait"),
        "{err}"
    );

    first.signal("STOP");
    let (ok, out, err) = verdict_cli_with(db, &run, &lease).await;
    assert!(ok, "{out}{err}");
    assert!(err.contains("resuming run"), "{err}");
    assert!(
        err.contains(&format!("run held by process {} on ", first.pid()))
            && err.contains(", silent for ")
            && err.contains("; taking it over in "),
        "the countdown: {err}"
    );
    assert!(err.contains("taking run "), "{err}");
    assert!(
        out.contains("finished — 12 of 12 tasks rated, 0 orders disagreed; 12 answered, 0 unparsed, 0 failed of 12 calls"),
        "{out}"
    );
    assert_eq!(stored_calls(db).await.len(), 12);
    // At most the call the first had under way when it stopped was asked twice.
    assert!(
        scripted.seen().len() <= 13,
        "{} requests",
        scripted.seen().len()
    );
    first.signal("KILL");
    let (ok, _) = first.exit().await;
    assert!(!ok);
}
db_test!(the_command_line_takes_over_a_run_whose_worker_fell_silent: TestDb);

/// A run whose worker was a process of this machine that is gone (killed with SIGKILL)
/// is taken over at once, however long the lease.
async fn the_command_line_takes_over_at_once_from_a_dead_process_of_this_machine(db: &TestDb) {
    let scripted = ScriptedJudge::start(slow).await;
    cli_batch_and_judge(db, "dead", &scripted.base_url).await;
    let mut first = Working::start(db, "dead", "dead", "600");
    until_answered(db, 2).await;
    crate::durability::kill_9(&mut first.child);
    let pid = first.pid();
    let (ok, _) = first.exit().await;
    assert!(!ok);

    let began = std::time::Instant::now();
    let (ok, out, err) = verdict_cli_with(
        db,
        &["judge", "run", "--batch", "dead", "--judge", "dead"],
        &[("VERDICT_JUDGE_LEASE_S", "600")],
    )
    .await;
    assert!(ok, "{out}{err}");
    assert!(
        err.contains(&format!("was held by process {pid} on "))
            && err.contains(", which is gone; taking it over now"),
        "{err}"
    );
    assert!(!err.contains("taking it over in"), "no waiting: {err}");
    assert!(
        out.contains("finished — 12 of 12 tasks rated, 0 orders disagreed; 12 answered, 0 unparsed, 0 failed of 12 calls"),
        "{out}"
    );
    // Generous: the lease is ten minutes, the work a few seconds.
    assert!(
        began.elapsed() < Duration::from_secs(300),
        "{:?}",
        began.elapsed()
    );
    assert!(
        scripted.seen().len() <= 13,
        "{} requests",
        scripted.seen().len()
    );
}
db_test!(the_command_line_takes_over_at_once_from_a_dead_process_of_this_machine: TestDb);

/// `verdict judge run` exits non-zero whenever it stops with the run unfinished: on
/// SIGTERM (letting go of the run, so the next takes it at once), and when someone
/// pauses the run it works.
async fn a_command_line_run_stopped_unfinished_exits_non_zero(db: &TestDb) {
    use crate::durability::{account, kill_9, serve_with};
    // A call a second: time to start a server and pause the run before it ends.
    let scripted = ScriptedJudge::start(|_: &Value, _| {
        Reply::After(
            Duration::from_secs(1),
            Box::new(Reply::text("score: 1\nRelevant, little more.")),
        )
    })
    .await;
    cli_batch_and_judge(db, "stopped", &scripted.base_url).await;
    let first = Working::start(db, "stopped", "stopped", "600");
    until_answered(db, 2).await;
    first.signal("TERM");
    let (ok, err) = first.exit().await;
    assert!(!ok, "SIGTERM mid-run fails the command: {err}");
    assert!(err.contains("stopped with the run unfinished"), "{err}");

    // It let go: the next takes the run at once (a heartbeat every 2 s, so that it soon
    // sees the pause), and is paused through a server, started once the run is taken
    // (a server takes over a run nobody works).
    let admin = crate::helpers::bearer(&account(db, "admin", "admin"));
    let before = stored_calls(db).await.len();
    let second = Working::start(db, "stopped", "stopped", "6");
    until_answered(db, before + 2).await;
    let (mut server, base) = serve_with(db, &[("VERDICT_JUDGE_LEASE_S", "600")]);
    let said = second.stderr.lock().expect("stderr").clone();
    assert!(!said.contains("held by"), "{said}");
    let run = said
        .split("resuming run ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the run's id")
        .to_owned();
    let paused = admin
        .post(format!("{base}/api/v1/judge-runs/{run}/pause"))
        .send()
        .await
        .expect("pause");
    assert_eq!(paused.status(), StatusCode::OK);
    let (ok, err) = second.exit().await;
    kill_9(&mut server);
    assert!(!ok, "a run paused under it fails the command: {err}");
    assert!(err.contains("the run was paused, "), "{err}");
    assert!(stored_calls(db).await.len() < 12, "stopped unfinished");
}
db_test!(a_command_line_run_stopped_unfinished_exits_non_zero: TestDb);
