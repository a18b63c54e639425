//! The defects an end-to-end trial and an attack audit found (issue 11), each proved
//! fixed on both databases: members, concurrent uploads, drafts and their time, returned
//! out-of-scope ratings, leases, capped text, upload settings, closed batches, removed
//! raters, and tokens after a reset.

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::auth::Role;

use crate::helpers::{Go, Persona, TestApp, complete_answers, db_test, json_with, tasks_jsonl};

/// A long enough explanation for any rule.
const WHY: &str = "The prompt asks for a poem about autumn, not for code.";

async fn patch_batch(
    app: &TestApp,
    admin: &Persona,
    batch: &str,
    body: Value,
) -> reqwest::Response {
    admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&body)
        .go()
        .await
}

/// Saves a draft; returns its rating's id.
async fn draft(app: &TestApp, rater: &Persona, assignment: &str, answers: Value) -> String {
    let saved = app.act(rater, assignment, "draft", &answers).await;
    let saved = json_with(saved, StatusCode::OK).await;
    saved["rating_id"].as_str().expect("rating id").to_owned()
}

/// Defect 1: a user named twice in a members list is one member, not a 500.
async fn a_member_named_twice_is_one_member(app: &TestApp) {
    let admin = app.admin().await;
    app.persona("r1", Role::Rater).await;
    app.persona("l1", Role::Lead).await;
    let batch = app.batch(&admin, "members", &tasks_jsonl(1), "").await;
    let changed = patch_batch(
        app,
        &admin,
        &batch,
        json!({"raters": ["r1", "r1"], "leads": ["l1", "l1"]}),
    )
    .await;
    let changed = json_with(changed, StatusCode::OK).await;
    assert_eq!(changed["raters"], json!(["r1"]));
    assert_eq!(changed["leads"], json!(["l1"]));
    let members = app.count("SELECT COUNT(*) FROM batch_members").await;
    assert_eq!(members, 2);
}
db_test!(a_member_named_twice_is_one_member: TestApp);

/// Defect 2: concurrent uploads get the answers they would get one after another.
async fn concurrent_uploads_answer_as_if_sent_one_after_another(app: &TestApp) {
    let admin = app.admin().await;
    let upload = |name: &'static str, body: String| {
        let request = admin
            .api
            .post(app.url(&format!("/api/v1/batches?name={name}")))
            .header("content-type", "application/x-ndjson")
            .body(body);
        async move {
            let response = request.go().await;
            let status = response.status();
            (status, response.json::<Value>().await.unwrap_or_default())
        }
    };
    // Eight uploads of one new batch: one creates it, the others find the tasks there.
    let same: Vec<_> = (0..8).map(|_| upload("fresh", tasks_jsonl(20))).collect();
    let answers = futures_util::future::join_all(same).await;
    for (status, body) in &answers {
        assert_eq!(*status, StatusCode::CREATED, "{body}");
    }
    let created: u64 = answers
        .iter()
        .map(|(_, b)| b["created"].as_u64().unwrap())
        .sum();
    assert_eq!(created, 20, "{answers:?}");
    // Uploads of different new tasks to one existing batch: all of them stored.
    let parts: Vec<_> = (0..4)
        .map(|i| upload("fresh", crate::helpers::tasks_jsonl_from(100 + i * 10, 10)))
        .collect();
    for (status, body) in futures_util::future::join_all(parts).await {
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["created"], 10);
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 60);
    let seqs = app.count("SELECT COUNT(DISTINCT seq) FROM tasks").await;
    assert_eq!(seqs, 60, "every task has its own place in the batch");
    // One id with two contents at once: the first stored, the second refused by line.
    let changed = tasks_jsonl(1).replace("returns 1 squared", "returns 1 cubed");
    let rivals = vec![
        upload("rivals", tasks_jsonl(1)),
        upload("rivals", changed.clone()),
    ];
    let mut statuses: Vec<StatusCode> = futures_util::future::join_all(rivals)
        .await
        .into_iter()
        .map(|(status, _)| status)
        .collect();
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::CREATED, StatusCode::UNPROCESSABLE_ENTITY]
    );
}
db_test!(concurrent_uploads_answer_as_if_sent_one_after_another: TestApp);

