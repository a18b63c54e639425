//! Uploading batches and changing their settings.

use reqwest::StatusCode;
use serde_json::json;
use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{
    Fixture, Go, Persona, TestApp, complete_answers, db_test, json_with, tasks_jsonl,
};
use verdict::auth::Role;

async fn upload(
    app: &TestApp,
    token_of: &crate::helpers::Persona,
    query: &str,
    content_type: &str,
    body: String,
) -> reqwest::Response {
    token_of
        .api
        .post(app.url(&format!("/api/v1/batches?{query}")))
        .header("content-type", content_type)
        .body(body)
        .go()
        .await
}

async fn an_upload_in_each_format_creates_the_batch(app: &TestApp) {
    let admin = app.admin().await;
    let jsonl = upload(
        app,
        &admin,
        "name=lines&overlap=2",
        "application/x-ndjson",
        tasks_jsonl(3),
    )
    .await;
    let body = json_with(jsonl, StatusCode::CREATED).await;
    assert_eq!(
        (
            body["name"].as_str(),
            body["created"].as_u64(),
            body["unchanged"].as_u64()
        ),
        (Some("lines"), Some(3), Some(0))
    );

    let array = json!([
        {"external_id": "q1", "prompt": [{"role": "user", "content": "Fix this"}], "response_a": "A", "response_b": "B"},
        {"external_id": 2, "prompt": "p", "response_a": "A", "response_b": "B", "metadata": {"language": "go"}}
    ]);
    let json = upload(
        app,
        &admin,
        "name=array",
        "application/json",
        array.to_string(),
    )
    .await;
    assert_eq!(json_with(json, StatusCode::CREATED).await["created"], 2);

    let csv = "external_id,prompt,response_a,response_b,model_a,model_b,meta.language\n\
               c1,\"Sort, please\",A,B,m1,m2,rust\nc2,p,A,B,,,\n";
    let csv = upload(
        app,
        &admin,
        "name=table&randomize=false",
        "text/csv; charset=utf-8",
        csv.into(),
    )
    .await;
    let id = json_with(csv, StatusCode::CREATED).await["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let batch = json_with(
        admin
            .api
            .get(app.url(&format!("/api/v1/batches/{id}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (
            batch["name"].as_str(),
            batch["randomize"].as_bool(),
            batch["overlap"].as_i64()
        ),
        (Some("table"), Some(false), Some(1))
    );
    assert_eq!(batch["progress"]["tasks"], 2);
    let list = json_with(
        admin.api.get(app.url("/api/v1/batches")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(list.as_array().unwrap().len(), 3);
    let lines = list
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "lines")
        .unwrap();
    assert_eq!(
        (lines["overlap"].as_i64(), lines["randomize"].as_bool()),
        (Some(2), Some(true))
    );
}
db_test!(an_upload_in_each_format_creates_the_batch: TestApp);

async fn a_bad_upload_stores_nothing_and_names_its_lines(app: &TestApp) {
    let admin = app.admin().await;
    let mut file = tasks_jsonl(2);
    file.push_str("{\"external_id\": \"t1\", \"prompt\": \"again\", \"response_a\": \"A\", \"response_b\": \"B\"}\n");
    file.push_str("{\"external_id\": \"t4\", \"prompt\": \"\", \"response_a\": \"A\", \"response_b\": \"B\"}\n");
    file.push_str("not json at all\n");
    file.push_str(tasks_jsonl(6).lines().nth(5).unwrap());
    let response = upload(app, &admin, "name=broken", "application/x-ndjson", file).await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        body["error"],
        "3 of the records are invalid; nothing was stored"
    );
    assert_eq!(body["error_count"], 3);
    let lines: Vec<(u64, String)> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["line"].as_u64().unwrap(),
                e["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        lines[0],
        (
            3,
            "external_id \"t1\" appears again (first on line 1)".to_owned()
        )
    );
    assert_eq!(lines[1], (4, "prompt is empty".to_owned()));
    assert_eq!(lines[2].0, 5);
    assert!(
        app.store.batch_by_name("broken").await.unwrap().is_none(),
        "no batch"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 0, "no task");
}
db_test!(a_bad_upload_stores_nothing_and_names_its_lines: TestApp);

async fn at_most_a_hundred_bad_records_are_listed(app: &TestApp) {
    let admin = app.admin().await;
    let response = upload(
        app,
        &admin,
        "name=junk",
        "application/x-ndjson",
        "{}\n".repeat(250),
    )
    .await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        (
            body["errors"].as_array().unwrap().len(),
            body["error_count"].as_u64()
        ),
        (100, Some(250))
    );
}
db_test!(at_most_a_hundred_bad_records_are_listed: TestApp);

async fn a_reupload_is_idempotent_and_changed_content_is_refused(app: &TestApp) {
    let admin = app.admin().await;
    app.batch(&admin, "again", &tasks_jsonl(3), "").await;
    let same = upload(
        app,
        &admin,
        "name=again",
        "application/x-ndjson",
        tasks_jsonl(5),
    )
    .await;
    let body = json_with(same, StatusCode::CREATED).await;
    assert_eq!(
        (body["created"].as_u64(), body["unchanged"].as_u64()),
        (Some(2), Some(3))
    );
    let twice = upload(
        app,
        &admin,
        "name=again",
        "application/x-ndjson",
        tasks_jsonl(5),
    )
    .await;
    let body = json_with(twice, StatusCode::CREATED).await;
    assert_eq!(
        (body["created"].as_u64(), body["unchanged"].as_u64()),
        (Some(0), Some(5))
    );

    let changed = tasks_jsonl(6).replace("returns 2 squared", "returns 2 cubed");
    let refused = upload(app, &admin, "name=again", "application/x-ndjson", changed).await;
    let body = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(body["errors"][0]["line"], 2);
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("external_id \"t2\" is already in this batch with different content")
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM tasks").await,
        5,
        "t6 was not added either"
    );

    let other_rubric = upload(
        app,
        &admin,
        "name=again&rubric=blackhat",
        "application/x-ndjson",
        tasks_jsonl(1),
    )
    .await;
    assert_eq!(other_rubric.status(), StatusCode::CREATED);
}
db_test!(a_reupload_is_idempotent_and_changed_content_is_refused: TestApp);

