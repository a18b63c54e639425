//! Databases made by an older verdict are upgraded by this one and serve what they
//! served. `tests/fixtures/upgrade/` holds a SQLite file and a PostgreSQL dump made by
//! [`make_fixtures`] (an ignored test, run once by hand) with real activity through the
//! API and the pages, and what that verdict served from each: exports, metrics, ratings,
//! the review queue, judge runs. The check ([`check`], once per database) starts this
//! verdict on a copy of each (which runs any newer migration over the old rows) and
//! expects every file again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::auth::Role;
use verdict::config::Config;
use verdict::store::Backend;

use crate::helpers::{
    Fixture, Go, PASSWORD, Persona, TestApp, TestDb, bearer, complete_answers, csrf_token,
    json_with, page_text, tasks_jsonl,
};
use crate::judge_server::{Reply, ScriptedJudge, prefers_good};
use crate::judges::{add_judge, start_run, wait_for};

/// Where the fixtures live.
fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade")
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

/// The people whose API tokens read what the fixture serves: the tokens are stored in
/// `credentials.json` beside the databases (test data, like the password).
const READERS: [&str; 5] = ["admin", "lead", "rater", "rater2", "rater3"];

// ---------------------------------------------------------------------------------------
// Reading what a database serves.
// ---------------------------------------------------------------------------------------

/// One file of `expected/`: JSON is compared as a value, an export byte for byte.
#[derive(Debug)]
enum Served {
    Json(Value),
    Text(String),
}

async fn get(app: &TestApp, who: &reqwest::Client, path: &str) -> Value {
    json_with(who.get(app.url(path)).go().await, StatusCode::OK).await
}

/// Every item of a paged list (`items` and `next_cursor`), in the order served.
async fn all_pages(app: &TestApp, who: &reqwest::Client, path: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = match &cursor {
            Some(c) => format!("{path}{sep}limit=200&cursor={c}"),
            None => format!("{path}{sep}limit=200"),
        };
        let page = get(app, who, &url).await;
        items.extend(page["items"].as_array().expect("items").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return items,
        }
    }
}

async fn export(app: &TestApp, lead: &reqwest::Client, batch: &str, format: &str) -> String {
    let path = format!("/api/v1/batches/{batch}/export?format={format}");
    let response = lead.get(app.url(&path)).go().await;
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    response.text().await.expect("export")
}

/// What the app serves from its database, file by file (the name is the file's path
/// under `expected/<backend>/`). Only reads: the one write they cause is an audit entry
/// per export, so the audit log is read first.
async fn served(app: &TestApp, tokens: &BTreeMap<String, String>) -> BTreeMap<String, Served> {
    let who = |name: &str| bearer(&tokens[name]);
    let (admin, lead) = (who("admin"), who("lead"));
    let mut out = BTreeMap::new();

    let audit = all_pages(app, &admin, "/api/v1/audit").await;
    out.insert("audit.json".to_owned(), Served::Json(Value::Array(audit)));
    let users = get(app, &admin, "/api/v1/users").await;
    out.insert("users.json".to_owned(), Served::Json(users));
    // The list, and the documents of the team's own rubric (the built-in ones are the
    // files under `rubrics/`, which a new verdict may well change).
    let rubrics = get(app, &admin, "/api/v1/rubrics").await;
    let mut documents = serde_json::Map::new();
    for n in 1..=2 {
        let path = format!("/api/v1/rubrics/clear/versions/{n}");
        documents.insert(format!("clear v{n}"), get(app, &admin, &path).await);
    }
    out.insert(
        "rubrics.json".to_owned(),
        Served::Json(json!({"list": rubrics, "documents": documents})),
    );
    let judges = get(app, &admin, "/api/v1/judges").await;
    out.insert("judges.json".to_owned(), Served::Json(judges));
    let batches = get(app, &admin, "/api/v1/batches").await;
    out.insert("batches.json".to_owned(), Served::Json(batches.clone()));

    let mut rating_ids = Vec::new();
    for batch in batches.as_array().expect("batches") {
        let id = batch["id"].as_str().expect("batch id");
        let name = batch["name"].as_str().expect("batch name");
        let file = |f: &str| format!("{name}/{f}");
        out.insert(
            file("batch.json"),
            Served::Json(get(app, &admin, &format!("/api/v1/batches/{id}")).await),
        );
        let metrics = get(app, &lead, &format!("/api/v1/batches/{id}/metrics")).await;
        out.insert(file("metrics.json"), Served::Json(metrics));
        let mut review = serde_json::Map::new();
        review.insert(
            "gold".into(),
            get(app, &lead, &format!("/api/v1/batches/{id}/gold")).await,
        );
        review.insert(
            "disagreements".into(),
            get(app, &lead, &format!("/api/v1/batches/{id}/disagreements")).await,
        );
        for status in ["submitted", "accepted", "returned", "rejected"] {
            let path = format!("/api/v1/review?batch={id}&status={status}");
            review.insert(
                format!("queue {status}"),
                Value::Array(all_pages(app, &lead, &path).await),
            );
        }
        out.insert(file("review.json"), Served::Json(Value::Object(review)));
        let runs = get(app, &admin, &format!("/api/v1/batches/{id}/judge-runs")).await;
        let mut figures = Vec::new();
        for run in runs.as_array().expect("runs") {
            let run = run["id"].as_str().expect("run id");
            let view = get(app, &admin, &format!("/api/v1/judge-runs/{run}")).await;
            let calls = get(app, &admin, &format!("/api/v1/judge-runs/{run}/calls")).await;
            assert_eq!(
                calls["calls"].as_array().map(Vec::len),
                calls["total"]
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok()),
                "every call of the run is on its one page"
            );
            figures.push(json!({"run": view, "calls": calls}));
        }
        out.insert(
            file("judge-runs.json"),
            Served::Json(json!({"list": runs, "runs": figures})),
        );
        let csv = export(app, &lead, id, "csv").await;
        let jsonl = export(app, &lead, id, "jsonl").await;
        for line in jsonl.lines() {
            let row: Value = serde_json::from_str(line).expect("an export line is JSON");
            if let Some(rating) = row["rating_id"].as_str() {
                rating_ids.push(rating.to_owned());
            }
        }
        out.insert(file("export.csv"), Served::Text(csv));
        out.insert(file("export.jsonl"), Served::Text(jsonl));
    }

    // Each rating as an admin reads it (canonical), with its history, and as its rater
    // does (as shown); drafts are only in their raters' own lists.
    let mut raters_of = BTreeMap::new();
    for rater in ["rater", "rater2", "rater3"] {
        for item in all_pages(app, &who(rater), "/api/v1/ratings").await {
            let id = item["id"].as_str().expect("rating id").to_owned();
            raters_of.insert(id.clone(), rater);
            rating_ids.push(id);
        }
    }
    rating_ids.sort();
    rating_ids.dedup();
    let mut ratings = serde_json::Map::new();
    for id in &rating_ids {
        let mut views = serde_json::Map::new();
        let path = format!("/api/v1/ratings/{id}");
        views.insert("as admin".into(), get(app, &admin, &path).await);
        let history = format!("/api/v1/ratings/{id}/history");
        views.insert("history".into(), get(app, &admin, &history).await);
        if let Some(rater) = raters_of.get(id) {
            views.insert("as rater".into(), get(app, &who(rater), &path).await);
        }
        ratings.insert(id.clone(), Value::Object(views));
    }
    out.insert(
        "ratings.json".to_owned(),
        Served::Json(Value::Object(ratings)),
    );
    out
}

// ---------------------------------------------------------------------------------------
// Restoring a fixture, and the check.
// ---------------------------------------------------------------------------------------

