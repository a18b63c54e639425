//! Rubrics as documents: a batch on a rubric other than blackhat is asked, checked,
//! turned and exported by what its document says.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Go, Persona, TestApp, db_test, json_with, jsonl, single_task, tasks_jsonl};

/// The metrics of a batch, as a lead reads them.
async fn metrics_of(app: &TestApp, lead: &Persona, batch: &str) -> Value {
    let url = app.url(&format!("/api/v1/batches/{batch}/metrics"));
    json_with(lead.api.get(url).go().await, StatusCode::OK).await
}

/// A batch's CSV export: its header and its rows.
async fn csv_export(
    app: &TestApp,
    lead: &Persona,
    batch: &str,
) -> (Vec<String>, Vec<csv::StringRecord>) {
    let url = app.url(&format!("/api/v1/batches/{batch}/export?format=csv"));
    let response = lead.api.get(url).go().await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let headers = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader.records().map(Result::unwrap).collect();
    (headers, rows)
}

/// A batch's JSON Lines export, one object a rating.
async fn jsonl_export(app: &TestApp, lead: &Persona, batch: &str) -> Vec<Value> {
    let url = app.url(&format!("/api/v1/batches/{batch}/export?format=jsonl"));
    let response = lead.api.get(url).go().await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await.unwrap();
    body.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

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
            "&rubric=pairwise-aspects&raters_see_external_ids=true",
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
        let stored = app.store.rating(rating).await.unwrap().unwrap().answers;
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

    let (headers, records) = csv_export(app, &lead, &batch).await;
    for column in SHOWN.map(|(aspect, _)| aspect).iter().chain(&["rationale"]) {
        assert!(headers.iter().any(|h| h == column), "{column}: {headers:?}");
    }
    assert!(
        !headers.iter().any(|h| h.starts_with("a_") || h == "sxs"),
        "no blackhat columns: {headers:?}"
    );
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let mut rows = 0;
    for record in &records {
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

    let metrics: Value = metrics_of(app, &lead, &batch).await;
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
pub(crate) fn custom(name: &str, clarity_label: &str) -> Value {
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

/// Adds a rubric document through the API, as `who`.
pub(crate) async fn post_rubric(app: &TestApp, who: &Persona, doc: &Value) -> reqwest::Response {
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
        after.answers, before.answers,
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
    let metrics = metrics_of(app, &lead, &batch).await;
    assert_eq!(metrics["rubric"], json!({"name": "clear", "version": 1}));
    assert_eq!(
        metrics["fields"]["a.correct"],
        json!({"yes": 1, "partly": 1})
    );
    let rows = jsonl_export(app, &lead, &batch).await;
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
            "issue_categories",
            "sxs"
        ])
    );
}
db_test!(rubrics_are_versioned_documents_and_batches_keep_theirs: TestApp);

/// `n` tasks of one response each, ids `s1`..`sn`, with a model.
fn single_tasks(n: usize) -> String {
    jsonl((1..=n).map(|i| {
        single_task(
            &format!("s{i}"),
            &format!("Write a function that returns {i} squared."),
            &format!("```python\ndef f():\n    return {i} ** 2\n```"),
            if i % 2 == 0 { "even" } else { "odd" },
        )
    }))
}

fn criteria(met: [bool; 5], repetitive: bool, justification: &str) -> Value {
    json!({
        "relevant": met[0], "substantial": met[1], "useful": met[2],
        "comprehensive": met[3], "expert": met[4], "repetitive": repetitive,
        "justification": justification
    })
}

