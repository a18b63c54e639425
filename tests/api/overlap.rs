//! Adaptive overlap (issue 31): a batch asks `overlap` raters of each task, then one more
//! at a time, up to `max_overlap`, while the task's answers disagree by its rule; the
//! exactly-k rule holds for the k each task needs at the time, under concurrency and
//! across instances, and the metrics say what the rule saved.

use std::collections::HashMap;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use verdict::auth::Role;

/// Blackhat answers favouring `side` ("a" or "b"), in the orientation shown: the batches
/// here show A and B as uploaded.
fn favouring(side: &str) -> Value {
    let mut answers = complete_answers();
    if side == "b" {
        let a = answers["a"].take();
        answers["a"] = answers["b"].take();
        answers["b"] = a;
        answers["sxs"] = json!(6);
        answers["sxs_explanation"] =
            json!("B delivers the function that was asked for; A does not.");
    }
    answers
}

/// The sxs answers of each task's finished ratings (outcome `rated`), by external id.
async fn answers_per_task(app: &TestApp, batch: &str) -> HashMap<String, Vec<i64>> {
    let rows = app
        .pairs(&format!(
            "SELECT t.external_id, CAST(r.answers AS TEXT) FROM ratings r
             JOIN tasks t ON t.id = r.task_id
             WHERE t.batch_id = (SELECT id FROM batches WHERE name = '{batch}')
               AND r.outcome = 'rated' AND r.status <> 'draft'"
        ))
        .await;
    let mut per_task: HashMap<String, Vec<i64>> = HashMap::new();
    for (task, answers) in rows {
        let answers: Value = serde_json::from_str(&answers).expect("answers as JSON");
        per_task
            .entry(task)
            .or_default()
            .push(answers["sxs"].as_i64().expect("an sxs answer"));
    }
    per_task
}

/// Each task's `extra` (raters gained), by external id.
async fn extra_per_task(app: &TestApp, batch: &str) -> HashMap<String, i64> {
    app.pairs(&format!(
        "SELECT external_id, CAST(extra AS TEXT) FROM tasks
         WHERE batch_id = (SELECT id FROM batches WHERE name = '{batch}')"
    ))
    .await
    .into_iter()
    .map(|(task, extra)| (task, extra.parse().expect("a number")))
    .collect()
}

/// Raters `r0`, `r1`, ...
async fn personas(app: &TestApp, n: usize) -> Vec<Persona> {
    let mut raters = Vec::new();
    for i in 0..n {
        raters.push(app.persona(&format!("r{i}"), Role::Rater).await);
    }
    raters
}

fn sides(answers: &[i64]) -> Vec<std::cmp::Ordering> {
    let mut sides: Vec<_> = answers.iter().map(|a| a.cmp(&4)).collect();
    sides.sort();
    sides.dedup();
    sides
}

async fn a_task_escalates_one_rater_at_a_time_while_its_answers_disagree(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let raters = personas(app, 5).await;
    // Agreeing raters: two each, no more.
    let agreed = app
        .batch(
            &admin,
            "agreed",
            &tasks_jsonl(2),
            "&overlap=2&max_overlap=4&randomize=false",
        )
        .await;
    for rater in &raters[..2] {
        assert_eq!(app.rate_all(rater, &agreed, |_| favouring("a")).await, 2);
    }
    assert!(
        app.next(&raters[2], &agreed).await.is_none(),
        "both agreed: done"
    );
    let figures = &app.metrics(&lead, &agreed).await["overlap"];
    assert_eq!(
        figures,
        &json!({"overlap": 2, "max_overlap": 4, "escalate": "side:sxs", "tasks": 2,
                "escalated": 0, "raters_added": 0, "ratings_needed": 4, "ratings_at_max": 8,
                "ratings_saved": 4})
    );

    // A and B: a third rater; A, B, B still disagree: a fourth, and no fifth.
    let split = app
        .batch(
            &admin,
            "split",
            &tasks_jsonl(2),
            "&overlap=2&max_overlap=4&randomize=false",
        )
        .await;
    assert_eq!(
        app.rate_all(&raters[0], &split, |_| favouring("a")).await,
        2
    );
    assert_eq!(
        app.rate_all(&raters[1], &split, |_| favouring("b")).await,
        2
    );
    assert_eq!(extra_per_task(app, "split").await.values().sum::<i64>(), 2);
    assert_eq!(
        app.rate_all(&raters[2], &split, |_| favouring("b")).await,
        2
    );
    assert_eq!(
        app.rate_all(&raters[3], &split, |_| favouring("b")).await,
        2
    );
    assert!(
        app.next(&raters[4], &split).await.is_none(),
        "at the most: done"
    );
    let per_task = answers_per_task(app, "split").await;
    assert!(per_task.values().all(|a| a.len() == 4), "{per_task:?}");
    let figures = &app.metrics(&lead, &split).await["overlap"];
    assert_eq!(figures["escalated"], 2);
    assert_eq!(figures["raters_added"], 4);
    assert_eq!(figures["ratings_needed"], 8);
    assert_eq!(figures["ratings_saved"], 0);

    // Two points apart is not three: no escalation under points:3.
    let near = app
        .batch(
            &admin,
            "near",
            &tasks_jsonl(1),
            "&overlap=2&max_overlap=3&escalate=points:3&randomize=false",
        )
        .await;
    let with_sxs = |sxs: i64| {
        move |_: &Value| {
            let mut answers = favouring(if sxs < 4 { "a" } else { "b" });
            answers["sxs"] = json!(sxs);
            answers
        }
    };
    app.rate_all(&raters[0], &near, with_sxs(3)).await;
    app.rate_all(&raters[1], &near, with_sxs(5)).await;
    assert!(app.next(&raters[2], &near).await.is_none());
    assert_eq!(
        app.metrics(&lead, &near).await["overlap"]["escalate"],
        "points:sxs:3"
    );
}
db_test!(a_task_escalates_one_rater_at_a_time_while_its_answers_disagree: TestApp);