/// Defect 3: out of scope keeps the draft's answers and time; a submit without a time
/// keeps the draft's, and a smaller one does not replace it.
async fn active_time_and_drafted_answers_are_never_lost(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "kept", &tasks_jsonl(3), "&randomize=false")
        .await;

    let first = app.take(&rater, &batch).await;
    let answers = json!({"a": {"executability": "yes_fully"}, "sxs": 3, "time_spent_s": 700});
    draft(app, &rater, &first, answers).await;
    let marked = app
        .act(&rater, &first, "out-of-scope", &json!({"explanation": WHY}))
        .await;
    let marked = json_with(marked, StatusCode::OK).await;
    let stored = app
        .rating(&rater, marked["rating_id"].as_str().unwrap())
        .await;
    assert_eq!(stored["outcome"], "out_of_scope");
    assert_eq!(stored["time_spent_s"], 700);
    assert_eq!(stored["answers"]["a"]["executability"], "yes_fully");
    assert_eq!(stored["answers"]["sxs"], 3);
    assert_eq!(stored["answers"]["a"]["correctness"], "cannot_assess");
    assert_eq!(stored["answers"]["b"]["correctness"], "cannot_assess");
    assert_eq!(stored["note"], WHY);

    for sent in [None, Some(95)] {
        let next = app.take(&rater, &batch).await;
        draft(app, &rater, &next, json!({"sxs": 2, "time_spent_s": 640})).await;
        let mut answers = complete_answers();
        match sent {
            None => answers.as_object_mut().unwrap().remove("time_spent_s"),
            Some(t) => answers
                .as_object_mut()
                .unwrap()
                .insert("time_spent_s".into(), json!(t)),
        };
        let done = app.act(&rater, &next, "submit", &answers).await;
        let done = json_with(done, StatusCode::OK).await;
        let stored = app
            .rating(&rater, done["rating_id"].as_str().unwrap())
            .await;
        assert_eq!(stored["time_spent_s"], 640, "sent {sent:?}");
    }
}
db_test!(active_time_and_drafted_answers_are_never_lost: TestApp);

async fn decide(app: &TestApp, lead: &Persona, rating_id: &str, decision: &str) {
    let current = app.rating(lead, rating_id).await;
    let decided = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{rating_id}/review")))
        .json(
            &json!({"decision": decision, "comment": "Please look again.",
                      "version": current["version"]}),
        )
        .go()
        .await;
    json_with(decided, StatusCode::OK).await;
}

async fn revise(app: &TestApp, rater: &Persona, rating_id: &str, body: Value) -> reqwest::Response {
    rater
        .api
        .put(app.url(&format!("/api/v1/ratings/{rating_id}")))
        .json(&body)
        .go()
        .await
}