async fn the_additive_score_runs_the_whole_loop(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;

    // A task of two responses does not fit a rubric that judges one, and the reverse.
    let pair_upload = admin
        .api
        .post(app.url("/api/v1/batches?name=mixed&rubric=additive-5"))
        .header("content-type", "application/x-ndjson")
        .body(single_tasks(1) + &tasks_jsonl(1))
        .go()
        .await;
    let refused = json_with(pair_upload, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(refused["errors"][0]["line"], 2, "{refused}");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("response_a is for a rubric that compares two responses"),
        "{refused}"
    );
    let swapped_single = admin
        .api
        .post(app.url("/api/v1/batches?name=mixed&rubric=additive-5&randomize=true"))
        .header("content-type", "application/x-ndjson")
        .body(single_tasks(1))
        .go()
        .await;
    let refused = json_with(swapped_single, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        refused["fields"]["randomize"]
            .as_str()
            .unwrap()
            .contains("judges one response")
    );
    let single_for_pair = admin
        .api
        .post(app.url("/api/v1/batches?name=mixed"))
        .header("content-type", "application/x-ndjson")
        .body(single_tasks(1))
        .go()
        .await;
    let refused = json_with(single_for_pair, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("response is for a rubric that judges one response")
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM batches").await,
        0,
        "nothing stored"
    );

    let batch = app
        .batch(&admin, "additive", &single_tasks(6), "&rubric=additive-5")
        .await;
    let mut rated = Vec::new();
    let why = "Relevant and useful, but it does not explain the approach.";
    let mut n = 0;
    while let Some(next) = app.next(&rater, &batch).await {
        n += 1;
        assert_eq!(next["rubric"]["name"], "additive-5");
        assert!(next["task"]["response"].as_str().unwrap().contains("** 2"));
        assert!(next["task"].get("response_a").is_none(), "{next}");
        let id = next["assignment_id"].as_str().unwrap().to_owned();
        match n {
            1 => {
                // 101 words are one too many; a sent score must agree.
                let long = vec!["word"; 101].join(" ");
                let too_long = json_with(
                    app.act(&rater, &id, "submit", &criteria([true; 5], false, &long))
                        .await,
                    StatusCode::UNPROCESSABLE_ENTITY,
                )
                .await;
                assert_eq!(
                    too_long["fields"]["justification"],
                    "must be at most 100 words (has 101)"
                );
                let mut wrong = criteria([true, true, true, false, false], false, why);
                wrong["score"] = json!(5);
                let wrong = json_with(
                    app.act(&rater, &id, "submit", &wrong).await,
                    StatusCode::UNPROCESSABLE_ENTITY,
                )
                .await;
                assert_eq!(
                    wrong["fields"]["score"],
                    "is worked out from the answers and is 3, not 5; leave it out or send 3"
                );
                let done = json_with(
                    app.act(
                        &rater,
                        &id,
                        "submit",
                        &criteria([true, true, true, false, false], false, why),
                    )
                    .await,
                    StatusCode::OK,
                )
                .await;
                rated.push((done["rating_id"].as_str().unwrap().to_owned(), 3));
            }
            2 => {
                let done = json_with(
                    app.act(
                        &rater,
                        &id,
                        "submit",
                        &criteria(
                            [true; 5],
                            true,
                            "Right, but it says everything three times over.",
                        ),
                    )
                    .await,
                    StatusCode::OK,
                )
                .await;
                rated.push((done["rating_id"].as_str().unwrap().to_owned(), 0));
            }
            3 => {
                json_with(
                    app.act(&rater, &id, "skip", &json!({"reason": "unfamiliar"}))
                        .await,
                    StatusCode::OK,
                )
                .await;
            }
            4 => {
                json_with(
                    app.act(
                        &rater,
                        &id,
                        "out-of-scope",
                        &json!({"explanation": "The prompt asks for a poem, not code."}),
                    )
                    .await,
                    StatusCode::OK,
                )
                .await;
            }
            _ => {
                let done = json_with(
                    app.act(
                        &rater,
                        &id,
                        "submit",
                        &criteria([true, true, false, false, false], false, why),
                    )
                    .await,
                    StatusCode::OK,
                )
                .await;
                rated.push((done["rating_id"].as_str().unwrap().to_owned(), 2));
            }
        }
    }
    assert_eq!(n, 6);
    for (id, score) in &rated {
        let stored = app
            .store
            .rating(id.parse().unwrap())
            .await
            .unwrap()
            .unwrap()
            .answers;
        assert_eq!(stored["score"], *score, "{stored:?}");
        assert!(stored.get("a").is_none(), "one response: no sides");
    }
    let first = &rated[0].0;
    let accepted = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{first}/review")))
        .json(&json!({"decision": "accept", "version": 1}))
        .go()
        .await;
    assert_eq!(accepted.status(), StatusCode::OK);

    let metrics = metrics_of(app, &lead, &batch).await;
    let counts = &metrics["counts"];
    assert_eq!(
        (
            counts["included"].as_u64(),
            counts["skipped"].as_u64(),
            counts["out_of_scope"].as_u64()
        ),
        (Some(4), Some(1), Some(1))
    );
    let mut expected_scores = std::collections::BTreeMap::new();
    for (_, s) in &rated {
        *expected_scores.entry(s.to_string()).or_insert(0u64) += 1;
    }
    assert_eq!(metrics["fields"]["score"], json!(expected_scores));
    assert_eq!(metrics["fields"]["relevant"], json!({"true": 4}));

    let (headers, rows) = csv_export(app, &lead, &batch).await;
    for column in [
        "relevant",
        "substantial",
        "useful",
        "comprehensive",
        "expert",
        "repetitive",
        "justification",
        "score",
    ] {
        assert!(headers.iter().any(|h| h == column), "{column}: {headers:?}");
    }
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    assert_eq!(rows.len(), 6, "every rating, skipped and out of scope too");
    let scored: Vec<&str> = rows
        .iter()
        .filter(|r| &r[at("outcome")] == "rated")
        .map(|r| &r[at("score")])
        .collect();
    assert_eq!(scored.len(), 4);
    assert!(rows.iter().all(|r| &r[at("swapped")] == "false"));
}
db_test!(the_additive_score_runs_the_whole_loop: TestApp);

