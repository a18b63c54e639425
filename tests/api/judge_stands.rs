//! Which run's answers stand for a judge over a batch (issue 30): the judge's latest run
//! over the batch that is not cancelled, on the metrics, the task page and the batch's
//! export alike, each judge row naming its run; and a run's own figures (tasks rated,
//! orders that disagreed, the lean to the response shown first) on its JSON, the batch
//! page and the calls page. The helpers here serve `judge_export.rs` too.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use verdict_core::rubric::{Rubric, by_name};

use crate::helpers::{Go, Persona, TestApp, db_test, json_with, jsonl, page_text};
use crate::judge_server::{Reply, ScriptedJudge};
use crate::judges::{add_judge, start_run, wait_for};

/// The template every judge here is asked with: the responses on lines of their own, so
/// that the script can tell which task it is shown and in which order.
pub(crate) fn template(format: &str) -> Value {
    let text = match format {
        "score_line" => "Q {$instruction}\nR {$response}\nScore it.",
        _ => "Q {$instruction}\nA {$candidate_A}\nB {$candidate_B}\nAnswer.",
    };
    json!({"text": text, "format": format})
}

/// A response of task `n`: which task and which response it is, padded to a length that
/// differs from task to task (and is the same for both responses of task 7).
pub(crate) fn response(n: usize, second: bool) -> String {
    let (word, pad) = if second {
        ("Second", if n == 7 { 9 } else { (n * 5) % 11 })
    } else {
        ("First", if n == 7 { 10 } else { (n * 7) % 13 })
    };
    format!("{word} answer to t{n}.{}", "x".repeat(pad))
}

/// Which task a prompt shows, and whether it shows the task's B first.
pub(crate) fn shown(prompt: &str, marker: &str) -> (usize, bool) {
    let line = prompt
        .lines()
        .find_map(|l| l.strip_prefix(marker))
        .expect("a response line");
    let at = line.find(" answer to t").expect("a task's response") + 12;
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (
        digits.parse().expect("a task number"),
        line.starts_with("Second"),
    )
}

pub(crate) fn pair_tasks(n: usize) -> String {
    jsonl((1..=n).map(|i| {
        json!({"external_id": format!("t{i}"), "prompt": format!("Task t{i}: sort a list."),
               "response_a": response(i, false), "response_b": response(i, true),
               "model_a": "alpha", "model_b": "beta"})
    }))
}

pub(crate) async fn get(app: &TestApp, who: &Persona, path: &str) -> String {
    let response = who.api.get(app.url(path)).go().await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    response.text().await.expect("a body")
}

/// A CSV cell as the value it stands for: empty is none, JSON where it reads as JSON,
/// else a text.
pub(crate) fn value_of(cell: &str) -> Option<Value> {
    if cell.is_empty() {
        return None;
    }
    Some(serde_json::from_str(cell).unwrap_or_else(|_| Value::from(cell)))
}

/// A rating of the batch's export: who gave it, its task, and its answers by path (the
/// task's own order).
#[derive(Debug, Clone)]
pub(crate) struct Rating {
    pub(crate) rater: String,
    pub(crate) kind: String,
    pub(crate) counts: bool,
    pub(crate) task: String,
    pub(crate) judge_run: String,
    pub(crate) answers: BTreeMap<String, Value>,
}

/// Every answer column of the CSV export with the path it holds.
pub(crate) fn answer_columns(rubric: &Rubric) -> Vec<(String, String)> {
    rubric
        .slots()
        .into_iter()
        .map(|slot| {
            let prefix = slot
                .side()
                .map_or(String::new(), |s| format!("{}_", s.key()));
            (format!("{prefix}{}", slot.key()), slot.path())
        })
        .collect()
}

