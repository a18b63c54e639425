//! Gold tasks on both databases: uploaded with expected answers, mixed in at the batch's
//! rate without the rater being told, graded on submit under each kind of tolerance,
//! kept out of the pool, the progress and the metrics, shown per rater, and the
//! review-first threshold that holds a weak rater's new ratings until a lead accepts.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    Go, Persona, TestApp, complete_answers, csrf_token, db_test, json_with, page_text, tasks_jsonl,
    tasks_jsonl_from,
};

/// A gold task whose expected answers use each kind of tolerance: within points on the
/// preference scale, any of a set, and exactly one answer.
fn gold_task(id: &str) -> String {
    json!({
        "external_id": id,
        "prompt": "Write a function that returns 7 squared.",
        "response_a": "```python\ndef f():\n    return 7 * 7\n```",
        "response_b": "`7 ** 2`",
        "gold": {
            "sxs": {"value": 2, "within": 1},
            "a.correctness": {"any_of": ["no_issues", "minor_issues"]},
            "b.executability": "no_code"
        }
    })
    .to_string()
        + "\n"
}

/// Answers that miss every expected answer of [`gold_task`]: the preference 3 points
/// off, A's correctness outside the set, B's executability not the one expected.
fn wrong_answers() -> Value {
    let mut answers = complete_answers();
    answers["sxs"] = json!(5);
    answers["sxs_explanation"] = json!("B is shorter and reads more simply than A does.");
    answers["a"]["correctness"] = json!("major_issues");
    answers["a"]["correctness_explanation"] = json!("It squares the wrong number entirely.");
    answers["b"]["executability"] = json!("yes_fully");
    answers
}