/// The id of the batch named `name` in the expected `batches.json`.
fn batch_id(dir: &Path, name: &str) -> String {
    let text = std::fs::read_to_string(dir.join("batches.json")).expect("batches.json");
    let batches: Vec<Value> = serde_json::from_str(&text).expect("batches.json");
    let batch = batches
        .iter()
        .find(|b| b["name"] == name)
        .expect("the batch");
    batch["id"].as_str().expect("its id").to_owned()
}

/// What the metrics' `aggregation` (issue 31) makes of the old batch: worked out again
/// here from its old export's counted ratings, for every question with a nominal or
/// ordinal agreement (a score's is interval). Tasks, mean confidences and rater
/// accuracies do not depend on the order the answers come in, and are checked; which of
/// two tied answers a majority takes does (the rubric's option order settles it), so
/// `differ` is taken as served once it is checked to be a share of the tasks.
fn aggregation_now(name: &str, old: &Value, export: &str, served: &Value) -> Value {
    use verdict_core::metrics::aggregate::{Label, Vote, dawid_skene, majority_vote};
    let records: Vec<Value> = export
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .filter(|r: &Value| r["counts_in_metrics"] == true)
        .collect();
    let mut out = serde_json::Map::new();
    for (path, agreement) in old["agreement"].as_object().expect("agreement") {
        if path.ends_with(":ordinal") || agreement["level"] == "interval" {
            continue;
        }
        let pointer = format!("/answers/{}", path.replace('.', "/"));
        let votes: Vec<Vote<String, String, Label>> = records
            .iter()
            .filter_map(|r| {
                Some(Vote {
                    task: r["external_id"].as_str()?.to_owned(),
                    rater: r["rater"].as_str()?.to_owned(),
                    label: Label::from_json(r.pointer(&pointer)?)?,
                })
            })
            .collect();
        let (mv, ds) = (majority_vote(&votes), dawid_skene(&votes));
        let now = &served[path];
        let n = mv.tasks.len();
        assert_eq!(now["tasks"], n, "{name} {path}: {now}");
        let close = |key: &str, want: Option<f64>| match (now[key].as_f64(), want) {
            (Some(got), Some(want)) => assert!((got - want).abs() < 1e-9, "{name} {path} {key}"),
            (got, want) => assert_eq!(got, want, "{name} {path} {key}"),
        };
        let mean = |tasks: &[verdict_core::metrics::aggregate::TaskAnswer<String, Label>]| {
            (n > 0).then(|| tasks.iter().map(|t| t.confidence).sum::<f64>() / n as f64)
        };
        close("majority_confidence", mean(&mv.tasks));
        close("dawid_skene_confidence", mean(&ds.tasks));
        let raters = now["raters"].as_object().expect("raters");
        assert_eq!(raters.len(), ds.raters.len(), "{name} {path}");
        for rater in &ds.raters {
            let got = raters[&rater.rater].as_f64().expect("an accuracy");
            assert!(
                (got - rater.accuracy).abs() < 1e-9,
                "{name} {path} {}",
                rater.rater
            );
        }
        let differ = now["differ"].as_f64();
        assert!(
            differ.is_none_or(|d| ((d * n as f64).round() - d * n as f64).abs() < 1e-9),
            "{name} {path}: {now}"
        );
        out.insert(path.clone(), now.clone());
    }
    Value::Object(out)
}

