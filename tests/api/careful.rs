//! Tools for careful ratings: consistency warnings that a submission must confirm, code
//! runs kept as evidence, and a lead's comments on single answers; each through the
//! API, the pages, the history and the export, on both databases.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    Go, Persona, TestApp, assignment_id, complete_answers, csrf_token, db_test, json_with,
    page_text, tasks_jsonl,
};

/// Blackhat answers that prefer A although A has major correctness issues and B none.
fn contradictory() -> Value {
    let mut answers = complete_answers();
    answers["a"]["correctness"] = json!("major_issues");
    answers["a"]["correctness_explanation"] = json!("It squares the wrong number entirely.");
    answers
}

async fn export(app: &TestApp, lead: &Persona, batch: &str, format: &str) -> String {
    let response = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format={format}")))
        .go()
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    response.text().await.unwrap()
}

/// The CSV export as one map per row, by column name.
async fn export_rows(
    app: &TestApp,
    lead: &Persona,
    batch: &str,
) -> Vec<std::collections::HashMap<String, String>> {
    let text = export(app, lead, batch, "csv").await;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

async fn review_queue(app: &TestApp, lead: &Persona, query: &str) -> Vec<String> {
    let body = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/review?{query}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["rating_id"].as_str().unwrap().to_owned())
        .collect()
}

db_test!(a_submission_meeting_a_warning_is_refused_until_confirmed: TestApp);
async fn a_submission_meeting_a_warning_is_refused_until_confirmed(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "careful", &tasks_jsonl(2), "&randomize=false")
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    let id = assignment_id(&next);

    let refused = app.act(&rater, &id, "submit", &contradictory()).await;
    let body = json_with(refused, StatusCode::CONFLICT).await;
    assert_eq!(
        body["warnings"],
        json!([{"id": "prefers-a-despite-major-issues",
                "message": "You prefer A, yet A has major correctness issues and B has none. Is that the preference you mean?"}])
    );
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("confirmed_warnings"),
        "{body}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE status <> 'draft'")
            .await,
        0,
        "nothing is stored"
    );

    // An id the rubric does not have is named, and nothing is stored either.
    let mut unknown = contradictory();
    unknown["confirmed_warnings"] = json!(["prefers-a-despite-major-issues", "made-up"]);
    let body = json_with(
        app.act(&rater, &id, "submit", &unknown).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        body["fields"]["confirmed_warnings[1]"]
            .as_str()
            .unwrap()
            .contains("\"made-up\" is not a warning"),
        "{body}"
    );
    let mut not_a_list = contradictory();
    not_a_list["confirmed_warnings"] = json!("prefers-a-despite-major-issues");
    let body = json_with(
        app.act(&rater, &id, "submit", &not_a_list).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        body["fields"]["confirmed_warnings"],
        "must be a list of warning ids"
    );

    // Confirmed, it is stored with the warning recorded.
    let mut confirmed = contradictory();
    confirmed["confirmed_warnings"] = json!(["prefers-a-despite-major-issues"]);
    let done = json_with(
        app.act(&rater, &id, "submit", &confirmed).await,
        StatusCode::OK,
    )
    .await;
    let warned = done["rating_id"].as_str().unwrap().to_owned();
    let stored = app.rating(&lead, &warned).await;
    assert_eq!(
        stored["confirmed_warnings"],
        json!(["prefers-a-despite-major-issues"])
    );

    // A plain rating records none, even when it confirms one that does not apply.
    let next = app.next(&rater, &batch).await.unwrap();
    let mut plain = complete_answers();
    plain["confirmed_warnings"] = json!(["prefers-b-despite-major-issues"]);
    let done = json_with(
        app.act(&rater, &assignment_id(&next), "submit", &plain)
            .await,
        StatusCode::OK,
    )
    .await;
    let quiet = done["rating_id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.rating(&lead, &quiet).await["confirmed_warnings"],
        json!([])
    );

    // Leads filter the queue by warning.
    assert_eq!(
        review_queue(app, &lead, "warning=any").await,
        vec![warned.clone()]
    );
    assert_eq!(
        review_queue(
            app,
            &lead,
            &format!("batch={batch}&warning=prefers-a-despite-major-issues")
        )
        .await,
        vec![warned.clone()]
    );
    assert!(
        review_queue(app, &lead, "warning=prefers-b-despite-major-issues")
            .await
            .is_empty()
    );
    assert_eq!(review_queue(app, &lead, "").await.len(), 2);
    let bad = lead
        .api
        .get(app.url(&format!(
            "/api/v1/review?batch={batch}&warning=no-such-rule"
        )))
        .go()
        .await;
    let body = json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body["fields"]["warning"]
            .as_str()
            .unwrap()
            .contains("is not a warning of rubric blackhat"),
        "{body}"
    );

    // The export carries them: ids in CSV, a list in JSON Lines.
    let rows = export_rows(app, &lead, &batch).await;
    let by_id = |id: &str| rows.iter().find(|r| r["rating_id"] == id).unwrap().clone();
    assert_eq!(by_id(&warned)["warnings"], "prefers-a-despite-major-issues");
    assert_eq!(by_id(&quiet)["warnings"], "");
    let jsonl = export(app, &lead, &batch, "jsonl").await;
    let lines: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let line = lines
        .iter()
        .find(|l| l["rating_id"] == warned.as_str())
        .unwrap();
    assert_eq!(line["warnings"], json!(["prefers-a-despite-major-issues"]));
}