pub(crate) fn ratings_csv(rubric: &Rubric, text: &str) -> Vec<Rating> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(str::to_owned)
        .collect();
    let columns = answer_columns(rubric);
    reader
        .records()
        .map(|record| {
            let record = record.expect("a record");
            let at = |name: &str| {
                let i = header.iter().position(|h| h == name).expect(name);
                record[i].to_owned()
            };
            Rating {
                rater: at("rater"),
                kind: at("rater_kind"),
                counts: at("counts_in_metrics") == "true",
                task: at("external_id"),
                judge_run: at("judge_run"),
                answers: columns
                    .iter()
                    .filter_map(|(column, path)| Some((path.clone(), value_of(&at(column))?)))
                    .collect(),
            }
        })
        .collect()
}

pub(crate) fn ratings_jsonl(text: &str) -> Vec<Rating> {
    text.lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).expect("a JSON line");
            let mut answers = BTreeMap::new();
            for (key, value) in row["answers"].as_object().expect("answers") {
                match (key.as_str(), value) {
                    ("a" | "b", Value::Object(side)) => {
                        for (k, v) in side {
                            answers.insert(format!("{key}.{k}"), v.clone());
                        }
                    }
                    _ => {
                        answers.insert(key.clone(), value.clone());
                    }
                }
            }
            Rating {
                rater: row["rater"].as_str().expect("a rater").to_owned(),
                kind: row["rater_kind"].as_str().expect("a kind").to_owned(),
                counts: row["counts_in_metrics"] == true,
                task: row["external_id"].as_str().expect("a task").to_owned(),
                judge_run: row["judge_run"].as_str().unwrap_or("").to_owned(),
                answers,
            }
        })
        .collect()
}

/// The run that stands for the judge: the only one the batch's runs mark so.
pub(crate) async fn standing(app: &TestApp, lead: &Persona, batch: &str, judge: &str) -> Value {
    let runs: Value =
        serde_json::from_str(&get(app, lead, &format!("/api/v1/batches/{batch}/judge-runs")).await)
            .expect("runs");
    let standing: Vec<&Value> = runs
        .as_array()
        .expect("a list")
        .iter()
        .filter(|r| r["judge"] == judge && r["stands"] == true)
        .collect();
    assert_eq!(standing.len(), 1, "{runs}");
    standing[0].clone()
}

/// pairwise-aspects' answers of task `n` for one rater.
pub(crate) fn aspects(n: usize, r: usize) -> Value {
    let pick = |k: usize| ["a", "tie", "b"][k % 3];
    // Two raters of three agree on most aspects, so that most tasks have a consensus.
    json!({"helpfulness": pick(n + usize::from(r == 2)),
           "clarity": pick(2 * n + usize::from(r == 0)), "factuality": pick(n),
           "depth": pick(n + r * (n % 2)), "engagement": "tie",
           "safety": pick(n / 3 + usize::from(r == 1)),
           "rationale": "Read both with care."})
}

pub(crate) fn aspects_reply(n: usize, swapped: bool) -> Reply {
    if n == 3 && swapped {
        return Reply::text("Both are fine.");
    }
    if n == 6 && !swapped {
        return Reply::Status(400, None);
    }
    let mut canonical = aspects(n, 1);
    if n == 2 || n == 9 {
        // Follows the position on helpfulness: A both times as shown.
        canonical["helpfulness"] = json!(if swapped { "b" } else { "a" });
    }
    let shown = |v: &Value| {
        let v = v.as_str().unwrap();
        let turned = match (v, swapped) {
            ("a", true) => "b",
            ("b", true) => "a",
            (v, _) => v,
        };
        match turned {
            "a" => "A",
            "b" => "B",
            _ => "tie",
        }
    };
    let mut choices = Map::new();
    for key in [
        "helpfulness",
        "clarity",
        "factuality",
        "depth",
        "engagement",
        "safety",
    ] {
        if n == 5 && swapped && key == "clarity" {
            continue;
        }
        choices.insert(key.into(), json!(shown(&canonical[key])));
    }
    Reply::text(
        json!({"rationale": "Judged each aspect on its own merits.", "choices": choices})
            .to_string(),
    )
}

