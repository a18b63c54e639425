//! Taking tasks and rating them: the rubric's rules, skip, out of scope, drafts,
//! orientation, overlap under concurrency, leases and ownership.

use std::collections::HashMap;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    Go, Persona, TestApp, assignment_id, complete_answers, db_test, json_with, tasks_jsonl,
};

async fn next_returns_the_open_assignment_until_it_is_finished(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app
        .batch(
            &admin,
            "b",
            &tasks_jsonl(2),
            "&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let first = app.next(&rater, &batch).await.unwrap();
    assert_eq!(first["task"]["external_id"], "t1");
    assert_eq!(first["rubric"]["name"], "blackhat");
    assert!(first["draft"].is_null());
    assert!(
        first["task"].get("model_a").is_none(),
        "raters never see model names"
    );
    let again = app.next(&rater, &batch).await.unwrap();
    assert_eq!(
        assignment_id(&again),
        assignment_id(&first),
        "the same open assignment"
    );
    let done = app
        .act(
            &rater,
            &assignment_id(&first),
            "submit",
            &complete_answers(),
        )
        .await;
    assert_eq!(json_with(done, StatusCode::OK).await["status"], "submitted");
    let second = app.next(&rater, &batch).await.unwrap();
    assert_eq!(second["task"]["external_id"], "t2");
    app.act(
        &rater,
        &assignment_id(&second),
        "submit",
        &complete_answers(),
    )
    .await;
    assert!(
        app.next(&rater, &batch).await.is_none(),
        "204 when nothing is left"
    );
}
db_test!(next_returns_the_open_assignment_until_it_is_finished: TestApp);

/// Submits `answers` and returns the `fields` of the 422.
async fn refused(app: &TestApp, rater: &Persona, assignment: &str, answers: Value) -> Value {
    let response = app.act(rater, assignment, "submit", &answers).await;
    json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await["fields"].clone()
}

async fn every_rubric_rule_is_enforced_with_the_field_path(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "rules", &tasks_jsonl(1), "").await;
    let id = assignment_id(&app.next(&rater, &batch).await.unwrap());

    let empty = refused(app, &rater, &id, json!({})).await;
    for path in [
        "a.executability",
        "a.instruction_following",
        "a.correctness",
        "b.executability",
        "b.instruction_following",
        "b.correctness",
        "sxs",
    ] {
        assert_eq!(empty[path], "is required", "{path}");
    }
    let mut unknown = complete_answers();
    unknown["a"]["correctness"] = json!("perfect");
    unknown["sxs"] = json!(0);
    let fields = refused(app, &rater, &id, unknown).await;
    assert_eq!(
        fields["a.correctness"],
        "unknown value \"perfect\": use no_issues, minor_issues, major_issues, cannot_assess, not_applicable"
    );
    assert_eq!(fields["sxs"], "must be a whole number from 1 to 7");

    let rules = [
        ("executability", "yes_partially"),
        ("executability", "no"),
        ("instruction_following", "minor_issues"),
        ("instruction_following", "major_issues"),
        ("correctness", "minor_issues"),
        ("correctness", "major_issues"),
    ];
    for (field, value) in rules {
        let mut answers = complete_answers();
        answers["b"][field] = json!(value);
        answers["b"]
            .as_object_mut()
            .unwrap()
            .remove(&format!("{field}_explanation"));
        let fields = refused(app, &rater, &id, answers.clone()).await;
        assert_eq!(
            fields[format!("b.{field}_explanation")],
            format!("required when {field} is {value}")
        );
        answers["b"][format!("{field}_explanation")] = json!("  too short  ");
        let fields = refused(app, &rater, &id, answers).await;
        assert_eq!(
            fields[format!("b.{field}_explanation")],
            "must be at least 20 characters (has 9)"
        );
    }
    let mut no_sxs_reason = complete_answers();
    no_sxs_reason["sxs_explanation"] = json!("");
    assert_eq!(
        refused(app, &rater, &id, no_sxs_reason).await["sxs_explanation"],
        "is always required"
    );
    let mut extra = complete_answers();
    extra["status"] = json!("accepted");
    assert_eq!(
        refused(app, &rater, &id, extra).await["status"],
        "is not a question of this rubric"
    );

    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE status <> 'draft'")
            .await,
        0,
        "nothing was submitted"
    );
    let ok = app.act(&rater, &id, "submit", &complete_answers()).await;
    assert_eq!(ok.status(), StatusCode::OK);
}
db_test!(every_rubric_rule_is_enforced_with_the_field_path: TestApp);