db_test!(the_form_asks_to_confirm_a_warning_and_the_revision_too: TestApp);
async fn the_form_asks_to_confirm_a_warning_and_the_revision_too(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "pages", &tasks_jsonl(1), "&randomize=false")
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    let id = assignment_id(&next);
    let browser = rater.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/assignments/{id}")).await;
    let token = csrf_token(&page);
    let mut form = vec![
        ("csrf_token", token.clone()),
        ("a.executability", "yes_fully".into()),
        ("a.instruction_following", "no_issues".into()),
        ("a.correctness", "major_issues".into()),
        (
            "a.correctness_explanation",
            "It squares the wrong number entirely.".into(),
        ),
        ("b.executability", "no_code".into()),
        ("b.instruction_following", "no_issues".into()),
        ("b.correctness", "no_issues".into()),
        ("sxs", "2".into()),
        (
            "sxs_explanation",
            "A gives the function that was asked for.".into(),
        ),
    ];
    let url = app.url(&format!("/assignments/{id}/submit"));
    let refused = browser.post(&url).form(&form).go().await;
    assert_eq!(refused.status(), StatusCode::CONFLICT);
    let html = refused.text().await.unwrap();
    assert!(
        html.contains("name=\"confirmed_warnings\" value=\"prefers-a-despite-major-issues\""),
        "{html}"
    );
    assert!(html.contains("You prefer A, yet A has major correctness issues"));
    assert!(
        html.contains("value=\"major_issues\" checked"),
        "the answers are kept"
    );

    form.push((
        "confirmed_warnings",
        "prefers-a-despite-major-issues".into(),
    ));
    let sent = browser.post(&url).form(&form).go().await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    let ratings = json_with(
        rater.api.get(app.url("/api/v1/ratings")).go().await,
        StatusCode::OK,
    )
    .await;
    let rating_id = ratings["items"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.rating(&lead, &rating_id).await["confirmed_warnings"],
        json!(["prefers-a-despite-major-issues"])
    );
    let review = page_text(
        app,
        &lead.browser_for(app).await,
        &format!("/review/{rating_id}"),
    )
    .await;
    assert!(review.contains("The rater confirmed a warning of the rubric"));

    // A revision meeting a new warning is refused until confirmed too.
    let mut revised = complete_answers();
    revised["b"]["correctness"] = json!("major_issues");
    revised["b"]["correctness_explanation"] = json!("It would never run as written.");
    revised["a"]["correctness"] = json!("no_issues");
    revised["sxs"] = json!(6);
    let revise = |body: Value| {
        rater
            .api
            .put(app.url(&format!("/api/v1/ratings/{rating_id}")))
            .json(&body)
            .go()
    };
    let body = json_with(revise(revised.clone()).await, StatusCode::CONFLICT).await;
    assert_eq!(body["warnings"][0]["id"], "prefers-b-despite-major-issues");
    revised["confirmed_warnings"] = json!(["prefers-b-despite-major-issues"]);
    json_with(revise(revised).await, StatusCode::OK).await;
    assert_eq!(
        app.rating(&lead, &rating_id).await["confirmed_warnings"],
        json!(["prefers-b-despite-major-issues"])
    );
}