/// A judge that prefers whatever it is shown first, on every aspect, every time.
pub(crate) fn follows_position(_: &Value, _: usize) -> Reply {
    Reply::text(
        json!({"rationale": "The first is better.", "choices": {
            "helpfulness": "A", "clarity": "A", "factuality": "A", "depth": "A",
            "engagement": "A", "safety": "A"}})
        .to_string(),
    )
}

async fn a_run_whose_orders_always_disagree_says_so(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "pos",
            &pair_tasks(10),
            "&rubric=pairwise-aspects&overlap=1&randomize=false",
        )
        .await;
    let scripted = ScriptedJudge::start(follows_position).await;
    add_judge(
        app,
        &admin,
        "follower",
        &scripted.base_url,
        json!({"templates": {"pairwise-aspects": template("choices")}}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "follower").await;
    let done = wait_for(app, &admin, &run, "finished").await;
    assert_eq!(done["answered"], 20, "{done}");
    assert_eq!(done["tasks_rated"], 0, "{done}");
    assert_eq!(done["orders_disagreed"], 10, "{done}");
    let lean = &done["first_shown_share"];
    assert_eq!(lean["n"], 120, "six aspects, twenty calls: {done}");
    assert_eq!(lean["share"]["value"], 1.0);
    assert!(lean["share"]["low"].as_f64() < Some(1.0), "{lean}");
    let words = "0 of 10 tasks rated, 10 orders disagreed, first shown 100%";
    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    let row = page
        .split("<tr")
        .find(|r| r.contains(&format!("data-run=\"{run}\"")))
        .expect("the run's row");
    assert!(row.contains(words), "{row}");
    let calls = page_text(app, &browser, &format!("/judge-runs/{run}/calls")).await;
    assert!(calls.contains(words), "{calls}");
}

db_test!(a_run_whose_orders_always_disagree_says_so: TestApp);