/// What the whole loop needs to know of one rubric: how to upload its tasks, what a rater
/// answers (as shown), and what must be stored for it (canonical), given whether the
/// rater saw A and B swapped.
struct Loop {
    rubric: &'static str,
    tasks: String,
    answers: fn() -> Value,
    stored: fn(&Value, bool),
    /// CSV columns its answers must have.
    columns: &'static [&'static str],
}

fn loops() -> Vec<Loop> {
    vec![
        Loop {
            rubric: "blackhat",
            tasks: tasks_jsonl(8),
            answers: crate::helpers::complete_answers,
            stored: |stored, swapped| {
                assert_eq!(stored["sxs"], if swapped { 6 } else { 2 });
                let no_code = if swapped { "a" } else { "b" };
                assert_eq!(stored[no_code]["executability"], "no_code");
            },
            columns: &[
                "a_executability",
                "b_correctness_explanation",
                "sxs",
                "sxs_explanation",
            ],
        },
        Loop {
            rubric: "additive-5",
            tasks: single_tasks(8),
            answers: || {
                criteria(
                    [true, true, true, false, false],
                    false,
                    "Relevant and useful, but it does not explain the approach.",
                )
            },
            stored: |stored, swapped| {
                assert!(!swapped, "one response is never swapped");
                assert_eq!(stored["score"], 3);
                assert_eq!(stored["useful"], true);
            },
            columns: &["relevant", "repetitive", "score", "justification"],
        },
        Loop {
            rubric: "pairwise-aspects",
            tasks: tasks_jsonl(8),
            answers: || {
                let mut answers =
                    json!({"rationale": "A is the function asked for; B is clearer."});
                for (aspect, side) in SHOWN {
                    answers[aspect] = json!(side);
                }
                answers
            },
            stored: |stored, swapped| {
                for (aspect, side) in SHOWN {
                    let canonical = if swapped { flipped(side) } else { side };
                    assert_eq!(stored[aspect], canonical, "{aspect}");
                }
            },
            columns: &["helpfulness", "safety", "rationale"],
        },
        Loop {
            rubric: "clear",
            tasks: tasks_jsonl(8),
            answers: || {
                json!({"a": {"correct": "yes"},
                       "b": {"correct": "no", "correct_explanation": "It never returns the square."},
                       "clearer": "a"})
            },
            stored: |stored, swapped| {
                assert_eq!(stored["clearer"], if swapped { "b" } else { "a" });
                let wrong = if swapped { "a" } else { "b" };
                assert_eq!(stored[wrong]["correct"], "no");
            },
            columns: &["a_correct", "b_correct_explanation", "clearer"],
        },
    ]
}