/// What the old verdict served, changed where the app is meant to serve something
/// differently now:
/// - issue 28: answers carry only the parts their rubric has, so a pairwise-aspects
///   rating (no question asked of each response) is read and exported without the empty
///   `a` and `b` the old verdict stored and served. Its history keeps what was stored.
/// - issue 28: a batch has a Bradley-Terry prior (migration 0017 gives every old batch
///   0.5, the prior every ranking used before), and judges' agreement on a choice of A,
///   tie or B is also given by order (see [`ordered_choices`]).
/// - issue 29: a judge run says whether it is retrying and what its latest error was
///   (see [`with_last_error`]).
/// - issue 31: the metrics have `aggregation` (see [`aggregation_now`]).
fn as_served_now(
    name: &str,
    mut expected: String,
    pairwise: &str,
    dir: &Path,
    served: &Served,
) -> String {
    // A release that changed a built-in rubric's document adds it as that rubric's next
    // version when it starts (issue 28 changed all three); the old versions stay as
    // they were, and batches keep theirs.
    if let ("rubrics.json", Served::Json(served)) = (name, served) {
        let mut rubrics: Value = serde_json::from_str(&expected).expect("rubrics.json");
        for rubric in rubrics["list"].as_array_mut().expect("the list") {
            if rubric["built_in"] != true {
                continue;
            }
            let now = served["list"]
                .as_array()
                .expect("the served list")
                .iter()
                .find(|r| r["name"] == rubric["name"])
                .expect("the built-in rubric is still listed");
            let old = rubric["versions"].as_array().expect("versions").clone();
            let newer = &now["versions"].as_array().expect("versions")[old.len()..];
            for (i, added) in newer.iter().enumerate() {
                assert_eq!(added["version"], old.len() + i + 1, "{added}");
                assert_eq!(added["created_by"], Value::Null, "{added}");
                assert!(
                    added["created_at"].as_str() > old[old.len() - 1]["created_at"].as_str(),
                    "{added}: added after the old versions"
                );
            }
            rubric["versions"]
                .as_array_mut()
                .expect("versions")
                .extend(newer.iter().cloned());
            rubric["latest"] = json!(old.len() + newer.len());
        }
        return rubrics.to_string();
    }
    let without_sides = |answers: &mut Value| {
        if let Some(answers) = answers.as_object_mut() {
            for side in ["a", "b"] {
                assert_eq!(
                    answers.remove(side),
                    Some(Value::Object(Default::default()))
                );
            }
        }
    };
    // Every batch view names its prior: the one its rankings always had; and, since
    // adaptive overlap (issue 31), its most raters per task (its overlap: old batches
    // never escalate) and its rule (none); and, since skills routing (issue 31 too), the
    // field it routes by (none) and the default mode.
    let with_prior = |batch: &mut Value| {
        let batch = batch.as_object_mut().expect("a batch");
        assert_eq!(batch.insert("bradley_terry_prior".into(), json!(0.5)), None);
        let overlap = batch["overlap"].clone();
        assert_eq!(batch.insert("max_overlap".into(), overlap), None);
        assert_eq!(batch.insert("escalate".into(), Value::Null), None);
        assert_eq!(batch.insert("route_by".into(), Value::Null), None);
        assert_eq!(batch.insert("routing".into(), json!("prefer")), None);
        // And, since adjudication (issue 51), how its final dataset answers a task no
        // lead decided: by majority, the default.
        assert_eq!(batch.insert("final_method".into(), json!("majority")), None);
    };
    // A batch's gold settings name its qualification since issue 31: old batches ask
    // for none.
    if name.ends_with("/review.json") {
        let mut review: Value = serde_json::from_str(&expected).expect("review.json");
        let gold = review["gold"].as_object_mut().expect("the gold settings");
        assert_eq!(gold.insert("qualification".into(), Value::Null), None);
        return review.to_string();
    }
    // People have skills since issue 31, and declare theirs since issue 50: nobody had
    // or declared any.
    if name == "users.json" {
        let mut users: Value = serde_json::from_str(&expected).expect("users.json");
        for user in users.as_array_mut().expect("a list") {
            let user = user.as_object_mut().expect("a user");
            assert_eq!(user.insert("skills".into(), json!([])), None);
            assert_eq!(user.insert("declared_skills".into(), json!([])), None);
        }
        return users.to_string();
    }
    if name == "batches.json" {
        let mut batches: Value = serde_json::from_str(&expected).expect("batches.json");
        batches
            .as_array_mut()
            .expect("a list")
            .iter_mut()
            .for_each(with_prior);
        return batches.to_string();
    }
    // One batch's view tells a lead its stalls since issue 51: the old batches have none
    // (every task rated, or the batch no longer open).
    if name.ends_with("/batch.json") {
        let mut batch: Value = serde_json::from_str(&expected).expect("batch.json");
        with_prior(&mut batch);
        let none = json!({"tasks": 0, "reasons": {}, "groups": [], "first": []});
        assert_eq!(
            batch
                .as_object_mut()
                .expect("a batch")
                .insert("stalled".into(), none),
            None
        );
        return batch.to_string();
    }
    if name.ends_with("/judge-runs.json") {
        let mut runs: Value = serde_json::from_str(&expected).expect("judge-runs.json");
        with_last_error(&mut runs);
        if let Served::Json(served) = served {
            with_run_figures(name, &mut runs, served);
        }
        return runs.to_string();
    }
    // A judge's rating names its run since issue 30 (migration 0019): the batch's only
    // run, the one that stands.
    if let Some(batch) = name
        .strip_suffix("/export.csv")
        .or_else(|| name.strip_suffix("/export.jsonl"))
    {
        let runs = std::fs::read_to_string(dir.join(batch).join("judge-runs.json"))
            .expect("the batch's runs");
        let runs: Value = serde_json::from_str(&runs).expect("judge-runs.json");
        let list = runs["list"].as_array().expect("the list");
        assert!(list.len() <= 1, "{name}: one run at most");
        let run = list.first().map_or(Value::Null, |r| r["id"].clone());
        let now = with_corrections(name, &with_judge_run(name, &expected, &run));
        if name != "pairwise/export.jsonl" {
            return now;
        }
        expected = now;
    }
    if name == "pairwise/export.jsonl" {
        return expected
            .lines()
            .map(|line| {
                let mut record: Value = serde_json::from_str(line).expect("a JSON line");
                without_sides(&mut record["answers"]);
                format!("{record}\n")
            })
            .collect();
    }
    // Skips are counted by reason since rubrics list their reasons (issue 28); the old
    // figures' count is split by the reasons the same batch's old export gives.
    if let Some(batch) = name.strip_suffix("/metrics.json") {
        let mut metrics: Value = serde_json::from_str(&expected).expect("metrics.json");
        let export = std::fs::read_to_string(dir.join(batch).join("export.jsonl"))
            .expect("the batch's export");
        let mut by_reason = BTreeMap::<String, u64>::new();
        for line in export.lines() {
            let record: Value = serde_json::from_str(line).expect("a JSON line");
            if record["outcome"] == "skipped"
                && record["rater_kind"] == "human"
                && record["gold"] == false
            {
                let reason = record["skip_reason"].as_str().expect("a skip's reason");
                *by_reason.entry(reason.to_owned()).or_default() += 1;
            }
        }
        assert_eq!(
            Some(by_reason.values().sum::<u64>()),
            metrics["counts"]["skipped"].as_u64(),
            "{name}: the old export's skips are the old figures'"
        );
        metrics["counts"]["skip_reasons"] = serde_json::json!(by_reason);
        // What adaptive overlap asked is counted since issue 31: an old batch asked its
        // overlap of every task, gold aside, and saved nothing.
        let view =
            std::fs::read_to_string(dir.join(batch).join("batch.json")).expect("the batch's view");
        let view: Value = serde_json::from_str(&view).expect("batch.json");
        let overlap = view["overlap"].as_i64().expect("an overlap");
        let tasks = view["progress"]["tasks"].as_i64().expect("its tasks");
        metrics["overlap"] = json!({"overlap": overlap, "max_overlap": overlap, "tasks": tasks,
            "escalated": 0, "raters_added": 0, "ratings_needed": tasks * overlap,
            "ratings_at_max": tasks * overlap, "ratings_saved": 0});
        if let (Some(judges), Served::Json(served)) = (metrics.get_mut("judges"), served) {
            ordered_choices(name, judges, &served["judges"]);
            // Tasks whose orders disagreed are counted since issue 30: at most the tasks
            // asked that have no rating.
            for (judge, old) in judges.as_object_mut().expect("judges by name") {
                let now = &served["judges"][judge]["orders_disagreed"];
                let unrated = old["tasks"].as_u64().zip(old["rated"].as_u64());
                assert!(
                    unrated.is_some_and(|(t, r)| now.as_u64() <= Some(t - r)),
                    "{name} {judge}: {now}"
                );
                old["orders_disagreed"] = now.clone();
            }
        }
        if let Served::Json(served) = served {
            metrics["aggregation"] =
                aggregation_now(name, &metrics, &export, &served["aggregation"]);
        }
        return metrics.to_string();
    }
    if name == "ratings.json" {
        let mut ratings: Value = serde_json::from_str(&expected).expect("ratings.json");
        for views in ratings.as_object_mut().expect("ratings by id").values_mut() {
            if views["as admin"]["batch_id"] != pairwise {
                continue;
            }
            for reader in ["as admin", "as rater"] {
                if let Some(view) = views.get_mut(reader) {
                    without_sides(&mut view["answers"]);
                }
            }
        }
        return ratings.to_string();
    }
    expected
}

/// The batch export's `judge_run` column (CSV, last) or key (JSON Lines): the run of a
/// judge's rating, nothing for a person's.
fn with_judge_run(name: &str, expected: &str, run: &Value) -> String {
    if name.ends_with(".jsonl") {
        return expected
            .lines()
            .map(|line| {
                // Written in as the record writes its keys (in order, `judge_run` before
                // `model_a`), not through a map, which would reorder nested objects.
                let record: Value = serde_json::from_str(line).expect("a JSON line");
                let of_judge = record["rater_kind"] == "judge";
                assert!(
                    !of_judge || !run.is_null(),
                    "{name}: a judge rating has its run"
                );
                let value = if of_judge { run.clone() } else { Value::Null };
                let at = line.rfind(",\"model_a\":").expect("model_a");
                format!("{},\"judge_run\":{value}{}\n", &line[..at], &line[at..])
            })
            .collect();
    }
    csv_with(expected, &["judge_run"], |header, record| {
        let kind = header
            .iter()
            .position(|h| h == "rater_kind")
            .expect("rater_kind");
        let of_judge = record[kind] == "judge";
        vec![if of_judge {
            run.as_str().expect("the run").to_owned()
        } else {
            String::new()
        }]
    })
}

/// The CSV `expected` with the columns `added` after its own, each record's values for
/// them from `values` (given the header and the record).
fn csv_with(
    expected: &str,
    added: &[&str],
    values: impl Fn(&[String], &[String]) -> Vec<String>,
) -> String {
    let mut reader = csv::Reader::from_reader(expected.as_bytes());
    let mut writer = csv::Writer::from_writer(Vec::new());
    let old: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(str::to_owned)
        .collect();
    let mut header = old.clone();
    header.extend(added.iter().map(|a| (*a).to_owned()));
    writer.write_record(&header).expect("written");
    for record in reader.records() {
        let mut record: Vec<String> = record
            .expect("a record")
            .iter()
            .map(str::to_owned)
            .collect();
        let more = values(&old, &record);
        record.extend(more);
        writer.write_record(&record).expect("written");
    }
    String::from_utf8(writer.into_inner().expect("written")).expect("UTF-8")
}

/// An export row says since issue 51 whether its task is withdrawn and whether it is of an
/// earlier version of its task: never, in an old database.
fn with_corrections(name: &str, expected: &str) -> String {
    if name.ends_with(".jsonl") {
        return expected
            .lines()
            .map(|line| {
                // Written in where the record writes its keys (alphabetically), not
                // through a map, which would reorder nested objects.
                let at = line.rfind(",\"status\":").expect("status");
                let end = line.rfind('}').expect("the record's end");
                format!(
                    "{},\"stale\":false{},\"withdrawn\":false}}\n",
                    &line[..at],
                    &line[at..end]
                )
            })
            .collect();
    }
    csv_with(expected, &["withdrawn", "stale"], |_, _| {
        vec!["false".to_owned(), "false".to_owned()]
    })
}