async fn the_minimum_explanation_length_is_a_batch_setting(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "short", &tasks_jsonl(1), "").await;
    admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"min_explanation_len": 3}))
        .go()
        .await;
    let id = assignment_id(&app.next(&rater, &batch).await.unwrap());
    let mut answers = complete_answers();
    answers["sxs_explanation"] = json!("ok!");
    assert_eq!(
        app.act(&rater, &id, "submit", &answers).await.status(),
        StatusCode::OK
    );
}
db_test!(the_minimum_explanation_length_is_a_batch_setting: TestApp);

async fn a_retried_submit_stores_one_rating(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "twice", &tasks_jsonl(2), "").await;
    let id = assignment_id(&app.next(&rater, &batch).await.unwrap());
    let first = json_with(
        app.act(&rater, &id, "submit", &complete_answers()).await,
        StatusCode::OK,
    )
    .await;
    let second = json_with(
        app.act(&rater, &id, "submit", &complete_answers()).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first["rating_id"], second["rating_id"]);
    let mut different = complete_answers();
    different["sxs"] = json!(6);
    let conflict = app.act(&rater, &id, "submit", &different).await;
    assert_eq!(conflict.status(), StatusCode::CONFLICT);
    assert_eq!(app.count("SELECT COUNT(*) FROM ratings").await, 1);
    let draft = app.act(&rater, &id, "draft", &complete_answers()).await;
    assert_eq!(
        draft.status(),
        StatusCode::CONFLICT,
        "no drafts on a finished task"
    );
}
db_test!(a_retried_submit_stores_one_rating: TestApp);

async fn concurrent_submits_of_one_assignment_store_one_rating(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "clicks", &tasks_jsonl(1), "").await;
    let id = assignment_id(&app.next(&rater, &batch).await.unwrap());
    // A double click, a retry and a second tab, all at once.
    let answers = complete_answers();
    let responses =
        futures_join_all((0..6).map(|_| app.act(&rater, &id, "submit", &answers))).await;
    let mut ids = Vec::new();
    for response in responses {
        ids.push(json_with(response, StatusCode::OK).await["rating_id"].clone());
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one rating: {ids:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM ratings").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM rating_history").await, 1);
}
db_test!(concurrent_submits_of_one_assignment_store_one_rating: TestApp);

async fn a_skipped_task_is_never_offered_to_that_rater_again(app: &TestApp) {
    let admin = app.admin().await;
    let first = app.rater().await;
    let second = app.persona("second", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "skips",
            &tasks_jsonl(2),
            "&raters_see_external_ids=true",
        )
        .await;
    let t1 = app.next(&first, &batch).await.unwrap();
    assert_eq!(t1["task"]["external_id"], "t1");
    let bad = app
        .act(
            &first,
            &assignment_id(&t1),
            "skip",
            &json!({"reason": "bored"}),
        )
        .await;
    assert_eq!(
        json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await["fields"]["reason"],
        "unknown reason \"bored\": use unfamiliar, cannot_assess, too_long or other"
    );
    let skip = app
        .act(
            &first,
            &assignment_id(&t1),
            "skip",
            &json!({"reason": "unfamiliar", "note": "never used this library"}),
        )
        .await;
    let skipped = json_with(skip, StatusCode::OK).await;
    assert_eq!(
        (skipped["outcome"].as_str(), skipped["status"].as_str()),
        (Some("skipped"), Some("submitted"))
    );

    let t2 = app.next(&first, &batch).await.unwrap();
    assert_eq!(t2["task"]["external_id"], "t2", "not t1 again");
    app.act(
        &first,
        &assignment_id(&t2),
        "skip",
        &json!({"reason": "too_long"}),
    )
    .await;
    assert!(
        app.next(&first, &batch).await.is_none(),
        "both skipped: nothing left for this rater"
    );
    let other = app.next(&second, &batch).await.unwrap();
    assert_eq!(
        other["task"]["external_id"], "t1",
        "the skipped task went back to the pool"
    );
}
db_test!(a_skipped_task_is_never_offered_to_that_rater_again: TestApp);

