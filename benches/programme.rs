//! What adaptive overlap and skills routing save, on a simulated pool of raters of known
//! accuracy and skills: the real `verdict` binary hands out a blackhat batch whose every
//! task has a right side (A or B), and simulated raters take work through the HTTP API
//! as people would, until nobody is offered any. Each setting runs the same tasks and the
//! same pool; the report counts the ratings paid for, the skips, and how often majority
//! vote and Dawid-Skene (the aggregated export) pick the right side. Writes its section
//! of `BENCHMARKS.md`. Run with `cargo bench --bench programme` (`-- --quick` for fewer
//! tasks).
//!
//! The pool: 12 raters, each knowing two of four languages, right about a task in their
//! languages with a probability from 60% to 95% (spread evenly over the pool). Offered a
//! task in a language they do not know, a rater skips it as unfamiliar 70% of the time,
//! and otherwise answers it at chance. Draws come from one seeded generator per setting,
//! so a run is repeatable.
//!
//! A measurement, never an assertion.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use common::{
    Database, Server, has_flag, machine, persona, rater_token, upload_with, write_section,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

const LANGUAGES: [&str; 4] = ["python", "rust", "go", "sql"];
const RATERS: usize = 12;
/// How often a rater skips a task they cannot judge rather than guess.
const SKIPS_UNFAMILIAR: f64 = 0.7;
const SEED: u64 = 31;