/// A run gives its own figures since issue 30: tasks rated, orders that disagreed, the
/// lean to the response shown first, and whether it stands. They are worked out from its
/// calls (checked in `tests/api/judge_export.rs`); here each must fit the run's counts,
/// and a batch's only run stands.
fn with_run_figures(name: &str, runs: &mut Value, served: &Value) {
    let now: BTreeMap<String, Value> = served["list"]
        .as_array()
        .expect("the served list")
        .iter()
        .map(|r| (r["id"].to_string(), r.clone()))
        .collect();
    let only = runs["list"].as_array().map_or(0, Vec::len) == 1;
    let adopt = |view: &mut Value| {
        let served = &now[&view["id"].to_string()];
        let tasks = view["tasks"].as_u64().expect("tasks");
        let rated = served["tasks_rated"].as_u64().expect("tasks rated");
        let disagreed = served["orders_disagreed"]
            .as_u64()
            .expect("orders disagreed");
        assert!(rated + disagreed <= tasks, "{name}: {served}");
        let lean = &served["first_shown_share"];
        assert!(
            lean.is_null() || lean["n"].as_u64() <= view["answered"].as_u64().map(|n| n * 6),
            "{name}: {lean}"
        );
        assert_eq!(
            served["stands"],
            json!(only),
            "{name}: a batch's only run stands"
        );
        let view = view.as_object_mut().expect("a run");
        for key in [
            "tasks_rated",
            "orders_disagreed",
            "first_shown_share",
            "stands",
        ] {
            assert_eq!(
                view.insert(key.into(), served[key].clone()),
                None,
                "{key} is new"
            );
        }
    };
    runs["list"]
        .as_array_mut()
        .expect("the list")
        .iter_mut()
        .for_each(adopt);
    for figures in runs["runs"].as_array_mut().expect("runs") {
        adopt(&mut figures["run"]);
    }
}

/// A run says whether it is retrying and what its latest error was since issue 29
/// (migration 0018). An old run is not retrying; its latest error is its latest failed
/// call's (the old verdict served every call), and none when no call failed.
fn with_last_error(runs: &mut Value) {
    let mut latest = BTreeMap::new();
    for figures in runs["runs"].as_array().expect("runs") {
        let failed = figures["calls"]["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .filter(|c| c["status"] == "failed")
            .max_by_key(|c| (c["created_at"].as_str(), c["id"].as_str()));
        let (error, at) = failed.map_or((Value::Null, Value::Null), |c| {
            (c["error"].clone(), c["created_at"].clone())
        });
        latest.insert(figures["run"]["id"].to_string(), (error, at));
    }
    let now = |view: &mut Value| {
        let (error, at) = latest[&view["id"].to_string()].clone();
        let view = view.as_object_mut().expect("a run");
        for (key, value) in [
            ("retrying", json!(false)),
            ("attempt", Value::Null),
            ("last_error", error),
            ("last_error_at", at),
        ] {
            assert_eq!(view.insert(key.into(), value), None, "{key} is new");
        }
    };
    runs["list"]
        .as_array_mut()
        .expect("the list")
        .iter_mut()
        .for_each(now);
    for figures in runs["runs"].as_array_mut().expect("runs") {
        now(&mut figures["run"]);
    }
}

/// Judges' agreement on a choice of A, tie or B is given by order too since issue 28
/// (weighted kappa and Spearman, with A < tie < B), where the old figures had `null`. Those
/// two figures are new, and checked against scikit-learn and SciPy elsewhere (the core's
/// `judges` tests and `tests/api/judge_agreement.rs`); here every old figure must be as it
/// was, and each new one must be defined exactly where it can be: weighted kappa where
/// Cohen's kappa is (both need two answers that are not one and the same), Spearman
/// only with at least two pairs, and both within -1..1.
fn ordered_choices(name: &str, judges: &mut Value, served: &Value) {
    for (judge, old) in judges.as_object_mut().expect("judges by name") {
        for (path, field) in old["fields"].as_object_mut().expect("fields") {
            let now = &served[judge]["fields"][path];
            let at = format!("{name} {judge} {path}");
            // The figures against the consensus sit in the field itself.
            adopt(&at, field, now);
            adopt(&format!("{at} human"), &mut field["human"], &now["human"]);
            for (rater, figures) in field["raters"].as_object_mut().expect("raters") {
                adopt(&format!("{at} {rater}"), figures, &now["raters"][rater]);
            }
        }
    }
}

/// Takes the two new figures of `now` into the `old` ones, once checked (see
/// [`ordered_choices`]).
fn adopt(at: &str, old: &mut Value, now: &Value) {
    for key in ["weighted_kappa", "spearman"] {
        assert_eq!(old[key], Value::Null, "{at}: {key} is new");
        let value = &now[key];
        if key == "weighted_kappa" {
            assert_eq!(value.is_null(), old["cohen_kappa"].is_null(), "{at}: {now}");
        } else if old["n"].as_u64() < Some(2) || old["cohen_kappa"].is_null() {
            assert!(value.is_null(), "{at}: {now}");
        }
        assert!(
            value.as_f64().is_none_or(|v| (-1.0..=1.0).contains(&v)),
            "{at}: {now}"
        );
        old[key] = value.clone();
    }
}

/// The fixture's API tokens of one backend, by username.
fn tokens(backend: Backend) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(folder().join("credentials.json")).expect("credentials");
    let all: BTreeMap<String, BTreeMap<String, String>> =
        serde_json::from_str(&text).expect("credentials.json");
    all[backend_name(backend)].clone()
}

/// Every file under `dir`, by its path relative to `dir`.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("under dir");
                found.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

/// A fresh database holding a copy of the fixture of `backend`, or `None` when the
/// backend is not configured (PostgreSQL without `TEST_DATABASE_URL`).
async fn restored(backend: Backend) -> Option<TestDb> {
    let db = TestDb::setup(backend).await?;
    match backend {
        Backend::Sqlite => {
            let path = db.sqlite_path().expect("SQLite path");
            std::fs::copy(folder().join("verdict.sqlite3"), &path).expect("copy the fixture");
        }
        Backend::Postgres => {
            let dump =
                std::fs::read_to_string(folder().join("verdict.postgres.sql")).expect("the dump");
            replay(&db.url, &dump).await;
        }
    }
    Some(db)
}

/// Replays a plain `pg_dump` into an empty database. psql's meta-commands (the
/// `\restrict` pair newer pg_dumps write around the dump) are psql's, not SQL: left out.
async fn replay(url: &str, dump: &str) {
    use sqlx::Connection;
    let sql: String = dump
        .lines()
        .filter(|line| !line.starts_with('\\'))
        .map(|line| format!("{line}\n"))
        .collect();
    let mut connection = sqlx::PgConnection::connect(url).await.expect("connect");
    sqlx::raw_sql(&sql)
        .execute(&mut connection)
        .await
        .expect("replay the dump");
    connection.close().await.expect("close");
}

/// Where two JSON values first differ (a path like `.items[3].status`, with both
/// values), or `None` when they are equal: a whole file in a failure would bury it.
fn first_difference(want: &Value, got: &Value, path: &str) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let keys: std::collections::BTreeSet<_> = w.keys().chain(g.keys()).collect();
            keys.into_iter().find_map(|key| {
                let at = format!("{path}.{key}");
                match (w.get(key), g.get(key)) {
                    (Some(w), Some(g)) => first_difference(w, g, &at),
                    (w, g) => Some(format!("{at}: expected {w:?}, served {g:?}")),
                }
            })
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (w, g))| first_difference(w, g, &format!("{path}[{i}]"))),
        _ if want == got => None,
        _ => Some(format!("{path}: expected {want}, served {got}")),
    }
}

