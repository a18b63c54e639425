//! A judge's agreement with the raters by order and by side, through the API: three
//! raters and a scripted judge answer the tasks of `tests/fixtures/pairwise/judges.json`
//! (made by `generate.py` there), and every figure of the metrics (against the raters'
//! consensus, each rater, and the raters among themselves) equals scikit-learn's and
//! SciPy's: the six aspects of `pairwise-aspects` as ordered answers A < tie < B (weighted
//! kappa and Spearman beside Cohen's kappa), blackhat's 1-7 score on its scale and, under
//! `sides`, as the side each answer favours. The batch page shows both.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use verdict::auth::Role;

use crate::helpers::{Persona, TestApp, complete_answers, db_test, jsonl, page_text, pair_task};
use crate::judge_server::{Reply, ScriptedJudge, shown_first};
use crate::judges::{add_judge, start_run, wait_for};

/// A case of `tests/fixtures/pairwise/judges.json`, by name.
fn case(name: &str) -> Value {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("../fixtures/pairwise/judges.json")).expect("fixtures");
    cases
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

/// Task `t<n>` (from 1) of a case: its responses say which they are, so that the judge
/// can tell which one it was shown first.
fn tasks(n: usize) -> String {
    jsonl((1..=n).map(|i| {
        pair_task(
            &format!("t{i}"),
            &format!("Task t{i}: reverse a string."),
            [
                &format!("First answer to t{i}."),
                &format!("Second answer to t{i}."),
            ],
            ["alpha", "beta"],
        )
    }))
}