async fn out_of_scope_needs_an_explanation_and_sets_cannot_assess(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "oos", &tasks_jsonl(1), "&randomize=false")
        .await;
    let id = assignment_id(&app.next(&rater, &batch).await.unwrap());
    for explanation in [json!(null), json!("   "), json!("too short")] {
        let response = app
            .act(
                &rater,
                &id,
                "out-of-scope",
                &json!({"explanation": explanation}),
            )
            .await;
        let fields = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await["fields"].clone();
        assert!(fields["explanation"].is_string(), "{explanation}: {fields}");
    }
    let body = json!({"explanation": "This asks for a travel itinerary, not code.", "answers": {"a": {"executability": "no_code", "correctness": "no_issues"}}});
    let marked = json_with(
        app.act(&rater, &id, "out-of-scope", &body).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(marked["outcome"], "out_of_scope");
    let rating = json_with(
        rater
            .api
            .get(app.url(&format!(
                "/api/v1/ratings/{}",
                marked["rating_id"].as_str().unwrap()
            )))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(rating["answers"]["a"]["correctness"], "cannot_assess");
    assert_eq!(rating["answers"]["b"]["correctness"], "cannot_assess");
    assert_eq!(
        rating["answers"]["a"]["executability"], "no_code",
        "other answers are kept"
    );
    assert_eq!(
        rating["note"],
        "This asks for a travel itinerary, not code."
    );
}
db_test!(out_of_scope_needs_an_explanation_and_sets_cannot_assess: TestApp);

async fn drafts_come_back_in_the_orientation_shown(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "drafts", &tasks_jsonl(40), "").await;
    // Find a swapped assignment by skipping until one shows the task's B first.
    let mut swapped = None;
    for _ in 0..40 {
        let next = app.next(&rater, &batch).await.unwrap();
        if next["task"]["response_a"]
            .as_str()
            .unwrap()
            .starts_with("Use `")
        {
            swapped = Some(next);
            break;
        }
        app.act(
            &rater,
            &assignment_id(&next),
            "skip",
            &json!({"reason": "unfamiliar"}),
        )
        .await;
    }
    let next = swapped.expect("with 40 tasks, one is shown swapped");
    let id = assignment_id(&next);
    let draft = json!({"a": {"executability": "no_code"}, "sxs": 2, "time_spent_s": 30});
    let saved = json_with(app.act(&rater, &id, "draft", &draft).await, StatusCode::OK).await;
    assert_eq!(saved["status"], "draft");
    let bad = app.act(&rater, &id, "draft", &json!({"sxs": "two"})).await;
    assert_eq!(
        bad.status(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "drafts are checked for types"
    );

    let again = app.next(&rater, &batch).await.unwrap();
    assert_eq!(assignment_id(&again), id);
    assert_eq!(
        again["draft"]["a"]["executability"], "no_code",
        "as the rater entered it"
    );
    assert_eq!(again["draft"]["sxs"], 2);
    assert_eq!(again["time_spent_s"], 30);
    let stored = app
        .store
        .rating(saved["rating_id"].as_str().unwrap().parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.answers["b"]["executability"], "no_code",
        "canonical: the shown A is the task's B"
    );
    assert_eq!(stored.answers["sxs"], 6);
}
db_test!(drafts_come_back_in_the_orientation_shown: TestApp);

async fn randomised_batches_swap_about_half_and_store_canonical_answers(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let tasks = 100;
    let batch = app.batch(&admin, "random", &tasks_jsonl(tasks), "").await;
    let mut shown_swapped = 0;
    while let Some(next) = app.next(&rater, &batch).await {
        // The rater prefers whatever is shown as A, and says so with a score of 2.
        let swapped = next["task"]["response_a"]
            .as_str()
            .unwrap()
            .starts_with("Use `");
        shown_swapped += usize::from(swapped);
        let done = json_with(
            app.act(&rater, &assignment_id(&next), "submit", &complete_answers())
                .await,
            StatusCode::OK,
        )
        .await;
        let id = done["rating_id"].as_str().unwrap().parse().unwrap();
        let stored = app.store.rating(id).await.unwrap().unwrap().answers;
        let (score, code_side) = if swapped { (6, "a") } else { (2, "b") };
        assert_eq!(stored["sxs"], score, "swapped: {swapped}");
        assert_eq!(
            stored[code_side]["executability"], "no_code",
            "per-response answers change sides too"
        );
    }
    assert!(
        (30..=70).contains(&shown_swapped),
        "{shown_swapped} of {tasks} swapped"
    );
    let stored_swapped = app
        .count("SELECT COUNT(*) FROM assignments WHERE swapped")
        .await;
    assert_eq!(
        stored_swapped as usize, shown_swapped,
        "the rater saw what was stored"
    );
}
db_test!(randomised_batches_swap_about_half_and_store_canonical_answers: TestApp);

async fn completed_ratings_per_task(app: &TestApp) -> HashMap<String, i64> {
    let mut per_task = HashMap::new();
    for task in app
        .store
        .task_hashes(app.store.batch_by_name("k").await.unwrap().unwrap().id)
        .await
        .unwrap()
        .keys()
    {
        let sql = format!(
            "SELECT COUNT(*) FROM ratings r JOIN tasks t ON t.id = r.task_id WHERE t.external_id = '{task}' AND r.outcome <> 'skipped'"
        );
        per_task.insert(task.clone(), app.count(&sql).await);
    }
    per_task
}

async fn no_task_gets_more_than_k_ratings_with_eight_concurrent_raters(app: &TestApp) {
    let admin = app.admin().await;
    let tasks = 20;
    let batch = app
        .batch(&admin, "k", &tasks_jsonl(tasks), "&overlap=3")
        .await;
    let mut raters = Vec::new();
    for i in 0..8 {
        raters.push(
            app.persona(&format!("r{i}"), verdict::auth::Role::Rater)
                .await,
        );
    }
    let rated: Vec<usize> = futures_join_all(
        raters
            .iter()
            .map(|r| app.rate_all(r, &batch, |_| complete_answers())),
    )
    .await;
    assert_eq!(
        rated.iter().sum::<usize>(),
        tasks * 3,
        "every slot filled exactly once: {rated:?}"
    );
    let per_task = completed_ratings_per_task(app).await;
    assert!(per_task.values().all(|n| *n == 3), "{per_task:?}");
    let distinct = app
        .count("SELECT COUNT(*) FROM (SELECT DISTINCT task_id, rater_id FROM ratings) x")
        .await;
    assert_eq!(distinct as usize, tasks * 3, "no rater rated a task twice");
}
db_test!(no_task_gets_more_than_k_ratings_with_eight_concurrent_raters: TestApp);

async fn two_app_instances_on_one_database_keep_exactly_k(app: &TestApp) {
    let admin = app.admin().await;
    let batch = app.batch(&admin, "k", &tasks_jsonl(15), "&overlap=2").await;
    let sibling = app.sibling().await;
    let mut raters = Vec::new();
    for i in 0..8 {
        raters.push(
            app.persona(&format!("r{i}"), verdict::auth::Role::Rater)
                .await,
        );
    }
    let rated: Vec<usize> = futures_join_all(raters.iter().enumerate().map(|(i, r)| {
        let instance = if i % 2 == 0 { app } else { &sibling };
        instance.rate_all(r, &batch, |_| complete_answers())
    }))
    .await;
    assert_eq!(rated.iter().sum::<usize>(), 30, "{rated:?}");
    assert!(
        completed_ratings_per_task(app)
            .await
            .values()
            .all(|n| *n == 2)
    );
    sibling.close().await;
}
db_test!(two_app_instances_on_one_database_keep_exactly_k: TestApp);

/// Runs futures concurrently on this task and collects their outputs in order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut outputs: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if outputs[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(out) => outputs[i] = Some(out),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("finished")).collect()
}