/// Defect 4: a returned out-of-scope rating can get a new explanation, become a real
/// rating, or become a skip (whose task goes back to the pool).
async fn a_returned_out_of_scope_rating_can_be_fixed(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(
            &admin,
            "scope",
            &tasks_jsonl(2),
            "&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let mark = async |assignment: &str| {
        let marked = app
            .act(
                &rater,
                assignment,
                "out-of-scope",
                &json!({"explanation": WHY}),
            )
            .await;
        let marked = json_with(marked, StatusCode::OK).await;
        marked["rating_id"].as_str().unwrap().to_owned()
    };
    let first = app.take(&rater, &batch).await;
    // Answers sent with the mark must be answers: anything else is named, not ignored.
    let odd = app
        .act(
            &rater,
            &first,
            "out-of-scope",
            &json!({"explanation": WHY, "answers": 5}),
        )
        .await;
    let odd = json_with(odd, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(odd["fields"]["answers"], "must be a JSON object", "{odd}");
    let id = mark(&first).await;
    decide(app, &lead, &id, "return").await;

    let better = "It asks for a limerick; there is nothing to run or check.";
    let fixed = revise(app, &rater, &id, json!({"explanation": better})).await;
    let fixed = json_with(fixed, StatusCode::OK).await;
    assert_eq!(fixed["outcome"], "out_of_scope");
    assert_eq!(fixed["status"], "submitted");
    assert_eq!(fixed["note"], better);
    let short = revise(app, &rater, &id, json!({"explanation": "  "})).await;
    let short = json_with(short, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(short["fields"]["explanation"].is_string(), "{short}");

    decide(app, &lead, &id, "return").await;
    let mut rated = complete_answers();
    rated["outcome"] = json!("rated");
    let rated = json_with(revise(app, &rater, &id, rated).await, StatusCode::OK).await;
    assert_eq!(rated["outcome"], "rated");
    assert_eq!(rated["note"], Value::Null);
    assert_eq!(rated["answers"]["sxs"], 2);

    let second = app.take(&rater, &batch).await;
    let id = mark(&second).await;
    decide(app, &lead, &id, "return").await;
    let bad = revise(
        app,
        &rater,
        &id,
        json!({"outcome": "skipped", "reason": "bored"}),
    )
    .await;
    let bad = json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(bad["fields"]["reason"].is_string(), "{bad}");
    // A skip's time is checked as every other path checks it.
    let clock = revise(
        app,
        &rater,
        &id,
        json!({"outcome": "skipped", "reason": "unfamiliar", "time_spent_s": -3}),
    )
    .await;
    let clock = json_with(clock, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        clock["fields"]["time_spent_s"]
            .as_str()
            .is_some_and(|why| why.starts_with("must be a whole number of seconds")),
        "{clock}"
    );
    let skipped = revise(
        app,
        &rater,
        &id,
        json!({"outcome": "skipped", "reason": "unfamiliar", "note": "Not my field."}),
    )
    .await;
    let skipped = json_with(skipped, StatusCode::OK).await;
    assert_eq!(skipped["outcome"], "skipped");
    assert_eq!(skipped["skip_reason"], "unfamiliar");
    // The skipped task is offered to someone else.
    let other = app.persona("other", Role::Rater).await;
    let offered = app.next(&other, &batch).await.expect("a task");
    assert_eq!(offered["task"]["external_id"], "t2");
}
db_test!(a_returned_out_of_scope_rating_can_be_fixed: TestApp);

/// Defects 5 and 6: a drafted task does not hold its slot for ever. Deactivation, a
/// lease that ran out and a lead's release each give it back; the rater who comes back
/// late is told their time ran out, and what they sent is kept as their draft.
async fn drafted_tasks_go_back_to_the_pool(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app.batch(&admin, "leases", &tasks_jsonl(1), "").await;
    let mut raters = Vec::new();
    for i in 0..4 {
        raters.push(app.persona(&format!("r{i}"), Role::Rater).await);
    }

    // Deactivation.
    let held = app.take(&raters[0], &batch).await;
    draft(app, &raters[0], &held, json!({"sxs": 3})).await;
    assert!(
        app.next(&raters[1], &batch).await.is_none(),
        "the only task is held"
    );
    let deactivated = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", raters[0].id)))
        .json(&json!({"active": false}))
        .go()
        .await;
    json_with(deactivated, StatusCode::OK).await;
    let held = app.take(&raters[1], &batch).await;

    // A lease that ran out, drafted or not.
    let rating_id = draft(app, &raters[1], &held, json!({"sxs": 5})).await;
    app.execute(
        "UPDATE assignments SET lease_expires_at = '2000-01-01T00:00:00Z' WHERE state = 'open'",
    )
    .await;
    let held_next = app.take(&raters[2], &batch).await;
    let late = app
        .act(&raters[1], &held, "submit", &complete_answers())
        .await;
    let late = json_with(late, StatusCode::CONFLICT).await;
    assert!(
        late["error"]
            .as_str()
            .unwrap()
            .contains("your time on this task ran out"),
        "{late}"
    );
    let kept = app.rating(&raters[1], &rating_id).await;
    assert_eq!(kept["status"], "draft");
    assert_eq!(
        kept["answers"]["sxs_explanation"],
        complete_answers()["sxs_explanation"]
    );
    assert_eq!(kept["answers"]["sxs"], 2, "what was sent last is kept");

    // A lead's release.
    let rater_cannot = raters[3]
        .api
        .post(app.url(&format!("/api/v1/assignments/{held_next}/release")))
        .go()
        .await;
    assert_eq!(rater_cannot.status(), StatusCode::FORBIDDEN);
    let released = lead
        .api
        .post(app.url(&format!("/api/v1/assignments/{held_next}/release")))
        .go()
        .await;
    let released = json_with(released, StatusCode::OK).await;
    assert_eq!(released["state"], "expired");
    let again = lead
        .api
        .post(app.url(&format!("/api/v1/assignments/{held_next}/release")))
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    assert!(
        app.next(&raters[3], &batch).await.is_some(),
        "the task is free again"
    );
    let in_progress = app
        .count("SELECT COUNT(*) FROM assignments WHERE state = 'open'")
        .await;
    assert_eq!(in_progress, 1);
    let released_logged = app
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'assignment.release'")
        .await;
    assert_eq!(released_logged, 1);
}
db_test!(drafted_tasks_go_back_to_the_pool: TestApp);

/// Defect 7 (and 20): every free-text answer is capped.
async fn explanations_are_capped(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "capped", &tasks_jsonl(1), "").await;
    let assignment = app.take(&rater, &batch).await;
    let long = "x".repeat(20_001);
    for action in ["draft", "submit"] {
        let mut answers = complete_answers();
        answers["sxs_explanation"] = json!(long);
        answers["a"]["correctness_explanation"] = json!(long);
        let refused = app.act(&rater, &assignment, action, &answers).await;
        let refused = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        for field in ["sxs_explanation", "a.correctness_explanation"] {
            let why = refused["fields"][field].as_str().unwrap_or_default();
            assert!(
                why.contains("at most 20000 characters"),
                "{action}: {refused}"
            );
        }
    }
    // A body far past any rating's size is refused before it is read (defect 20).
    let head = format!(
        "PUT /api/v1/assignments/{assignment}/draft HTTP/1.1\r\nHost: {}\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\n",
        app.url("").trim_start_matches("http://"),
        rater.token
    );
    let limit = verdict::web::JSON_LIMIT as u64;
    let answer = crate::input::refused_before_the_body(app, &head, limit).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let stored = app.count("SELECT COUNT(*) FROM ratings").await;
    assert_eq!(stored, 0, "nothing was stored");
    let mut answers = complete_answers();
    answers["sxs_explanation"] = json!("y".repeat(20_000));
    let done = app.act(&rater, &assignment, "submit", &answers).await;
    json_with(done, StatusCode::OK).await;
}
db_test!(explanations_are_capped: TestApp);

/// Defect 12: an upload to an existing batch never changes its settings in silence.
async fn an_upload_with_other_settings_is_refused(app: &TestApp) {
    let admin = app.admin().await;
    app.batch(
        &admin,
        "settled",
        &tasks_jsonl(2),
        "&overlap=1&randomize=true",
    )
    .await;
    for query in ["&overlap=5", "&randomize=false"] {
        let refused = admin
            .api
            .post(app.url(&format!("/api/v1/batches?name=settled{query}")))
            .header("content-type", "application/x-ndjson")
            .body(tasks_jsonl(4))
            .go()
            .await;
        let refused = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        let field = query[1..].split('=').next().unwrap();
        let why = refused["fields"][field].as_str().unwrap_or_default();
        assert!(why.contains("PATCH /api/v1/batches/"), "{refused}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 2);
    let (overlap, randomize) = (
        app.count("SELECT COUNT(*) FROM batches WHERE overlap = 1")
            .await,
        app.count("SELECT COUNT(*) FROM batches WHERE randomize")
            .await,
    );
    assert_eq!((overlap, randomize), (1, 1));
    // The same settings, or none, add the tasks.
    app.batch(&admin, "settled", &tasks_jsonl(3), "&overlap=1")
        .await;
    app.batch(&admin, "settled", &tasks_jsonl(4), "").await;
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 4);
}
db_test!(an_upload_with_other_settings_is_refused: TestApp);

/// Defects 13 and 23: a closed batch, or a rater taken off a batch, takes no more work on
/// tasks already held; the draft is kept.
async fn closed_batches_and_removed_raters_take_no_more_work(app: &TestApp) {
    let admin = app.admin().await;
    let (r1, r2) = (
        app.persona("r1", Role::Rater).await,
        app.persona("r2", Role::Rater).await,
    );
    let batch = app.batch(&admin, "shut", &tasks_jsonl(1), "").await;
    let held = app.take(&r1, &batch).await;
    let rating_id = draft(app, &r1, &held, json!({"sxs": 6})).await;
    let closed = patch_batch(app, &admin, &batch, json!({"state": "closed"})).await;
    json_with(closed, StatusCode::OK).await;
    for action in ["submit", "draft", "skip", "out-of-scope"] {
        let body = match action {
            "skip" => json!({"reason": "other"}),
            "out-of-scope" => json!({"explanation": WHY}),
            _ => complete_answers(),
        };
        let refused = app.act(&r1, &held, action, &body).await;
        let refused = json_with(refused, StatusCode::CONFLICT).await;
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("this batch is closed"),
            "{action}: {refused}"
        );
    }
    let kept = app.rating(&r1, &rating_id).await;
    assert_eq!(
        (kept["status"].clone(), kept["answers"]["sxs"].clone()),
        (json!("draft"), json!(6))
    );

    // Open again, to r2 only: r1's task goes back to the pool, and r1 can do no more.
    let reopened = patch_batch(
        app,
        &admin,
        &batch,
        json!({"state": "open", "raters": ["r2"]}),
    )
    .await;
    json_with(reopened, StatusCode::OK).await;
    let refused = app.act(&r1, &held, "submit", &complete_answers()).await;
    let refused = json_with(refused, StatusCode::CONFLICT).await;
    assert!(
        refused["error"].as_str().unwrap().contains("no longer"),
        "{refused}"
    );
    let page = r1
        .browser_for(app)
        .await
        .get(app.url(&format!("/assignments/{held}")))
        .go()
        .await;
    assert_eq!(page.status(), StatusCode::CONFLICT);
    assert!(
        app.next(&r2, &batch).await.is_some(),
        "r1's task went back to the pool"
    );
    let kept = app.rating(&r1, &rating_id).await;
    assert_eq!(kept["answers"]["sxs"], 6, "r1's draft is still theirs");
}
db_test!(closed_batches_and_removed_raters_take_no_more_work: TestApp);

/// Defect 24: a password reset and a deactivation revoke the user's API tokens, and
/// reactivation does not bring them back.
async fn a_reset_or_a_deactivation_revokes_tokens(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let me = |who: &Persona| who.api.get(app.url("/api/v1/me")).go();
    assert_eq!(me(&rater).await.status(), StatusCode::OK);
    let reset = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", rater.id)))
        .json(&json!({"password": "a brand new passphrase for the rater"}))
        .go()
        .await;
    json_with(reset, StatusCode::OK).await;
    assert_eq!(me(&rater).await.status(), StatusCode::UNAUTHORIZED);

    let lead = app.lead().await;
    for active in [false, true] {
        let changed = admin
            .api
            .patch(app.url(&format!("/api/v1/users/{}", lead.id)))
            .json(&json!({"active": active}))
            .go()
            .await;
        json_with(changed, StatusCode::OK).await;
        assert_eq!(
            me(&lead).await.status(),
            StatusCode::UNAUTHORIZED,
            "active {active}"
        );
    }
}
db_test!(a_reset_or_a_deactivation_revokes_tokens: TestApp);

/// Defect 10: a JSON body of the wrong shape names the field, like every other 422.
async fn shape_errors_name_the_field(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "shapes", &tasks_jsonl(1), "").await;
    let assignment = app.take(&rater, &batch).await;
    let skip = app.act(&rater, &assignment, "skip", &json!({})).await;
    let skip = json_with(skip, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(skip["fields"]["reason"], "is required", "{skip}");
    let odd = patch_batch(app, &admin, &batch, json!({"colour": "blue"})).await;
    let odd = json_with(odd, StatusCode::UNPROCESSABLE_ENTITY).await;
    let why = odd["fields"]["colour"].as_str().unwrap_or_default();
    assert!(why.starts_with("is not a field here; expected"), "{odd}");
    let typed = patch_batch(app, &admin, &batch, json!({"raters": ["r", 3]})).await;
    let typed = json_with(typed, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        typed["fields"]["raters[1]"],
        "must be a string (got integer `3`)"
    );
    let user = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "x", "role": "rater", "password": 12}))
        .go()
        .await;
    let user = json_with(user, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(user["fields"]["password"].is_string(), "{user}");
}
db_test!(shape_errors_name_the_field: TestApp);