/// A simulated rater.
struct Rater {
    name: String,
    api: Client,
    skills: [&'static str; 2],
    /// The chance of picking the right side of a task in one of their languages.
    accuracy: f64,
}

/// One way of running the batch.
struct Setting {
    label: &'static str,
    query: &'static str,
}

const SETTINGS: [Setting; 5] = [
    Setting {
        label: "fixed overlap 5, no routing",
        query: "&overlap=5",
    },
    Setting {
        label: "fixed overlap 3, no routing",
        query: "&overlap=3",
    },
    Setting {
        label: "adaptive 3 to 5 (side), no routing",
        query: "&overlap=3&max_overlap=5",
    },
    Setting {
        label: "adaptive 3 to 5, routing prefer",
        query: "&overlap=3&max_overlap=5&route_by=metadata.language&routing=prefer",
    },
    Setting {
        label: "adaptive 3 to 5, routing strict",
        query: "&overlap=3&max_overlap=5&route_by=metadata.language&routing=strict",
    },
];

/// What a setting came to.
struct Outcome {
    rated: usize,
    skipped: usize,
    escalated: i64,
    majority: f64,
    dawid_skene: f64,
}

/// `n` tasks in the four languages in turn, each with its right side.
fn tasks(n: usize, rng: &mut StdRng) -> (String, HashMap<String, char>) {
    let mut body = String::new();
    let mut truth = HashMap::new();
    for i in 0..n {
        let id = format!("task-{i}");
        let language = LANGUAGES[i % LANGUAGES.len()];
        let task = json!({
            "external_id": id,
            "prompt": format!("Write a {language} function for case {i}."),
            "response_a": format!("One answer to case {i}."),
            "response_b": format!("Another answer to case {i}."),
            "model_a": "alpha", "model_b": "beta",
            "metadata": {"language": language}
        });
        body.push_str(&task.to_string());
        body.push('\n');
        truth.insert(id, if rng.gen_bool(0.5) { 'a' } else { 'b' });
    }
    (body, truth)
}

/// Valid blackhat answers favouring `side`, as shown (the batches show A and B as
/// uploaded).
fn favouring(side: char) -> Value {
    let better = json!({"executability": "yes_fully", "instruction_following": "no_issues",
                        "correctness": "no_issues"});
    let worse = json!({"executability": "no_code", "instruction_following": "minor_issues",
                       "instruction_following_explanation": "gives an outline, not the function asked for",
                       "correctness": "no_issues"});
    let (a, b, sxs) = if side == 'a' {
        (better, worse, 2)
    } else {
        (worse, better, 6)
    };
    json!({"a": a, "b": b, "sxs": sxs,
           "sxs_explanation": "One response delivers the function that was asked for; the other does not.",
           "time_spent_s": 300})
}

async fn pool(admin: &Client, server: &Server) -> Vec<Rater> {
    let mut raters = Vec::new();
    for i in 0..RATERS {
        let name = format!("rater{i:02}");
        let token = rater_token(admin, server, &name).await;
        let api = common::bearer(&token);
        let skills = [
            LANGUAGES[i % LANGUAGES.len()],
            LANGUAGES[(i + 1) % LANGUAGES.len()],
        ];
        let set = api
            .patch(server.url("/api/v1/me"))
            .json(&json!({ "skills": skills }))
            .send()
            .await
            .expect("skills");
        assert_eq!(set.status(), StatusCode::OK, "skills refused");
        raters.push(Rater {
            name,
            api,
            skills,
            accuracy: 0.60 + 0.35 * i as f64 / (RATERS - 1) as f64,
        });
    }
    raters
}

/// Runs one setting to the end: the raters take turns until a whole round offers nobody
/// anything (a task that escalates is offered again after some were told none was left).
async fn run(
    server: &Server,
    admin: &Client,
    raters: &[Rater],
    (name, setting): (String, &Setting),
    (body, truth): (&str, &HashMap<String, char>),
) -> Outcome {
    let query = format!(
        "name={name}&randomize=false&raters_see_external_ids=true{}",
        setting.query
    );
    let (batch, _) = upload_with(admin, server, &query, body.to_owned()).await;
    let batch = batch["id"].as_str().expect("id").to_owned();
    let mut rng = StdRng::seed_from_u64(SEED);
    let (mut rated, mut skipped) = (0, 0);
    loop {
        let mut offered = false;
        for rater in raters {
            let next = rater
                .api
                .post(server.url(&format!("/api/v1/batches/{batch}/next")))
                .send()
                .await
                .expect("next");
            if next.status() == StatusCode::NO_CONTENT {
                continue;
            }
            offered = true;
            let next: Value = next.json().await.expect("JSON");
            let id = next["assignment_id"].as_str().expect("assignment");
            let task = next["task"]["external_id"].as_str().unwrap_or_default();
            let language = next["task"]["metadata"]["language"]
                .as_str()
                .unwrap_or_default();
            let right = truth[task];
            let knows = rater.skills.contains(&language);
            let (action, body) = if !knows && rng.gen_bool(SKIPS_UNFAMILIAR) {
                skipped += 1;
                ("skip", json!({"reason": "unfamiliar"}))
            } else {
                rated += 1;
                let p = if knows { rater.accuracy } else { 0.5 };
                let wrong = if right == 'a' { 'b' } else { 'a' };
                let side = if rng.gen_bool(p) { right } else { wrong };
                ("submit", favouring(side))
            };
            let done = rater
                .api
                .post(server.url(&format!("/api/v1/assignments/{id}/{action}")))
                .json(&body)
                .send()
                .await
                .expect("answer");
            assert_eq!(
                done.status(),
                StatusCode::OK,
                "{} {action} refused",
                rater.name
            );
        }
        if !offered {
            break;
        }
    }
    let metrics: Value = admin
        .get(server.url(&format!("/api/v1/batches/{batch}/metrics")))
        .send()
        .await
        .expect("metrics")
        .json()
        .await
        .expect("JSON");
    let right_share = |export: &str| {
        let mut right = 0;
        for line in export.lines() {
            let row: Value = serde_json::from_str(line).expect("a row");
            if row["question"] != "sxs" {
                continue;
            }
            let side = match row["answer"].as_i64() {
                Some(s) if s < 4 => 'a',
                Some(s) if s > 4 => 'b',
                _ => '-',
            };
            if truth.get(row["external_id"].as_str().unwrap_or_default()) == Some(&side) {
                right += 1;
            }
        }
        right as f64 / truth.len() as f64
    };
    let mut shares = Vec::new();
    for method in ["majority", "dawid_skene"] {
        let export = admin
            .get(server.url(&format!(
                "/api/v1/batches/{batch}/export?aggregate={method}&format=jsonl"
            )))
            .send()
            .await
            .expect("export")
            .text()
            .await
            .expect("text");
        shares.push(right_share(&export));
    }
    Outcome {
        rated,
        skipped,
        escalated: metrics["overlap"]["escalated"].as_i64().unwrap_or(0),
        majority: shares[0],
        dawid_skene: shares[1],
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = has_flag("--quick");
    let n = if quick { 40 } else { 240 };
    let db = Database::fresh(None).await;
    let admin = persona(&db, "admin", "admin");
    let server = Server::start(&db);
    let raters = pool(&admin, &server).await;
    let (body, truth) = tasks(n, &mut StdRng::seed_from_u64(SEED + 1));
    let mut results = BTreeMap::new();
    for (i, setting) in SETTINGS.iter().enumerate() {
        let outcome = run(
            &server,
            &admin,
            &raters,
            (format!("setting-{i}"), setting),
            (&body, &truth),
        )
        .await;
        eprintln!(
            "{}: {} rated, {} skipped, majority {:.3}",
            setting.label, outcome.rated, outcome.skipped, outcome.majority
        );
        results.insert(i, outcome);
    }
    server.stop();
    db.drop_it().await;

    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Running a programme: adaptive overlap and skills routing\n"
    );
    let _ = writeln!(
        md,
        "Measured by `cargo bench --bench programme` on {}: {n} blackhat tasks in four languages \
         (python, rust, go, sql, in turn), each with a right side, handed out by the real server \
         (SQLite) to a simulated pool through the HTTP API. The pool: {RATERS} raters, each knowing \
         two of the languages, right about a task in them with a probability from 60% to 95% \
         (spread evenly); offered a task in another language, a rater skips it as unfamiliar \
         {:.0}% of the time and otherwise answers at chance. *Paid* is every task handed out and \
         finished, rated or skipped (a skip takes a rater's time too); *right* is the share of \
         all tasks whose aggregated answer (the aggregated export's `sxs`) favours the right side. \
         The same seed for every setting.\n",
        machine(),
        SKIPS_UNFAMILIAR * 100.0
    );
    let _ = writeln!(
        md,
        "| setting | ratings | skips | paid | vs fixed 5 | tasks escalated | right, majority | right, Dawid-Skene |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let baseline = results[&0].rated + results[&0].skipped;
    for (i, setting) in SETTINGS.iter().enumerate() {
        let o = &results[&i];
        let paid = o.rated + o.skipped;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {paid} | {:+.0}% | {} | {:.1}% | {:.1}% |",
            setting.label,
            o.rated,
            o.skipped,
            100.0 * (paid as f64 - baseline as f64) / baseline as f64,
            o.escalated,
            100.0 * o.majority,
            100.0 * o.dawid_skene
        );
    }
    write_section("BENCHMARKS.md", "programme", &md);
    println!("{md}");
}