async fn an_expired_lease_returns_the_task_to_the_pool(app: &TestApp) {
    let admin = app.admin().await;
    let idle = app.rater().await;
    let busy = app.persona("busy", verdict::auth::Role::Rater).await;
    let keen = app.persona("keen", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "leases",
            &tasks_jsonl(2),
            "&raters_see_external_ids=true",
        )
        .await;
    let abandoned = app.next(&idle, &batch).await.unwrap();
    let drafted = app.next(&busy, &batch).await.unwrap();
    app.act(&busy, &assignment_id(&drafted), "draft", &json!({"sxs": 3}))
        .await;
    assert!(
        app.next(&keen, &batch).await.is_none(),
        "both tasks are leased"
    );
    app.execute("UPDATE assignments SET lease_expires_at = '2000-01-01T00:00:00+00:00'")
        .await;
    // A draft renews the lease but does not hold the task for ever: both come back.
    let taken = app
        .next(&keen, &batch)
        .await
        .expect("the untouched one came back");
    assert_eq!(
        taken["task"]["external_id"],
        abandoned["task"]["external_id"]
    );
    let fourth = app.persona("fourth", verdict::auth::Role::Rater).await;
    let again = app
        .next(&fourth, &batch)
        .await
        .expect("the drafted one came back");
    assert_eq!(again["task"]["external_id"], drafted["task"]["external_id"]);
    assert!(
        app.next(&busy, &batch).await.is_none(),
        "a rater is not handed a task whose lease they let run out"
    );
    let late = app
        .act(
            &idle,
            &assignment_id(&abandoned),
            "submit",
            &complete_answers(),
        )
        .await;
    assert_eq!(
        late.status(),
        StatusCode::CONFLICT,
        "the expired assignment is closed"
    );
}
db_test!(an_expired_lease_returns_the_task_to_the_pool: TestApp);

