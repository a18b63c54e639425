//! Live metrics: an instance keeps each batch's metrics folded in memory and, on every
//! request, folds in only the ratings changed since its last read (through it, another
//! instance or another process). The figures must be those of a full count, whatever
//! happened to the ratings in between: after every kind of change, the metrics of an
//! instance that has followed the batch all along equal, to the last digit, those of an
//! instance that counts the batch afresh.

use std::collections::HashMap;

use reqwest::{RequestBuilder, StatusCode};
use serde_json::{Value, json};
use verdict::auth::Role;

use crate::helpers::{Go, Persona, TestApp, complete_answers, db_test, json_with, tasks_jsonl};
use crate::judge_server::{Reply, ScriptedJudge, shown_first};
use crate::judges::{add_judge, start_run, wait_for};

/// Where two metrics documents first differ, as a path (`agreement.sxs.pairs`), so that
/// a failure names the figure instead of printing both documents whole.
fn difference(path: &str, live: Option<&Value>, fresh: Option<&Value>) -> Option<String> {
    match (live, fresh) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => a
            .keys()
            .chain(b.keys())
            .find_map(|key| difference(&format!("{path}.{key}"), a.get(key), b.get(key))),
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| difference(&format!("{path}[{i}]"), Some(x), Some(y))),
        _ if live == fresh => None,
        _ => {
            let show = |v: Option<&Value>| v.map_or_else(|| "nothing".to_owned(), Value::to_string);
            Some(format!(
                "{path}: {} on the instance that followed the batch, {} in a fresh count",
                show(live),
                show(fresh)
            ))
        }
    }
}

/// The metrics of `batch` as `app` serves them, checked equal to those of a brand-new
/// instance on the same database (which has nothing in memory and counts every rating).
async fn live_equals_fresh(app: &TestApp, lead: &Persona, batch: &str, after: &str) -> Value {
    let live = app.metrics(lead, batch).await;
    let fresh_instance = app.sibling().await;
    let fresh = fresh_instance.metrics(lead, batch).await;
    fresh_instance.close().await;
    if let Some(differs) = difference("metrics", Some(&live), Some(&fresh)) {
        panic!("after {after}: {differs}");
    }
    live
}

/// One of the `counts` of a metrics document.
fn count(m: &Value, what: &str) -> u64 {
    m["counts"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("counts.{what}: {}", m["counts"]))
}

