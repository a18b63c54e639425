//! A judge against a real model server: llama.cpp's `llama-server` serving
//! SmolLM2-135M-Instruct on loopback (`.ci/llama-server` builds and fetches both; set
//! `LLAMA_SERVER` and `LLAMA_MODEL` to their paths). A run over a small batch of each
//! built-in rubric must complete, and everything stored must be what the outputs say:
//! each call's parse statuses are those of its raw output read again, and a task has a
//! judge rating exactly when its orders combine into a whole answer, with those answers.
//! The model's answers may be poor; the whole path is real.
//!
//! Without `LLAMA_SERVER` the test says so and passes, unless `VERDICT_REQUIRE_LLAMA` is
//! set (CI sets it), when it fails.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict_core::judge::{Asked, Fields, combine, parse};
use verdict_core::rubric::ShownAnswers;

use verdict::store::Backend;

use crate::helpers::{Fixture, TestApp};
use crate::judges::{add_judge, calls, export_rows, start_run, wait_for_within};

/// `llama-server` on a free port of loopback, killed when dropped.
struct ModelServer {
    child: Child,
    base_url: String,
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the model server and waits until it has loaded the model (`/health` answers
/// 503 while it loads); `None` when none is configured.
async fn model_server() -> Option<ModelServer> {
    let (Ok(server), Ok(model)) = (std::env::var("LLAMA_SERVER"), std::env::var("LLAMA_MODEL"))
    else {
        assert!(
            std::env::var_os("VERDICT_REQUIRE_LLAMA").is_none(),
            "VERDICT_REQUIRE_LLAMA is set but LLAMA_SERVER and LLAMA_MODEL are not"
        );
        eprintln!(
            "note: the real-model judge test did not run: set LLAMA_SERVER and LLAMA_MODEL (.ci/llama-server)"
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(server)
        .args([
            "-m",
            &model,
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-c", "8192", "-np", "2", "--no-webui"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let server = ModelServer {
        child,
        base_url: format!("http://127.0.0.1:{port}/v1"),
    };
    let health = format!("http://127.0.0.1:{port}/health");
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(r) = client.get(&health).send().await
            && r.status() == StatusCode::OK
        {
            return Some(server);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "llama-server did not load its model"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn first_lines(text: &str, n: usize) -> String {
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

/// On SQLite only: the model's minutes are spent once (the scripted tests run every
/// path on both databases).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_run_over_each_rubric_against_a_real_model() {
    let Some(model) = model_server().await else {
        return;
    };
    let fixture = <TestApp as Fixture>::setup(Backend::Sqlite)
        .await
        .expect("SQLite");
    let app = &fixture;
    let admin = app.admin().await;
    add_judge(
        app,
        &admin,
        "smollm",
        &model.base_url,
        json!({"temperature": 0, "seed": 7, "max_tokens": 700, "structured_output": true,
               "max_text_chars": 40, "concurrency": 2, "timeout_s": 600}),
    )
    .await;
    let pairs = first_lines(include_str!("../../demo/tasks.jsonl"), 2);
    let singles = first_lines(include_str!("../../demo/single.jsonl"), 2);
    for (rubric, tasks, query) in [
        ("additive-5", &singles, "&randomize=false"),
        ("pairwise-aspects", &pairs, ""),
        ("blackhat", &pairs, ""),
    ] {
        let batch = app
            .batch(
                &admin,
                &format!("real-{rubric}"),
                tasks,
                &format!("&rubric={rubric}{query}"),
            )
            .await;
        let run = start_run(app, &admin, &batch, "smollm").await;
        // A small model on two cores: minutes, not seconds.
        let view = wait_for_within(app, &admin, &run, "finished", Duration::from_secs(1200)).await;
        eprintln!(
            "{rubric}: {} answered, {} unparsed, {} failed of {} calls",
            view["answered"], view["unparsed"], view["failed"], view["calls"]
        );
        let orders = if rubric == "additive-5" { 1 } else { 2 };
        assert_eq!(view["calls"], 2 * orders, "{rubric}: {view}");
        assert_eq!(
            view["failed"], 0,
            "{rubric}: every call reached the model: {view}"
        );
        assert_eq!(
            view["answered"].as_i64().unwrap() + view["unparsed"].as_i64().unwrap(),
            2 * orders,
            "{rubric}"
        );
        check_stored(app, &admin, "smollm", rubric, &batch, &run).await;
    }
    seed_prompts_as_templates(app, &admin, &model, &pairs, &singles).await;
    fixture.teardown().await;
}

/// Where the source documents are: `VERDICT_SEEDS_DIR`, else `../shared/seeds` beside
/// the repository. The repository does not copy them.
fn seeds_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("VERDICT_SEEDS_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/seeds"),
        std::path::PathBuf::from,
    );
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("VERDICT_REQUIRE_SEEDS").is_none(),
        "VERDICT_REQUIRE_SEEDS is set but {} is not a directory",
        dir.display()
    );
    eprintln!(
        "note: the seeds' prompts were not tried: {} is not there (set VERDICT_SEEDS_DIR)",
        dir.display()
    );
    None
}

/// The prompt of a seed document as a team would paste it: the file without the page
/// it was copied from (a column of line numbers, or the file view's header).
fn seed_prompt(dir: &std::path::Path, prefix: &str) -> String {
    let file = std::fs::read_dir(dir)
        .expect("the seeds")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .unwrap_or_else(|| panic!("no seed {prefix}_* in {}", dir.display()));
    let text = std::fs::read_to_string(&file).expect("a seed");
    let lines: Vec<&str> = text.lines().collect();
    let numbers = lines
        .iter()
        .rposition(|l| !l.trim().is_empty() && l.trim().chars().all(|c| c.is_ascii_digit()));
    let header = lines
        .iter()
        .position(|l| l.trim() == "File metadata and controls");
    let start = numbers.or(header).map_or(0, |i| i + 1);
    lines[start..].join("\n").trim().to_owned()
}

/// The seeds' own judge prompts, pasted as they are published (seed 003 spells its
/// placeholders `{prompt}` and `{response}`, seed 004 `{$instruction}`, `{$candidate_A}`
/// and `{$candidate_B}`), saved as a judge's templates and run against the real model:
/// every prompt sent is the seed's, filled in, and what came back is stored as read.
async fn seed_prompts_as_templates(
    app: &TestApp,
    admin: &crate::helpers::Persona,
    model: &ModelServer,
    pairs: &str,
    singles: &str,
) {
    let Some(dir) = seeds_dir() else {
        return;
    };
    let additive = seed_prompt(&dir, "003");
    let pairwise = seed_prompt(&dir, "004");
    assert!(
        additive.contains("{prompt}") && additive.contains("{response}"),
        "{additive}"
    );
    assert!(pairwise.contains("{$candidate_B}"), "{pairwise}");
    let judge = add_judge(
        app,
        admin,
        "seeded",
        &model.base_url,
        json!({"temperature": 0, "seed": 7, "max_tokens": 700, "structured_output": true,
               "concurrency": 2, "timeout_s": 600,
               "templates": {
                   "additive-5": {"text": additive, "format": "score_line"},
                   "pairwise-aspects": {"text": pairwise, "format": "choices"}}}),
    )
    .await;
    assert!(!judge.is_empty());
    for (rubric_name, tasks, query, text, format) in [
        (
            "additive-5",
            singles,
            "&randomize=false",
            &additive,
            "score_line",
        ),
        ("pairwise-aspects", pairs, "", &pairwise, "choices"),
    ] {
        let rubric = verdict_core::rubric::by_name(rubric_name).expect("built-in");
        let template = verdict_core::judge::Template {
            text: text.clone(),
            format: serde_json::from_value(json!(format)).expect("a format"),
        };
        let batch = app
            .batch(
                admin,
                &format!("seeded-{rubric_name}"),
                tasks,
                &format!("&rubric={rubric_name}{query}"),
            )
            .await;
        let run = start_run(app, admin, &batch, "seeded").await;
        let view = wait_for_within(app, admin, &run, "finished", Duration::from_secs(1200)).await;
        eprintln!(
            "seed prompt for {rubric_name}: {} answered, {} unparsed, {} failed of {} calls",
            view["answered"], view["unparsed"], view["failed"], view["calls"]
        );
        assert_eq!(view["failed"], 0, "{rubric_name}: {view}");
        let content: BTreeMap<String, Value> = tasks
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a task"))
            .map(|t| (t["external_id"].as_str().unwrap().to_owned(), t))
            .collect();
        for call in calls(app, admin, &run, None).await {
            let task = &content[call["external_id"].as_str().unwrap()];
            let response_a = task["response_a"].as_str().or(task["response"].as_str());
            let shown = verdict_core::judge::TaskText {
                prompt: &task["prompt"],
                response_a: response_a.unwrap_or_default(),
                response_b: task["response_b"].as_str().unwrap_or_default(),
            };
            let swapped = call["swapped"].as_bool().unwrap();
            let mut prompt = verdict_core::judge::render(rubric, &template, shown, swapped);
            // The seed's words, its placeholders filled in.
            assert!(
                prompt.starts_with(text.split('{').next().unwrap()),
                "{prompt}"
            );
            assert!(!prompt.contains("{prompt}") && !prompt.contains("{$candidate_A}"));
            assert!(prompt.contains(response_a.unwrap_or_default()));
            if let Some(note) =
                verdict_core::judge::schema::structured_note(rubric, template.format)
            {
                prompt.push_str(&note);
            }
            assert_eq!(
                call["prompt_sha256"].as_str(),
                Some(verdict_core::judge::prompt_hash(&prompt).as_str()),
                "{rubric_name}: the prompt sent is the seed's, filled in"
            );
        }
        check_stored(app, admin, "seeded", rubric_name, &batch, &run).await;
    }
}

/// Every call of the run: a real output, with its parse statuses those of the output
/// read again; every task: a judge rating exactly when its calls combine into a whole
/// answer, holding that answer.
async fn check_stored(
    app: &TestApp,
    admin: &crate::helpers::Persona,
    judge: &str,
    rubric_name: &str,
    batch: &str,
    run: &str,
) {
    let rubric = verdict_core::rubric::by_name(rubric_name).expect("built-in");
    let format = verdict_core::judge::template::built_in(rubric).format;
    let stored = calls(app, admin, run, None).await;
    let mut by_task: BTreeMap<String, Vec<(bool, ShownAnswers, Fields)>> = BTreeMap::new();
    for call in &stored {
        let output = call["raw_output"].as_str().expect("a raw output");
        assert!(!output.is_empty(), "{call}");
        assert_eq!(call["model"], "scripted", "the judge's model name is sent");
        assert_eq!(call["prompt_sha256"].as_str().map(str::len), Some(64));
        assert!(call["prompt_tokens"].as_i64().unwrap_or(0) > 0, "{call}");
        assert!(
            call["completion_tokens"].as_i64().unwrap_or(0) > 0,
            "{call}"
        );
        assert!(call["latency_ms"].as_i64().unwrap_or(0) > 0, "{call}");
        assert_eq!(call["params"]["structured_output"], true);
        let truncated = call["finish_reason"] == "length";
        let again = parse(rubric, format, output, truncated, 20);
        let fields: Fields = serde_json::from_value(call["fields"].clone()).expect("fields");
        assert_eq!(
            fields, again.fields,
            "{rubric_name}: stored statuses are the output's: {output}"
        );
        let status = if again.answered() {
            "answered"
        } else {
            "unparsed"
        };
        assert_eq!(call["status"], status, "{rubric_name}: {output}");
        let answers: ShownAnswers =
            serde_json::from_value(call["answers"].clone()).expect("answers");
        assert_eq!(answers, again.answers);
        by_task
            .entry(call["external_id"].as_str().unwrap().to_owned())
            .or_default()
            .push((call["swapped"].as_bool().unwrap(), answers, fields));
    }
    let rows = export_rows(app, admin, batch).await;
    let rated: BTreeMap<&str, &Value> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["rater_kind"], "judge");
            assert_eq!(r["counts_in_metrics"], false);
            (r["external_id"].as_str().unwrap(), &r["answers"])
        })
        .collect();
    for (task, orders) in &by_task {
        let asked: Vec<Asked<'_>> = orders
            .iter()
            .map(|(swapped, answers, fields)| Asked {
                swapped: *swapped,
                answers,
                fields,
            })
            .collect();
        let combined = combine(rubric, &asked, 20);
        match rated.get(task.as_str()) {
            Some(answers) => {
                assert!(
                    combined.complete(),
                    "{rubric_name} {task}: rated though {:?}",
                    combined.fields
                );
                assert_eq!(
                    **answers,
                    serde_json::to_value(&combined.answers).unwrap(),
                    "{rubric_name} {task}"
                );
            }
            None => assert!(
                !combined.complete(),
                "{rubric_name} {task}: a whole answer was not stored as a rating"
            ),
        }
    }
    let metrics = app.metrics(admin, batch).await;
    assert_eq!(
        metrics["counts"]["ratings"], 0,
        "judge ratings are not human ratings"
    );
    let j = &metrics["judges"][judge];
    assert_eq!(j["tasks"], 2, "{j}");
    assert_eq!(j["rated"].as_u64().unwrap() as usize, rated.len());
}
