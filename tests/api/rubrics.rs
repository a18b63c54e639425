//! Rubrics as documents: a batch on a rubric other than blackhat is asked, checked,
//! turned and exported by what its document says.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Go, TestApp, db_test, json_with, tasks_jsonl};

/// The aspects of `pairwise-aspects`, with what the rater below answers, as shown.
const SHOWN: [(&str, &str); 6] = [
    ("helpfulness", "a"),
    ("clarity", "b"),
    ("factuality", "tie"),
    ("depth", "a"),
    ("engagement", "tie"),
    ("safety", "b"),
];

fn flipped(side: &str) -> &str {
    match side {
        "a" => "b",
        "b" => "a",
        other => other,
    }
}

async fn six_aspects_are_stored_for_the_canonical_side_and_exported_so(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let tasks = 40;
    let batch = app
        .batch(
            &admin,
            "aspects",
            &tasks_jsonl(tasks),
            "&rubric=pairwise-aspects",
        )
        .await;
    let mut swapped_ids = std::collections::BTreeSet::new();
    while let Some(next) = app.next(&rater, &batch).await {
        assert_eq!(next["rubric"]["name"], "pairwise-aspects");
        assert_eq!(next["rubric"]["questions"].as_array().unwrap().len(), 7);
        // The test's tasks put code in response A: shown second, the sides were swapped.
        let swapped = next["task"]["response_a"]
            .as_str()
            .unwrap()
            .starts_with("Use `");
        let mut answers = json!({"rationale": "A is the function asked for; B is clearer."});
        for (aspect, side) in SHOWN {
            answers[aspect] = json!(side);
        }
        let id = next["assignment_id"].as_str().unwrap();
        let done = json_with(
            app.act(&rater, id, "submit", &answers).await,
            StatusCode::OK,
        )
        .await;
        let rating: uuid::Uuid = done["rating_id"].as_str().unwrap().parse().unwrap();
        let stored = app.store.rating(rating).await.unwrap().unwrap().answers.0;
        for (aspect, side) in SHOWN {
            let canonical = if swapped { flipped(side) } else { side };
            assert_eq!(stored[aspect], canonical, "{aspect}, swapped: {swapped}");
        }
        if swapped {
            swapped_ids.insert(next["task"]["external_id"].as_str().unwrap().to_owned());
        }
    }
    assert!(
        (5..=35).contains(&swapped_ids.len()),
        "{} of {tasks} swapped",
        swapped_ids.len()
    );

    let csv = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format=csv")))
        .go()
        .await;
    assert_eq!(csv.status(), StatusCode::OK);
    let body = csv.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    for column in SHOWN.map(|(aspect, _)| aspect).iter().chain(&["rationale"]) {
        assert!(headers.iter().any(|h| h == column), "{column}: {headers:?}");
    }
    assert!(
        !headers.iter().any(|h| h.starts_with("a_") || h == "sxs"),
        "no blackhat columns: {headers:?}"
    );
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let mut rows = 0;
    for record in reader.records() {
        let record = record.unwrap();
        rows += 1;
        let swapped = swapped_ids.contains(&record[at("external_id")]);
        assert_eq!(
            &record[at("swapped")],
            if swapped { "true" } else { "false" }
        );
        for (aspect, side) in SHOWN {
            let canonical = if swapped { flipped(side) } else { side };
            assert_eq!(&record[at(aspect)], canonical, "{aspect}");
        }
    }
    assert_eq!(rows, tasks);

    let metrics: Value = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{batch}/metrics")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let helpfulness = &metrics["fields"]["helpfulness"];
    assert_eq!(
        helpfulness["a"].as_u64().unwrap_or(0) + helpfulness["b"].as_u64().unwrap_or(0),
        tasks as u64
    );
    assert_eq!(
        helpfulness["b"].as_u64().unwrap_or(0),
        swapped_ids.len() as u64,
        "the shown A is the canonical B exactly when swapped"
    );
}
db_test!(six_aspects_are_stored_for_the_canonical_side_and_exported_so: TestApp);

async fn an_aspect_answer_is_checked_against_the_document(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app
        .batch(
            &admin,
            "aspects",
            &tasks_jsonl(1),
            "&rubric=pairwise-aspects",
        )
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    let id = next["assignment_id"].as_str().unwrap();
    let refused = json_with(
        app.act(
            &rater,
            id,
            "submit",
            &json!({"helpfulness": "A", "sxs": 4, "rationale": "short"}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let fields = &refused["fields"];
    assert_eq!(fields["helpfulness"], "unknown value \"A\": use a, tie, b");
    assert_eq!(fields["sxs"], "is not a question of this rubric");
    assert_eq!(fields["clarity"], "is required");
    assert_eq!(
        fields["rationale"],
        "must be at least 20 characters (has 5)"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE status <> 'draft'")
            .await,
        0,
        "nothing was submitted"
    );
}
db_test!(an_aspect_answer_is_checked_against_the_document: TestApp);