/// A lead, and a batch of `tasks` tasks each rated once: what the heavy reads read.
async fn rated_batch(app: &TestApp, tasks: usize) -> (Persona, String) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "rated", &tasks_jsonl(tasks), "").await;
    while let Some(next) = app.next(&rater, &batch).await {
        let id = next["assignment_id"].as_str().unwrap();
        let done = app.act(&rater, id, "submit", &complete_answers()).await;
        assert_eq!(done.status(), StatusCode::OK);
    }
    (lead, batch)
}

/// Defect 15: an export that fails part way is cut off, so the client sees an error and
/// not a shorter file that looks complete. (Whether the cut comes before or after the
/// first bytes reach the client depends on timing; either way it must be an error.)
#[tokio::test]
async fn an_export_failing_part_way_is_cut_off() {
    for backend in [
        verdict::store::Backend::Sqlite,
        verdict::store::Backend::Postgres,
    ] {
        let config = verdict::Config {
            export_fault_after_rows: Some(5),
            ..verdict::Config::default()
        };
        let Some(app) = TestApp::with_config(backend, config).await else {
            continue;
        };
        let (lead, batch) = rated_batch(&app, 8).await;
        for format in ["csv", "jsonl"] {
            // A client of its own each time: the last one's connection was cut.
            let sent = crate::helpers::bearer(&lead.token)
                .get(app.url(&format!("/api/v1/batches/{batch}/export?format={format}")))
                .send()
                .await;
            let Ok(response) = sent else {
                continue; // cut before the headers went out: an error all the same
            };
            assert_eq!(response.status(), StatusCode::OK, "{backend:?}");
            let body = response.bytes().await;
            assert!(
                body.is_err(),
                "{backend:?} {format}: the body ended as if complete: {body:?}"
            );
        }
    }
}