async fn no_one_touches_another_raters_assignment_or_rating(app: &TestApp) {
    let admin = app.admin().await;
    let owner = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let batch = app.batch(&admin, "own", &tasks_jsonl(2), "").await;
    let id = assignment_id(&app.next(&owner, &batch).await.unwrap());
    app.act(&owner, &id, "draft", &json!({"sxs": 3})).await;
    let bodies = [
        ("draft", complete_answers()),
        ("submit", complete_answers()),
        ("skip", json!({"reason": "other"})),
        (
            "out-of-scope",
            json!({"explanation": "not about code at all, clearly"}),
        ),
    ];
    for (action, body) in bodies {
        let response = app.act(&other, &id, action, &body).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{action}");
    }
    let done = json_with(
        app.act(&owner, &id, "submit", &complete_answers()).await,
        StatusCode::OK,
    )
    .await;
    let rating = format!("/api/v1/ratings/{}", done["rating_id"].as_str().unwrap());
    assert_eq!(
        other.api.get(app.url(&rating)).go().await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        other
            .api
            .put(app.url(&rating))
            .json(&complete_answers())
            .go()
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let form = other
        .api
        .get(app.url(&format!("/assignments/{id}")))
        .go()
        .await;
    assert_eq!(form.status(), StatusCode::NOT_FOUND);
    let lead_view = json_with(admin.api.get(app.url(&rating)).go().await, StatusCode::OK).await;
    assert_eq!(
        lead_view["rater"], "rater",
        "leads and admins see who rated"
    );
    assert!(lead_view["swapped"].is_boolean());
    // Seeing a rating is not changing it: a valid revision by an admin is refused.
    let before = app.count("SELECT COUNT(*) FROM rating_history").await;
    let mut changed = complete_answers();
    changed["sxs"] = json!(-3);
    changed["sxs_explanation"] = json!("The admin's own view, which must not be stored.");
    let revised = admin.api.put(app.url(&rating)).json(&changed).go().await;
    assert_eq!(
        json_with(revised, StatusCode::FORBIDDEN).await["error"],
        "your role does not allow this"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM rating_history").await,
        before
    );
    let after = json_with(admin.api.get(app.url(&rating)).go().await, StatusCode::OK).await;
    assert_eq!(after["answers"], lead_view["answers"]);
}
db_test!(no_one_touches_another_raters_assignment_or_rating: TestApp);

async fn a_rating_can_be_revised_and_every_change_is_kept(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "revise", &tasks_jsonl(1), "").await;
    let id = assignment_id(&app.next(&rater, &batch).await.unwrap());
    let done = json_with(
        app.act(&rater, &id, "submit", &complete_answers()).await,
        StatusCode::OK,
    )
    .await;
    let url = app.url(&format!(
        "/api/v1/ratings/{}",
        done["rating_id"].as_str().unwrap()
    ));
    let mut revised = complete_answers();
    revised["sxs"] = json!(3);
    revised["sxs_explanation"] = json!("On reflection the two are closer than I first thought.");
    let after = json_with(
        rater.api.put(&url).json(&revised).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (after["answers"]["sxs"].as_i64(), after["version"].as_i64()),
        (Some(3), Some(2))
    );
    let mut broken = revised.clone();
    broken["sxs_explanation"] = json!("");
    let refused = rater.api.put(&url).json(&broken).go().await;
    assert_eq!(
        refused.status(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "a revision is checked like a submission"
    );
    let history = app.count("SELECT COUNT(*) FROM rating_history").await;
    assert_eq!(history, 2, "the submission and the revision");
    app.execute("UPDATE ratings SET status = 'accepted'").await;
    assert_eq!(
        rater.api.put(&url).json(&revised).go().await.status(),
        StatusCode::CONFLICT,
        "not after acceptance"
    );
}
db_test!(a_rating_can_be_revised_and_every_change_is_kept: TestApp);

/// PostgreSQL only (SQLite has one writer, so no picker ever holds a task locked): the
/// pick passes over tasks other pickers hold locked, and a rater whose only open task
/// is held so waits for it instead of being told that nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_another_picker_holds_is_waited_for_not_passed_over() {
    let Some(app) = TestApp::with_config(
        verdict::store::Backend::Postgres,
        verdict::Config::default(),
    )
    .await
    else {
        return;
    };
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "held", &tasks_jsonl(1), "").await;
    let pool = sqlx::PgPool::connect(&app.db.url).await.unwrap();
    let mut holder = pool.begin().await.unwrap();
    sqlx::query("SELECT id FROM tasks FOR UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let next = tokio::spawn({
        let api = rater.api.clone();
        let url = app.url(&format!("/api/v1/batches/{batch}/next"));
        async move { api.post(url).go().await.status() }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!next.is_finished(), "the pick waits for the held task");
    holder.rollback().await.unwrap();
    assert_eq!(next.await.unwrap(), StatusCode::OK, "and then takes it");
    pool.close().await;
    <TestApp as crate::helpers::Fixture>::teardown(app).await;
}

