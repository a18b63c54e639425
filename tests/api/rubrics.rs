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

/// A small custom rubric: is the answer correct (ordinal), which is clearer (A/B/tie).
fn custom(name: &str, clarity_label: &str) -> Value {
    json!({
        "name": name,
        "title": "Correct and clear",
        "subject": "pair",
        "questions": [
            {"key": "correct", "each_response": true, "label": "Is it correct?",
             "answer": {"type": "choice", "options": [
                {"value": "yes", "label": "Yes"}, {"value": "partly", "label": "Partly"},
                {"value": "no", "label": "No"}]},
             "explanation": {"required": {"when": ["partly", "no"]}, "prompt": "What is wrong?"},
             "metrics": {"role": "ordinal"}},
            {"key": "clearer", "label": clarity_label,
             "answer": {"type": "choice", "options": [
                {"value": "a", "label": "A"}, {"value": "tie", "label": "Tie"},
                {"value": "b", "label": "B"}]},
             "swap": {"swap_values": {"a": "b", "b": "a"}},
             "metrics": {"role": "preference", "a": "a", "b": "b", "tie": "tie"}}
        ]
    })
}

async fn post_rubric(
    app: &TestApp,
    who: &crate::helpers::Persona,
    doc: &Value,
) -> reqwest::Response {
    who.api
        .post(app.url("/api/v1/rubrics"))
        .json(doc)
        .go()
        .await
}