/// Upload, rate (with swaps where the rubric has two responses), skip, out of scope,
/// review (accept, return and revise, reject), metrics, and both exports, for each of the
/// built-in rubrics and one added through the API.
async fn every_rubric_runs_the_whole_loop(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    json_with(
        post_rubric(app, &admin, &custom("clear", "Which is clearer?")).await,
        StatusCode::CREATED,
    )
    .await;
    for case in loops() {
        let rubric = case.rubric;
        let batch = app
            .batch(
                &admin,
                &format!("loop-{rubric}"),
                &case.tasks,
                &format!("&rubric={rubric}"),
            )
            .await;
        let mut rated = Vec::new();
        let mut n = 0;
        while let Some(next) = app.next(&rater, &batch).await {
            n += 1;
            assert_eq!(next["rubric"]["name"], rubric);
            let id = next["assignment_id"].as_str().unwrap().to_owned();
            let swapped = next["task"]["response_a"]
                .as_str()
                .is_some_and(|a| a.starts_with("Use `"));
            match n {
                2 => {
                    let body = json!({"reason": "too_long", "note": "needs a GPU"});
                    json_with(app.act(&rater, &id, "skip", &body).await, StatusCode::OK).await;
                }
                3 => {
                    let body = json!({"explanation": "The prompt asks for a poem, not code."});
                    json_with(
                        app.act(&rater, &id, "out-of-scope", &body).await,
                        StatusCode::OK,
                    )
                    .await;
                }
                _ => {
                    let done = json_with(
                        app.act(&rater, &id, "submit", &(case.answers)()).await,
                        StatusCode::OK,
                    )
                    .await;
                    let rating = done["rating_id"].as_str().unwrap().to_owned();
                    let stored = app
                        .store
                        .rating(rating.parse().unwrap())
                        .await
                        .unwrap()
                        .unwrap();
                    (case.stored)(&serde_json::to_value(&stored.answers).unwrap(), swapped);
                    rated.push(rating);
                }
            }
        }
        assert_eq!((n, rated.len()), (8, 6), "{rubric}");

        // Review: accept one, reject one, return one, which the rater revises.
        let decide = |rating: &str, decision: &str| {
            let body = json!({"decision": decision, "comment": "Look at the edge cases again.", "version": 1});
            lead.api
                .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
                .json(&body)
                .go()
        };
        assert_eq!(decide(&rated[0], "accept").await.status(), StatusCode::OK);
        assert_eq!(decide(&rated[1], "reject").await.status(), StatusCode::OK);
        assert_eq!(decide(&rated[2], "return").await.status(), StatusCode::OK);
        let revise = app.url(&format!("/api/v1/ratings/{}", rated[2]));
        let revised = json_with(
            rater.api.put(&revise).json(&(case.answers)()).go().await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(revised["status"], "submitted", "{rubric}: {revised}");

        let metrics = metrics_of(app, &lead, &batch).await;
        let counts = &metrics["counts"];
        assert_eq!(
            [
                &counts["included"],
                &counts["skipped"],
                &counts["out_of_scope"],
                &counts["rejected"]
            ],
            [&json!(5), &json!(1), &json!(1), &json!(1)],
            "{rubric}: {counts}"
        );
        assert_eq!(metrics["rubric"]["name"], rubric);

        let (headers, rows) = csv_export(app, &lead, &batch).await;
        for column in case.columns {
            assert!(
                headers.iter().any(|h| h == column),
                "{rubric} {column}: {headers:?}"
            );
        }
        let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
        assert_eq!(rows.len(), 8, "{rubric}");
        let counted = rows
            .iter()
            .filter(|r| &r[at("counts_in_metrics")] == "true")
            .count();
        assert_eq!(counted, 5, "{rubric}");
        assert!(
            rows.iter()
                .all(|r| &r[at("rubric")] == rubric && &r[at("rubric_version")] == "1")
        );

        let lines = jsonl_export(app, &lead, &batch).await;
        assert_eq!(lines.len(), 8, "{rubric}");
        for line in lines.iter().filter(|l| l["outcome"] == "rated") {
            let swapped = line["swapped"].as_bool().unwrap();
            (case.stored)(&line["answers"], swapped);
        }
    }
}
db_test!(every_rubric_runs_the_whole_loop: TestApp);

async fn the_rubrics_page_lists_versions_and_names_every_broken_rule(app: &TestApp) {
    let admin = app.admin().await;
    let browser = admin.browser_for(app).await;
    let page = browser.get(app.url("/admin/rubrics")).go().await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    for name in ["blackhat", "additive-5", "pairwise-aspects"] {
        assert!(
            html.contains(&format!("/api/v1/rubrics/{name}/versions/1")),
            "{name} and its version are listed"
        );
    }
    let token = crate::helpers::csrf_token(&html);
    let mut broken = custom("from-page", "Which is clearer?");
    broken["questions"][1]["answer"]["options"][1]["value"] = json!("a");
    broken["subject"] = json!("trio");
    let refused = browser
        .post(app.url("/admin/rubrics"))
        .form(&[
            ("csrf_token", token.clone()),
            ("document", broken.to_string()),
        ])
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = refused.text().await.unwrap();
    assert!(
        html.contains("<code>subject</code>: unknown variant"),
        "{html}"
    );
    assert!(
        html.contains(
            "<code>questions[1].answer.options[1].value</code>: &#34;a&#34; is offered twice"
        ),
        "{html}"
    );
    assert!(
        html.contains("from-page"),
        "the document is shown again to be fixed"
    );
    let not_json = browser
        .post(app.url("/admin/rubrics"))
        .form(&[("csrf_token", token.clone()), ("document", "{".to_owned())])
        .go()
        .await;
    assert_eq!(not_json.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        not_json
            .text()
            .await
            .unwrap()
            .contains("The document is not valid JSON")
    );

    let added = browser
        .post(app.url("/admin/rubrics"))
        .form(&[
            ("csrf_token", token),
            (
                "document",
                custom("from-page", "Which is clearer?").to_string(),
            ),
        ])
        .go()
        .await;
    assert_eq!(added.status(), StatusCode::SEE_OTHER);
    let to = added.headers()["location"].to_str().unwrap().to_owned();
    let html = browser.get(app.url(&to)).go().await.text().await.unwrap();
    assert!(html.contains("from-page version 1 was added."), "{html}");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM rubrics WHERE name = 'from-page'")
            .await,
        1
    );
}
db_test!(the_rubrics_page_lists_versions_and_names_every_broken_rule: TestApp);