/// Every rating carries copies of its assignment's orientation and its task's external
/// id, models, response lengths and gold flag (what metrics and exports read), equal to
/// the originals, whichever way it was stored: submitted, drafted, skipped, out of scope.
async fn each_rating_carries_its_tasks_facts(app: &TestApp) {
    let admin = app.admin().await;
    let raters = [
        app.rater().await,
        app.persona("ines", verdict::auth::Role::Rater).await,
    ];
    let gold = json!({"external_id": "g1", "prompt": "p", "response_a": "Ä longer answer", "response_b": "B",
                      "model_a": "alpha", "gold": {"sxs": {"value": 2, "within": 1}}})
    .to_string()
        + "\n";
    let batch = app
        .batch(&admin, "facts", &(gold + &tasks_jsonl(12)), "&overlap=2")
        .await;
    let set = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}/gold")))
        .json(&json!({"gold_rate": 0.3}))
        .go()
        .await;
    assert_eq!(set.status(), StatusCode::OK);
    for rater in &raters {
        let mut n = 0;
        while let Some(next) = app.next(rater, &batch).await {
            let id = assignment_id(&next);
            let (action, body) = match n % 4 {
                0 | 1 => ("submit", complete_answers()),
                2 => ("skip", json!({"reason": "unfamiliar"})),
                _ => (
                    "out-of-scope",
                    json!({"explanation": "This asks for a travel itinerary, not code.",
                           "answers": {"a": {"executability": "no_code", "correctness": "no_issues"}}}),
                ),
            };
            let done = app.act(rater, &id, action, &body).await;
            assert!(done.status().is_success(), "{action}: {}", done.status());
            n += 1;
        }
    }
    let last = app.persona("ana", verdict::auth::Role::Rater).await;
    let open = app
        .next(&last, &batch)
        .await
        .expect("a task left for a third rater");
    let drafted = app
        .act(&last, &assignment_id(&open), "draft", &json!({"sxs": 3}))
        .await;
    assert_eq!(drafted.status(), StatusCode::OK);

    assert_eq!(app.rating_copies_off().await, 0);
    for (what, sql) in [
        (
            "shown swapped",
            "SELECT COUNT(*) FROM ratings WHERE swapped",
        ),
        (
            "shown as stored",
            "SELECT COUNT(*) FROM ratings WHERE NOT swapped",
        ),
        (
            "of the gold task",
            "SELECT COUNT(*) FROM ratings WHERE gold",
        ),
        (
            "with models",
            "SELECT COUNT(*) FROM ratings WHERE model_a IS NOT NULL",
        ),
        (
            "drafts",
            "SELECT COUNT(*) FROM ratings WHERE status = 'draft'",
        ),
    ] {
        assert!(
            app.count(sql).await > 0,
            "no rating {what}: the check would prove nothing of it"
        );
    }
}
db_test!(each_rating_carries_its_tasks_facts: TestApp);