async fn a_skip_or_an_out_of_scope_answer_is_not_disagreement(app: &TestApp) {
    let admin = app.admin().await;
    let raters = personas(app, 4).await;
    let batch = app
        .batch(
            &admin,
            "b",
            &tasks_jsonl(1),
            "&overlap=2&max_overlap=3&randomize=false",
        )
        .await;
    app.rate(&raters[0], &batch, &favouring("a")).await;
    // A skip gives the slot back; the next rater fills it.
    let skipped = app.take(&raters[1], &batch).await;
    let response = app
        .act(
            &raters[1],
            &skipped,
            "skip",
            &json!({"reason": "unfamiliar"}),
        )
        .await;
    json_with(response, StatusCode::OK).await;
    let out = app.take(&raters[2], &batch).await;
    let response = app
        .act(
            &raters[2],
            &out,
            "out-of-scope",
            &json!({"explanation": "The prompt asks for a legal opinion, not code."}),
        )
        .await;
    json_with(response, StatusCode::OK).await;
    // One answer and one out of scope: nothing to disagree with.
    assert!(app.next(&raters[3], &batch).await.is_none());
    assert_eq!(extra_per_task(app, "b").await["t1"], 0);
}
db_test!(a_skip_or_an_out_of_scope_answer_is_not_disagreement: TestApp);

async fn a_revised_answer_that_now_disagrees_asks_one_more(app: &TestApp) {
    let admin = app.admin().await;
    let raters = personas(app, 3).await;
    let batch = app
        .batch(
            &admin,
            "b",
            &tasks_jsonl(1),
            "&overlap=2&max_overlap=3&randomize=false",
        )
        .await;
    app.rate(&raters[0], &batch, &favouring("a")).await;
    let rating = app.rate(&raters[1], &batch, &favouring("a")).await;
    assert!(app.next(&raters[2], &batch).await.is_none());
    let response = raters[1]
        .api
        .put(app.url(&format!("/api/v1/ratings/{rating}")))
        .json(&favouring("b"))
        .go()
        .await;
    json_with(response, StatusCode::OK).await;
    assert!(
        app.next(&raters[2], &batch).await.is_some(),
        "one more rater"
    );
    assert_eq!(extra_per_task(app, "b").await["t1"], 1);
}
db_test!(a_revised_answer_that_now_disagrees_asks_one_more: TestApp);

async fn raising_the_most_escalates_tasks_already_done(app: &TestApp) {
    let admin = app.admin().await;
    let raters = personas(app, 3).await;
    let batch = app
        .batch(&admin, "b", &tasks_jsonl(2), "&overlap=2&randomize=false")
        .await;
    app.rate_all(&raters[0], &batch, |_| favouring("a")).await;
    app.rate_all(&raters[1], &batch, |_| favouring("b")).await;
    assert!(app.next(&raters[2], &batch).await.is_none());
    let patch = |body: Value| {
        admin
            .api
            .patch(app.url(&format!("/api/v1/batches/{batch}")))
            .json(&body)
            .go()
    };
    json_with(patch(json!({"max_overlap": 3})).await, StatusCode::OK).await;
    assert_eq!(
        app.rate_all(&raters[2], &batch, |_| favouring("a")).await,
        2
    );
    // Lowered back, the tasks keep what they have and ask no more.
    json_with(patch(json!({"max_overlap": 2})).await, StatusCode::OK).await;
    assert!(extra_per_task(app, "b").await.values().all(|e| *e == 0));
}
db_test!(raising_the_most_escalates_tasks_already_done: TestApp);