async fn the_latest_run_that_is_not_cancelled_stands_everywhere(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "stale",
            &pair_tasks(4),
            "&rubric=pairwise-aspects&overlap=1&randomize=false",
        )
        .await;
    // The first run reads every task; the second cannot read t1 in the B-first order.
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (second, slow) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (flag, wait) = (second.clone(), slow.clone());
    let scripted = ScriptedJudge::start(move |body: &Value, _| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        let (n, swapped) = shown(prompt, "A ");
        let reply = if flag.load(Ordering::SeqCst) && n == 1 && swapped {
            Reply::text("No idea.")
        } else {
            aspects_reply(4, swapped)
        };
        if wait.load(Ordering::SeqCst) && n == 4 {
            // The third run is cancelled while its calls about t4 wait.
            return Reply::After(std::time::Duration::from_secs(2), Box::new(reply));
        }
        reply
    })
    .await;
    add_judge(
        app,
        &admin,
        "stale-judge",
        &scripted.base_url,
        json!({"templates": {"pairwise-aspects": template("choices")}}),
    )
    .await;
    let first = start_run(app, &admin, &batch, "stale-judge").await;
    wait_for(app, &admin, &first, "finished").await;
    let task_judges = |body: Value| body["judges"].clone();
    let task_view = |t: &'static str| {
        let (app, lead, batch) = (app, &lead, batch.clone());
        async move {
            let text = get(app, lead, &format!("/api/v1/batches/{batch}/tasks/{t}")).await;
            task_judges(serde_json::from_str(&text).expect("the task"))
        }
    };
    let exported = |format: &'static str| {
        let (app, lead, batch) = (app, &lead, batch.clone());
        async move {
            let text = get(
                app,
                lead,
                &format!("/api/v1/batches/{batch}/export?format={format}"),
            )
            .await;
            let rows = match format {
                "csv" => ratings_csv(by_name("pairwise-aspects").unwrap(), &text),
                _ => ratings_jsonl(&text),
            };
            rows.into_iter()
                .filter(|r| r.kind == "judge")
                .inspect(|r| {
                    // The judge's account, a whole rating, never in the human figures.
                    assert_eq!(r.rater, "judge:stale-judge", "{r:?}");
                    assert!(!r.counts && r.answers.contains_key("helpfulness"), "{r:?}");
                })
                .map(|r| (r.task, r.judge_run))
                .collect::<HashMap<String, String>>()
        }
    };
    assert_eq!(
        app.metrics(&lead, &batch).await["judges"]["stale-judge"]["rated"],
        4
    );
    for format in ["csv", "jsonl"] {
        let rows = exported(format).await;
        assert_eq!(rows.len(), 4, "{format}: {rows:?}");
        assert!(rows.values().all(|r| *r == first), "{format}: {rows:?}");
    }

    second.store(true, Ordering::SeqCst);
    let later = start_run(app, &admin, &batch, "stale-judge").await;
    wait_for(app, &admin, &later, "finished").await;
    // t1 is unrated by the run that stands, everywhere: the first run's rating of it is
    // left out of the export, and every judge row names the later run.
    let m = app.metrics(&lead, &batch).await;
    assert_eq!(m["judges"]["stale-judge"]["rated"], 3, "{m}");
    for format in ["csv", "jsonl"] {
        let rows = exported(format).await;
        assert_eq!(rows.len(), 3, "{format}: {rows:?}");
        assert!(!rows.contains_key("t1"), "{format}: {rows:?}");
        assert!(rows.values().all(|r| *r == later), "{format}: {rows:?}");
    }
    let t1 = task_view("t1").await;
    assert!(
        t1.to_string().contains("No idea."),
        "the task page shows the later run's calls: {t1}"
    );
    assert_eq!(
        standing(app, &lead, &batch, "stale-judge").await["id"],
        later
    );

    // A third run reads t1 again, and waits on t4: while it runs it stands, its ratings
    // (t1 to t3) are the judge's. Cancelled, it is set aside: the later run stands
    // again, with its ratings (t2 to t4), and t1 is unrated once more.
    second.store(false, Ordering::SeqCst);
    slow.store(true, Ordering::SeqCst);
    let third = start_run(app, &admin, &batch, "stale-judge").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let view: Value =
            serde_json::from_str(&get(app, &lead, &format!("/api/v1/judge-runs/{third}")).await)
                .expect("the run");
        // A rating is stored just after the call that completes it: the run's count,
        // worked out from its calls, can be a moment ahead of the export.
        if view["tasks_rated"] == 3 && exported("jsonl").await.len() == 3 {
            assert_eq!(view["stands"], true, "{view}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{view}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for format in ["csv", "jsonl"] {
        let rows = exported(format).await;
        let tasks: BTreeSet<&str> = rows.keys().map(String::as_str).collect();
        assert_eq!(
            tasks,
            BTreeSet::from(["t1", "t2", "t3"]),
            "{format}: {rows:?}"
        );
        assert!(rows.values().all(|r| *r == third), "{format}: {rows:?}");
    }
    let cancelled = admin
        .api
        .post(app.url(&format!("/api/v1/judge-runs/{third}/cancel")))
        .go()
        .await;
    let cancelled = json_with(cancelled, StatusCode::OK).await;
    assert_eq!(cancelled["stands"], false, "{cancelled}");
    assert_eq!(
        standing(app, &lead, &batch, "stale-judge").await["id"],
        later
    );
    let m = app.metrics(&lead, &batch).await;
    assert_eq!(m["judges"]["stale-judge"]["rated"], 3, "{m}");
    for format in ["csv", "jsonl"] {
        let rows = exported(format).await;
        let tasks: BTreeSet<&str> = rows.keys().map(String::as_str).collect();
        assert_eq!(
            tasks,
            BTreeSet::from(["t2", "t3", "t4"]),
            "{format}: {rows:?}"
        );
        assert!(rows.values().all(|r| *r == later), "{format}: {rows:?}");
    }
}

db_test!(the_latest_run_that_is_not_cancelled_stands_everywhere: TestApp);