async fn check(backend: Backend) {
    let Some(db) = restored(backend).await else {
        return;
    };
    // Every migration the old database lacks runs over its rows; sqlx refuses to go on
    // when one it applied back then has a different text now.
    let store = verdict::Store::connect(&db.url).await.expect("connect");
    if let Err(err) = store.migrate().await {
        panic!(
            "{}: the fixture does not migrate ({err}); a committed migration must never be \
             edited, add a new one instead",
            backend_name(backend)
        );
    }
    store.close().await;
    let app = TestApp::on(db, Config::default()).await;
    let got = served(&app, &tokens(backend)).await;
    let dir = folder().join("expected").join(backend_name(backend));
    let want = files_under(&dir);
    assert_eq!(
        want,
        got.keys().cloned().collect::<Vec<_>>(),
        "{}: the files served are the files expected",
        backend_name(backend)
    );
    let pairwise = batch_id(&dir, "pairwise");
    for name in &want {
        let expected = std::fs::read_to_string(dir.join(name)).expect("expected file");
        let expected = as_served_now(name, expected, &pairwise, &dir, &got[name]);
        match &got[name] {
            Served::Json(value) => {
                let expected: Value = serde_json::from_str(&expected).expect("expected JSON");
                if let Some(difference) = first_difference(&expected, value, "") {
                    panic!(
                        "{}: {name} differs from what the old verdict served, at {difference}",
                        backend_name(backend)
                    );
                }
            }
            Served::Text(text) => assert_eq!(
                text,
                &expected,
                "{}: {name} differs from what the old verdict served",
                backend_name(backend)
            ),
        }
    }
    app.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_database_serves_what_it_served_sqlite() {
    check(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_database_serves_what_it_served_postgres() {
    check(Backend::Postgres).await;
}

/// A run an older verdict finished with nothing but failed calls is `failed` once
/// upgraded (migration 0018), with its latest failed call's error as its last error.
/// Before the upgrade, every call of the fixture's run (over the pairwise batch) is made
/// to have failed, as a dead endpoint would have left it; as it is, with answers and two
/// failed calls, [`check`] finds it still finished.
async fn an_old_run_of_failed_calls_is_failed_once_upgraded(backend: Backend) {
    let Some(db) = restored(backend).await else {
        return;
    };
    let why =
        "connection failed: error sending request for url (http://127.0.0.1:9/v1/chat/completions)";
    let failed_all = format!(
        "UPDATE judge_calls SET status = 'failed', error = '{why}', raw_output = NULL
         WHERE run_id IN (SELECT r.id FROM judge_runs r JOIN batches b ON b.id = r.batch_id
                          WHERE b.name = 'pairwise')"
    );
    match backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&db.url).await.expect("connect");
            sqlx::raw_sql(&failed_all)
                .execute(&pool)
                .await
                .expect("fail the calls");
            pool.close().await;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&db.url).await.expect("connect");
            sqlx::raw_sql(&failed_all)
                .execute(&pool)
                .await
                .expect("fail the calls");
            pool.close().await;
        }
    }
    let app = TestApp::on(db, Config::default()).await;
    let admin = bearer(&tokens(backend)["admin"]);
    let dir = folder().join("expected").join(backend_name(backend));
    let path = dir.join("pairwise").join("judge-runs.json");
    let before: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("judge-runs.json"))
            .expect("JSON");
    let pairwise = batch_id(&dir, "pairwise");
    let runs = get(
        &app,
        &admin,
        &format!("/api/v1/batches/{pairwise}/judge-runs"),
    )
    .await;
    assert_eq!(
        runs.as_array().map(Vec::len),
        before["list"].as_array().map(Vec::len)
    );
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    for (run, old) in runs
        .as_array()
        .expect("runs")
        .iter()
        .zip(before["list"].as_array().expect("runs"))
    {
        assert_eq!(
            old["status"], "finished",
            "the fixture's run finished: {old}"
        );
        assert_eq!(run["status"], "failed", "{run}");
        assert_eq!(
            (run["answered"].as_i64(), run["unparsed"].as_i64()),
            (Some(0), Some(0)),
            "{run}"
        );
        assert_eq!(run["failed"], old["calls"], "{run}");
        assert_eq!(run["last_error"], why, "{run}");
        assert_eq!(
            run["finished_at"], old["finished_at"],
            "when it ended is kept"
        );
        assert_eq!(run["retrying"], false, "{run}");
        let id = run["id"].as_str().expect("run id");
        let calls = get(&app, &admin, &format!("/api/v1/judge-runs/{id}/calls")).await;
        let latest = calls["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .filter_map(|c| c["created_at"].as_str())
            .max()
            .expect("a call");
        assert_eq!(run["last_error_at"], latest, "{run}");
    }
    app.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_run_of_failed_calls_is_failed_once_upgraded_sqlite() {
    an_old_run_of_failed_calls_is_failed_once_upgraded(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_run_of_failed_calls_is_failed_once_upgraded_postgres() {
    an_old_run_of_failed_calls_is_failed_once_upgraded(Backend::Postgres).await;
}

// ---------------------------------------------------------------------------------------
// The generator.
// ---------------------------------------------------------------------------------------

async fn send(
    app: &TestApp,
    who: &Persona,
    method: reqwest::Method,
    path: &str,
    body: &Value,
    status: StatusCode,
) -> Value {
    let mut request = who.api.request(method.clone(), app.url(path));
    if !body.is_null() {
        request = request.json(body);
    }
    let response = request.go().await;
    let got = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(got, status, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn id_of(value: &Value, key: &str) -> String {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {value}"))
        .to_owned()
}

/// The assignment of the next task of `batch` for `rater`, which there must be.
async fn take(app: &TestApp, rater: &Persona, batch: &str) -> String {
    let next = app
        .next(rater, batch)
        .await
        .unwrap_or_else(|| panic!("{} has no task left in {batch}", rater.username));
    id_of(&next, "assignment_id")
}

/// Submits `answers`, confirming whatever warnings of the rubric they meet (a careful
/// rater's second send); returns the rating's id and the warnings confirmed.
async fn submit(
    app: &TestApp,
    rater: &Persona,
    assignment: &str,
    mut answers: Value,
) -> (String, Vec<Value>) {
    let first = app.act(rater, assignment, "submit", &answers).await;
    let mut confirmed = Vec::new();
    let done = if first.status() == StatusCode::CONFLICT {
        let refused = json_with(first, StatusCode::CONFLICT).await;
        confirmed = refused["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|w| w["id"].clone())
            .collect();
        answers["confirmed_warnings"] = Value::Array(confirmed.clone());
        let again = app.act(rater, assignment, "submit", &answers).await;
        json_with(again, StatusCode::OK).await
    } else {
        json_with(first, StatusCode::OK).await
    };
    (id_of(&done, "rating_id"), confirmed)
}

/// A lead's decision on a rating at its current version.
async fn review(app: &TestApp, lead: &Persona, rating: &str, decision: Value) {
    let now = send(
        app,
        lead,
        reqwest::Method::GET,
        &format!("/api/v1/ratings/{rating}"),
        &Value::Null,
        StatusCode::OK,
    )
    .await;
    let mut body = decision;
    body["version"] = now["version"].clone();
    send(
        app,
        lead,
        reqwest::Method::POST,
        &format!("/api/v1/ratings/{rating}/review"),
        &body,
        StatusCode::OK,
    )
    .await;
}

/// Blackhat answers for the fixture's batch, which asks the language as well.
fn blackhat(mut answers: Value) -> Value {
    answers["classifications"] = json!({"language": "python"});
    answers
}

/// Blackhat answers preferring A although A has major correctness issues and B none:
/// a rubric warning the rater must confirm.
fn contradictory() -> Value {
    let mut answers = blackhat(complete_answers());
    answers["a"]["correctness"] = json!("major_issues");
    answers["a"]["correctness_explanation"] = json!("It squares a different number.");
    answers
}

/// Blackhat answers missing the gold task's expected ones.
fn wrong_for_gold() -> Value {
    let mut answers = blackhat(complete_answers());
    answers["sxs"] = json!(5);
    answers["sxs_explanation"] = json!("B is shorter and reads more simply than A.");
    answers["b"]["executability"] = json!("yes_fully");
    answers
}

/// Code runs the rater made in the browser, as the page's runner sends them.
fn evidence() -> Value {
    json!({
        "runs": [{"side": "a", "block": 1, "language": "python", "status": "passed"},
                 {"side": "b", "block": 1, "language": "python", "status": "failed"}],
        "attachments": [{"side": "a", "block": 1, "language": "python",
                         "code": "def f():\n    return 1 * 1\nprint(f())", "stdout": "1\n",
                         "stderr": "", "status": "passed", "exit_code": 0, "duration_ms": 31}]
    })
}

/// Single-response tasks for the additive rubric.
fn single_tasks(n: usize) -> String {
    (1..=n)
        .map(|i| {
            json!({
                "external_id": format!("s{i}"),
                "prompt": format!("Explain what {i} squared is."),
                "response": format!("{i} squared is {}: {i} times itself.", i * i),
                "model": if i % 2 == 0 { "even" } else { "odd" },
            })
            .to_string()
                + "\n"
        })
        .collect()
}

/// Pairs for the pairwise rubric and its judge: GOOD marks the response the scripted
/// judge prefers; MUMBLE gets an answer it cannot read, REFUSE an error reply.
fn pairwise_tasks() -> String {
    [
        ("p1", "Sum a list.", "GOOD: `sum(xs)`", "Loop and add."),
        ("p2", "Reverse a string.", "Use a loop.", "GOOD: `s[::-1]`"),
        ("p3", "MUMBLE: sort a list.", "`sorted(xs)`", "`xs.sort()`"),
        (
            "p4",
            "REFUSE: read a file.",
            "`open(p).read()`",
            "`Path(p).read_text()`",
        ),
    ]
    .iter()
    .map(|(id, prompt, a, b)| {
        json!({"external_id": id, "prompt": prompt, "response_a": a, "response_b": b,
               "model_a": "alpha", "model_b": "beta"})
        .to_string()
            + "\n"
    })
    .collect()
}

/// The judge endpoint's script: [`prefers_good`], except for the marked prompts.
fn judge_script(body: &Value, n: usize) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
    if prompt.contains("MUMBLE") {
        Reply::text("Both have their merits; I would not choose.")
    } else if prompt.contains("REFUSE") {
        Reply::StatusBody(
            400,
            r#"{"error": {"message": "this prompt is refused"}}"#.into(),
        )
    } else {
        prefers_good(body, n)
    }
}

/// The team's own rubric: is each response correct, which is clearer (the rubric tests'
/// document, named `clear`).
fn clear_rubric(clarity_label: &str) -> Value {
    crate::rubrics::custom("clear", clarity_label)
}

/// Activity of every kind, through the API and the pages as people would make it;
/// returns the API tokens of [`READERS`] by username.
async fn activity(app: &TestApp) -> BTreeMap<String, String> {
    use reqwest::Method;
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let rater2 = app.persona("rater2", Role::Rater).await;
    let rater3 = app.persona("rater3", Role::Rater).await;

    // Accounts through the API: a second lead, and a rater who left (deactivated).
    let mut former = String::new();
    for (name, role) in [("lead2", "lead"), ("former", "rater")] {
        let created = send(
            app,
            &admin,
            Method::POST,
            "/api/v1/users",
            &json!({"username": name, "role": role, "password": PASSWORD}),
            StatusCode::CREATED,
        )
        .await;
        former = id_of(&created, "id");
    }
    send(
        app,
        &admin,
        Method::PATCH,
        &format!("/api/v1/users/{former}"),
        &json!({"active": false}),
        StatusCode::OK,
    )
    .await;
    // Tokens: one more in use, one revoked.
    for name in ["nightly export", "old laptop"] {
        let token = send(
            app,
            &lead,
            Method::POST,
            "/api/v1/tokens",
            &json!({"name": name}),
            StatusCode::CREATED,
        )
        .await;
        if name == "old laptop" {
            let id = id_of(&token, "id");
            let revoked = lead
                .api
                .delete(app.url(&format!("/api/v1/tokens/{id}")))
                .go()
                .await;
            assert!(revoked.status().is_success(), "{}", revoked.status());
        }
    }
    // A failed sign-in (a login attempt counted); sessions come with the pages below.
    let refused = app
        .submit_login(&app.browser(), "lead", "not the password", "/")
        .await;
    assert_ne!(refused.status(), StatusCode::SEE_OTHER);

    // The team's rubric, version 1 (version 2 comes after a batch is made on 1).
    send(
        app,
        &admin,
        Method::POST,
        "/api/v1/rubrics",
        &clear_rubric("Which is clearer?"),
        StatusCode::CREATED,
    )
    .await;

    // Blackhat, with a gold task, overlap 2, swaps, restricted raters and leads, and a
    // classification question.
    // Three gold tasks: a rater's ratings are held for review first once enough of
    // their gold is graded.
    let gold: String = (7..10)
        .map(|n| {
            json!({
                "external_id": format!("g{n}"),
                "prompt": format!("Write a function that returns {n} squared."),
                "response_a": format!("```python\ndef f():\n    return {n} * {n}\n```"),
                "response_b": format!("`{n} ** 2`"),
                "model_a": "alpha", "model_b": "beta",
                "gold": {"sxs": {"value": 2, "within": 1},
                         "a.correctness": {"any_of": ["no_issues", "minor_issues"]},
                         "b.executability": "no_code"}
            })
            .to_string()
                + "\n"
        })
        .collect();
    let bh = app
        .batch(
            &admin,
            "blackhat-gold",
            &(gold + &tasks_jsonl(5)),
            "&rubric=blackhat&overlap=2&randomize=true",
        )
        .await;
    send(
        app,
        &admin,
        Method::PATCH,
        &format!("/api/v1/batches/{bh}"),
        &json!({"raters": ["rater", "rater2", "rater3"], "leads": ["lead"],
                "classifications": [{"key": "language", "label": "Language",
                                     "options": ["python", "go"]}]}),
        StatusCode::OK,
    )
    .await;
    send(
        app,
        &lead,
        Method::PATCH,
        &format!("/api/v1/batches/{bh}/gold"),
        &json!({"gold_rate": 1.0, "review_first_below": 0.5}),
        StatusCode::OK,
    )
    .await;

    // rater: the gold tasks right, then one of every outcome.
    for _ in 0..3 {
        let a = take(app, &rater, &bh).await;
        submit(app, &rater, &a, blackhat(complete_answers())).await;
    }
    let a = take(app, &rater, &bh).await;
    let (r_accepted, _) = submit(app, &rater, &a, blackhat(complete_answers())).await;
    let a = take(app, &rater, &bh).await;
    send(
        app,
        &rater,
        Method::POST,
        &format!("/api/v1/assignments/{a}/skip"),
        &json!({"reason": "too_long", "note": "needs a GPU to run"}),
        StatusCode::OK,
    )
    .await;
    let a = take(app, &rater, &bh).await;
    send(
        app,
        &rater,
        Method::POST,
        &format!("/api/v1/assignments/{a}/out-of-scope"),
        &json!({"explanation": "The prompt asks for a poem, not code."}),
        StatusCode::OK,
    )
    .await;
    let a = take(app, &rater, &bh).await;
    let (r_warned, confirmed) = submit(app, &rater, &a, contradictory()).await;
    assert!(
        !confirmed.is_empty(),
        "the contradictory answers met a warning"
    );
    let a = take(app, &rater, &bh).await;
    let draft = json!({"sxs": 3, "evidence": evidence()});
    json_with(app.act(&rater, &a, "draft", &draft).await, StatusCode::OK).await;
    let mut with_runs = blackhat(complete_answers());
    with_runs["evidence"] = evidence();
    submit(app, &rater, &a, with_runs).await;

    // rater2: two of three gold tasks wrong (so their ratings wait for review first),
    // two rated, and a draft whose assignment a lead releases.
    for answers in [
        wrong_for_gold(),
        blackhat(complete_answers()),
        wrong_for_gold(),
    ] {
        let a = take(app, &rater2, &bh).await;
        submit(app, &rater2, &a, answers).await;
    }
    let a = take(app, &rater2, &bh).await;
    let (r2_rejected, _) = submit(app, &rater2, &a, blackhat(complete_answers())).await;
    let a = take(app, &rater2, &bh).await;
    let (r2_returned, _) = submit(app, &rater2, &a, blackhat(complete_answers())).await;
    let a = take(app, &rater2, &bh).await;
    let draft = json!({"sxs": 5, "sxs_explanation": "Not sure yet."});
    json_with(app.act(&rater2, &a, "draft", &draft).await, StatusCode::OK).await;
    let released = send(
        app,
        &lead,
        Method::POST,
        &format!("/api/v1/assignments/{a}/release"),
        &Value::Null,
        StatusCode::OK,
    )
    .await;
    assert_eq!(released["state"], "expired");

    // rater3: the gold tasks right, one rated confirming a warning, and one left open
    // with a draft.
    for _ in 0..3 {
        let a = take(app, &rater3, &bh).await;
        submit(app, &rater3, &a, blackhat(complete_answers())).await;
    }
    let a = take(app, &rater3, &bh).await;
    let (_, confirmed) = submit(app, &rater3, &a, contradictory()).await;
    assert!(
        !confirmed.is_empty(),
        "the contradictory answers met a warning"
    );
    let a = take(app, &rater3, &bh).await;
    let draft = json!({"sxs": 4, "a": {"executability": "yes_fully"}});
    json_with(app.act(&rater3, &a, "draft", &draft).await, StatusCode::OK).await;

    // Reviews: accepted; returned, revised and accepted; rejected; returned and being
    // revised on its page (a saved revision draft).
    let comment = |text: &str| json!({"decision": "accept", "comment": text});
    review(app, &lead, &r_accepted, comment("Clear and right.")).await;
    review(
        app,
        &lead,
        &r_warned,
        json!({"decision": "return", "comment": "Check the preference against correctness.",
               "field_comments": {"sxs": "Why prefer A when A has major issues?",
                                  "a.correctness": "Is this really major?"}}),
    )
    .await;
    let revised = send(
        app,
        &rater,
        Method::PUT,
        &format!("/api/v1/ratings/{r_warned}"),
        &blackhat(complete_answers()),
        StatusCode::OK,
    )
    .await;
    assert_eq!(revised["status"], "submitted");
    review(app, &lead, &r_warned, comment("Better now.")).await;
    review(
        app,
        &lead,
        &r2_rejected,
        json!({"decision": "reject", "comment": "This does not match the task."}),
    )
    .await;
    review(
        app,
        &lead,
        &r2_returned,
        json!({"decision": "return", "comment": "Say why B has no code.",
               "field_comments": {"b.executability": "B has an expression: is that code?"}}),
    )
    .await;
    let browser = rater2.browser_for(app).await;
    let form = page_text(app, &browser, &format!("/ratings/{r2_returned}")).await;
    let token = csrf_token(&form);
    let saved = browser
        .post(app.url(&format!("/ratings/{r2_returned}/draft")))
        .form(&[
            ("csrf_token", token.as_str()),
            ("b.executability", "yes_partially"),
            (
                "b.executability_explanation",
                "The expression runs in a REPL but is no function.",
            ),
            ("time_spent_s", "140"),
        ])
        .go()
        .await;
    json_with(saved, StatusCode::OK).await;

    // Additive: single responses, all accepted at once, then the batch closed.
    let additive = app
        .batch(&admin, "additive", &single_tasks(3), "&rubric=additive-5")
        .await;
    while let Some(next) = app.next(&rater, &additive).await {
        let answers = json!({"relevant": true, "substantial": true, "useful": true,
            "comprehensive": false, "expert": false, "repetitive": false,
            "justification": "Relevant and useful, but it says nothing of the approach."});
        submit(app, &rater, &id_of(&next, "assignment_id"), answers).await;
    }
    let accepted = send(
        app,
        &lead,
        Method::POST,
        "/api/v1/review/accept",
        &json!({"batch": additive}),
        StatusCode::OK,
    )
    .await;
    assert_eq!(accepted["accepted"], 3, "{accepted}");
    send(
        app,
        &admin,
        Method::PATCH,
        &format!("/api/v1/batches/{additive}"),
        &json!({"state": "closed"}),
        StatusCode::OK,
    )
    .await;

    // Pairwise aspects: two raters, and a judge with answered, unreadable and failed
    // calls.
    let pairwise = app
        .batch(
            &admin,
            "pairwise",
            &pairwise_tasks(),
            "&rubric=pairwise-aspects&overlap=2",
        )
        .await;
    for who in [&rater, &rater2] {
        for _ in 0..2 {
            let a = take(app, who, &pairwise).await;
            let answers = json!({"helpfulness": "a", "clarity": "b", "factuality": "tie",
                "depth": "a", "engagement": "tie", "safety": "tie",
                "rationale": "A answers the question; B reads more easily."});
            submit(app, who, &a, answers).await;
        }
    }
    let endpoint = ScriptedJudge::start(judge_script).await;
    add_judge(app, &admin, "scripted", &endpoint.base_url, json!({})).await;
    let run = start_run(app, &admin, &pairwise, "scripted").await;
    wait_for(app, &admin, &run, "finished").await;

    // The team's rubric: a batch on version 1, version 2, a batch on version 2.
    let clear1 = app
        .batch(&admin, "clear-v1", &tasks_jsonl(2), "&rubric=clear")
        .await;
    let clear_answers = json!({"a": {"correct": "yes"},
        "b": {"correct": "no", "correct_explanation": "It never returns the square."},
        "clearer": "a"});
    for _ in 0..2 {
        let a = take(app, &rater, &clear1).await;
        submit(app, &rater, &a, clear_answers.clone()).await;
    }
    let mut second = clear_rubric("Which one reads better?");
    second["questions"][0]["answer"]["options"]
        .as_array_mut()
        .expect("options")
        .remove(1);
    second["questions"][0]["explanation"]["required"] = json!({"when": ["no"]});
    send(
        app,
        &admin,
        Method::POST,
        "/api/v1/rubrics",
        &second,
        StatusCode::CREATED,
    )
    .await;
    let clear2 = app
        .batch(&admin, "clear-v2", &tasks_jsonl(2), "&rubric=clear")
        .await;
    let a = take(app, &rater3, &clear2).await;
    submit(app, &rater3, &a, clear_answers).await;

    let tokens = [&admin, &lead, &rater, &rater2, &rater3]
        .iter()
        .map(|p| (p.username.clone(), p.token.clone()))
        .collect::<BTreeMap<_, _>>();
    assert_eq!(tokens.keys().map(String::as_str).collect::<Vec<_>>(), {
        let mut readers = READERS.to_vec();
        readers.sort();
        readers
    });
    drop(browser);
    drop(endpoint);
    tokens
}

/// Moves the lease of the one open assignment a century on. A lease lasts a day at most,
/// so the fixture's would have run out before the check ever runs, and the server's
/// housekeeping, which starts with it, would then end the assignment while the check
/// reads, changing the batch's progress under it. Pushed on, the assignment stays open:
/// a rater who walked away mid-task.
async fn keep_open(db: &TestDb) {
    let until = chrono::DateTime::parse_from_rfc3339("2126-01-01T00:00:00Z")
        .expect("a time")
        .with_timezone(&chrono::Utc);
    let sql = "UPDATE assignments SET lease_expires_at = $1 WHERE state = 'open'";
    let moved = match db.backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&db.url).await.expect("connect");
            let done = sqlx::query(sql)
                .bind(until)
                .execute(&pool)
                .await
                .expect(sql);
            pool.close().await;
            done.rows_affected()
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&db.url).await.expect("connect");
            let done = sqlx::query(sql)
                .bind(until)
                .execute(&pool)
                .await
                .expect(sql);
            pool.close().await;
            done.rows_affected()
        }
    };
    assert_eq!(moved, 1, "one assignment is left open");
}

/// Every table of the database with its number of rows.
async fn table_counts(db: &TestDb) -> Vec<(String, i64)> {
    let names: Vec<(String,)> = match db.backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&db.url).await.expect("connect");
            let names = sqlx::query_as(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                 ORDER BY name",
            )
            .fetch_all(&pool)
            .await
            .expect("tables");
            pool.close().await;
            names
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&db.url).await.expect("connect");
            let names = sqlx::query_as(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
            )
            .fetch_all(&pool)
            .await
            .expect("tables");
            pool.close().await;
            names
        }
    };
    let mut counts = Vec::new();
    for (name,) in names {
        let n = db.count(&format!("SELECT COUNT(*) FROM \"{name}\"")).await;
        counts.push((name, n));
    }
    counts
}