/// Sends `body` with `send`; when the rubric's warnings refuse it (409), sends it again
/// with every one of them confirmed, as a rater who meant it would. The 200 body.
async fn confirming(send: impl Fn(&Value) -> RequestBuilder, body: &Value) -> Value {
    let response = send(body).go().await;
    if response.status() != StatusCode::CONFLICT {
        return json_with(response, StatusCode::OK).await;
    }
    let refused: Value = response.json().await.expect("JSON");
    let ids: Vec<Value> = refused["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("refused for no warning: {refused}"))
        .iter()
        .map(|w| w["id"].clone())
        .collect();
    let mut body = body.clone();
    body["confirmed_warnings"] = Value::Array(ids);
    json_with(send(&body).go().await, StatusCode::OK).await
}

/// An action on an assignment (`submit`, `skip`, `out-of-scope`); the rating's id.
async fn finish(
    app: &TestApp,
    who: &Persona,
    assignment: &str,
    action: &str,
    body: &Value,
) -> String {
    let url = app.url(&format!("/api/v1/assignments/{assignment}/{action}"));
    let done = confirming(|b| who.api.post(&url).json(b), body).await;
    done["rating_id"].as_str().expect("rating id").to_owned()
}

/// A rater's revision of their own rating.
async fn revise(app: &TestApp, who: &Persona, rating: &str, body: &Value) -> Value {
    let url = app.url(&format!("/api/v1/ratings/{rating}"));
    confirming(|b| who.api.put(&url).json(b), body).await
}

/// Takes `who`'s next task of `batch` through `app`; with `swapped`, it is shown with B
/// first (set on the open assignment, as a coin toss of a randomised batch would).
/// Returns the assignment's id and the task's external id.
async fn take(app: &TestApp, who: &Persona, batch: &str, swapped: bool) -> (String, String) {
    let next = app.next(who, batch).await.expect("a task");
    if swapped {
        app.execute(&format!(
            "UPDATE assignments SET swapped = TRUE WHERE state = 'open'
               AND rater_id IN (SELECT id FROM users WHERE username = '{}')",
            who.username
        ))
        .await;
    }
    (
        next["assignment_id"].as_str().unwrap().to_owned(),
        next["task"]["external_id"].as_str().unwrap().to_owned(),
    )
}

/// Takes the next task and submits `answers` (as shown); the rating's id.
async fn rate(app: &TestApp, who: &Persona, batch: &str, swapped: bool, answers: &Value) -> String {
    let (assignment, _) = take(app, who, batch, swapped).await;
    finish(app, who, &assignment, "submit", answers).await
}

/// A lead's decision on a rating, at the version it has now.
async fn decide(app: &TestApp, lead: &Persona, rating: &str, decision: &str) {
    let url = app.url(&format!("/api/v1/ratings/{rating}"));
    let seen = json_with(lead.api.get(&url).go().await, StatusCode::OK).await;
    let body = json!({"decision": decision, "version": seen["version"],
                      "comment": "Look at B's correctness again."});
    let decided = lead
        .api
        .post(format!("{url}/review"))
        .json(&body)
        .go()
        .await;
    json_with(decided, StatusCode::OK).await;
}

/// Blackhat answers as the rater is shown the task: the preference, whether A's answer
/// has a minor flaw, and the active time.
fn blackhat(sxs: i64, a_flawed: bool, time_spent_s: i64) -> Value {
    let mut answers = complete_answers();
    answers["sxs"] = json!(sxs);
    answers["time_spent_s"] = json!(time_spent_s);
    if a_flawed {
        answers["a"]["correctness"] = json!("minor_issues");
        answers["a"]["correctness_explanation"] = json!("It squares one more than it should.");
    }
    answers
}

/// Tasks `t{first}`.. of three models in every pairing, each way round, with responses
/// of different lengths (for the length lean).
fn model_tasks(first: usize, n: usize) -> String {
    let pairs = [
        ("alpha", "beta"),
        ("beta", "gamma"),
        ("gamma", "alpha"),
        ("alpha", "gamma"),
        ("beta", "alpha"),
        ("gamma", "beta"),
    ];
    (first..first + n)
        .map(|i| {
            let (model_a, model_b) = pairs[(i - 1) % pairs.len()];
            json!({
                "external_id": format!("t{i}"),
                "prompt": format!("Write a function that returns {i} squared."),
                "response_a": format!("```python\ndef f():\n    return {i} * {i}\n```{}", " ".repeat(10 * i)),
                "response_b": format!("Use `{i} ** 2`.{}", ".".repeat(90 - 10 * (i % 6))),
                "model_a": model_a, "model_b": model_b
            })
            .to_string()
                + "\n"
        })
        .collect()
}

/// A gold task that expects A to be better (2, give or take 1).
fn gold_task(id: &str) -> String {
    json!({
        "external_id": id,
        "prompt": "Write a function that returns 7 squared.",
        "response_a": "```python\ndef f():\n    return 7 * 7\n```",
        "response_b": "`7 ** 2`",
        "gold": {"sxs": {"value": 2, "within": 1}}
    })
    .to_string()
        + "\n"
}

async fn set_gold(app: &TestApp, lead: &Persona, batch: &str, body: Value) {
    let response = lead
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}/gold")))
        .json(&body)
        .go()
        .await;
    json_with(response, StatusCode::OK).await;
}

/// A judge that finds the response with code better, in whichever order it is shown.
fn blackhat_judge(body: &Value, _: usize) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
    let answers = complete_answers();
    let (code, words) = (answers["a"].clone(), answers["b"].clone());
    let (a, b, sxs) = if shown_first(prompt).contains("```python") {
        (code, words, 2)
    } else {
        (words, code, 6)
    };
    let explanation = "The response with the function asked for is the better one.";
    Reply::text(json!({"a": a, "b": b, "sxs": sxs, "sxs_explanation": explanation}).to_string())
}

