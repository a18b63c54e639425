//! One answer per task: the aggregated export (`?aggregate=majority|dawid_skene`) and
//! the metrics' `aggregation`, rebuilt here from the ordinary ratings export. Raters
//! whose answers are chosen per task; a skip and a rejected rating that must count in
//! nothing.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

use crate::helpers::{Go, Persona, TestApp, assignment_id, complete_answers, db_test, json_with};
use verdict_core::metrics::aggregate::{Label, Vote, dawid_skene, majority_vote};

/// The blackhat questions aggregated, as the ratings export names their columns, with
/// the rubric's options in order (the sxs scale's points).
fn questions() -> Vec<(&'static str, Vec<Label>)> {
    let text =
        |xs: &[&str]| -> Vec<Label> { xs.iter().map(|x| Label::Text((*x).into())).collect() };
    let executability = text(&["yes_fully", "yes_partially", "no", "no_code"]);
    let following = text(&[
        "no_issues",
        "minor_issues",
        "major_issues",
        "not_applicable",
    ]);
    let correctness = text(&[
        "no_issues",
        "minor_issues",
        "major_issues",
        "cannot_assess",
        "not_applicable",
    ]);
    vec![
        ("a_executability", executability.clone()),
        ("a_instruction_following", following.clone()),
        ("a_correctness", correctness.clone()),
        ("b_executability", executability),
        ("b_instruction_following", following),
        ("b_correctness", correctness),
        ("sxs", (1..=7).map(Label::Int).collect()),
    ]
}

/// Rater `r` (0-based) on task `n`: a spread of answers, some tasks split three ways.
fn answers(r: usize, n: usize) -> Value {
    let mut a = complete_answers();
    let correctness = [
        "no_issues",
        "minor_issues",
        "major_issues",
        "not_applicable",
    ];
    a["a"]["correctness"] = json!(correctness[(n + r * (n % 3)) % 4]);
    a["b"]["correctness"] = json!(correctness[(n * r + 1) % 3]);
    a["sxs"] = json!(1 + (n * 2 + r * r) % 7);
    if (n + r) % 4 == 0 {
        a["a"]["executability"] = json!("yes_partially");
    }
    for side in ["a", "b"] {
        a[side]["correctness_explanation"] = json!("The loop stops one step early.");
        a[side]["executability_explanation"] = json!("One import is missing.");
    }
    a
}

/// Submits `answers`, confirming the consistency warnings they raise.
async fn submit(app: &TestApp, who: &Persona, next: &Value, answers: &Value) -> String {
    let assignment = assignment_id(next);
    let mut done = app.act(who, &assignment, "submit", answers).await;
    if done.status() == StatusCode::CONFLICT {
        let body = json_with(done, StatusCode::CONFLICT).await;
        let ids: Vec<Value> = body["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|w| w["id"].clone())
            .collect();
        let mut confirmed = answers.clone();
        confirmed["confirmed_warnings"] = json!(ids);
        done = app.act(who, &assignment, "submit", &confirmed).await;
    }
    json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .expect("a rating id")
        .to_owned()
}

async fn rate_as(app: &TestApp, who: &Persona, batch: &str, r: usize, limit: usize) {
    for _ in 0..limit {
        let Some(next) = app.next(who, batch).await else {
            return;
        };
        let external = next["task"]["external_id"].as_str().unwrap();
        let n: usize = external.trim_start_matches('t').parse().unwrap();
        submit(app, who, &next, &answers(r, n)).await;
    }
}

async fn get(app: &TestApp, who: &Persona, batch: &str, query: &str) -> reqwest::Response {
    who.api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?{query}")))
        .go()
        .await
}

async fn text(response: reqwest::Response) -> String {
    assert_eq!(response.status(), StatusCode::OK);
    response.text().await.unwrap()
}

/// A batch of 8 tasks rated by four raters (the fourth on a few), with a skip and a
/// rejected rating beside them.
async fn rated_batch(app: &TestApp) -> (Persona, String) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let tasks = crate::helpers::tasks_jsonl(8);
    let batch = app
        .batch(
            &admin,
            "aggregate",
            &tasks,
            "&overlap=4&randomize=false&raters_see_external_ids=true",
        )
        .await;
    for r in 0..3 {
        let who = app
            .persona(&format!("r{r}"), verdict::auth::Role::Rater)
            .await;
        rate_as(app, &who, &batch, r, 8).await;
    }
    let late = app.persona("r3", verdict::auth::Role::Rater).await;
    rate_as(app, &late, &batch, 3, 3).await;
    let next = app.next(&late, &batch).await.unwrap();
    let skip = app
        .act(
            &late,
            &assignment_id(&next),
            "skip",
            &json!({"reason": "unfamiliar"}),
        )
        .await;
    assert_eq!(skip.status(), StatusCode::OK);
    // r3's next rating is rejected: it counts in nothing.
    let next = app.next(&late, &batch).await.unwrap();
    let mut odd = answers(3, 99);
    odd["sxs"] = json!(7);
    let rating = submit(app, &late, &next, &odd).await;
    let review = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
        .json(&json!({"decision": "reject", "version": 1}))
        .go()
        .await;
    assert_eq!(review.status(), StatusCode::OK);
    (lead, batch)
}