/// A run attached to the rating, as the page's runner sends it (sides as shown).
fn evidence(side: &str) -> Value {
    json!({
        "runs": [{"side": side, "block": 1, "language": "python", "status": "failed"},
                 {"side": "a", "block": 2, "language": "python", "status": "passed"}],
        "attachments": [{"side": side, "block": 1, "language": "python",
                         "code": "print(<b>1/0</b>)", "stdout": "before\n",
                         "stderr": "ZeroDivisionError: division by zero",
                         "status": "failed", "exit_code": 1, "duration_ms": 12}]
    })
}

db_test!(code_runs_are_kept_canonical_shown_to_leads_and_exported: TestApp);
async fn code_runs_are_kept_canonical_shown_to_leads_and_exported(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "runs", &tasks_jsonl(1), "&randomize=false")
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    let id = assignment_id(&next);
    // The rater was shown B first: their "b" is the task's response A.
    app.execute("UPDATE assignments SET swapped = TRUE").await;

    // Every broken part of the evidence is named, and nothing is stored.
    let mut bad = complete_answers();
    bad["evidence"] = json!({"attachments": [{"side": "b", "block": 0, "language": "python",
        "code": "x", "stdout": "y".repeat(20_001), "status": "passed"}]});
    let body = json_with(
        app.act(&rater, &id, "submit", &bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        body["fields"]["evidence.attachments[0].block"].is_string(),
        "{body}"
    );
    assert!(
        body["fields"]["evidence.attachments[0].stdout"]
            .as_str()
            .unwrap()
            .contains("at most 20000")
    );
    bad["evidence"] =
        json!({"runs": [{"side": "c", "block": 1, "language": "python", "status": "passed"}]});
    let body = json_with(
        app.act(&rater, &id, "submit", &bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        body["fields"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("evidence.runs[0]")),
        "{body}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE evidence IS NOT NULL")
            .await,
        0
    );

    // A draft keeps it; a submission without evidence keeps the draft's.
    let mut draft = json!({"evidence": evidence("b")});
    json_with(app.act(&rater, &id, "draft", &draft).await, StatusCode::OK).await;
    draft = complete_answers();
    draft["a"]["executability"] = json!("no_code");
    draft["b"]["executability"] = json!("yes_partially");
    draft["b"]["executability_explanation"] = json!("Only the first block runs on its own.");
    let done = json_with(app.act(&rater, &id, "submit", &draft).await, StatusCode::OK).await;
    let rating_id = done["rating_id"].as_str().unwrap().to_owned();

    // Stored canonical: the attached run is of the task's response A.
    let as_lead = app.rating(&lead, &rating_id).await;
    assert_eq!(as_lead["evidence"]["attachments"][0]["side"], "a");
    assert_eq!(as_lead["evidence"]["runs"][1]["side"], "b");
    let as_rater = app.rating(&rater, &rating_id).await;
    assert_eq!(
        as_rater["evidence"],
        evidence("b"),
        "the rater reads it as sent"
    );

    // The lead's review page shows the code and its output, escaped.
    let review = page_text(
        app,
        &lead.browser_for(app).await,
        &format!("/review/{rating_id}?view=canonical"),
    )
    .await;
    assert!(
        review.contains("print(&#60;b&#62;1/0&#60;/b&#62;)"),
        "{review}"
    );
    assert!(review.contains("ZeroDivisionError: division by zero"));
    assert!(review.contains("Response A, block 1 (python)"));
    assert!(review.contains("ran 1 block: 1 failed"));
    assert!(!review.contains("<b>1/0</b>"));
    // The rater's own page shows what ran beside the executability question, as shown.
    let own = page_text(
        app,
        &rater.browser_for(app).await,
        &format!("/ratings/{rating_id}"),
    )
    .await;
    assert!(
        own.contains(
            "data-code-runs=\"b\" aria-live=\"polite\">In the browser: ran 1 block: 1 failed."
        ),
        "{own}"
    );
    assert!(own.contains(
        "data-code-runs=\"a\" aria-live=\"polite\">In the browser: ran 1 block: 1 passed."
    ));

    // Exported: what ran of each response in words, and the attachments as JSON.
    let rows = export_rows(app, &lead, &batch).await;
    assert_eq!(
        rows[0]["code_runs"],
        "a: ran 1 block: 1 failed; b: ran 1 block: 1 passed"
    );
    let attached: Value = serde_json::from_str(&rows[0]["attachments"]).unwrap();
    assert_eq!(attached[0]["stderr"], "ZeroDivisionError: division by zero");
    assert_eq!(attached[0]["side"], "a");
}