/// Defect 26: heavy reads (metrics, exports) run a bounded number at a time, whatever
/// leads ask for at once.
#[tokio::test]
async fn heavy_reads_run_a_bounded_number_at_once() {
    for backend in [
        verdict::store::Backend::Sqlite,
        verdict::store::Backend::Postgres,
    ] {
        let config = verdict::Config {
            max_heavy_reads: 1,
            ..verdict::Config::default()
        };
        let Some(app) = TestApp::with_config(backend, config).await else {
            continue;
        };
        let (lead, batch) = rated_batch(&app, 40).await;
        let reads = (0..24).map(|i| {
            let path = if i % 2 == 0 {
                format!("/api/v1/batches/{batch}/metrics")
            } else {
                format!("/api/v1/batches/{batch}/export?format=csv")
            };
            let request = lead.api.get(app.url(&path));
            async move {
                let response = request.go().await;
                let status = response.status();
                let body = response.bytes().await.expect("a whole body");
                (status, body.len())
            }
        });
        for (status, length) in futures_util::future::join_all(reads).await {
            assert_eq!(status, StatusCode::OK);
            assert!(length > 0);
        }
        assert_eq!(app.state().heavy_reads().peak(), 1, "{backend:?}");
    }
}

/// Defect 11: the metrics count classifications, merge a pair of models whichever way
/// round its tasks had them, and give each pair intervals.
async fn metrics_count_classifications_and_merge_model_pairs(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let tasks: String = (1..=4)
        .map(|i| {
            let (a, b) = if i % 2 == 0 {
                ("gpt-x", "claude-y")
            } else {
                ("claude-y", "gpt-x")
            };
            json!({"external_id": format!("m{i}"), "prompt": "Sort a list.",
                   "response_a": "sorted(xs)", "response_b": "xs.sort()",
                   "model_a": a, "model_b": b})
            .to_string()
                + "\n"
        })
        .collect();
    let batch = app
        .batch(&admin, "models", &tasks, "&randomize=false")
        .await;
    let questions = json!({"classifications": [
        {"key": "language", "label": "Language", "options": ["python", "rust"]}
    ]});
    json_with(
        patch_batch(app, &admin, &batch, questions).await,
        StatusCode::OK,
    )
    .await;
    while let Some(next) = app.next(&rater, &batch).await {
        let id = next["assignment_id"].as_str().unwrap();
        let mut answers = complete_answers();
        answers["classifications"] = json!({"language": "python"});
        let done = app.act(&rater, id, "submit", &answers).await;
        json_with(done, StatusCode::OK).await;
    }
    let metrics = app.metrics(&lead, &batch).await;
    assert_eq!(
        metrics["fields"]["classifications.language"],
        json!({"python": 4})
    );
    let pairs = metrics["models"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    let pair = &pairs[0];
    assert_eq!(
        (pair["model_a"].clone(), pair["model_b"].clone()),
        (json!("claude-y"), json!("gpt-x"))
    );
    // Every answer says A is better (2): claude won where it was A, gpt where it was.
    assert_eq!(
        (pair["a_wins"].clone(), pair["b_wins"].clone()),
        (json!(2), json!(2))
    );
    for share in ["a_win_share", "tie_share", "b_win_share"] {
        let low = pair[share]["low"].as_f64().unwrap();
        let high = pair[share]["high"].as_f64().unwrap();
        assert!(
            (0.0..=1.0).contains(&low) && low <= high && high <= 1.0,
            "{pair}"
        );
    }
    assert_eq!(pair["mean"]["value"], 4.0);
}
db_test!(metrics_count_classifications_and_merge_model_pairs: TestApp);

/// Defect 4, on the page: a returned out-of-scope rating shows its explanation to edit,
/// and the rater can keep it out of scope or turn it into a skip from there.
async fn a_returned_out_of_scope_rating_is_fixed_on_its_page(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "scope page", &tasks_jsonl(1), "").await;
    let assignment = app.take(&rater, &batch).await;
    let marked = app
        .act(
            &rater,
            &assignment,
            "out-of-scope",
            &json!({"explanation": WHY}),
        )
        .await;
    let id = json_with(marked, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    decide(app, &lead, &id, "return").await;
    let browser = rater.browser_for(app).await;
    let url = app.url(&format!("/ratings/{id}"));
    let page = browser.get(&url).go().await.text().await.unwrap();
    assert!(page.contains(r#"<textarea name="explanation""#), "{page}");
    assert!(page.contains("Skip it instead"));
    let token = crate::helpers::csrf_token(&page);
    let too_short = browser
        .post(&url)
        .form(&[
            ("csrf_token", token.as_str()),
            ("outcome", "out_of_scope"),
            ("explanation", "no"),
        ])
        .go()
        .await;
    assert_eq!(too_short.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        too_short
            .text()
            .await
            .unwrap()
            .contains("explanation must be at least")
    );
    let better = "A request for a recipe; nothing here is about code.";
    let kept = browser
        .post(&url)
        .form(&[
            ("csrf_token", token.as_str()),
            ("outcome", "out_of_scope"),
            ("explanation", better),
        ])
        .go()
        .await;
    assert_eq!(kept.status(), StatusCode::SEE_OTHER);
    let stored = app.rating(&rater, &id).await;
    assert_eq!(
        (stored["note"].clone(), stored["status"].clone()),
        (json!(better), json!("submitted"))
    );
    decide(app, &lead, &id, "return").await;
    let skipped = browser
        .post(&url)
        .form(&[
            ("csrf_token", token.as_str()),
            ("outcome", "skipped"),
            ("reason", "too_long"),
        ])
        .go()
        .await;
    assert_eq!(skipped.status(), StatusCode::SEE_OTHER);
    let stored = app.rating(&rater, &id).await;
    assert_eq!(
        (stored["outcome"].clone(), stored["skip_reason"].clone()),
        (json!("skipped"), json!("too_long"))
    );
}
db_test!(a_returned_out_of_scope_rating_is_fixed_on_its_page: TestApp);