/// The label of a CSV cell of the ratings export.
fn label(column: &str, cell: &str) -> Label {
    if column == "sxs" {
        Label::Int(cell.parse().unwrap())
    } else {
        Label::Text(cell.to_owned())
    }
}

/// Per question, the votes of the counted ratings of the ratings export (CSV), in the
/// rubric's option order.
fn votes_from_export(csv_text: &str) -> BTreeMap<&'static str, Vec<Vote<String, String, Label>>> {
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let mut out = BTreeMap::new();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let counted: Vec<&csv::StringRecord> = records
        .iter()
        .filter(|r| &r[at("counts_in_metrics")] == "true")
        .collect();
    assert_eq!(
        counted.len(),
        3 * 8 + 3,
        "the skip and the rejected rating are out"
    );
    for (column, options) in questions() {
        let mut votes: Vec<Vote<String, String, Label>> = counted
            .iter()
            .filter(|r| !r[at(column)].is_empty())
            .map(|r| Vote {
                task: r[at("external_id")].to_owned(),
                rater: r[at("rater")].to_owned(),
                label: label(column, &r[at(column)]),
            })
            .collect();
        votes.sort_by_key(|v| options.iter().position(|o| *o == v.label).unwrap());
        out.insert(column, votes);
    }
    out
}

/// The aggregated export's rows by (external id, question): answer, confidence, raters.
fn aggregated_rows(
    csv_text: &str,
    method: &str,
) -> BTreeMap<(String, String), (Label, f64, usize)> {
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "external_id",
            "question",
            "answer",
            "confidence",
            "method",
            "raters"
        ]
    );
    reader
        .records()
        .map(Result::unwrap)
        .map(|r| {
            assert_eq!(&r[4], method);
            (
                (r[0].to_owned(), r[1].to_owned()),
                (
                    label(&r[1], &r[2]),
                    r[3].parse().unwrap(),
                    r[5].parse().unwrap(),
                ),
            )
        })
        .collect()
}

/// Majority vote worked out by hand: the most answers, a tie to the rubric's first option.
fn by_hand(
    votes: &[Vote<String, String, Label>],
    options: &[Label],
) -> BTreeMap<String, (Label, f64)> {
    let mut counts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for v in votes {
        let i = options.iter().position(|o| *o == v.label).unwrap();
        counts
            .entry(v.task.clone())
            .or_insert_with(|| vec![0; options.len()])[i] += 1;
    }
    counts
        .into_iter()
        .map(|(task, c)| {
            let top = *c.iter().max().unwrap();
            let first = c.iter().position(|&x| x == top).unwrap();
            let total: usize = c.iter().sum();
            (task, (options[first].clone(), top as f64 / total as f64))
        })
        .collect()
}