db_test!(a_status_the_server_does_not_know_is_refused_by_its_path_and_stores_nothing: TestApp);
async fn a_status_the_server_does_not_know_is_refused_by_its_path_and_stores_nothing(
    app: &TestApp,
) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "statuses", &tasks_jsonl(1), "&randomize=false")
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    let id = assignment_id(&next);
    // What a block posting `{type: "done", status: "bogus"}` would have put in the form.
    let run = json!({"side": "a", "block": 1, "language": "javascript", "status": "bogus"});
    let attached = json!({"side": "a", "block": 1, "language": "javascript", "code": "1",
                          "status": "passed!", "exit_code": 0});
    for (evidence, path) in [
        (json!({"runs": [run]}), "evidence.runs[0].status"),
        (
            json!({"attachments": [attached]}),
            "evidence.attachments[0].status",
        ),
    ] {
        for action in ["draft", "submit"] {
            let mut body = if action == "submit" {
                complete_answers()
            } else {
                json!({})
            };
            body["evidence"] = Value::from(evidence.to_string());
            let refused = json_with(
                app.act(&rater, &id, action, &body).await,
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await;
            let why = refused["fields"][path].as_str().unwrap_or_else(|| {
                panic!("{action}: no error at {path}: {refused}");
            });
            assert!(why.contains("unknown variant"), "{action}: {why}");
            assert!(
                why.contains("passed"),
                "{action}: names the known ones: {why}"
            );
        }
    }
    // Neither a draft nor a rating was stored.
    assert_eq!(app.count("SELECT COUNT(*) FROM ratings").await, 0);
}

db_test!(a_run_of_edited_code_is_marked_shown_as_edited_and_never_the_responses_result: TestApp);
async fn a_run_of_edited_code_is_marked_shown_as_edited_and_never_the_responses_result(
    app: &TestApp,
) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "edited", &tasks_jsonl(1), "&randomize=false")
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    let id = assignment_id(&next);
    // The response's block failed as written; the rater's own `while True` test of it
    // timed out. Only the first is the response's result.
    let mut answers = complete_answers();
    answers["evidence"] = json!({
        "runs": [{"side": "a", "block": 1, "language": "python", "status": "failed"}],
        "attachments": [
            {"side": "a", "block": 1, "language": "python", "code": "assert add(2, 2) == 4",
             "stderr": "AssertionError", "status": "failed", "exit_code": 1},
            {"side": "a", "block": 1, "language": "python", "code": "while True:\n    pass",
             "status": "timed_out", "edited": true}
        ]
    });
    let done = json_with(
        app.act(&rater, &id, "submit", &answers).await,
        StatusCode::OK,
    )
    .await;
    let rating_id = done["rating_id"].as_str().unwrap().to_owned();

    let stored = app.rating(&lead, &rating_id).await;
    let attachments = &stored["evidence"]["attachments"];
    assert_eq!(attachments[1]["edited"], true, "{stored}");
    assert!(
        attachments[0].get("edited").is_none(),
        "an unedited run carries no mark: {stored}"
    );

    let review = page_text(
        app,
        &lead.browser_for(app).await,
        &format!("/review/{rating_id}"),
    )
    .await;
    assert_eq!(review.matches("badge-edited").count(), 1, "{review}");
    assert!(
        review.contains("it does not count as the response"),
        "{review}"
    );
    assert!(review.contains("ran 1 block: 1 failed"), "{review}");
    assert!(!review.contains("timed out,"), "{review}");

    let rows = export_rows(app, &lead, &batch).await;
    assert_eq!(rows[0]["code_runs"], "a: ran 1 block: 1 failed");
    let exported: Value = serde_json::from_str(&rows[0]["attachments"]).unwrap();
    assert_eq!(exported[1]["edited"], true);
    assert_eq!(exported[1]["status"], "timed_out");
    let jsonl = export(app, &lead, &batch, "jsonl").await;
    assert!(jsonl.contains("\"edited\":true"), "{jsonl}");
}