/// Issue 28: answers carry only the parts their rubric has. A pairwise-aspects rating
/// (no question asked of each response) has no `a` or `b` in the API or the export;
/// a blackhat one keeps both.
async fn answers_carry_only_the_parts_their_rubric_has(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let aspects = json!({"helpfulness": "a", "clarity": "b", "factuality": "tie",
        "depth": "a", "engagement": "tie", "safety": "b",
        "rationale": "A runs; B is easier to read.", "a": {}, "b": {}});
    for (rubric, answers, sides) in [
        ("pairwise-aspects", aspects, false),
        ("blackhat", complete_answers(), true),
    ] {
        let batch = app
            .batch(
                &admin,
                rubric,
                &tasks_jsonl(1),
                &format!("&rubric={rubric}&randomize=false"),
            )
            .await;
        let assignment = app.take(&rater, &batch).await;
        let done = app.act(&rater, &assignment, "submit", &answers).await;
        let done = json_with(done, StatusCode::OK).await;
        let id = done["rating_id"].as_str().unwrap();
        for who in [&rater, &lead] {
            let read = app.rating(who, id).await;
            let parts = read["answers"].as_object().unwrap();
            assert_eq!(parts.contains_key("a"), sides, "{rubric}: {read}");
            assert_eq!(parts.contains_key("b"), sides, "{rubric}: {read}");
        }
        let rows = crate::judges::export_rows(app, &lead, &batch).await;
        assert_eq!(rows.len(), 1, "{rubric}");
        let parts = rows[0]["answers"].as_object().unwrap();
        assert_eq!(parts.contains_key("a"), sides, "{rubric}: {}", rows[0]);
        assert_eq!(parts.contains_key("b"), sides, "{rubric}: {}", rows[0]);
    }
}
db_test!(answers_carry_only_the_parts_their_rubric_has: TestApp);
