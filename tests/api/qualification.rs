//! Qualification (issue 31): a batch may ask each rater to pass a try of its gold tasks
//! before its real ones; until they pass, `next` hands them gold only, and once every try
//! failed, nothing. Raters see their standing (and, where the batch allows, each expected
//! answer with its explanation after a try); leads see everyone's.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use verdict::auth::Role;

/// Gold tasks `g1`.. with expected answers that [`complete_answers`] meets (A better, as
/// uploaded) and an explanation each.
fn gold_tasks(n: usize) -> String {
    jsonl((1..=n).map(|i| {
        let mut task = pair_task(
            &format!("g{i}"),
            &format!("Write a function that returns {i} cubed."),
            ["def f(): return 1", "f = 1"],
            ["alpha", "beta"],
        );
        task["gold"] = json!({"sxs": {"value": 2, "within": 1}, "b.executability": "no_code"});
        task["gold_explanation"] = json!(format!("A returns the cube of {i}; B is no code."));
        task
    }))
}

/// Answers that miss both expected answers of a gold task.
fn wrong_answers() -> Value {
    let mut answers = complete_answers();
    answers["sxs"] = json!(6);
    answers["sxs_explanation"] = json!("B is shorter and reads more simply than A does.");
    answers["b"]["executability"] = json!("yes_fully");
    answers
}

async fn set_gold(app: &TestApp, lead: &Persona, batch: &str, body: Value) -> (StatusCode, Value) {
    let response = lead
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}/gold")))
        .json(&body)
        .go()
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn qualification(app: &TestApp, who: &Persona, batch: &str) -> Value {
    let response = who
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/qualification")))
        .go()
        .await;
    json_with(response, StatusCode::OK).await
}

/// `rater`'s `next` in `batch`, which must be a 409 saying `why`.
async fn next_refused(app: &TestApp, rater: &Persona, batch: &str, why: &str) {
    let refused = rater
        .api
        .post(app.url(&format!("/api/v1/batches/{batch}/next")))
        .go()
        .await;
    let refused = json_with(refused, StatusCode::CONFLICT).await;
    assert!(
        refused["error"].as_str().is_some_and(|e| e.contains(why)),
        "{refused}"
    );
}