async fn a_broken_rule_or_most_is_refused_naming_the_field(app: &TestApp) {
    let admin = app.admin().await;
    let upload = |query: &'static str| {
        admin
            .api
            .post(app.url(&format!("/api/v1/batches?name=x{query}")))
            .header("content-type", "application/x-ndjson")
            .body(tasks_jsonl(1))
            .go()
    };
    let cases = [
        (
            "&overlap=3&max_overlap=2",
            "max_overlap",
            "at least the raters per task (3)",
        ),
        ("&max_overlap=101", "max_overlap", "from 1 to 100"),
        (
            "&max_overlap=3&escalate=most",
            "escalate",
            "unknown rule \"most\"",
        ),
        (
            "&max_overlap=3&escalate=side:a.correctness",
            "escalate",
            "side reads a preference",
        ),
        (
            "&max_overlap=3&escalate=points",
            "escalate",
            "needs a number",
        ),
        (
            "&rubric=additive-5&max_overlap=3",
            "escalate",
            "no preference or choice to escalate on by default",
        ),
    ];
    for (query, field, why) in cases {
        let body = json_with(upload(query).await, StatusCode::UNPROCESSABLE_ENTITY).await;
        let said = body["fields"][field].as_str().unwrap_or_default();
        assert!(said.contains(why), "{query}: {body}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM batches").await, 0);
    // Settings: the same checks, and nothing changed.
    let batch = app.batch(&admin, "b", &tasks_jsonl(1), "&overlap=2").await;
    let response = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"max_overlap": 1, "escalate": "spread:sxs:x"}))
        .go()
        .await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body["fields"]["max_overlap"]
            .as_str()
            .unwrap()
            .contains("at least"),
        "{body}"
    );
    assert!(
        body["fields"]["escalate"]
            .as_str()
            .unwrap()
            .contains("\"x\""),
        "{body}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM batches WHERE max_overlap IS NULL AND escalate IS NULL")
            .await,
        1
    );
}
db_test!(a_broken_rule_or_most_is_refused_naming_the_field: TestApp);

/// Whether rater `r` favours A on task `t`: fixed per pair (std's hasher with its fixed
/// keys), about half each way.
fn favours_a(rater: usize, task: &str) -> bool {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (rater, task).hash(&mut hasher);
    hasher.finish() % 2 == 0
}

async fn adaptive_overlap_holds_under_concurrency_across_two_instances(app: &TestApp) {
    const TASKS: usize = 24;
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "k",
            &tasks_jsonl(TASKS),
            "&overlap=2&max_overlap=4&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let sibling = app.sibling().await;
    let mut raters = Vec::new();
    for i in 0..8 {
        raters.push(app.persona(&format!("r{i}"), Role::Rater).await);
    }
    // A rater who finds nothing left comes back: a task may escalate after they looked.
    // Rounds go on until one in which nobody found anything.
    let mut rated = 0;
    loop {
        let round: Vec<usize> =
            futures_util::future::join_all(raters.iter().enumerate().map(|(i, rater)| {
                let instance = if i % 2 == 0 { app } else { &sibling };
                instance.rate_all(rater, &batch, move |next| {
                    let task = next["task"]["external_id"]
                        .as_str()
                        .expect("an external id");
                    favouring(if favours_a(i, task) { "a" } else { "b" })
                })
            }))
            .await;
        if round.iter().sum::<usize>() == 0 {
            break;
        }
        rated += round.iter().sum::<usize>();
    }
    let per_task = answers_per_task(app, "k").await;
    let extra = extra_per_task(app, "k").await;
    assert_eq!(per_task.len(), TASKS, "every task rated");
    for (task, answers) in &per_task {
        let n = answers.len() as i64;
        assert_eq!(
            n,
            2 + extra[task],
            "{task}: exactly the raters it needs: {answers:?}"
        );
        assert!(n <= 4, "{task}: never above the most: {answers:?}");
        if n < 4 {
            assert_eq!(
                sides(answers).len(),
                1,
                "{task}: stopped short while disagreeing: {answers:?}"
            );
        }
        if n > 2 {
            assert!(
                sides(answers).len() > 1,
                "{task}: escalated without disagreement: {answers:?}"
            );
        }
    }
    assert_eq!(
        rated as i64,
        per_task.values().map(|a| a.len() as i64).sum::<i64>()
    );
    let figures = &app.metrics(&lead, &batch).await["overlap"];
    let added: i64 = extra.values().sum();
    assert_eq!(figures["raters_added"], added);
    assert_eq!(figures["ratings_needed"], 2 * TASKS as i64 + added);
    assert!(
        figures["escalated"].as_i64().unwrap() > 0,
        "the raters were built to disagree: {figures}"
    );
    sibling.close().await;
}
db_test!(adaptive_overlap_holds_under_concurrency_across_two_instances: TestApp);