db_test!(field_comments_reach_the_rater_beside_their_fields_and_the_export: TestApp);
async fn field_comments_reach_the_rater_beside_their_fields_and_the_export(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "comments", &tasks_jsonl(1), "&randomize=false")
        .await;
    let next = app.next(&rater, &batch).await.unwrap();
    app.execute("UPDATE assignments SET swapped = TRUE").await;
    let done = json_with(
        app.act(&rater, &assignment_id(&next), "submit", &complete_answers())
            .await,
        StatusCode::OK,
    )
    .await;
    let id = done["rating_id"].as_str().unwrap().to_owned();
    let review = |body: Value| {
        lead.api
            .post(app.url(&format!("/api/v1/ratings/{id}/review")))
            .json(&body)
            .go()
    };

    // Unknown paths and over-long comments are named; nothing changes.
    let body = json_with(
        review(
            json!({"decision": "return", "version": 1, "field_comments": {
            "c.correctness": "x", "sxs": "y".repeat(2001)}}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        body["fields"]["field_comments.c.correctness"]
            .as_str()
            .unwrap()
            .contains("not an answer")
    );
    assert!(
        body["fields"]["field_comments.sxs"]
            .as_str()
            .unwrap()
            .contains("at most 2000")
    );
    assert_eq!(app.rating(&lead, &id).await["status"], "submitted");

    // A return with comments on single answers needs no overall comment. Paths are
    // canonical: the task's b is what this rater was shown as A.
    json_with(
        review(
            json!({"decision": "return", "version": 1, "field_comments": {
            "b.instruction_following_explanation": "Say which part of the prompt it misses.",
            "sxs": "Is a 2 not too strong here?"}}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let as_rater = app.rating(&rater, &id).await;
    assert_eq!(
        as_rater["review_fields"],
        json!({"a.instruction_following_explanation": "Say which part of the prompt it misses.",
               "sxs": "Is a 2 not too strong here?"})
    );
    let page = page_text(
        app,
        &rater.browser_for(app).await,
        &format!("/ratings/{id}"),
    )
    .await;
    assert!(
        page.contains("data-comment-for=\"a.instruction_following_explanation\"><strong>Lead's comment:</strong> Say which part of the prompt it misses."),
        "{page}"
    );
    assert!(page.contains(
        "data-comment-for=\"sxs\"><strong>Lead's comment:</strong> Is a 2 not too strong here?"
    ));

    // Kept in the history, and exported (canonical).
    let history = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/ratings/{id}/history")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let last = history.as_array().unwrap().last().unwrap();
    assert_eq!(last["action"], "review: return");
    assert_eq!(
        last["after"]["review_fields"]["b.instruction_following_explanation"],
        "Say which part of the prompt it misses."
    );
    let own_history = json_with(
        rater
            .api
            .get(app.url(&format!("/api/v1/ratings/{id}/history")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let last = own_history.as_array().unwrap().last().unwrap();
    assert_eq!(
        last["after"]["review_fields"]["a.instruction_following_explanation"],
        "Say which part of the prompt it misses."
    );
    let rows = export_rows(app, &lead, &batch).await;
    let comments: Value = serde_json::from_str(&rows[0]["review_field_comments"]).unwrap();
    assert_eq!(comments["sxs"], "Is a 2 not too strong here?");

    // The lead's page form carries one box per answer, named by canonical path.
    let lead_browser = lead.browser_for(app).await;
    let html = page_text(app, &lead_browser, &format!("/review/{id}")).await;
    assert!(html.contains("name=\"field_comment.b.instruction_following_explanation\""));
}