async fn a_rater_rates_gold_until_they_pass_and_one_who_fails_gets_nothing(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let query = "&randomize=false&raters_see_external_ids=true";
    let batch = app.batch(&admin, "qualified", &tasks_jsonl(2), query).await;
    app.batch(&admin, "qualified", &gold_tasks(8), query).await;
    let (status, gold) = set_gold(
        app,
        &lead,
        &batch,
        json!({"qualify_tasks": 2, "qualify_pass": 1.0, "qualify_tries": 2, "qualify_reveal": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{gold}");
    assert_eq!(
        gold["qualification"],
        json!({"tasks": 2, "pass_mark": 1.0, "tries": 2, "reveal": true})
    );

    // Try 1: one wrong of two fails it; try 2: both right passes.
    rate_gold(app, &ana, &batch, false).await;
    rate_gold(app, &ana, &batch, true).await;
    let mine = &qualification(app, &ana, &batch).await["mine"];
    assert_eq!(mine["standing"]["state"], "in_progress", "{mine}");
    assert_eq!(mine["revealed"].as_array().map(Vec::len), Some(2), "{mine}");
    assert_eq!(mine["revealed"][0]["right"], false);
    assert_eq!(
        mine["revealed"][0]["wrong"],
        json!(["b.executability", "sxs"])
    );
    assert_eq!(mine["revealed"][0]["given"]["sxs"], 6);
    assert!(
        mine["revealed"][0]["explanation"]
            .as_str()
            .is_some_and(|e| e.starts_with("A returns the cube of")),
        "{mine}"
    );
    rate_gold(app, &ana, &batch, true).await;
    rate_gold(app, &ana, &batch, true).await;
    let mine = &qualification(app, &ana, &batch).await["mine"];
    assert_eq!(mine["standing"]["state"], "passed", "{mine}");
    assert_eq!(
        mine["standing"]["tries"],
        json!([{"number": 1, "rated": 2, "right": 1, "passed": false},
               {"number": 2, "rated": 2, "right": 2, "passed": true}])
    );
    // Passed: the real tasks.
    let next = app.next(&ana, &batch).await.expect("a real task");
    assert!(
        next["task"]["external_id"]
            .as_str()
            .unwrap()
            .starts_with('t')
    );

    // Bo fails both tries: nothing more, said so.
    for _ in 0..4 {
        rate_gold(app, &bo, &batch, false).await;
    }
    next_refused(app, &bo, &batch, "did not pass this batch's qualification").await;
    // A rater sees only their own; a lead everyone's.
    let seen_by_bo = qualification(app, &bo, &batch).await;
    assert_eq!(seen_by_bo["mine"]["standing"]["state"], "failed");
    assert!(seen_by_bo.get("raters").is_none(), "{seen_by_bo}");
    let seen_by_lead = qualification(app, &lead, &batch).await;
    assert_eq!(seen_by_lead["raters"]["ana"]["state"], "passed");
    assert_eq!(seen_by_lead["raters"]["bo"]["state"], "failed");
    let page = page_text(
        app,
        &app.login("lead", PASSWORD).await,
        &format!("/batches/{batch}"),
    )
    .await;
    assert!(page.contains("Qualification: 2 gold tasks a try"), "{page}");
    let page = page_text(
        app,
        &app.login("ana", PASSWORD).await,
        &format!("/batches/{batch}/qualification"),
    )
    .await;
    assert!(
        page.contains("You: passed") && page.contains("A returns the cube of"),
        "{page}"
    );
    // The command line says the same.
    let out = crate::cli::verdict(
        &app.db,
        &["report", "qualification", "--batch", "qualified"],
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("qualified: 2 gold tasks a try, 100% to pass, 2 tries")
            && text.lines().any(|l| l.starts_with("ana")
                && l.contains("passed")
                && l.ends_with("1 of 2; 2 of 2"))
            && text
                .lines()
                .any(|l| l.starts_with("bo") && l.contains("failed")),
        "{text}"
    );
}
db_test!(a_rater_rates_gold_until_they_pass_and_one_who_fails_gets_nothing: TestApp);

async fn answers_stay_hidden_without_reveal_and_a_try_without_gold_left_is_said(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let query = "&randomize=false&raters_see_external_ids=true";
    let batch = app.batch(&admin, "short", &tasks_jsonl(2), query).await;
    app.batch(&admin, "short", &gold_tasks(1), query).await;
    let (status, body) = set_gold(app, &lead, &batch, json!({"qualify_tasks": 2})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["qualification"],
        json!({"tasks": 2, "pass_mark": 0.8, "tries": 1, "reveal": false})
    );
    rate_gold(app, &ana, &batch, true).await;
    next_refused(app, &ana, &batch, "no gold task left").await;
    let mine = &qualification(app, &ana, &batch).await["mine"];
    assert_eq!(mine["standing"]["state"], "in_progress");
    assert_eq!(mine["revealed"], json!([]));

    // Turned off: the real tasks, whatever the standing.
    let (status, body) = set_gold(app, &lead, &batch, json!({"qualify_tasks": null})).await;
    assert_eq!(
        (status, body["qualification"].clone()),
        (StatusCode::OK, Value::Null)
    );
    let next = app.next(&ana, &batch).await.expect("a real task");
    assert!(
        next["task"]["external_id"]
            .as_str()
            .unwrap()
            .starts_with('t')
    );
    assert_eq!(
        qualification(app, &ana, &batch).await["qualification"],
        Value::Null
    );
}
db_test!(answers_stay_hidden_without_reveal_and_a_try_without_gold_left_is_said: TestApp);

async fn broken_qualification_settings_are_named_and_change_nothing(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let batch = app.batch(&admin, "checked", &gold_tasks(2), "").await;
    for (body, field) in [
        (json!({"qualify_tasks": 0}), "qualify_tasks"),
        (json!({"qualify_tasks": 51}), "qualify_tasks"),
        (
            json!({"qualify_tasks": 2, "qualify_pass": 0}),
            "qualify_pass",
        ),
        (
            json!({"qualify_tasks": 2, "qualify_pass": 1.5}),
            "qualify_pass",
        ),
        (
            json!({"qualify_tasks": 2, "qualify_tries": 11}),
            "qualify_tries",
        ),
        // Checked even when no qualification is asked for.
        (json!({"qualify_pass": 2}), "qualify_pass"),
        (json!({"qualify_tries": 0}), "qualify_tries"),
    ] {
        let (status, refused) = set_gold(app, &lead, &batch, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {refused}"
        );
        assert!(refused["fields"].get(field).is_some(), "{body}: {refused}");
    }
    let gold = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{batch}/gold")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(gold["qualification"], Value::Null, "nothing changed");
    // Only a lead of the batch sets it.
    let (status, _) = set_gold(app, &ana, &batch, json!({"qualify_tasks": 1})).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM batches WHERE qualify_tasks IS NOT NULL")
            .await,
        0
    );

    // An explanation belongs to a gold task, and has a length.
    for (task, why) in [
        (
            json!({"external_id": "x1", "prompt": "p", "response_a": "a", "response_b": "b",
                   "gold_explanation": "why"}),
            "gold_explanation is for a gold task",
        ),
        (
            json!({"external_id": "x2", "prompt": "p", "response_a": "a", "response_b": "b",
                   "gold": {"sxs": 2}, "gold_explanation": "w".repeat(4001)}),
            "gold_explanation is longer than 4000 characters",
        ),
    ] {
        let response = admin
            .api
            .post(app.url("/api/v1/batches?name=explained"))
            .header("content-type", "application/x-ndjson")
            .body(jsonl([task]))
            .go()
            .await;
        let refused = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(refused.to_string().contains(why), "{refused}");
    }
}
db_test!(broken_qualification_settings_are_named_and_change_nothing: TestApp);

/// Takes `rater`'s next task, which must be a gold one (the batch shows external ids),
/// rates it right or wrong, and returns the rating's id.
async fn rate_gold(app: &TestApp, rater: &Persona, batch: &str, right: bool) -> String {
    let next = app.next(rater, batch).await.expect("a task");
    let id = next["task"]["external_id"].as_str().unwrap_or_default();
    assert!(
        id.starts_with('g'),
        "{} was offered {id} while qualifying",
        rater.username
    );
    let answers = if right {
        complete_answers()
    } else {
        wrong_answers()
    };
    let done = app
        .act(rater, &assignment_id(&next), "submit", &answers)
        .await;
    json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .expect("rating id")
        .to_owned()
}

/// `rater` revises rating `id` to the right answers or wrong ones; the revision is taken.
async fn revise_gold(app: &TestApp, rater: &Persona, id: &str, right: bool) -> Value {
    let answers = if right {
        complete_answers()
    } else {
        wrong_answers()
    };
    let revised = rater
        .api
        .put(app.url(&format!("/api/v1/ratings/{id}")))
        .json(&answers)
        .go()
        .await;
    json_with(revised, StatusCode::OK).await
}

/// Issue 50: a gold rating is graded once, when sent. Revising it changes nothing a rater
/// can see: not a try's count of right answers while it is under way (so the expected
/// answers cannot be searched for), not a failed standing (so a failed rater cannot
/// revise their way to the real tasks), and not which ratings make a try (so a rater who
/// passed cannot push a qualifying rating out of its try to see later gold tasks slide in).
async fn revising_a_gold_rating_changes_no_grade_and_no_standing(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let query = "&randomize=false&raters_see_external_ids=true";
    let batch = app.batch(&admin, "final", &tasks_jsonl(6), query).await;
    app.batch(&admin, "final", &gold_tasks(8), query).await;
    let (status, gold) = set_gold(
        app,
        &lead,
        &batch,
        json!({"gold_rate": 0.5, "qualify_tasks": 2, "qualify_pass": 1.0, "qualify_tries": 1,
               "qualify_reveal": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{gold}");

    // (a) Mid-try: a wrong answer revised to the right one still counts as wrong.
    let first = rate_gold(app, &ana, &batch, false).await;
    let before = qualification(app, &ana, &batch).await["mine"].clone();
    assert_eq!(
        before["standing"]["tries"],
        json!([{"number": 1, "rated": 1, "right": 0}]),
        "{before}"
    );
    let revised = revise_gold(app, &ana, &first, true).await;
    assert!(revised.get("gold_grade").is_none(), "{revised}");
    assert_eq!(
        qualification(app, &ana, &batch).await["mine"],
        before,
        "a revision changed what the rater sees of a try under way"
    );
    assert_eq!(
        before["revealed"],
        json!([]),
        "nothing shown before the try ends"
    );

    // (b) Failed: revising every rating of the try to the revealed answers changes nothing.
    let second = rate_gold(app, &ana, &batch, false).await;
    let failed = qualification(app, &ana, &batch).await["mine"].clone();
    assert_eq!(failed["standing"]["state"], "failed", "{failed}");
    assert_eq!(failed["revealed"].as_array().map(Vec::len), Some(2));
    for id in [&first, &second] {
        revise_gold(app, &ana, id, true).await;
    }
    assert_eq!(qualification(app, &ana, &batch).await["mine"], failed);
    next_refused(app, &ana, &batch, "did not pass this batch's qualification").await;
    let seen_by_lead = qualification(app, &lead, &batch).await;
    assert_eq!(seen_by_lead["raters"]["ana"]["state"], "failed");

    // (c) Passed, then the batch's work with gold mixed in: revising a qualifying rating
    // wrong (and back) shows nothing new.
    let qualifying = [
        rate_gold(app, &bo, &batch, true).await,
        rate_gold(app, &bo, &batch, true).await,
    ];
    let mut later_gold = 0;
    while let Some(next) = app.next(&bo, &batch).await {
        if next["task"]["external_id"]
            .as_str()
            .is_some_and(|id| id.starts_with('g'))
        {
            later_gold += 1;
        }
        let done = app
            .act(&bo, &assignment_id(&next), "submit", &wrong_answers())
            .await;
        json_with(done, StatusCode::OK).await;
    }
    assert!(later_gold > 0, "the batch's work had gold tasks in it");
    let passed = qualification(app, &bo, &batch).await["mine"].clone();
    assert_eq!(passed["standing"]["state"], "passed", "{passed}");
    revise_gold(app, &bo, &qualifying[0], false).await;
    assert_eq!(
        qualification(app, &bo, &batch).await["mine"],
        passed,
        "a revision moved the tries"
    );
    revise_gold(app, &bo, &qualifying[0], true).await;
    assert_eq!(qualification(app, &bo, &batch).await["mine"], passed);
    let seen_by_lead = qualification(app, &lead, &batch).await;
    assert_eq!(seen_by_lead["raters"]["bo"]["state"], "passed");
}
db_test!(revising_a_gold_rating_changes_no_grade_and_no_standing: TestApp);

/// Issue 50: what a try reveals names each task as the rater knows it: `Task N` unless
/// the batch shows raters external ids (which may name a public benchmark item).
async fn revealed_answers_name_tasks_as_the_rater_knows_them(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let mut task = pair_task(
        "HumanEval-4-gold",
        "Write a function that returns 4 cubed.",
        ["def f(): return 64", "f = 64"],
        ["alpha", "beta"],
    );
    task["gold"] = json!({"sxs": {"value": 2, "within": 1}});
    task["gold_explanation"] = json!("A returns the cube of 4.");
    let batch = app
        .batch(&admin, "hidden", &tasks_jsonl(2), "&randomize=false")
        .await;
    app.batch(&admin, "hidden", &jsonl([task]), "&randomize=false")
        .await;
    let (status, body) = set_gold(
        app,
        &lead,
        &batch,
        json!({"qualify_tasks": 1, "qualify_pass": 1.0, "qualify_reveal": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let next = app.next(&ana, &batch).await.expect("the gold task");
    let done = app
        .act(&ana, &assignment_id(&next), "submit", &complete_answers())
        .await;
    json_with(done, StatusCode::OK).await;

    let seen = qualification(app, &ana, &batch).await;
    assert_eq!(seen["mine"]["standing"]["state"], "passed", "{seen}");
    assert_eq!(
        seen["mine"]["revealed"][0]["external_id"], "Task 1",
        "{seen}"
    );
    let page = page_text(
        app,
        &app.login("ana", PASSWORD).await,
        &format!("/batches/{batch}/qualification"),
    )
    .await;
    assert!(page.contains("A returns the cube of 4."), "{page}");
    assert!(!page.contains("HumanEval-4-gold"), "{page}");
    assert!(!seen.to_string().contains("HumanEval-4-gold"), "{seen}");
}
db_test!(revealed_answers_name_tasks_as_the_rater_knows_them: TestApp);

/// Issue 51: a rater who failed the qualification counts for no stalled task: where the
/// batch's work needs them, its view says the raters were disqualified.
async fn a_rater_who_failed_leaves_the_batch_stalled_and_it_says_why(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    // ana may still qualify; bo will fail.
    app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let query = "&overlap=2&randomize=false&raters_see_external_ids=true";
    let batch = app.batch(&admin, "barred", &tasks_jsonl(2), query).await;
    app.batch(&admin, "barred", &gold_tasks(4), query).await;
    let restricted = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"raters": ["ana", "bo"]}))
        .go()
        .await;
    json_with(restricted, StatusCode::OK).await;
    let (status, gold) = set_gold(
        app,
        &lead,
        &batch,
        json!({"qualify_tasks": 2, "qualify_pass": 1.0, "qualify_tries": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{gold}");
    let view = format!("/api/v1/batches/{batch}");
    let stalled = || async {
        let view = lead.api.get(app.url(&view)).go().await;
        json_with(view, StatusCode::OK).await["stalled"].clone()
    };
    // Both may still qualify: nothing is stuck.
    assert_eq!(stalled().await["tasks"], 0);
    rate_gold(app, &bo, &batch, false).await;
    rate_gold(app, &bo, &batch, true).await;
    next_refused(app, &bo, &batch, "did not pass this batch's qualification").await;
    let now = stalled().await;
    assert_eq!(now["tasks"], 2, "{now}");
    assert_eq!(now["reasons"], json!({"raters_disqualified": 2}));
    assert_eq!(now["groups"][0]["raters_needed"], 1);
    assert!(
        now["groups"][0]["remedy"]
            .as_str()
            .unwrap()
            .contains("failed the qualification"),
        "{now}"
    );
}
db_test!(a_rater_who_failed_leaves_the_batch_stalled_and_it_says_why: TestApp);