async fn uploads_check_their_parameters_type_and_caller(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let bad = upload(
        app,
        &admin,
        "name=&rubric=likert&overlap=0",
        "application/x-ndjson",
        tasks_jsonl(1),
    )
    .await;
    let body = json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(body["fields"]["name"], "is required");
    assert_eq!(
        body["fields"]["rubric"],
        "unknown rubric \"likert\": use blackhat, additive-5, pairwise-aspects"
    );
    assert_eq!(body["fields"]["overlap"], "must be from 1 to 100");
    let plain = upload(app, &admin, "name=x", "text/plain", tasks_jsonl(1)).await;
    assert_eq!(plain.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let unknown_param = upload(
        app,
        &admin,
        "name=x&owner=me",
        "application/x-ndjson",
        tasks_jsonl(1),
    )
    .await;
    assert_eq!(unknown_param.status(), StatusCode::BAD_REQUEST);
    let by_rater = upload(
        app,
        &rater,
        "name=x",
        "application/x-ndjson",
        tasks_jsonl(1),
    )
    .await;
    assert_eq!(by_rater.status(), StatusCode::FORBIDDEN);
    let empty = upload(app, &admin, "name=x", "application/x-ndjson", String::new()).await;
    assert_eq!(
        json_with(empty, StatusCode::UNPROCESSABLE_ENTITY).await["errors"][0]["message"],
        "the file holds no tasks"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM batches").await, 0);
}
db_test!(uploads_check_their_parameters_type_and_caller: TestApp);

#[tokio::test]
async fn an_upload_over_the_limit_gets_413_and_stores_nothing() {
    let config = Config {
        max_upload_bytes: 1024 * 1024,
        ..Config::default()
    };
    let app = TestApp::with_config(Backend::Sqlite, config).await.unwrap();
    let admin = app.admin().await;
    let big = tasks_jsonl(20_000);
    assert!(big.len() > 1024 * 1024);
    let response = upload(&app, &admin, "name=big", "application/x-ndjson", big).await;
    assert_eq!(
        json_with(response, StatusCode::PAYLOAD_TOO_LARGE).await["error"],
        "request body is larger than the limit of 1 MiB"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 0);
    app.teardown().await;
}

async fn settings_change_and_are_checked(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let lead = app.lead().await;
    let id = app.batch(&admin, "settings", &tasks_jsonl(3), "").await;
    let url = app.url(&format!("/api/v1/batches/{id}"));
    let patch = json!({
        "state": "closed", "overlap": 3, "randomize": false, "lease_minutes": 10, "min_explanation_len": 5,
        "raters": ["rater"], "leads": ["lead"],
        "classifications": [{"key": "language", "label": "Language", "options": ["python", "go"]}]
    });
    let changed = json_with(
        admin.api.patch(&url).json(&patch).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(changed["state"], "closed");
    assert_eq!(
        (
            changed["overlap"].as_i64(),
            changed["lease_minutes"].as_i64(),
            changed["min_explanation_len"].as_i64()
        ),
        (Some(3), Some(10), Some(5))
    );
    assert_eq!(changed["raters"], json!(["rater"]));
    assert_eq!(changed["leads"], json!(["lead"]));
    assert_eq!(changed["classifications"][0]["required"], true);

    let bad = json!({"state": "paused", "overlap": 0, "lease_minutes": 0, "raters": ["rater", "ghost"], "leads": ["rater"],
                     "classifications": [{"key": "Bad Key", "label": "", "options": []}]});
    let body = json_with(
        admin.api.patch(&url).json(&bad).go().await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    for field in [
        "state",
        "overlap",
        "lease_minutes",
        "raters",
        "leads",
        "classifications[0].key",
        "classifications[0].label",
        "classifications[0].options",
    ] {
        assert!(body["fields"][field].is_string(), "{field}: {body}");
    }
    assert_eq!(body["fields"]["raters"], "no user named \"ghost\"");
    assert_eq!(body["fields"]["leads"], "rater is a rater");
    let unchanged = json_with(admin.api.get(&url).go().await, StatusCode::OK).await;
    assert_eq!(
        (unchanged["state"].as_str(), unchanged["overlap"].as_i64()),
        (Some("closed"), Some(3)),
        "nothing changed"
    );

    let opened = json!({"state": "open", "raters": null});
    let body = json_with(
        admin.api.patch(&url).json(&opened).go().await,
        StatusCode::OK,
    )
    .await;
    assert!(body["raters"].is_null(), "open to every rater again");
    assert_eq!(
        body["leads"],
        json!(["lead"]),
        "absent fields stay as they were"
    );
    assert_eq!(
        rater.api.patch(&url).json(&opened).go().await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        lead.api.patch(&url).json(&opened).go().await.status(),
        StatusCode::FORBIDDEN
    );
    let missing = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{}", uuid::Uuid::now_v7())))
        .json(&opened)
        .go()
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}
db_test!(settings_change_and_are_checked: TestApp);

async fn raters_see_only_open_batches_opened_to_them(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let open = app.batch(&admin, "open-to-all", &tasks_jsonl(2), "").await;
    let mine = app.batch(&admin, "only-rater", &tasks_jsonl(2), "").await;
    let closed = app.batch(&admin, "closed", &tasks_jsonl(2), "").await;
    admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{mine}")))
        .json(&json!({"raters": ["rater"]}))
        .go()
        .await;
    admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{closed}")))
        .json(&json!({"state": "closed"}))
        .go()
        .await;
    let names = |list: serde_json::Value| -> Vec<String> {
        let mut names: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    let seen = json_with(
        rater.api.get(app.url("/api/v1/batches")).go().await,
        StatusCode::OK,
    )
    .await;
    assert!(
        seen[0].get("raters").is_none(),
        "raters do not see member lists"
    );
    assert_eq!(names(seen), ["only-rater", "open-to-all"]);
    let seen = json_with(
        other.api.get(app.url("/api/v1/batches")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(names(seen), ["open-to-all"]);
    for hidden in [&mine, &closed] {
        assert_eq!(
            other
                .api
                .get(app.url(&format!("/api/v1/batches/{hidden}")))
                .go()
                .await
                .status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            other
                .api
                .post(app.url(&format!("/api/v1/batches/{hidden}/next")))
                .go()
                .await
                .status(),
            StatusCode::NOT_FOUND
        );
    }
    assert!(app.next(&other, &open).await.is_some());
}
db_test!(raters_see_only_open_batches_opened_to_them: TestApp);

async fn a_large_upload_is_stored_whole_and_in_order(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    // More tasks than one multi-row insert carries, so several chunks are written.
    let batch = app
        .batch(
            &admin,
            "large",
            &tasks_jsonl(1234),
            "&randomize=false&raters_see_external_ids=true",
        )
        .await;
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 1234);
    assert_eq!(
        app.count("SELECT COUNT(DISTINCT seq) FROM tasks").await,
        1234
    );
    assert_eq!(
        app.count("SELECT MAX(seq) - MIN(seq) FROM tasks").await,
        1233
    );
    let first = app.next(&rater, &batch).await.unwrap();
    assert_eq!(
        first["task"]["external_id"], "t1",
        "handed out in upload order"
    );
}
db_test!(a_large_upload_is_stored_whole_and_in_order: TestApp);

/// The tasks are stored while the file is checked, several hundred at a time: a bad
/// record after many good ones undoes what was stored, for a new batch and for one that
/// already has tasks.
async fn a_bad_record_after_many_good_ones_keeps_nothing(app: &TestApp) {
    let admin = app.admin().await;
    let mut file = tasks_jsonl(1234);
    file.push_str("{\"external_id\": \"late\", \"prompt\": \"\", \"response_a\": \"A\", \"response_b\": \"B\"}\n");
    let response = upload(
        app,
        &admin,
        "name=late",
        "application/x-ndjson",
        file.clone(),
    )
    .await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(body["error_count"], 1, "{body}");
    assert_eq!(body["errors"][0]["line"], 1235, "{body}");
    assert!(
        app.store.batch_by_name("late").await.unwrap().is_none(),
        "no batch"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 0, "no task");
    // A batch with tasks already: the file's 1,231 new ones and the bad one.
    app.batch(&admin, "late", &tasks_jsonl(3), "").await;
    let response = upload(app, &admin, "name=late", "application/x-ndjson", file).await;
    json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM tasks").await,
        3,
        "only the first upload's"
    );
    // The same file without its bad record is stored whole.
    let response = upload(
        app,
        &admin,
        "name=late",
        "application/x-ndjson",
        tasks_jsonl(1234),
    )
    .await;
    let body = json_with(response, StatusCode::CREATED).await;
    assert_eq!(
        (body["created"].as_u64(), body["unchanged"].as_u64()),
        (Some(1231), Some(3)),
        "{body}"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 1234);
}
db_test!(a_bad_record_after_many_good_ones_keeps_nothing: TestApp);

async fn progress(app: &TestApp, who: &Persona, batch: &str) -> serde_json::Value {
    let one = who
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}")))
        .go()
        .await;
    json_with(one, StatusCode::OK).await["progress"].clone()
}

async fn progress_counts_follow_the_work(app: &TestApp) {
    let admin = app.admin().await;
    let (first, second) = (app.rater().await, app.persona("second", Role::Rater).await);
    let batch = app
        .batch(&admin, "progress", &tasks_jsonl(3), "&randomize=false")
        .await;
    let counts = |p: &serde_json::Value| {
        [
            "tasks",
            "tasks_done",
            "rated",
            "skipped",
            "out_of_scope",
            "in_progress",
        ]
        .map(|k| p[k].as_i64().unwrap_or(-1))
    };
    assert_eq!(
        counts(&progress(app, &admin, &batch).await),
        [3, 0, 0, 0, 0, 0]
    );
    // An open assignment fills its task (overlap 1) but does not finish it.
    let t1 = app.next(&first, &batch).await.unwrap();
    let t1 = t1["assignment_id"].as_str().unwrap().to_owned();
    assert_eq!(
        counts(&progress(app, &admin, &batch).await),
        [3, 0, 0, 0, 0, 1]
    );
    app.act(&first, &t1, "submit", &complete_answers()).await;
    assert_eq!(
        counts(&progress(app, &admin, &batch).await),
        [3, 1, 1, 0, 0, 0]
    );
    // A skip gives the task back: it is not done.
    let t2 = app.next(&second, &batch).await.unwrap();
    let t2 = t2["assignment_id"].as_str().unwrap().to_owned();
    app.act(&second, &t2, "skip", &json!({"reason": "too_long"}))
        .await;
    assert_eq!(
        counts(&progress(app, &admin, &batch).await),
        [3, 1, 1, 1, 0, 0]
    );
    // Out of scope finishes the task without a rating that counts.
    let t3 = app.next(&second, &batch).await.unwrap();
    let t3 = t3["assignment_id"].as_str().unwrap().to_owned();
    let oos = json!({"explanation": "The prompt asks for a poem, not code at all."});
    let done = app.act(&second, &t3, "out-of-scope", &oos).await;
    assert_eq!(done.status(), StatusCode::OK);
    assert_eq!(
        counts(&progress(app, &admin, &batch).await),
        [3, 2, 1, 1, 1, 0]
    );
}
db_test!(progress_counts_follow_the_work: TestApp);

/// Issue 28: an upload to an existing batch may leave out its rubric, on the API as on
/// the command line; a single-response custom rubric's batch takes single-response tasks.
async fn an_upload_to_a_custom_rubric_batch_may_leave_out_its_rubric(app: &TestApp) {
    let admin = app.admin().await;
    let mut doc: serde_json::Value =
        serde_json::from_str(include_str!("../../rubrics/additive-5.json")).unwrap();
    doc["name"] = "one-answer".into();
    let added = crate::rubrics::post_rubric(app, &admin, &doc).await;
    json_with(added, StatusCode::CREATED).await;
    let single = |id: &str| {
        crate::helpers::jsonl([crate::helpers::single_task(
            id,
            "Sum a list.",
            "Use a loop.",
            "m",
        )])
    };
    let made = upload(
        app,
        &admin,
        "name=one&rubric=one-answer&overlap=2",
        "application/x-ndjson",
        single("o1"),
    )
    .await;
    json_with(made, StatusCode::CREATED).await;
    let appended = upload(
        app,
        &admin,
        "name=one",
        "application/x-ndjson",
        single("o2"),
    )
    .await;
    let appended = json_with(appended, StatusCode::CREATED).await;
    assert_eq!(appended["created"], 1, "{appended}");
    let refused = upload(
        app,
        &admin,
        "name=one&rubric=blackhat",
        "application/x-ndjson",
        single("o3"),
    )
    .await;
    let refused = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        refused["fields"]["rubric"], "batch \"one\" uses the one-answer rubric",
        "{refused}"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 2);
}
db_test!(an_upload_to_a_custom_rubric_batch_may_leave_out_its_rubric: TestApp);