/// Which task a judge's prompt is about, and whether it shows the second response first,
/// from the text shown as response A.
fn shown(shown_a: &str) -> (usize, bool) {
    let at = shown_a.find(" answer to t").expect("a task's response") + 12;
    let digits: String = shown_a[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (
        digits.parse().expect("a task number"),
        shown_a[..at].contains("Second"),
    )
}

/// An answer in the task's orientation as it reads with A and B shown the other way
/// round.
fn turned(answer: &Value, swapped: bool) -> Value {
    match (answer, swapped) {
        (_, false) => answer.clone(),
        (Value::Number(n), true) => json!(8 - n.as_i64().expect("a score")),
        (Value::String(s), true) => json!(match s.as_str() {
            "a" => "b",
            "b" => "a",
            other => other,
        }),
        _ => unreachable!("{answer}"),
    }
}

/// Uploads the case's tasks and has raters r0, r1 and r2 rate each as the case says;
/// returns the batch.
async fn rated(
    app: &TestApp,
    admin: &Persona,
    rubric: &str,
    case: &Value,
    answer: impl Fn(&Value) -> Value,
) -> String {
    let given = case["tasks"].as_array().expect("tasks");
    let batch = app
        .batch(
            admin,
            rubric,
            &tasks(given.len()),
            &format!("&rubric={rubric}&overlap=3&randomize=false"),
        )
        .await;
    for rater in ["r0", "r1", "r2"] {
        let who = app.persona(rater, Role::Rater).await;
        let done = app
            .rate_all(&who, &batch, |next| {
                let (n, swapped) = shown(next["task"]["response_a"].as_str().unwrap());
                assert!(!swapped, "the batch keeps the task's order");
                answer(&given[n - 1]["raters"][rater])
            })
            .await;
        assert_eq!(done, given.len(), "{rater} rated every task");
    }
    batch
}

/// Runs `judge` (already configured) over the batch and waits for it to finish.
async fn judged(app: &TestApp, admin: &Persona, batch: &str, judge: &str) {
    let run = start_run(app, admin, batch, judge).await;
    let done = wait_for(app, admin, &run, "finished").await;
    assert_eq!(done["failed"], 0, "{done}");
}

/// Every figure of one comparison equal to the reference's, to 1e-9 (`null` where the
/// libraries give `nan`).
fn assert_figures(at: &str, got: &Value, want: &Value) {
    assert_eq!(got["n"], want["n"], "{at}: {got}");
    for key in [
        "agreement",
        "agreement_without_ties",
        "cohen_kappa",
        "weighted_kappa",
        "spearman",
    ] {
        match (got[key].as_f64(), want[key].as_f64()) {
            (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{at} {key}: {g} vs {w}"),
            (None, None) => assert!(got[key].is_null(), "{at} {key}: {got}"),
            (g, w) => panic!("{at} {key}: {g:?} vs {w:?}"),
        }
    }
}

/// The consensus, each rater and the raters among themselves, as the reference has them.
fn assert_all(at: &str, got: &Value, want: &Value) {
    assert_figures(at, got, want);
    assert_figures(&format!("{at} human"), &got["human"], &want["human"]);
    let raters: BTreeMap<String, Value> =
        serde_json::from_value(want["raters"].clone()).expect("raters");
    assert_eq!(
        got["raters"].as_object().map(|r| r.len()),
        Some(raters.len())
    );
    for (rater, want) in &raters {
        assert_figures(&format!("{at} {rater}"), &got["raters"][rater], want);
    }
}

async fn an_ordered_choice_is_compared_by_order(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let reference = case("api_pairwise-aspects");
    let aspects = |help: &Value| {
        json!({"helpfulness": help, "clarity": "tie", "factuality": "tie", "depth": "tie",
               "engagement": "tie", "safety": "tie", "rationale": "Read both with care."})
    };
    let batch = rated(app, &admin, "pairwise-aspects", &reference, aspects).await;
    let judge_tasks = reference["tasks"].clone();
    let scripted = ScriptedJudge::start(move |body: &Value, _| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        let (n, swapped) = shown(shown_first(prompt));
        let help = turned(&judge_tasks[n - 1]["judge"], swapped);
        let help = help.as_str().unwrap().replace('a', "A").replace('b', "B");
        Reply::text(
            json!({"rationale": "Judged each aspect on its own merits.", "choices": {
                "helpfulness": help, "clarity": "tie", "factuality": "tie", "depth": "tie",
                "engagement": "tie", "safety": "tie"}})
            .to_string(),
        )
    })
    .await;
    add_judge(app, &admin, "aspects", &scripted.base_url, json!({})).await;
    judged(app, &admin, &batch, "aspects").await;

    let m = app.metrics(&lead, &batch).await;
    let help = &m["judges"]["aspects"]["fields"]["helpfulness"];
    let want = &reference["expected"];
    assert!(want["weighted_kappa"].is_number() && want["spearman"].is_number());
    assert_all("helpfulness", help, want);
    assert!(
        help.get("sides").is_none(),
        "a choice is already compared by side: {help}"
    );

    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    let weighted = format!("{:.2}", want["weighted_kappa"].as_f64().unwrap());
    let row = page
        .split("<tr>")
        .find(|r| r.contains("<th scope=\"row\">Helpfulness</th>"))
        .expect("the helpfulness row");
    assert!(
        row.contains(&weighted),
        "weighted kappa {weighted} shown: {row}"
    );
}

db_test!(an_ordered_choice_is_compared_by_order: TestApp);

async fn a_preference_scale_is_compared_on_the_scale_and_by_side(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let reference = case("api_blackhat");
    let scored = |sxs: &Value| {
        let mut answers = complete_answers();
        answers["sxs"] = sxs.clone();
        answers
    };
    let batch = rated(app, &admin, "blackhat", &reference, scored).await;
    let judge_tasks = reference["tasks"].clone();
    let scripted = ScriptedJudge::start(move |body: &Value, _| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        let shown_a = prompt
            .lines()
            .find_map(|l| l.strip_prefix("A "))
            .expect("response A");
        let (n, swapped) = shown(shown_a);
        let same = json!({"executability": "yes_fully", "instruction_following": "no_issues",
                          "correctness": "no_issues"});
        Reply::text(
            json!({"a": same, "b": same, "sxs": turned(&judge_tasks[n - 1]["judge"], swapped),
                   "sxs_explanation": "Weighed correctness first, then the instructions."})
            .to_string(),
        )
    })
    .await;
    let template = json!({"text": "Q {$instruction}\nA {$candidate_A}\nB {$candidate_B}\nAnswer JSON.",
                          "format": "answers"});
    add_judge(
        app,
        &admin,
        "scores",
        &scripted.base_url,
        json!({"templates": {"blackhat": template}}),
    )
    .await;
    judged(app, &admin, &batch, "scores").await;

    let m = app.metrics(&lead, &batch).await;
    let sxs = &m["judges"]["scores"]["fields"]["sxs"];
    let want = &reference["expected"];
    assert_all("sxs", sxs, want);
    assert_all("sxs sides", &sxs["sides"], &want["sides"]);
    // Reading by side is not reading by strength: the two differ on this batch.
    assert_ne!(sxs["agreement"], sxs["sides"]["agreement"], "{sxs}");

    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    let row = page
        .split("<tr>")
        .find(|r| r.contains("better overall?: by side (A / tie / B)"))
        .unwrap_or_else(|| panic!("a row for the sides: {page}"));
    let kappa = format!("{:.2}", want["sides"]["cohen_kappa"].as_f64().unwrap());
    assert!(row.contains(&kappa), "side kappa {kappa} shown: {row}");
}

db_test!(a_preference_scale_is_compared_on_the_scale_and_by_side: TestApp);

async fn the_openapi_document_describes_agreement_by_side(app: &TestApp) {
    let doc = app.openapi().await;
    let schemas = &doc["components"]["schemas"];
    // Its figures against the consensus are flattened in: the schema is made of parts.
    let field = serde_json::to_string(&schemas["JudgeField"]).unwrap();
    assert!(
        field.contains("\"sides\"") && field.contains("#/components/schemas/SideAgreement"),
        "{field}"
    );
    let sides = serde_json::to_string(&schemas["SideAgreement"]).unwrap();
    // The figures against the consensus (flattened in), each rater's and the raters'.
    for name in ["#/components/schemas/PairAgreement", "raters", "human"] {
        assert!(sides.contains(&format!("\"{name}\"")), "{name}: {sides}");
    }
}

db_test!(the_openapi_document_describes_agreement_by_side: TestApp);