async fn aggregated_exports_are_rebuilt_from_the_ratings_export(app: &TestApp) {
    let (lead, batch) = rated_batch(app).await;
    let ratings = text(get(app, &lead, &batch, "format=csv").await).await;
    let votes = votes_from_export(&ratings);
    let majority = aggregated_rows(
        &text(get(app, &lead, &batch, "aggregate=majority").await).await,
        "majority",
    );
    let ds_response = get(app, &lead, &batch, "aggregate=dawid_skene&format=csv").await;
    assert_eq!(
        ds_response.headers()[CONTENT_TYPE],
        "text/csv; charset=utf-8"
    );
    let dawid_skene_rows = aggregated_rows(&text(ds_response).await, "dawid_skene");
    let metrics = app.metrics(&lead, &batch).await;
    let mut ties = 0;
    let mut differ_total = 0;
    for (column, options) in questions() {
        let votes = &votes[column];
        let mv = majority_vote(votes);
        let ds = dawid_skene(votes);
        let hand = by_hand(votes, &options);
        assert_eq!(mv.tasks.len(), 8, "{column}");
        for (mv_task, ds_task) in mv.tasks.iter().zip(&ds.tasks) {
            let key = (mv_task.task.clone(), column.to_owned());
            let (label, confidence, raters) = &majority[&key];
            assert_eq!(
                (label, *raters),
                (&mv_task.label, mv_task.answers),
                "{key:?}"
            );
            assert!((confidence - mv_task.confidence).abs() < 1e-12, "{key:?}");
            assert_eq!(&hand[&mv_task.task].0, label, "{key:?}: by hand");
            assert!((hand[&mv_task.task].1 - confidence).abs() < 1e-12);
            if mv_task.confidence <= 0.5 && mv_task.answers > 1 {
                ties += 1;
            }
            let (label, confidence, raters) = &dawid_skene_rows[&key];
            assert_eq!(
                (label, *raters),
                (&ds_task.label, ds_task.answers),
                "{key:?}"
            );
            assert!((confidence - ds_task.confidence).abs() < 1e-9, "{key:?}");
            differ_total += usize::from(mv_task.label != ds_task.label);
        }
        let path = column.replacen('_', ".", usize::from(column != "sxs"));
        let summary = &metrics["aggregation"][&path];
        assert_eq!(summary["tasks"], 8, "{path}: {summary}");
        let differ = mv
            .tasks
            .iter()
            .zip(&ds.tasks)
            .filter(|(m, d)| m.label != d.label)
            .count() as f64
            / 8.0;
        assert!(
            (summary["differ"].as_f64().unwrap() - differ).abs() < 1e-12,
            "{path}"
        );
        let mean = ds.tasks.iter().map(|t| t.confidence).sum::<f64>() / 8.0;
        let shown = summary["dawid_skene_confidence"].as_f64().unwrap();
        assert!((shown - mean).abs() < 1e-9, "{path}");
        for rater in &ds.raters {
            let shown = summary["raters"][&rater.rater].as_f64().unwrap();
            assert!(
                (shown - rater.accuracy).abs() < 1e-9,
                "{path} {}",
                rater.rater
            );
        }
        assert_eq!(summary["raters"].as_object().unwrap().len(), 4, "{path}");
    }
    assert_eq!(majority.len(), 8 * 7);
    assert_eq!(dawid_skene_rows.len(), 8 * 7);
    assert!(ties > 0, "the answers make some ties");
    eprintln!("tasks where the methods differ: {differ_total}");

    // JSON Lines: the same rows, answers typed.
    let lines = text(get(app, &lead, &batch, "aggregate=majority&format=jsonl").await).await;
    let mut n = 0;
    for line in lines.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let key = (
            row["external_id"].as_str().unwrap().to_owned(),
            row["question"].as_str().unwrap().to_owned(),
        );
        let (label, confidence, raters) = &majority[&key];
        assert_eq!(Label::from_json(&row["answer"]).as_ref(), Some(label));
        assert_eq!(row["confidence"].as_f64(), Some(*confidence));
        assert_eq!(row["raters"], *raters);
        assert_eq!(row["method"], "majority");
        n += 1;
    }
    assert_eq!(n, 8 * 7);
}
db_test!(aggregated_exports_are_rebuilt_from_the_ratings_export: TestApp);

async fn the_aggregated_export_refuses_bad_queries_and_raters(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(&admin, "agg-bad", &crate::helpers::tasks_jsonl(1), "")
        .await;
    for (query, field) in [
        ("aggregate=mean", "aggregate"),
        ("aggregate=", "aggregate"),
        ("aggregate=majority&format=xlsx", "format"),
        ("aggregate=dawid_skene&rater=r1", "rater"),
        ("aggregate=majority&outcome=rated", "outcome"),
    ] {
        let response = get(app, &lead, &batch, query).await;
        let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(body["fields"][field].is_string(), "{query}: {body}");
    }
    // Nothing rated yet: the header alone.
    let empty = text(get(app, &lead, &batch, "aggregate=majority").await).await;
    assert_eq!(
        empty.trim(),
        "external_id,question,answer,confidence,method,raters"
    );
    let rater = app.rater().await;
    for query in ["aggregate=majority", "aggregate=dawid_skene&format=jsonl"] {
        let response = get(app, &rater, &batch, query).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{query}");
    }
}
db_test!(the_aggregated_export_refuses_bad_queries_and_raters: TestApp);