async fn rubrics_are_versioned_documents_and_batches_keep_theirs(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;

    // Every broken rule by its path, and nothing stored.
    let mut broken = custom("Bad Name", "Which is clearer?");
    broken["questions"][0]["answer"]["options"][2]["value"] = json!("yes");
    broken["questions"][1]["swap"] = json!("none");
    broken["questions"][1]["answer"]["type"] = json!("slider");
    let refused = json_with(
        post_rubric(app, &admin, &broken).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let fields = &refused["fields"];
    assert!(
        fields["questions[1].answer.type"]
            .as_str()
            .unwrap()
            .contains("slider"),
        "{refused}"
    );
    let mut broken = custom("Bad Name", "Which is clearer?");
    broken["questions"][0]["answer"]["options"][2]["value"] = json!("yes");
    broken["questions"][1]["swap"] = json!("none");
    let refused = json_with(
        post_rubric(app, &admin, &broken).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let fields = &refused["fields"];
    assert!(
        fields["name"].as_str().unwrap().contains("lower-case"),
        "{refused}"
    );
    assert!(
        fields["questions[0].answer.options[2].value"]
            .as_str()
            .unwrap()
            .contains("offered twice")
    );
    assert!(
        fields["questions[0].explanation.required.when[1]"]
            .as_str()
            .unwrap()
            .contains("\"no\" is not an answer"),
        "the option renamed away"
    );
    assert!(
        fields["questions[1].swap"]
            .as_str()
            .unwrap()
            .contains("must say how it turns")
    );
    assert_eq!(
        refused["error"],
        "the rubric document breaks 4 rules; nothing was stored"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM rubrics WHERE name <> 'blackhat' AND name <> 'additive-5' AND name <> 'pairwise-aspects'").await, 0);

    // Only admins add; built-in names are kept for the shipped documents.
    assert_eq!(
        post_rubric(app, &lead, &custom("clear", "x"))
            .await
            .status(),
        StatusCode::FORBIDDEN
    );
    let mut taken = custom("blackhat", "Which is clearer?");
    taken["title"] = json!("Mine");
    assert_eq!(
        post_rubric(app, &admin, &taken).await.status(),
        StatusCode::CONFLICT
    );

    let first = json_with(
        post_rubric(app, &admin, &custom("clear", "Which is clearer?")).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(
        (first["version"].as_i64(), first["created"].as_bool()),
        (Some(1), Some(true))
    );
    let again = json_with(
        post_rubric(app, &admin, &custom("clear", "Which is clearer?")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (again["version"].as_i64(), again["created"].as_bool()),
        (Some(1), Some(false)),
        "the same document is no new version"
    );

    // A batch on version 1, rated.
    let batch = app
        .batch(
            &admin,
            "clear-v1",
            &tasks_jsonl(2),
            "&rubric=clear&randomize=false",
        )
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    assert_eq!(next["rubric"]["questions"][1]["label"], "Which is clearer?");
    let answers = json!({"a": {"correct": "yes"}, "b": {"correct": "no", "correct_explanation": "It never returns the square."}, "clearer": "a"});
    let done = json_with(
        app.act(
            &rater,
            next["assignment_id"].as_str().unwrap(),
            "submit",
            &answers,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let rating: uuid::Uuid = done["rating_id"].as_str().unwrap().parse().unwrap();
    let before = app.store.rating(rating).await.unwrap().unwrap();

    // Version 2 relabels the clarity question and drops an option of correctness.
    let mut second = custom("clear", "Which one reads better?");
    second["questions"][0]["answer"]["options"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    second["questions"][0]["explanation"]["required"] = json!({"when": ["no"]});
    let v2 = json_with(post_rubric(app, &admin, &second).await, StatusCode::CREATED).await;
    assert_eq!(v2["version"], 2);

    let after = app.store.rating(rating).await.unwrap().unwrap();
    assert_eq!(
        after.answers.0, before.answers.0,
        "a new version alters no rating"
    );
    assert_eq!(after.version, before.version);
    let old_batch = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{batch}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        old_batch["rubric_version"], 1,
        "the batch keeps its version"
    );
    let next = app.next(&rater, &batch).await.unwrap();
    assert_eq!(
        next["rubric"]["questions"][1]["label"], "Which is clearer?",
        "and its raters see it"
    );
    let partly = json!({"a": {"correct": "partly", "correct_explanation": "Right for positive numbers only."}, "b": {"correct": "yes"}, "clearer": "tie"});
    json_with(
        app.act(
            &rater,
            next["assignment_id"].as_str().unwrap(),
            "submit",
            &partly,
        )
        .await,
        StatusCode::OK,
    )
    .await;

    let new_batch = app
        .batch(&admin, "clear-v2", &tasks_jsonl(1), "&rubric=clear")
        .await;
    let view = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{new_batch}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        view["rubric_version"], 2,
        "a new batch takes the newest version"
    );
    let next = app.next(&rater, &new_batch).await.unwrap();
    let refused = json_with(
        app.act(
            &rater,
            next["assignment_id"].as_str().unwrap(),
            "submit",
            &partly,
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        refused["fields"]["a.correct"],
        "unknown value \"partly\": use yes, no"
    );

    // Metrics and exports name the version.
    let metrics = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{batch}/metrics")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(metrics["rubric"], json!({"name": "clear", "version": 1}));
    assert_eq!(
        metrics["fields"]["a.correct"],
        json!({"yes": 1, "partly": 1})
    );
    let jsonl = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format=jsonl")))
        .go()
        .await
        .text()
        .await
        .unwrap();
    let rows: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(
            (row["rubric"].as_str(), row["rubric_version"].as_i64()),
            (Some("clear"), Some(1))
        );
    }

    // The list, the documents by version, and what two versions share.
    let list = json_with(
        lead.api.get(app.url("/api/v1/rubrics")).go().await,
        StatusCode::OK,
    )
    .await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["blackhat", "additive-5", "pairwise-aspects", "clear"]
    );
    let clear = &list[3];
    assert_eq!(
        (clear["latest"].as_i64(), clear["built_in"].as_bool()),
        (Some(2), Some(false))
    );
    assert_eq!(clear["versions"][1]["created_by"], admin.username.as_str());
    let latest = lead.api.get(app.url("/api/v1/rubrics/clear")).go().await;
    assert_eq!(latest.headers()["x-rubric-version"], "2");
    let latest: Value = latest.json().await.unwrap();
    assert_eq!(latest["questions"][1]["label"], "Which one reads better?");
    let v1 = json_with(
        lead.api
            .get(app.url("/api/v1/rubrics/clear/versions/1"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(v1["questions"][1]["label"], "Which is clearer?");
    assert_eq!(
        lead.api
            .get(app.url("/api/v1/rubrics/clear/versions/3"))
            .go()
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        lead.api
            .get(app.url("/api/v1/rubrics/nothing"))
            .go()
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let compared = json_with(
        lead.api
            .get(app.url("/api/v1/rubrics/clear/versions/1/compare/2"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(compared["comparable"], json!([]), "{compared}");
    assert_eq!(compared["changed"], json!(["correct", "clearer"]));

    // A document read back, renamed and posted is a new rubric.
    let mut copy = json_with(
        lead.api.get(app.url("/api/v1/rubrics/blackhat")).go().await,
        StatusCode::OK,
    )
    .await;
    copy["name"] = json!("blackhat-copy");
    let added = json_with(post_rubric(app, &admin, &copy).await, StatusCode::CREATED).await;
    assert_eq!(added["version"], 1);
    let compared_self = json_with(
        lead.api
            .get(app.url("/api/v1/rubrics/blackhat-copy/versions/1/compare/1"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        compared_self["comparable"],
        json!([
            "executability",
            "instruction_following",
            "correctness",
            "sxs"
        ])
    );
}
db_test!(rubrics_are_versioned_documents_and_batches_keep_theirs: TestApp);