async fn a_classification_offers_at_most_twenty_options(app: &TestApp) {
    let admin = app.admin().await;
    let batch = app.batch(&admin, "many", &tasks_jsonl(1), "").await;
    let options: Vec<String> = (1..=21).map(|i| format!("option {i}")).collect();
    let change = |options: &[String]| json!({"classifications": [{"key": "topic", "label": "Topic", "options": options}]});
    let url = app.url(&format!("/api/v1/batches/{batch}"));
    let refused = json_with(
        admin.api.patch(&url).json(&change(&options)).go().await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        refused["fields"]["classifications[0].options"],
        "must be at most 20 options (each has a key on the form)"
    );
    let taken = admin
        .api
        .patch(&url)
        .json(&change(&options[..20]))
        .go()
        .await;
    assert_eq!(taken.status(), StatusCode::OK);
}
db_test!(a_classification_offers_at_most_twenty_options: TestApp);

/// Issue 26: one size limit and caps hold on every path that takes a rubric document
/// (the API, the page's form, the command line), each refusal naming its field, and
/// nothing is stored: a warning of 350,000 `mentions` words (which made each submission
/// take a minute and a half of CPU) is refused.
async fn rubric_documents_are_held_to_their_limits_on_every_path(app: &TestApp) {
    let admin = app.admin().await;
    let target = "a.correct_explanation";
    let warned = |phrases: Vec<String>| {
        let mut doc = custom("bounded", "Which is clearer?");
        doc["warnings"] = json!([{"id": "said-it", "message": "Said it?", "when": {target: {"mentions": phrases}}}]);
        doc
    };
    let stored = "SELECT COUNT(*) FROM rubrics WHERE name = 'bounded'";

    let flood = warned((0..350_000).map(|i| format!("w{i}")).collect());
    let refused = json_with(
        post_rubric(app, &admin, &flood).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        refused["fields"]["document"], "the document is larger than 256 KiB",
        "{}",
        refused["error"]
    );

    let mut long_help = custom("bounded", "Which is clearer?");
    long_help["help"] = json!("h".repeat(3 * 1024 * 1024));
    let refused = json_with(
        post_rubric(app, &admin, &long_help).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        refused["fields"]["document"],
        "the document is larger than 256 KiB"
    );

    let many_words = warned((0..51).map(|i| format!("word{i}")).collect());
    let refused = json_with(
        post_rubric(app, &admin, &many_words).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        refused["fields"][format!("warnings[0].when.{target}")],
        "mentions must list at most 50 words or phrases"
    );
    let long_phrase = warned(vec!["p".repeat(101)]);
    let refused = json_with(
        post_rubric(app, &admin, &long_phrase).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        refused["fields"][format!("warnings[0].when.{target}")],
        "each word or phrase must be at most 100 characters"
    );

    let mut many_questions = custom("bounded", "Which is clearer?");
    let first = many_questions["questions"][0].clone();
    let questions = many_questions["questions"].as_array_mut().unwrap();
    for i in 0..50 {
        let mut another = first.clone();
        another["key"] = json!(format!("correct{i}"));
        questions.push(another);
    }
    let mut help = custom("bounded", "Which is clearer?");
    help["help"] = json!("h".repeat(4001));
    help["questions"][1]["help"] = json!("h".repeat(4001));
    for (doc, field, why) in [
        (
            &many_questions,
            "questions",
            "must ask at most 50 questions",
        ),
        (&help, "help", "must be at most 4000 characters"),
        (
            &help,
            "questions[1].help",
            "must be at most 4000 characters",
        ),
    ] {
        let refused = json_with(
            post_rubric(app, &admin, doc).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert_eq!(refused["fields"][field], why, "{refused}");
    }

    // The page's form and the command line take the same document and refuse it alike.
    let browser = admin.browser_for(app).await;
    let html = browser
        .get(app.url("/admin/rubrics"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    let token = crate::helpers::csrf_token(&html);
    let page = browser
        .post(app.url("/admin/rubrics"))
        .form(&[("csrf_token", token), ("document", many_words.to_string())])
        .go()
        .await;
    assert_eq!(page.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("mentions must list at most 50 words or phrases"),
        "{html}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flood.json");
    std::fs::write(&file, flood.to_string()).unwrap();
    let cli = crate::cli::verdict(&app.db, &["rubric", "add", file.to_str().unwrap()], None);
    assert!(!cli.status.success());
    let stderr = String::from_utf8_lossy(&cli.stderr);
    assert!(stderr.contains("larger than 256 KiB"), "{stderr}");
    assert_eq!(app.count(stored).await, 0, "nothing was stored");

    // A document at the caps is taken, and a submission against its warning is read
    // for every phrase: the last one, at the end of the longest explanation, is found.
    let phrases: Vec<String> = (0..50)
        .map(|i| format!("{i:03} {}", "q".repeat(96)))
        .collect();
    let last = phrases[49].clone();
    let at_caps = warned(phrases);
    json_with(
        post_rubric(app, &admin, &at_caps).await,
        StatusCode::CREATED,
    )
    .await;
    let rater = app.rater().await;
    let batch = app
        .batch(
            &admin,
            "bounded",
            &tasks_jsonl(1),
            "&rubric=bounded&randomize=false",
        )
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    let filler = "It fails on an empty list and never returns. ".repeat(440);
    let explanation = format!("{filler}{last}");
    assert!(explanation.chars().count() <= 20_000);
    let answers = json!({"a": {"correct": "no", "correct_explanation": explanation},
                         "b": {"correct": "yes"}, "clearer": "b"});
    let unconfirmed = json_with(
        app.act(
            &rater,
            next["assignment_id"].as_str().unwrap(),
            "submit",
            &answers,
        )
        .await,
        StatusCode::CONFLICT,
    )
    .await;
    assert_eq!(unconfirmed["warnings"][0]["id"], "said-it", "{unconfirmed}");
}
db_test!(rubric_documents_are_held_to_their_limits_on_every_path: TestApp);