async fn metrics_follow_every_change_and_equal_a_fresh_count(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let mut raters = Vec::new();
    for name in ["ana", "ben", "cy", "dee", "eve", "weak"] {
        raters.push(app.persona(name, Role::Rater).await);
    }
    let [ana, ben, cy, dee, eve, weak] = &raters[..] else {
        unreachable!()
    };
    let file = gold_task("g1") + &gold_task("g2") + &gold_task("g3") + &model_tasks(1, 6);
    let batch = app
        .batch(
            &admin,
            "live",
            &file,
            "&overlap=3&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let other = app.sibling().await;
    let check = |after: &'static str| live_equals_fresh(app, &lead, &batch, after);

    let m = check("the upload").await;
    assert_eq!((count(&m, "tasks"), count(&m, "ratings")), (6, 0));

    // A draft is counted as one and left out of every figure; submitted, it counts.
    let (assignment, task) = take(app, ana, &batch, false).await;
    assert_eq!(task, "t1");
    let draft = app
        .act(ana, &assignment, "draft", &blackhat(3, false, 40))
        .await;
    assert_eq!(draft.status(), StatusCode::OK);
    let m = check("a draft").await;
    assert_eq!((count(&m, "drafts"), count(&m, "included")), (1, 0));
    let ana_t1 = finish(app, ana, &assignment, "submit", &blackhat(2, false, 120)).await;
    let m = check("the draft submitted").await;
    assert_eq!((count(&m, "drafts"), count(&m, "included")), (0, 1));
    assert_eq!(m["sxs"]["n"], 1);

    let (assignment, _) = take(app, ben, &batch, false).await;
    finish(
        app,
        ben,
        &assignment,
        "skip",
        &json!({"reason": "unfamiliar"}),
    )
    .await;
    let m = check("a skip").await;
    assert_eq!((count(&m, "skipped"), count(&m, "included")), (1, 1));
    let (assignment, task) = take(app, ben, &batch, false).await;
    assert_eq!(task, "t2");
    let scope = json!({"explanation": "The prompt is a request for a poem."});
    let ben_t2 = finish(app, ben, &assignment, "out-of-scope", &scope).await;
    let m = check("an out-of-scope").await;
    assert_eq!(count(&m, "out_of_scope"), 1);

    // Rated submissions with varied answers, orientations and times: t1 and t2 fill up
    // (three raters each), t3 follows.
    let plan = [
        (cy, true, blackhat(3, false, 300)),
        (dee, false, blackhat(5, true, 2000)),
        (ana, false, blackhat(1, false, 60)),
        (cy, true, blackhat(6, true, 1900)),
        (dee, false, blackhat(4, false, 45)),
        (ana, true, blackhat(7, false, 600)),
        (cy, false, blackhat(2, true, 90)),
    ];
    let mut rated = Vec::new();
    let mut included = count(&m, "included");
    for (who, swapped, answers) in &plan {
        rated.push(rate(app, who, &batch, *swapped, answers).await);
        let m = check("a submission").await;
        included += 1;
        assert_eq!(count(&m, "included"), included);
    }
    let [cy_t1, dee_t1, ana_t2, _, dee_t3, _, cy_t3] = &rated[..] else {
        unreachable!()
    };
    let m = check("the submissions").await;
    assert_eq!(
        m["agreement"]["sxs"]["units"], 3,
        "{}",
        m["agreement"]["sxs"]
    );
    assert_eq!(
        m["models"]["ranking"]["models"].as_array().map(Vec::len),
        Some(3),
        "three models: {}",
        m["models"]
    );
    assert_eq!(m["position_bias"]["swapped"]["n"], 3);
    assert_eq!(m["bias"]["raters"].as_array().map(Vec::len), Some(3));

    // A lead's decisions, and the rater's revisions.
    decide(app, &lead, &ana_t1, "accept").await;
    let m = check("an acceptance").await;
    assert_eq!(count(&m, "included"), included, "accepted still counts");
    decide(app, &lead, dee_t1, "reject").await;
    let m = check("a rejection").await;
    included -= 1;
    assert_eq!(
        (count(&m, "rejected"), count(&m, "included")),
        (1, included)
    );
    decide(app, &lead, cy_t1, "return").await;
    let m = check("a return").await;
    included -= 1;
    assert_eq!(
        (count(&m, "returned"), count(&m, "included")),
        (1, included)
    );
    let revised = revise(app, cy, cy_t1, &blackhat(5, false, 400)).await;
    assert_eq!(revised["status"], "submitted");
    let m = check("the returned rating revised").await;
    included += 1;
    assert_eq!(
        (count(&m, "returned"), count(&m, "included")),
        (0, included)
    );
    let before = m["sxs"]["distribution"].clone();
    revise(app, ana, ana_t2, &blackhat(3, false, 30)).await;
    let m = check("a submitted rating revised").await;
    assert_eq!(count(&m, "included"), included);
    assert_ne!(
        m["sxs"]["distribution"], before,
        "the new answer replaces the old"
    );
    assert_eq!(
        m["sxs"]["distribution"]["1"],
        before["1"].as_u64().unwrap() - 1
    );
    decide(app, &lead, &ana_t1, "return").await;
    let m = check("an accepted rating returned").await;
    included -= 1;
    assert_eq!(
        (count(&m, "returned"), count(&m, "included")),
        (1, included)
    );
    revise(app, ana, &ana_t1, &blackhat(1, true, 200)).await;
    let m = check("its revision").await;
    included += 1;
    assert_eq!(
        (count(&m, "returned"), count(&m, "included")),
        (0, included)
    );
    let mut rated_now = json!({"outcome": "rated"});
    rated_now
        .as_object_mut()
        .unwrap()
        .extend(blackhat(4, false, 500).as_object().unwrap().clone());
    revise(app, ben, &ben_t2, &rated_now).await;
    let m = check("an out-of-scope revised into a rating").await;
    included += 1;
    assert_eq!(
        (count(&m, "out_of_scope"), count(&m, "included")),
        (0, included)
    );
    let scope = json!({"outcome": "out_of_scope",
                       "explanation": "On second thought the prompt asks for a poem."});
    revise(app, dee, dee_t3, &scope).await;
    let m = check("a rating revised into an out-of-scope").await;
    included -= 1;
    assert_eq!(
        (count(&m, "out_of_scope"), count(&m, "included")),
        (1, included)
    );
    revise(
        app,
        cy,
        cy_t3,
        &json!({"outcome": "skipped", "reason": "unfamiliar"}),
    )
    .await;
    let m = check("a rating revised into a skip").await;
    included -= 1;
    assert_eq!((count(&m, "skipped"), count(&m, "included")), (2, included));

    // A rating taken and submitted through the second instance.
    let (assignment, task) = take(&other, eve, &batch, true).await;
    assert_eq!(task, "t1", "the rejection gave its slot back");
    finish(&other, eve, &assignment, "submit", &blackhat(6, false, 75)).await;
    let m = check("a rating made on another instance").await;
    included += 1;
    assert_eq!(count(&m, "included"), included);
    assert!(
        m["raters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["rater"] == "eve"),
        "{}",
        m["raters"]
    );

    // A classification added to the batch, through the other instance: answers to it are
    // counted from then on.
    let questions = json!({"classifications": [{"key": "language", "label": "Language",
                                                "options": ["python", "go"], "required": false}]});
    let patched = admin
        .api
        .patch(other.url(&format!("/api/v1/batches/{batch}")))
        .json(&questions)
        .go()
        .await;
    json_with(patched, StatusCode::OK).await;
    check("a classification added").await;
    let mut classified = blackhat(2, false, 100);
    classified["classifications"] = json!({"language": "python"});
    rate(app, dee, &batch, false, &classified).await;
    let m = check("a classified rating").await;
    included += 1;
    assert_eq!(count(&m, "included"), included);
    assert_eq!(m["fields"]["classifications.language"]["python"], 1);

    // More tasks uploaded into the batch (through the other instance too).
    let topped = other.batch(&admin, "live", &model_tasks(7, 2), "").await;
    assert_eq!(topped, batch);
    let m = check("tasks added").await;
    assert_eq!(count(&m, "tasks"), 8);

    // A rating of another batch counts only there; nor does this batch's count change
    // when other batches' metrics are asked for, enough of them that the instance lets
    // this one go (it keeps a few).
    let before = m;
    let mut elsewhere = Vec::new();
    for n in 1..=5 {
        let batch = app
            .batch(&admin, &format!("elsewhere-{n}"), &tasks_jsonl(1), "")
            .await;
        rate(app, ana, &batch, false, &blackhat(7, false, 10)).await;
        elsewhere.push(batch);
        if n == 1 {
            let m = check("a rating of another batch").await;
            assert_eq!(m, before, "nothing of other batches counts here");
        }
    }
    for other_batch in &elsewhere {
        assert_eq!(count(&app.metrics(&lead, other_batch).await, "included"), 1);
    }
    let m = check("other batches' metrics asked for").await;
    assert_eq!(m, before);

    // A judge's ratings stand beside the raters', never among them.
    let judge = ScriptedJudge::start(blackhat_judge).await;
    add_judge(app, &admin, "scripted", &judge.base_url, json!({})).await;
    let run = start_run(app, &admin, &batch, "scripted").await;
    wait_for(app, &admin, &run, "finished").await;
    assert!(
        app.count("SELECT COUNT(*) FROM ratings WHERE rater_kind = 'judge'")
            .await
            > 0
    );
    let m = check("a judge run").await;
    assert_eq!(m["counts"], before["counts"]);
    assert!(m["judges"]["scripted"].is_object(), "{}", m["judges"]);

    // Review first: weak's earlier rating counts until weak fails three gold tasks and
    // revises it; then it is held out until a lead accepts it, out again once returned.
    let weak_early = rate(app, weak, &batch, false, &blackhat(2, false, 50)).await;
    let m = check("a rating of the rater to be held").await;
    included += 1;
    assert_eq!(count(&m, "included"), included);
    let ratings = count(&m, "ratings");
    set_gold(
        &other,
        &lead,
        &batch,
        json!({"gold_rate": 1.0, "review_first_below": 0.5}),
    )
    .await;
    let m = check("gold settings changed on the other instance").await;
    assert_eq!(m["gold"]["rate"], 1.0);
    for n in 1..=3 {
        let (assignment, task) = take(app, weak, &batch, false).await;
        assert!(task.starts_with('g'), "gold first at rate 1: {task}");
        finish(app, weak, &assignment, "submit", &blackhat(6, false, 20)).await;
        let m = check("a gold rating").await;
        assert_eq!(count(&m, "ratings"), ratings, "gold counts in nothing");
        assert_eq!(m["gold"]["raters"][0]["graded"], n, "{}", m["gold"]);
    }
    set_gold(app, &lead, &batch, json!({"gold_rate": 0.0})).await;
    revise(app, weak, &weak_early, &blackhat(3, false, 60)).await;
    let m = check("the rating revised once its rater is held").await;
    included -= 1;
    assert_eq!(
        (count(&m, "ratings"), count(&m, "included")),
        (ratings - 1, included),
        "held out of every count"
    );
    assert_eq!(m["gold"]["held"], 1);
    rate(app, weak, &batch, false, &blackhat(5, false, 70)).await;
    let m = check("a new held rating").await;
    assert_eq!(
        (count(&m, "ratings"), m["gold"]["held"].clone()),
        (ratings - 1, json!(2))
    );
    decide(app, &lead, &weak_early, "accept").await;
    let m = check("a held rating accepted").await;
    included += 1;
    assert_eq!(
        (count(&m, "included"), m["gold"]["held"].clone()),
        (included, json!(1))
    );
    decide(app, &lead, &weak_early, "return").await;
    let m = check("the held rating returned").await;
    included -= 1;
    assert_eq!(
        (count(&m, "included"), count(&m, "returned")),
        (included, 0),
        "held again, it is in no count"
    );
    revise(app, weak, &weak_early, &blackhat(2, true, 80)).await;
    let m = check("the held rating revised").await;
    assert_eq!(count(&m, "included"), included);
    let bulk = lead
        .api
        .post(app.url("/api/v1/review/accept"))
        .json(&json!({"batch": batch}))
        .go()
        .await;
    let bulk = json_with(bulk, StatusCode::OK).await;
    assert!(bulk["accepted"].as_u64().unwrap() > 2, "{bulk}");
    let m = check("every waiting rating accepted at once").await;
    included += 2;
    assert_eq!(
        (count(&m, "included"), m["gold"]["held"].clone()),
        (included, json!(0))
    );
    other.close().await;
}
db_test!(metrics_follow_every_change_and_equal_a_fresh_count: TestApp);

/// The store hands the ratings to the fold in batches of rows (1,024 on both backends), cold
/// and for the changes since a mark: more ratings than one batch are every one counted,
/// on a cold read and when more than a batch of them changed since the last read.
async fn more_ratings_than_one_read_batch_are_all_counted(app: &TestApp) {
    const TASKS: u64 = 1100;
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "many", &tasks_jsonl(TASKS as usize), "")
        .await;
    for _ in 0..10 {
        app.rate(&rater, &batch, &complete_answers()).await;
    }
    let m = live_equals_fresh(app, &lead, &batch, "the first ten ratings").await;
    assert_eq!(count(&m, "included"), 10);
    let rest = app.rate_all(&rater, &batch, |_| complete_answers()).await;
    assert_eq!(rest as u64, TASKS - 10);
    // The live instance reads the 1,090 changes since its mark; the fresh one all 1,100.
    let m = live_equals_fresh(app, &lead, &batch, "every task rated").await;
    assert_eq!(count(&m, "included"), TASKS);
}
db_test!(more_ratings_than_one_read_batch_are_all_counted: TestApp);

async fn a_rating_made_on_another_instance_shows_at_once(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let ben = app.persona("ben", Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "seen",
            &model_tasks(1, 2),
            "&overlap=2&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let other = app.sibling().await;
    rate(app, &ana, &batch, false, &blackhat(2, false, 60)).await;
    // Both instances have counted the batch once already.
    let m = app.metrics(&lead, &batch).await;
    assert_eq!(count(&m, "included"), 1);
    assert_eq!(other.metrics(&lead, &batch).await, m);

    let rating = rate(&other, &ben, &batch, false, &blackhat(6, false, 90)).await;
    let m = app.metrics(&lead, &batch).await;
    assert_eq!(count(&m, "included"), 2, "the very next request counts it");
    assert_eq!(m["sxs"]["distribution"]["6"], 1);
    assert_eq!(m["agreement"]["sxs"]["pairs"], 1);
    assert_eq!(other.metrics(&lead, &batch).await, m);

    decide(&other, &lead, &rating, "return").await;
    let m = app.metrics(&lead, &batch).await;
    assert_eq!((count(&m, "included"), count(&m, "returned")), (1, 1));
    revise(&other, &ben, &rating, &blackhat(3, false, 120)).await;
    let m = app.metrics(&lead, &batch).await;
    assert_eq!((count(&m, "included"), count(&m, "returned")), (2, 0));
    assert_eq!(
        (
            m["sxs"]["distribution"]["6"].clone(),
            m["sxs"]["distribution"]["3"].clone()
        ),
        (json!(0), json!(1))
    );
    other.close().await;
    live_equals_fresh(app, &lead, &batch, "the changes made on another instance").await;
}
db_test!(a_rating_made_on_another_instance_shows_at_once: TestApp);

/// Tasks t1..t40 for a rubric: one response for `additive-5`, two for the others.
fn fixture_tasks(rubric: &str) -> String {
    (1..=40)
        .map(|i| {
            let prompt = format!("Explain step {i} of a sort.");
            let task = if rubric == "additive-5" {
                json!({"external_id": format!("t{i}"), "prompt": prompt,
                       "response": format!("Step {i} compares two neighbours.")})
            } else {
                json!({"external_id": format!("t{i}"), "prompt": prompt,
                       "response_a": format!("Step {i} compares two neighbours."),
                       "response_b": format!("Step {i} swaps them when out of order.")})
            };
            task.to_string() + "\n"
        })
        .collect()
}

/// Answers other than the fixture's, to be revised into them later.
fn altered(rubric: &str, answers: &Value) -> Value {
    let mut other = answers.clone();
    if rubric == "additive-5" {
        other["repetitive"] = json!(!answers["repetitive"].as_bool().unwrap());
        // The score is worked out from the criteria.
        other.as_object_mut().unwrap().remove("score");
    } else {
        other["helpfulness"] = json!(if answers["helpfulness"] == "a" {
            "b"
        } else {
            "a"
        });
    }
    other
}

/// Rates one fixture batch over HTTP, the raters taking turns, with the metrics read
/// after every submission; some ratings go in with other answers first and are revised
/// into the fixture's. Returns the last metrics.
async fn rate_the_fixture(
    app: &TestApp,
    admin: &Persona,
    lead: &Persona,
    raters: &[Persona],
    rubric: &str,
    case: &Value,
) -> Value {
    let batch = app
        .batch(
            admin,
            rubric,
            &fixture_tasks(rubric),
            &format!("&rubric={rubric}&overlap=4&randomize=false&raters_see_external_ids=true"),
        )
        .await;
    let planned: HashMap<(String, String), Value> = case["ratings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = (
                r["rater"].as_str().unwrap().to_owned(),
                format!("t{}", r["task"]),
            );
            (key, r["answers"].clone())
        })
        .collect();
    // Every rater is offered every task in order (four raters, overlap four), and skips
    // those the fixture has them not rate.
    let mut done = vec![false; raters.len()];
    let mut submitted = 0;
    let mut last = Value::Null;
    while done.iter().any(|d| !d) {
        for (who, done) in raters.iter().zip(&mut done) {
            if *done {
                continue;
            }
            let Some(next) = app.next(who, &batch).await else {
                *done = true;
                continue;
            };
            let assignment = next["assignment_id"].as_str().unwrap();
            let task = next["task"]["external_id"].as_str().unwrap().to_owned();
            let Some(answers) = planned.get(&(who.username.clone(), task)) else {
                finish(
                    app,
                    who,
                    assignment,
                    "skip",
                    &json!({"reason": "unfamiliar"}),
                )
                .await;
                continue;
            };
            if submitted % 7 == 3 {
                let first = altered(rubric, answers);
                let rating = finish(app, who, assignment, "submit", &first).await;
                let m = app.metrics(lead, &batch).await;
                assert_eq!(count(&m, "included"), submitted + 1);
                revise(app, who, &rating, answers).await;
            } else {
                finish(app, who, assignment, "submit", answers).await;
            }
            submitted += 1;
            last = if submitted % 40 == 0 {
                live_equals_fresh(app, lead, &batch, "fixture ratings").await
            } else {
                app.metrics(lead, &batch).await
            };
            assert_eq!(count(&last, "included"), submitted, "{rubric}");
        }
    }
    assert_eq!(
        submitted as usize,
        planned.len(),
        "{rubric}: every rating of the fixture"
    );
    assert_eq!(count(&last, "tasks"), 40);
    live_equals_fresh(app, lead, &batch, "the whole fixture").await;
    last
}

async fn incremental_agreement_matches_the_krippendorff_package(app: &TestApp) {
    let cases: Value =
        serde_json::from_str(include_str!("../fixtures/krippendorff/rubrics.json")).unwrap();
    let admin = app.admin().await;
    let lead = app.lead().await;
    let mut raters = Vec::new();
    for name in ["r1", "r2", "r3", "r4"] {
        raters.push(app.persona(name, Role::Rater).await);
    }
    for rubric in ["additive-5", "pairwise-aspects"] {
        let case = &cases[rubric];
        let m = rate_the_fixture(app, &admin, &lead, &raters, rubric, case).await;
        let expected = case["alpha"].as_object().unwrap();
        assert!(expected.len() >= 6, "{rubric}: {expected:?}");
        for (key, alpha) in expected {
            let got = m["agreement"][key]["krippendorff_alpha"]
                .as_f64()
                .unwrap_or_else(|| panic!("{rubric} {key}: {}", m["agreement"][key]));
            let want = alpha.as_f64().unwrap();
            assert!((got - want).abs() < 1e-9, "{rubric} {key}: {got} vs {want}");
        }
    }
}
db_test!(incremental_agreement_matches_the_krippendorff_package: TestApp);