/// Rows of every kind: each state and outcome the schema allows is present.
async fn assert_every_kind(db: &TestDb) {
    let counts = table_counts(db).await;
    let empty: Vec<_> = counts.iter().filter(|(_, n)| *n == 0).collect();
    assert!(empty.is_empty(), "tables without rows: {empty:?}");
    for (sql, what) in [
        ("SELECT COUNT(DISTINCT role) FROM users", 3),
        ("SELECT COUNT(DISTINCT kind) FROM users", 2),
        ("SELECT COUNT(DISTINCT active) FROM users", 2),
        (
            "SELECT COUNT(*) FROM api_tokens WHERE revoked_at IS NOT NULL",
            1,
        ),
        ("SELECT COUNT(DISTINCT rubric) FROM batches", 4),
        ("SELECT COUNT(DISTINCT state) FROM batches", 2),
        ("SELECT COUNT(DISTINCT role) FROM batch_members", 2),
        ("SELECT COUNT(DISTINCT state) FROM assignments", 4),
        ("SELECT COUNT(DISTINCT swapped) FROM assignments", 2),
        ("SELECT COUNT(DISTINCT outcome) FROM ratings", 3),
        ("SELECT COUNT(DISTINCT status) FROM ratings", 5),
        ("SELECT COUNT(DISTINCT rater_kind) FROM ratings", 2),
        ("SELECT COUNT(DISTINCT decision) FROM reviews", 3),
        ("SELECT COUNT(DISTINCT status) FROM judge_calls", 3),
        ("SELECT COUNT(DISTINCT gold_grade IS NULL) FROM ratings", 2),
        ("SELECT COUNT(DISTINCT review_first) FROM ratings", 2),
        ("SELECT COUNT(*) FROM ratings WHERE evidence IS NOT NULL", 1),
        (
            "SELECT COUNT(*) FROM ratings WHERE confirmed_warnings <> '[]'",
            1,
        ),
        (
            "SELECT COUNT(*) FROM ratings WHERE revision_draft IS NOT NULL",
            1,
        ),
        (
            "SELECT COUNT(*) FROM reviews WHERE field_comments <> '{}'",
            2,
        ),
        (
            "SELECT COUNT(*) FROM judge_calls WHERE error_body IS NOT NULL",
            1,
        ),
        ("SELECT COUNT(*) FROM rubrics WHERE name = 'clear'", 2),
        ("SELECT COUNT(DISTINCT rubric_version) FROM batches", 2),
    ] {
        assert!(db.count(sql).await >= what, "{sql}: fewer than {what}");
    }
}

