//! Leads: review with optimistic concurrency, metrics that honour the exclusion rule,
//! exports, and the doors raters cannot open.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::helpers::{
    Go, Persona, TestApp, assignment_id, complete_answers, db_test, json_with, tasks_jsonl,
};

async fn rater(app: &TestApp, name: &str) -> Persona {
    app.persona(name, verdict::auth::Role::Rater).await
}

async fn review(app: &TestApp, lead: &Persona, rating: &str, body: Value) -> reqwest::Response {
    lead.api
        .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
        .json(&body)
        .go()
        .await
}

fn score(s: i64) -> Value {
    let mut answers = complete_answers();
    answers["sxs"] = json!(s);
    answers
}

async fn every_kind_of_excluded_rating_is_left_out_of_metrics(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "exclusion",
            &tasks_jsonl(1),
            "&overlap=7&randomize=false",
        )
        .await;
    let counted = app
        .rate(&rater(app, "counted").await, &batch, &score(1))
        .await;
    let accepted = app
        .rate(&rater(app, "accepted").await, &batch, &score(2))
        .await;
    review(
        app,
        &lead,
        &accepted,
        json!({"decision": "accept", "version": 1}),
    )
    .await;
    let rejected = app
        .rate(&rater(app, "rejected").await, &batch, &score(7))
        .await;
    review(
        app,
        &lead,
        &rejected,
        json!({"decision": "reject", "version": 1}),
    )
    .await;
    let returned = app
        .rate(&rater(app, "returned").await, &batch, &score(7))
        .await;
    review(
        app,
        &lead,
        &returned,
        json!({"decision": "return", "comment": "Check B again.", "version": 1}),
    )
    .await;
    let skipper = rater(app, "skipper").await;
    let next = app.next(&skipper, &batch).await.unwrap();
    app.act(
        &skipper,
        &assignment_id(&next),
        "skip",
        &json!({"reason": "unfamiliar"}),
    )
    .await;
    let scoper = rater(app, "scoper").await;
    let next = app.next(&scoper, &batch).await.unwrap();
    let oos = json!({"explanation": "The prompt is a request for a poem.", "answers": score(7)});
    app.act(&scoper, &assignment_id(&next), "out-of-scope", &oos)
        .await;
    let drafter = rater(app, "drafter").await;
    let next = app.next(&drafter, &batch).await.unwrap();
    app.act(&drafter, &assignment_id(&next), "draft", &score(7))
        .await;

    let m = app.metrics(&lead, &batch).await;
    let c = &m["counts"];
    assert_eq!(
        (
            c["ratings"].as_u64(),
            c["included"].as_u64(),
            c["excluded"].as_u64()
        ),
        (Some(7), Some(2), Some(5))
    );
    for reason in ["drafts", "skipped", "out_of_scope", "rejected", "returned"] {
        assert_eq!(c[reason], 1, "{reason}: {c}");
    }
    assert_eq!(m["sxs"]["n"], 2);
    assert_eq!(m["sxs"]["distribution"]["7"], 0, "no excluded score counts");
    assert_eq!(m["sxs"]["mean"]["value"], 1.5);
    assert_eq!(m["fields"]["a.executability"]["yes_fully"], 2);
    assert_eq!(m["agreement"]["sxs"]["units"], 1);
    assert_eq!(
        m["agreement"]["sxs"]["pairs"], 1,
        "only the two counted ratings pair up"
    );
    let names: Vec<&str> = m["raters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["included"] != 0)
        .map(|r| r["rater"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(counted.len(), 36, "a rating id");
}
db_test!(every_kind_of_excluded_rating_is_left_out_of_metrics: TestApp);

async fn agreement_in_metrics_matches_the_reference_value(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "agree",
            &tasks_jsonl(4),
            "&overlap=2&randomize=false",
        )
        .await;
    // Two raters, four tasks; scores 1,2,3,4 and 1,3,3,5. The `krippendorff` package
    // gives ordinal alpha 0.8892405063291139 for exactly this table.
    for (name, scores) in [("r1", [1, 2, 3, 4]), ("r2", [1, 3, 3, 5])] {
        let who = rater(app, name).await;
        for s in scores {
            app.rate(&who, &batch, &score(s)).await;
        }
    }
    let m = app.metrics(&lead, &batch).await;
    let alpha = m["agreement"]["sxs"]["krippendorff_alpha"]
        .as_f64()
        .unwrap();
    assert!((alpha - 0.8892405063291139).abs() < 1e-9, "{alpha}");
    assert_eq!(m["agreement"]["sxs"]["level"], "ordinal");
    assert_eq!(m["agreement"]["sxs"]["percent_agreement"], 0.5);
    assert_eq!(m["agreement"]["a.executability"]["level"], "nominal");
}
db_test!(agreement_in_metrics_matches_the_reference_value: TestApp);

async fn swapped_ratings_are_canonical_in_metrics_and_exports(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let who = rater(app, "r1").await;
    let batch = app.batch(&admin, "orient", &tasks_jsonl(40), "").await;
    let mut swapped = 0;
    while let Some(next) = app.next(&who, &batch).await {
        swapped += usize::from(
            next["task"]["response_a"]
                .as_str()
                .unwrap()
                .starts_with("Use `"),
        );
        app.act(&who, &assignment_id(&next), "submit", &score(2))
            .await;
    }
    assert!(swapped > 0 && swapped < 40);
    let m = app.metrics(&lead, &batch).await;
    assert_eq!(
        m["sxs"]["distribution"]["6"].as_u64(),
        Some(swapped as u64),
        "a shown 2 on a swapped task is a 6"
    );
    assert_eq!(
        m["sxs"]["distribution"]["2"].as_u64(),
        Some(40 - swapped as u64)
    );
    assert_eq!(
        m["position_bias"]["shown_mean"]["value"], 2.0,
        "the raters' lean to the first answer shows"
    );
    assert_eq!(m["position_bias"]["swapped"]["mean"], 6.0);

    let csv = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format=csv")))
        .go()
        .await;
    assert_eq!(csv.status(), StatusCode::OK);
    let body = csv.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let mut rows = 0;
    for record in reader.records() {
        let record = record.unwrap();
        rows += 1;
        let was_swapped = &record[column("swapped")] == "true";
        assert_eq!(&record[column("sxs")], if was_swapped { "6" } else { "2" });
        // complete_answers gives the shown B no code: canonically that is A when swapped.
        let no_code_side = if was_swapped {
            "a_executability"
        } else {
            "b_executability"
        };
        assert_eq!(&record[column(no_code_side)], "no_code");
        assert_eq!(&record[column("counts_in_metrics")], "true");
    }
    assert_eq!(rows, 40);
}
db_test!(swapped_ratings_are_canonical_in_metrics_and_exports: TestApp);

async fn the_review_loop_with_stale_versions_refused(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let other_lead = app.persona("lead2", verdict::auth::Role::Lead).await;
    let who = rater(app, "r1").await;
    let batch = app.batch(&admin, "loop", &tasks_jsonl(1), "").await;
    let rating = app.rate(&who, &batch, &score(3)).await;

    let no_comment = review(
        app,
        &lead,
        &rating,
        json!({"decision": "return", "version": 1}),
    )
    .await;
    assert!(
        json_with(no_comment, StatusCode::UNPROCESSABLE_ENTITY).await["fields"]["comment"]
            .is_string()
    );
    let returned = json_with(
        review(app, &lead, &rating, json!({"decision": "return", "comment": "B's code does run; look again.", "version": 1})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (returned["status"].as_str(), returned["version"].as_i64()),
        (Some("returned"), Some(2))
    );
    // A second lead acting on what they saw before: refused, nothing overwritten.
    let stale = review(
        app,
        &other_lead,
        &rating,
        json!({"decision": "accept", "version": 1}),
    )
    .await;
    let body = json_with(stale, StatusCode::CONFLICT).await;
    assert!(
        body["error"].as_str().unwrap().contains("version 2"),
        "{body}"
    );

    let seen = json_with(
        who.api
            .get(app.url(&format!("/api/v1/ratings/{rating}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(seen["review_comment"], "B's code does run; look again.");
    assert_eq!(seen["status"], "returned");
    let revised = who
        .api
        .put(app.url(&format!("/api/v1/ratings/{rating}")))
        .json(&score(5))
        .go()
        .await;
    assert_eq!(
        json_with(revised, StatusCode::OK).await["status"],
        "submitted",
        "back in the queue"
    );
    let queue = lead
        .browser_for(app)
        .await
        .get(app.url("/review"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(
        queue.contains(&format!("/review/{rating}")),
        "listed for review again"
    );

    let accepted = json_with(
        review(
            app,
            &lead,
            &rating,
            json!({"decision": "accept", "version": 3}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(accepted["status"], "accepted");
    assert_eq!(
        who.api
            .put(app.url(&format!("/api/v1/ratings/{rating}")))
            .json(&score(4))
            .go()
            .await
            .status(),
        StatusCode::CONFLICT
    );
    let history = app
        .count("SELECT COUNT(*) FROM rating_history WHERE action LIKE 'review:%'")
        .await;
    assert_eq!(history, 2, "return and accept are kept");
    let page = lead
        .browser_for(app)
        .await
        .get(app.url(&format!("/review/{rating}")))
        .go()
        .await
        .text()
        .await
        .unwrap();
    for change in ["submit", "review: return", "revise", "review: accept"] {
        assert!(
            page.contains(&format!("<td>{change}</td>")),
            "history shows {change}"
        );
    }
    let own = app
        .rate(
            &lead,
            &app.batch(&admin, "own", &tasks_jsonl(1), "").await,
            &score(4),
        )
        .await;
    assert_eq!(
        review(
            app,
            &lead,
            &own,
            json!({"decision": "accept", "version": 1})
        )
        .await
        .status(),
        StatusCode::FORBIDDEN,
        "not one's own"
    );
}
db_test!(the_review_loop_with_stale_versions_refused: TestApp);

async fn a_rejected_rating_frees_the_task_for_another_rater(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app.batch(&admin, "reject", &tasks_jsonl(1), "").await;
    let rating = app.rate(&rater(app, "r1").await, &batch, &score(3)).await;
    let second = rater(app, "r2").await;
    assert!(app.next(&second, &batch).await.is_none(), "full");
    review(
        app,
        &lead,
        &rating,
        json!({"decision": "reject", "version": 1}),
    )
    .await;
    assert!(
        app.next(&second, &batch).await.is_some(),
        "open again after the rejection"
    );
    let again = review(
        app,
        &lead,
        &rating,
        json!({"decision": "accept", "version": 2}),
    )
    .await;
    assert_eq!(again.status(), StatusCode::CONFLICT, "a rejection is final");
}
db_test!(a_rejected_rating_frees_the_task_for_another_rater: TestApp);

async fn raters_get_403_on_metrics_exports_and_review(app: &TestApp) {
    let admin = app.admin().await;
    let who = rater(app, "r1").await;
    let batch = app.batch(&admin, "doors", &tasks_jsonl(1), "").await;
    let rating = app.rate(&who, &batch, &score(3)).await;
    for path in [
        format!("/api/v1/batches/{batch}/metrics"),
        format!("/api/v1/batches/{batch}/export?format=csv"),
    ] {
        assert_eq!(
            who.api.get(app.url(&path)).go().await.status(),
            StatusCode::FORBIDDEN,
            "{path}"
        );
    }
    let decision = review(
        app,
        &who,
        &rating,
        json!({"decision": "accept", "version": 1}),
    )
    .await;
    assert_eq!(decision.status(), StatusCode::FORBIDDEN);
    let browser = who.browser_for(app).await;
    for page in [
        "/review".to_owned(),
        format!("/batches/{batch}"),
        format!("/review/{rating}"),
        format!("/batches/{batch}/tasks/t1"),
    ] {
        assert_eq!(
            browser.get(app.url(&page)).go().await.status(),
            StatusCode::FORBIDDEN,
            "{page}"
        );
    }
    let status = app
        .count("SELECT COUNT(*) FROM ratings WHERE status = 'submitted'")
        .await;
    assert_eq!(status, 1, "nothing changed");
}
db_test!(raters_get_403_on_metrics_exports_and_review: TestApp);

async fn exports_stream_filter_and_neutralise_formulas(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "Export: Q4 / final",
            &tasks_jsonl(3),
            "&overlap=2&randomize=false",
        )
        .await;
    let r1 = rater(app, "r1").await;
    let mut formula = score(3);
    formula["sxs_explanation"] = json!("=HYPERLINK(\"http://evil.example\",\"click\")");
    app.rate(&r1, &batch, &formula).await;
    let next = app.next(&r1, &batch).await.unwrap();
    app.act(
        &r1,
        &assignment_id(&next),
        "skip",
        &json!({"reason": "other", "note": "@SUM(1)"}),
    )
    .await;
    let r2 = rater(app, "r2").await;
    let next = app.next(&r2, &batch).await.unwrap();
    app.act(&r2, &assignment_id(&next), "draft", &score(4))
        .await;

    let url = |q: &str| app.url(&format!("/api/v1/batches/{batch}/export?{q}"));
    let csv = lead.api.get(url("format=csv")).go().await;
    assert_eq!(csv.headers()[CONTENT_TYPE], "text/csv; charset=utf-8");
    let disposition = csv.headers()[CONTENT_DISPOSITION]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.starts_with("attachment; filename=\"export--q4---final-ratings-")
            && disposition.ends_with(".csv\""),
        "{disposition}"
    );
    let body = csv.text().await.unwrap();
    assert_eq!(
        body.lines().count(),
        3,
        "a header and two ratings, no draft:\n{body}"
    );
    assert!(body.contains("'=HYPERLINK"), "formula neutralised");
    assert!(body.contains("'@SUM(1)"));
    assert!(!body.contains(",=HYPERLINK") && !body.contains("\"=HYPERLINK"));

    let jsonl = lead.api.get(url("format=jsonl&outcome=skipped")).go().await;
    assert_eq!(jsonl.headers()[CONTENT_TYPE], "application/x-ndjson");
    let text = jsonl.text().await.unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (
            rows[0]["outcome"].as_str(),
            rows[0]["counts_in_metrics"].as_bool()
        ),
        (Some("skipped"), Some(false))
    );
    assert_eq!(rows[0]["note"], "@SUM(1)", "JSON keeps the text as it is");
    let by_rater = lead
        .api
        .get(url("format=jsonl&rater=r2"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(by_rater, "", "r2 has only a draft");
    let future = lead
        .api
        .get(url("format=jsonl&since=2999-01-01"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(future, "");
    let bad = lead.api.get(url("format=xlsx&status=maybe")).go().await;
    let fields = json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await["fields"].clone();
    assert!(fields["format"].is_string() && fields["status"].is_string());
}
db_test!(exports_stream_filter_and_neutralise_formulas: TestApp);

async fn the_batch_page_shows_charts_and_the_disagreement_view(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "charts",
            &tasks_jsonl(1),
            "&overlap=2&randomize=false",
        )
        .await;
    app.rate(&rater(app, "r1").await, &batch, &score(2)).await;
    app.rate(&rater(app, "r2").await, &batch, &score(6)).await;
    let browser = lead.browser_for(app).await;
    let page = browser
        .get(app.url(&format!("/batches/{batch}")))
        .go()
        .await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    let bias_at = html
        .find("id=\"rater-bias\"")
        .expect("the rater bias section");
    assert_eq!(
        html[..bias_at].matches("<svg class=\"chart\"").count(),
        4,
        "histogram, bias, answers, agreement"
    );
    assert_eq!(
        html[bias_at..].matches("<svg class=\"chart\"").count(),
        6,
        "position lean, length lean, equal length, median time, over 30 minutes, one answer"
    );
    assert!(html.contains("<title>2: 1</title>") && html.contains("<title>6: 1</title>"));
    assert!(html.contains("Export CSV"));
    let task = browser
        .get(app.url(&format!("/batches/{batch}/tasks/t1")))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(
        task.contains(">r1</a>") && task.contains(">r2</a>"),
        "both raters side by side"
    );
    // Labels, not stored codes; both answers differ, as neither is the most common.
    assert!(
        task.contains("≠ differs</span> A better</div>")
            && task.contains("≠ differs</span> B better</div>"),
        "{task}"
    );
    assert!(!task.contains("2 · A better"));
}
db_test!(the_batch_page_shows_charts_and_the_disagreement_view: TestApp);

/// A server error tells the caller which request failed and nothing of the database.
async fn a_server_error_carries_a_request_id_and_no_sql(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "broken", &tasks_jsonl(1), "&randomize=false")
        .await;
    let rating = app.rate(&rater, &batch, &complete_answers()).await;
    // The table a review writes to disappears under the running server.
    app.execute("DROP TABLE reviews").await;
    let failed = review(
        app,
        &lead,
        &rating,
        json!({"decision": "accept", "version": 1}),
    )
    .await;
    assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let header_id = failed
        .headers()
        .get("x-request-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = failed.text().await.unwrap();
    let error: Value = serde_json::from_str(&body).expect("a JSON error");
    let id = error["request_id"].as_str().expect("a request id");
    assert_eq!(
        Some(id.to_owned()),
        header_id,
        "the id in the body is the response's"
    );
    let lower = body.to_lowercase();
    for leak in [
        "reviews", "table", "relation", "sqlx", "select", "insert", "panicked", ".rs:",
    ] {
        assert!(!lower.contains(leak), "the error shows {leak:?}: {body}");
    }
    // Nothing half-done: the rating is still waiting for review.
    let status = app
        .count("SELECT COUNT(*) FROM ratings WHERE status = 'submitted'")
        .await;
    assert_eq!(status, 1);
}
db_test!(a_server_error_carries_a_request_id_and_no_sql: TestApp);