/// Submits answers to the rater's next task, confirming whatever warnings they meet;
/// returns the task's external id and the rating's id.
async fn rate_next(
    app: &TestApp,
    rater: &Persona,
    batch: &str,
    answers: &Value,
) -> (String, String) {
    let next = app.next(rater, batch).await.expect("a task");
    assert!(
        !next["task"].to_string().to_lowercase().contains("gold")
            && next
                .as_object()
                .unwrap()
                .keys()
                .all(|k| !k.contains("gold")),
        "the rater is not told a task is gold: {next}"
    );
    let id = next["assignment_id"].as_str().unwrap().to_owned();
    let external = next["task"]["external_id"].as_str().unwrap().to_owned();
    let mut body = answers.clone();
    let mut response = app.act(rater, &id, "submit", &body).await;
    if response.status() == StatusCode::CONFLICT {
        let refused: Value = response.json().await.unwrap();
        let ids: Vec<Value> = refused["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["id"].clone())
            .collect();
        body["confirmed_warnings"] = Value::Array(ids);
        response = app.act(rater, &id, "submit", &body).await;
    }
    let done = json_with(response, StatusCode::OK).await;
    (external, done["rating_id"].as_str().unwrap().to_owned())
}

/// The ids of the ratings the review queue lists for `query`, in its order.
async fn queued(app: &TestApp, lead: &Persona, query: &str) -> Vec<String> {
    let queue = get(app, lead, &format!("/api/v1/review?{query}")).await;
    queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["rating_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn get(app: &TestApp, who: &Persona, path: &str) -> Value {
    json_with(who.api.get(app.url(path)).go().await, StatusCode::OK).await
}

async fn set_gold(app: &TestApp, lead: &Persona, batch: &str, body: Value) -> reqwest::Response {
    lead.api
        .patch(app.url(&format!("/api/v1/batches/{batch}/gold")))
        .json(&body)
        .go()
        .await
}

db_test!(gold_is_graded_by_each_tolerance_and_kept_out_of_the_pool_and_the_metrics: TestApp);
async fn gold_is_graded_by_each_tolerance_and_kept_out_of_the_pool_and_the_metrics(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let (ana, bo) = (
        app.persona("ana", verdict::auth::Role::Rater).await,
        app.persona("bo", verdict::auth::Role::Rater).await,
    );
    let file = gold_task("g1") + &tasks_jsonl(2);
    let batch = app
        .batch(
            &admin,
            "gold",
            &file,
            "&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let settings = get(app, &lead, &format!("/api/v1/batches/{batch}/gold")).await;
    assert_eq!(
        settings,
        json!({"gold_rate": 0.0, "review_first_below": null, "gold_tasks": 1, "qualification": null})
    );
    let progress = get(app, &lead, &format!("/api/v1/batches/{batch}")).await;
    assert_eq!(
        progress["progress"]["tasks"], 2,
        "the gold task is not the batch's work"
    );

    // At rate 1 each rater's first task is the gold one, which overlap 1 does not limit.
    let set = set_gold(app, &lead, &batch, json!({"gold_rate": 1.0})).await;
    assert_eq!(json_with(set, StatusCode::OK).await["gold_rate"], 1.0);
    let right = {
        let mut answers = complete_answers();
        answers["sxs"] = json!(3); // within 1 of 2
        answers["a"]["correctness"] = json!("minor_issues"); // one of the set
        answers["a"]["correctness_explanation"] = json!("It has no docstring, as asked.");
        answers
    };
    let (task, ana_gold) = rate_next(app, &ana, &batch, &right).await;
    assert_eq!(task, "g1");
    let (task, bo_gold) = rate_next(app, &bo, &batch, &wrong_answers()).await;
    assert_eq!(
        task, "g1",
        "a gold task is handed to every rater, whatever the overlap"
    );
    assert_eq!(
        app.count("SELECT CAST(claimed AS BIGINT) FROM tasks WHERE external_id = 'g1'")
            .await,
        0,
        "a gold task claims no slot"
    );
    // With its gold done, each rater goes on to the pool's tasks.
    let (task, _) = rate_next(app, &ana, &batch, &complete_answers()).await;
    assert_eq!(task, "t1");
    let (task, _) = rate_next(app, &bo, &batch, &complete_answers()).await;
    assert_eq!(task, "t2");
    assert!(
        app.next(&ana, &batch).await.is_none(),
        "gold never outlasts the work"
    );

    // Graded under each tolerance: all right, then each one wrong.
    let graded = get(app, &lead, &format!("/api/v1/ratings/{ana_gold}")).await;
    assert_eq!(
        graded["gold_grade"],
        json!({"right": 3, "expected": 3, "wrong": []})
    );
    let graded = get(app, &lead, &format!("/api/v1/ratings/{bo_gold}")).await;
    assert_eq!(
        graded["gold_grade"],
        json!({"right": 0, "expected": 3, "wrong": ["a.correctness", "b.executability", "sxs"]})
    );
    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/review/{bo_gold}")).await;
    assert!(
        page.contains(
            "<strong>Gold task:</strong> 0 of 3 expected answers right; wrong: a.correctness, \
             b.executability, sxs"
        ),
        "{page}"
    );
    let own = get(app, &ana, &format!("/api/v1/ratings/{ana_gold}")).await;
    assert!(
        own.get("gold_grade").is_none() && own.get("review_first").is_none(),
        "a rater never sees a grade: {own}"
    );

    // The metrics hold the two real ratings only; gold shows per rater.
    let metrics = get(app, &lead, &format!("/api/v1/batches/{batch}/metrics")).await;
    assert_eq!(metrics["counts"]["ratings"], 2, "{}", metrics["counts"]);
    assert_eq!(metrics["counts"]["tasks"], 2);
    assert_eq!(metrics["sxs"]["n"], 2);
    assert_eq!(
        metrics["sxs"]["distribution"]["2"], 2,
        "only the two t-tasks' 2s"
    );
    let gold = &metrics["gold"];
    assert_eq!(
        (gold["tasks"].clone(), gold["rate"].clone()),
        (json!(1), json!(1.0))
    );
    let raters: Vec<(String, u64, u64)> = gold["raters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["rater"].as_str().unwrap().to_owned(),
                r["graded"].as_u64().unwrap(),
                r["passed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(raters, [("ana".into(), 1, 1), ("bo".into(), 1, 0)]);
    assert_eq!(gold["raters"][1]["recent"], json!([false]));
    let progress = get(app, &lead, &format!("/api/v1/batches/{batch}")).await;
    assert_eq!(progress["progress"]["rated"], 2);
    assert_eq!(progress["progress"]["tasks_done"], 2);

    // The export says which ratings are gold, with their grades, and counts them out.
    let rows = crate::judges::export_rows(app, &lead, &batch).await;
    let row = |id: &str| rows.iter().find(|r| r["rating_id"] == id).unwrap().clone();
    let exported = row(&bo_gold);
    assert_eq!(exported["gold"], true);
    assert_eq!(exported["gold_grade"]["right"], 0);
    assert_eq!(exported["counts_in_metrics"], false);
    let real: Vec<&Value> = rows.iter().filter(|r| r["gold"] == false).collect();
    assert_eq!(real.len(), 2);
    assert!(
        real.iter()
            .all(|r| r["counts_in_metrics"] == true && r["gold_grade"].is_null())
    );

    // A gold task gives no slot back: rejecting its rating, or skipping it, leaves its
    // count alone (it would go below zero otherwise).
    let rejected = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{bo_gold}/review")))
        .json(&json!({"decision": "reject", "version": 1, "comment": "Look at B again."}))
        .go()
        .await;
    assert_eq!(rejected.status(), StatusCode::OK);
    // A new rater, with new work to go with the gold.
    app.batch(&admin, "gold", &tasks_jsonl_from(3, 1), "").await;
    let cy = app.persona("cy", verdict::auth::Role::Rater).await;
    let next = app.next(&cy, &batch).await.expect("the gold task");
    assert_eq!(next["task"]["external_id"], "g1");
    let id = next["assignment_id"].as_str().unwrap();
    let skipped = app
        .act(&cy, id, "skip", &json!({"reason": "unfamiliar"}))
        .await;
    assert_eq!(skipped.status(), StatusCode::OK);
    assert_eq!(
        app.count("SELECT CAST(claimed AS BIGINT) FROM tasks WHERE external_id = 'g1'")
            .await,
        0
    );
    let is_full = app
        .count("SELECT COUNT(*) FROM tasks WHERE external_id = 'g1' AND is_full = TRUE")
        .await;
    assert_eq!(is_full, 1, "still out of the pool");
    // The skip does not count either.
    let progress = get(app, &lead, &format!("/api/v1/batches/{batch}")).await;
    assert_eq!(progress["progress"]["skipped"], 0);
}

db_test!(a_rater_below_the_threshold_has_new_ratings_reviewed_first: TestApp);
async fn a_rater_below_the_threshold_has_new_ratings_reviewed_first(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let (weak, strong) = (
        app.persona("weak", verdict::auth::Role::Rater).await,
        app.persona("strong", verdict::auth::Role::Rater).await,
    );
    let file = gold_task("g1") + &gold_task("g2") + &gold_task("g3") + &tasks_jsonl(4);
    let batch = app
        .batch(
            &admin,
            "held",
            &file,
            "&randomize=false&overlap=2&raters_see_external_ids=true",
        )
        .await;
    let set = set_gold(
        app,
        &lead,
        &batch,
        json!({"gold_rate": 1.0, "review_first_below": 0.5}),
    )
    .await;
    assert_eq!(
        json_with(set, StatusCode::OK).await,
        json!({"gold_rate": 1.0, "review_first_below": 0.5, "gold_tasks": 3, "qualification": null})
    );
    let mut right = complete_answers();
    right["sxs"] = json!(2);
    // The weak rater misses two of three gold tasks (1 of 3 passed, below 0.5); the
    // strong one passes all three.
    for (i, answers) in [wrong_answers(), right.clone(), wrong_answers()]
        .iter()
        .enumerate()
    {
        let (task, _) = rate_next(app, &weak, &batch, answers).await;
        assert!(
            task.starts_with('g'),
            "gold first at rate 1 (task {i}: {task})"
        );
        let (task, _) = rate_next(app, &strong, &batch, &right).await;
        assert!(task.starts_with('g'));
    }
    let (_, held) = rate_next(app, &weak, &batch, &complete_answers()).await;
    let (_, free) = rate_next(app, &strong, &batch, &complete_answers()).await;
    let view = get(app, &lead, &format!("/api/v1/ratings/{held}")).await;
    assert_eq!(view["review_first"], true);
    let view = get(app, &lead, &format!("/api/v1/ratings/{free}")).await;
    assert_eq!(view["review_first"], false);
    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/review/{held}")).await;
    assert!(page.contains("<strong>Review first:</strong>"), "{page}");
    let queue = page_text(app, &browser, &format!("/review?batch={batch}")).await;
    assert_eq!(
        queue.matches("badge-held").count(),
        1,
        "one held rating flagged"
    );

    // Held out of the metrics until accepted.
    let metrics = get(app, &lead, &format!("/api/v1/batches/{batch}/metrics")).await;
    assert_eq!(metrics["counts"]["ratings"], 1, "only the strong rater's");
    assert_eq!(metrics["gold"]["held"], 1);
    let flags: Vec<(Value, Value)> = metrics["gold"]["raters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rater"].clone(), r["review_first"].clone()))
        .collect();
    assert_eq!(
        flags,
        [
            (json!("strong"), json!(false)),
            (json!("weak"), json!(true))
        ]
    );
    let queued = queued(app, &lead, &format!("batch={batch}&review_first=true")).await;
    assert_eq!(queued, [held.as_str()], "the queue finds the held rating");
    let accepted = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{held}/review")))
        .json(&json!({"decision": "accept", "version": 1}))
        .go()
        .await;
    assert_eq!(accepted.status(), StatusCode::OK);
    let metrics = get(app, &lead, &format!("/api/v1/batches/{batch}/metrics")).await;
    assert_eq!(metrics["counts"]["ratings"], 2, "counted once accepted");
    assert_eq!(metrics["gold"]["held"], 0);

    // Without a threshold nobody is held.
    let set = set_gold(app, &lead, &batch, json!({"review_first_below": null})).await;
    assert_eq!(
        json_with(set, StatusCode::OK).await["review_first_below"],
        Value::Null
    );
    let (_, later) = rate_next(app, &weak, &batch, &complete_answers()).await;
    let view = get(app, &lead, &format!("/api/v1/ratings/{later}")).await;
    assert_eq!(view["review_first"], false);
}

db_test!(bad_gold_and_bad_settings_are_named_and_change_nothing: TestApp);
async fn bad_gold_and_bad_settings_are_named_and_change_nothing(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let bad = json!({"external_id": "g1", "prompt": "p", "response_a": "A", "response_b": "B",
                     "gold": {"sxs": {"value": 9, "within": 1}, "c.correctness": "no_issues"}})
    .to_string()
        + "\n";
    let response = admin
        .api
        .post(app.url("/api/v1/batches?name=bad-gold"))
        .header("content-type", "application/x-ndjson")
        .body(tasks_jsonl(1) + &bad)
        .go()
        .await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    let text = body.to_string();
    assert!(
        text.contains("gold.sxs 9 is not an answer it takes"),
        "{text}"
    );
    assert!(
        text.contains("gold.c.correctness is not an answer of rubric blackhat"),
        "{text}"
    );
    assert_eq!(body["errors"][0]["line"], 2, "{text}");
    let not_object = json!({"external_id": "g1", "prompt": "p", "response_a": "A",
                            "response_b": "B", "gold": "no_code"})
    .to_string();
    let response = admin
        .api
        .post(app.url("/api/v1/batches?name=bad-gold"))
        .header("content-type", "application/x-ndjson")
        .body(not_object)
        .go()
        .await;
    let text = json_with(response, StatusCode::UNPROCESSABLE_ENTITY)
        .await
        .to_string();
    assert!(text.contains("gold must be an object"), "{text}");
    let csv = "external_id,prompt,response_a,response_b,gold\ng1,p,A,B,x\n";
    let response = admin
        .api
        .post(app.url("/api/v1/batches?name=bad-gold"))
        .header("content-type", "text/csv")
        .body(csv)
        .go()
        .await;
    let text = json_with(response, StatusCode::UNPROCESSABLE_ENTITY)
        .await
        .to_string();
    assert!(text.contains("JSON formats"), "{text}");
    assert_eq!(app.count("SELECT COUNT(*) FROM batches").await, 0);

    let batch = app.batch(&admin, "fine", &gold_task("g1"), "").await;
    for (body, field) in [
        (json!({"gold_rate": 1.5}), "gold_rate"),
        (json!({"gold_rate": -0.1}), "gold_rate"),
        (json!({"review_first_below": 0}), "review_first_below"),
        (json!({"review_first_below": 2}), "review_first_below"),
    ] {
        let response = set_gold(app, &lead, &batch, body.clone()).await;
        let refused = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(refused["fields"].get(field).is_some(), "{body}: {refused}");
    }
    let response = set_gold(app, &lead, &batch, json!({"gold_rate": "often"})).await;
    let refused = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(refused.to_string().contains("gold_rate"), "{refused}");
    let response = set_gold(app, &lead, &batch, json!({"gold": 1})).await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // serde would read the settings from a list of them in order; the API takes objects.
    let response = set_gold(app, &lead, &batch, json!([1.0, null])).await;
    let refused = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(refused["fields"]["body"], "must be a JSON object");
    let response = set_gold(app, &rater, &batch, json!({"gold_rate": 0.5})).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let settings = get(app, &lead, &format!("/api/v1/batches/{batch}/gold")).await;
    assert_eq!(
        settings,
        json!({"gold_rate": 0.0, "review_first_below": null, "gold_tasks": 1, "qualification": null}),
        "nothing changed"
    );
}

db_test!(the_batch_page_shows_gold_per_rater_and_sets_the_gold_settings: TestApp);
async fn the_batch_page_shows_gold_per_rater_and_sets_the_gold_settings(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let file = gold_task("g1") + &tasks_jsonl(2);
    let batch = app
        .batch(&admin, "gold-page", &file, "&randomize=false")
        .await;
    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    assert!(
        page.contains("1 gold task · mixed in at 0.0% of new tasks"),
        "{page}"
    );
    assert!(page.contains("No graded gold ratings yet."));
    let token = csrf_token(&page);
    let url = app.url(&format!("/batches/{batch}/gold"));

    // Refused values are named on their fields, and nothing changes.
    let refused = browser
        .post(&url)
        .form(&[
            ("csrf_token", token.as_str()),
            ("gold_percent", "150"),
            ("review_first_percent", "0"),
        ])
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = refused.text().await.unwrap();
    assert!(html.contains("Gold tasks mixed in: must be a percentage from 0 to 100"));
    assert!(html.contains("Review first below: must be above 0"));
    assert!(html.contains("value=\"150\""), "what was typed is kept");
    let settings = get(app, &lead, &format!("/api/v1/batches/{batch}/gold")).await;
    assert_eq!(settings["gold_rate"], 0.0);

    let saved = browser
        .post(&url)
        .form(&[
            ("csrf_token", token.as_str()),
            ("gold_percent", "100"),
            ("review_first_percent", "60%"),
        ])
        .go()
        .await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    let settings = get(app, &lead, &format!("/api/v1/batches/{batch}/gold")).await;
    assert_eq!(
        (
            settings["gold_rate"].clone(),
            settings["review_first_below"].clone()
        ),
        (json!(1.0), json!(0.6))
    );

    rate_next(app, &rater, &batch, &wrong_answers()).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    assert!(
        page.contains("new ratings go to review first below 60% accuracy"),
        "{page}"
    );
    let row = page
        .split("<th scope=\"row\">rater</th>")
        .nth(1)
        .expect("the rater's gold row")
        .split("</tr>")
        .next()
        .unwrap();
    assert!(
        row.contains("0% (0–79%)"),
        "accuracy 0 of 1 with its interval: {row}"
    );
    assert!(row.contains("0 of 3"), "no expected answer right: {row}");
    assert!(row.contains("aria-label=\"wrong\""), "{row}");
}

/// Each count by name.
type Counts = Vec<(&'static str, i64)>;

/// Every count a rater can read of a batch: its progress and "mine" in the API (alone
/// and in the list, which must agree), and "N of M done" and "Yours" on the queue page.
async fn rater_counts(
    app: &TestApp,
    rater: &Persona,
    browser: &reqwest::Client,
    batch: &str,
) -> Counts {
    let one = get(app, rater, &format!("/api/v1/batches/{batch}")).await;
    let list = get(app, rater, "/api/v1/batches").await;
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == batch)
        .expect("the batch is listed");
    assert_eq!(
        (&listed["progress"], &listed["mine"]),
        (&one["progress"], &one["mine"])
    );
    let mut counts: Counts = [
        "tasks",
        "tasks_done",
        "rated",
        "out_of_scope",
        "skipped",
        "in_progress",
    ]
    .into_iter()
    .map(|k| (k, one["progress"][k].as_i64().unwrap()))
    .collect();
    counts.push(("mine", one["mine"].as_i64().unwrap()));
    let page = page_text(app, browser, "/").await;
    let done = page
        .split("<span class=\"progress-text\">")
        .nth(1)
        .and_then(|rest| rest.split(" done").next())
        .expect("N of M done");
    let (n, m) = done.split_once(" of ").unwrap();
    counts.push(("page: done", n.parse().unwrap()));
    counts.push(("page: tasks", m.parse().unwrap()));
    let yours = page
        .split("data-label=\"Yours\" class=\"num\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .expect("Yours");
    counts.push(("page: yours", yours.parse().unwrap()));
    counts
}

/// How each count moved between two readings.
fn moved(
    before: &[(&'static str, i64)],
    after: &[(&'static str, i64)],
) -> Vec<(&'static str, i64)> {
    before
        .iter()
        .zip(after)
        .map(|((name, b), (_, a))| (*name, a - b))
        .collect()
}

db_test!(a_rater_cannot_tell_gold_from_other_tasks_by_any_count: TestApp);
async fn a_rater_cannot_tell_gold_from_other_tasks_by_any_count(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let file = gold_task("g1") + &gold_task("g2") + &gold_task("g3") + &tasks_jsonl(4);
    let batch = app.batch(&admin, "tell", &file, "&randomize=false").await;
    // At rate 1 the rater gets the three gold tasks first, then the pool's four.
    let set = set_gold(app, &lead, &batch, json!({"gold_rate": 1.0})).await;
    assert_eq!(set.status(), StatusCode::OK);
    let browser = rater.browser_for(app).await;
    // (gold, what was done) -> how every count moved when the task was taken, and when
    // it was finished.
    let mut seen: Vec<(bool, &str, Counts, Counts)> = Vec::new();
    for i in 0..7 {
        let before = rater_counts(app, &rater, &browser, &batch).await;
        let next = app.next(&rater, &batch).await.expect("a task");
        let taken = rater_counts(app, &rater, &browser, &batch).await;
        let id = next["assignment_id"].as_str().unwrap();
        // One gold task and one other are skipped, the rest rated.
        let (action, response) = if i == 1 || i == 4 {
            let body = json!({"reason": "unfamiliar"});
            ("skip", app.act(&rater, id, "skip", &body).await)
        } else {
            (
                "submit",
                app.act(&rater, id, "submit", &complete_answers()).await,
            )
        };
        let done = json_with(response, StatusCode::OK).await;
        let finished = rater_counts(app, &rater, &browser, &batch).await;
        let rating = get(
            app,
            &lead,
            &format!("/api/v1/ratings/{}", done["rating_id"].as_str().unwrap()),
        )
        .await;
        let gold = rating["external_id"].as_str().unwrap().starts_with('g');
        seen.push((
            gold,
            action,
            moved(&before, &taken),
            moved(&taken, &finished),
        ));
    }
    let golds = seen.iter().filter(|(gold, ..)| *gold).count();
    assert_eq!(golds, 3, "three gold tasks and four others were served");
    for action in ["submit", "skip"] {
        let of = |gold: bool| -> Vec<_> {
            seen.iter()
                .filter(|(g, a, ..)| *g == gold && *a == action)
                .map(|(_, _, taken, finished)| (taken.clone(), finished.clone()))
                .collect()
        };
        let (gold, other) = (of(true), of(false));
        assert!(!gold.is_empty() && !other.is_empty());
        for moves in gold.iter().chain(&other) {
            assert_eq!(
                moves, &other[0],
                "on {action}, every count moves alike for gold and other tasks"
            );
        }
    }
    // A rating moves what an ordinary one does: one more rated, one more done.
    let rated = &seen.iter().find(|(_, a, ..)| *a == "submit").unwrap().3;
    for (name, by) in [
        ("rated", 1),
        ("tasks_done", 1),
        ("mine", 1),
        ("page: done", 1),
    ] {
        assert!(rated.contains(&(name, by)), "{name}: {rated:?}");
    }
    // The lead still sees the batch's own work, gold left out.
    let progress = get(app, &lead, &format!("/api/v1/batches/{batch}")).await;
    assert_eq!(progress["progress"]["tasks"], 4);
    assert_eq!(progress["progress"]["rated"], 3);
}

/// External ids that name where a task came from, which a rater could look up.
const SECRET_IDS: [&str; 3] = ["HumanEval-12", "MBPP-7", "gold-secret"];

db_test!(raters_see_no_external_id_unless_the_batch_shows_them: TestApp);
async fn raters_see_no_external_id_unless_the_batch_shows_them(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let file = gold_task("gold-secret")
        + &tasks_jsonl(2)
            .replace("\"t1\"", "\"HumanEval-12\"")
            .replace("\"t2\"", "\"MBPP-7\"");
    let batch = app.batch(&admin, "hidden", &file, "").await;
    let set = set_gold(app, &lead, &batch, json!({"gold_rate": 1.0})).await;
    assert_eq!(set.status(), StatusCode::OK);
    let browser = rater.browser_for(app).await;
    // Everything the rater loads, to search for the ids at the end.
    let mut loaded: Vec<(String, String)> = Vec::new();
    let batch_view = get(app, &rater, &format!("/api/v1/batches/{batch}")).await;
    assert_eq!(
        batch_view["raters_see_external_ids"], false,
        "off by default"
    );
    loaded.push(("batch".into(), batch_view.to_string()));
    let mut ratings = Vec::new();
    for number in 1..=3 {
        let next = app.next(&rater, &batch).await.expect("a task");
        assert_eq!(next["task"]["external_id"], format!("Task {number}"));
        let id = next["assignment_id"].as_str().unwrap().to_owned();
        loaded.push((format!("next {number}"), next.to_string()));
        let form = page_text(app, &browser, &format!("/assignments/{id}")).await;
        assert!(
            form.contains(&format!("· Task {number}</span>")) && !form.contains("task Task"),
            "the form is headed with the task's neutral name: {form}"
        );
        let token = csrf_token(&form);
        loaded.push((format!("form {number}"), form));
        let diff = page_text(app, &browser, &format!("/assignments/{id}/diff")).await;
        assert!(diff.contains(&format!(", Task {number}</span>")), "{diff}");
        loaded.push((format!("diff {number}"), diff));
        // A refused submission shows the form again.
        let refused = browser
            .post(app.url(&format!("/assignments/{id}/submit")))
            .form(&[("csrf_token", token.as_str()), ("sxs", "9")])
            .go()
            .await;
        assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
        loaded.push((format!("refused {number}"), refused.text().await.unwrap()));
        let done = json_with(
            app.act(&rater, &id, "submit", &complete_answers()).await,
            StatusCode::OK,
        )
        .await;
        ratings.push(done["rating_id"].as_str().unwrap().to_owned());
    }
    // The lead returns one; the rater's queue lists it.
    let returned = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{}/review", ratings[1])))
        .json(&json!({"decision": "return", "version": 1, "comment": "Say more about B."}))
        .go()
        .await;
    assert_eq!(returned.status(), StatusCode::OK);
    for (number, id) in ratings.iter().enumerate() {
        let own = get(app, &rater, &format!("/api/v1/ratings/{id}")).await;
        assert_eq!(own["external_id"], format!("Task {}", number + 1));
        loaded.push((format!("rating {id}"), own.to_string()));
        let page = page_text(app, &browser, &format!("/ratings/{id}")).await;
        assert!(
            page.contains(&format!("· Task {}</span>", number + 1)),
            "{page}"
        );
        loaded.push((format!("rating page {id}"), page));
    }
    let history = get(app, &rater, "/api/v1/ratings").await;
    let names: Vec<&str> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["external_id"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Task 3", "Task 2", "Task 1"], "newest first");
    loaded.push(("history".into(), history.to_string()));
    loaded.push((
        "history page".into(),
        page_text(app, &browser, "/ratings").await,
    ));
    let home = page_text(app, &browser, "/").await;
    assert!(home.contains("hidden · Task 2</a>"), "{home}");
    loaded.push(("home".into(), home));
    for (what, text) in &loaded {
        for secret in SECRET_IDS {
            assert!(!text.contains(secret), "{what} shows {secret}: {text}");
        }
    }
    // Leads always see them.
    let lead_view = get(app, &lead, &format!("/api/v1/ratings/{}", ratings[0])).await;
    assert_eq!(lead_view["external_id"], "gold-secret");

    // Bad values are named and change nothing.
    let patch = |body: Value| {
        admin
            .api
            .patch(app.url(&format!("/api/v1/batches/{batch}")))
            .json(&body)
            .go()
    };
    let refused = json_with(
        patch(json!({"raters_see_external_ids": "yes"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        refused.to_string().contains("raters_see_external_ids"),
        "{refused}"
    );
    let upload = |query: &str| {
        admin
            .api
            .post(app.url(&format!("/api/v1/batches?name=hidden{query}")))
            .header("content-type", "application/x-ndjson")
            .body(tasks_jsonl_from(3, 1))
            .go()
    };
    // A query that does not parse is a 400 naming the parameter, as for `randomize`.
    let refused = json_with(
        upload("&raters_see_external_ids=maybe").await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert!(
        refused.to_string().contains("raters_see_external_ids"),
        "{refused}"
    );
    let refused = json_with(
        upload("&raters_see_external_ids=true").await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        refused["fields"]["raters_see_external_ids"]
            .as_str()
            .unwrap()
            .contains("has raters_see_external_ids false"),
        "an upload does not change the batch's setting: {refused}"
    );
    let own = get(app, &rater, &format!("/api/v1/ratings/{}", ratings[0])).await;
    assert_eq!(own["external_id"], "Task 1", "nothing changed");

    // Turned on in the settings, raters see the ids.
    let on = json_with(
        patch(json!({"raters_see_external_ids": true})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(on["raters_see_external_ids"], true);
    let own = get(app, &rater, &format!("/api/v1/ratings/{}", ratings[0])).await;
    assert_eq!(own["external_id"], "gold-secret");
    let page = page_text(app, &browser, "/ratings").await;
    assert!(
        page.contains("HumanEval-12") && page.contains("MBPP-7"),
        "{page}"
    );

    // And on the settings page: off again, after the confirmation.
    let admin_browser = admin.browser_for(app).await;
    let settings = page_text(app, &admin_browser, &format!("/admin/batches/{batch}")).await;
    let mut form = crate::settings_page::form_of(&settings);
    assert!(
        form.iter().any(|(n, _)| n == "raters_see_external_ids"),
        "ticked"
    );
    form.retain(|(n, _)| n != "raters_see_external_ids");
    let confirm = admin_browser
        .post(app.url(&format!("/admin/batches/{batch}")))
        .form(&form)
        .go()
        .await;
    let html = confirm.text().await.unwrap();
    assert!(
        html.contains("<th scope=\"row\">Raters see external ids</th><td>on</td><td>off</td>"),
        "{html}"
    );
    let confirmed = crate::settings_page::fields_of(&html, "/confirm\"");
    let applied = admin_browser
        .post(app.url(&format!("/admin/batches/{batch}/confirm")))
        .form(&confirmed)
        .go()
        .await;
    assert_eq!(applied.status(), StatusCode::SEE_OTHER);
    let own = get(app, &rater, &format!("/api/v1/ratings/{}", ratings[0])).await;
    assert_eq!(own["external_id"], "Task 1");

    // A batch uploaded showing them shows them from the start.
    let shown = app
        .batch(
            &admin,
            "shown",
            &tasks_jsonl(1),
            "&raters_see_external_ids=true",
        )
        .await;
    let next = app.next(&rater, &shown).await.expect("a task");
    assert_eq!(next["task"]["external_id"], "t1");
}

db_test!(every_view_counts_a_rating_as_the_metrics_do: TestApp);
async fn every_view_counts_a_rating_as_the_metrics_do(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let (weak, strong) = (
        app.persona("weak", verdict::auth::Role::Rater).await,
        app.persona("strong", verdict::auth::Role::Rater).await,
    );
    let file = gold_task("g1") + &gold_task("g2") + &gold_task("g3") + &tasks_jsonl(2);
    let batch = app
        .batch(&admin, "views", &file, "&randomize=false&overlap=2")
        .await;
    let set = set_gold(
        app,
        &lead,
        &batch,
        json!({"gold_rate": 1.0, "review_first_below": 0.5}),
    )
    .await;
    assert_eq!(set.status(), StatusCode::OK);
    let mut right = complete_answers();
    right["sxs"] = json!(2);
    // The gold tasks, far apart (the weak rater misses two of three), then t1: the weak
    // rater's rating of it is held for review first, and far from the strong one's.
    for answers in [wrong_answers(), right.clone(), wrong_answers()] {
        rate_next(app, &weak, &batch, &answers).await;
        rate_next(app, &strong, &batch, &right).await;
    }
    let mut far = complete_answers();
    far["sxs"] = json!(7);
    far["sxs_explanation"] = json!("B is far better: it is short and does what was asked.");
    let (_, held) = rate_next(app, &weak, &batch, &far).await;
    let (_, counted) = rate_next(app, &strong, &batch, &right).await;
    let view = get(app, &lead, &format!("/api/v1/ratings/{held}")).await;
    assert_eq!(
        (view["review_first"].clone(), view["external_id"].clone()),
        (json!(true), json!("t1"))
    );

    let metrics = get(app, &lead, &format!("/api/v1/batches/{batch}/metrics")).await;
    assert_eq!(
        metrics["counts"]["included"], 1,
        "only the strong rater's t1"
    );
    // The disagreement list: no gold task, and t1 has one counted rating.
    let listed = get(
        app,
        &lead,
        &format!("/api/v1/batches/{batch}/disagreements"),
    )
    .await;
    assert_eq!(listed["tasks"], json!([]), "{listed}");
    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}/disagreements")).await;
    for task in ["g1", "g2", "g3", "t1"] {
        assert!(
            !page.contains(&format!("/tasks/{task}\"")),
            "{task}: {page}"
        );
    }
    // The per-task view and its page say what the export says, rating by rating.
    let exported = crate::judges::export_rows(app, &lead, &batch).await;
    assert_eq!(exported.len(), 8);
    for task in ["g1", "g2", "g3", "t1"] {
        let view = get(app, &lead, &format!("/api/v1/batches/{batch}/tasks/{task}")).await;
        for rating in view["ratings"].as_array().unwrap() {
            let row = exported
                .iter()
                .find(|r| r["rating_id"] == rating["rating_id"])
                .expect("exported");
            assert_eq!(
                rating["counts_in_metrics"], row["counts_in_metrics"],
                "{task}: {rating}"
            );
            let counts = rating["rating_id"] == counted.as_str();
            assert_eq!(rating["counts_in_metrics"], counts, "{task}: {rating}");
        }
    }
    // The queue's "disagrees with others" compares with counted ratings only: gold
    // ratings have none, the strong t1 rating none either (the weak one is held), and
    // the held one is far from the strong one.
    let disagreeing = queued(app, &lead, &format!("batch={batch}&disagrees=true")).await;
    assert_eq!(disagreeing, [held.as_str()]);

    // Accepted, the held rating counts everywhere.
    let accepted = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{held}/review")))
        .json(&json!({"decision": "accept", "version": 1}))
        .go()
        .await;
    assert_eq!(accepted.status(), StatusCode::OK);
    let listed = get(
        app,
        &lead,
        &format!("/api/v1/batches/{batch}/disagreements"),
    )
    .await;
    let tasks: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["external_id"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, ["t1"]);
    let view = get(app, &lead, &format!("/api/v1/batches/{batch}/tasks/t1")).await;
    assert!(
        view["ratings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["counts_in_metrics"] == true),
        "{view}"
    );
}