/// Writes the fixtures. Run once, by hand (see `tests/fixtures/upgrade/README.md`); it
/// refuses to overwrite fixtures already made, which stand for an older verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes tests/fixtures/upgrade: run by hand with VERDICT_WRITE_UPGRADE_FIXTURES=1"]
async fn make_fixtures() {
    assert_eq!(
        std::env::var("VERDICT_WRITE_UPGRADE_FIXTURES").as_deref(),
        Ok("1"),
        "set VERDICT_WRITE_UPGRADE_FIXTURES=1 to write the fixtures"
    );
    assert!(
        std::env::var_os("TEST_DATABASE_URL").is_some(),
        "the fixtures need PostgreSQL as well: set TEST_DATABASE_URL"
    );
    let dir = folder();
    assert!(
        !dir.join("verdict.sqlite3").exists(),
        "{} holds fixtures already: they stand for the verdict that made them and are \
         never made again (new fixtures go in a new folder)",
        dir.display()
    );
    std::fs::create_dir_all(&dir).expect("fixture folder");
    let mut credentials = BTreeMap::new();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let config = Config {
            // A failed judge call is retried: quickly, so the generator does not wait.
            judge_retry_delay: Duration::from_millis(20),
            ..Config::default()
        };
        let mut app = TestApp::with_config(backend, config)
            .await
            .expect("the backend is configured");
        let tokens = activity(&app).await;
        app.stop().await;
        keep_open(&app.db).await;
        assert_every_kind(&app.db).await;
        match backend {
            Backend::Sqlite => {
                // One self-contained file, without the write-ahead log or free pages.
                let into = dir.join("verdict.sqlite3");
                let pool = sqlx::SqlitePool::connect(&app.db.url)
                    .await
                    .expect("connect");
                sqlx::query("VACUUM INTO ?")
                    .bind(into.to_string_lossy().into_owned())
                    .execute(&pool)
                    .await
                    .expect("VACUUM INTO");
                pool.close().await;
                // Small pages: a table or index takes a page even with one row in it,
                // and this schema has fifty of them.
                let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", into.display()))
                    .await
                    .expect("connect");
                sqlx::raw_sql("PRAGMA page_size = 1024; VACUUM")
                    .execute(&pool)
                    .await
                    .expect("VACUUM");
                pool.close().await;
            }
            Backend::Postgres => {
                let out = std::process::Command::new("pg_dump")
                    .args(["--inserts", "--no-owner", "--no-privileges", "--file"])
                    .arg(dir.join("verdict.postgres.sql"))
                    .arg(&app.db.url)
                    .output()
                    .expect("run pg_dump");
                assert!(
                    out.status.success(),
                    "pg_dump: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        app.teardown().await;

        // What it serves, read from the fixture as the check reads it.
        let db = restored(backend).await.expect("the backend is configured");
        let app = TestApp::on(db, Config::default()).await;
        let files = served(&app, &tokens).await;
        app.teardown().await;
        let expected = dir.join("expected").join(backend_name(backend));
        for (name, body) in files {
            let path = expected.join(&name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
            let text = match body {
                // Compact, to keep the fixtures small: `jq .` shows them laid out.
                Served::Json(value) => serde_json::to_string(&value).expect("JSON") + "\n",
                Served::Text(text) => text,
            };
            std::fs::write(&path, text).expect("write expected");
        }
        credentials.insert(backend_name(backend), tokens);
    }
    std::fs::write(
        dir.join("credentials.json"),
        serde_json::to_string_pretty(&credentials).expect("JSON") + "\n",
    )
    .expect("write credentials");
}
