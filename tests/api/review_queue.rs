//! The lead's review queue: filters and totals, going on to the next rating after a
//! decision, bulk accept, the disagreement view, and a rating read in the task's own order
//! or, on asking, as the rater saw it.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    Go, Persona, TestApp, complete_answers, csrf_token, db_test, json_with, page_text, tasks_jsonl,
};

async fn rater(app: &TestApp, name: &str) -> Persona {
    app.persona(name, verdict::auth::Role::Rater).await
}

/// Takes `who`'s next task of `batch` and submits what `answers` gives for its external
/// id; returns the rating id and the task's external id.
async fn rate_by_task(
    app: &TestApp,
    who: &Persona,
    batch: &str,
    answers: impl Fn(&str) -> Value,
) -> (String, String) {
    let task = |next: &Value| next["task"]["external_id"].as_str().unwrap().to_owned();
    let (id, next) = app.rate_with(who, batch, |next| answers(&task(next))).await;
    (id, task(&next))
}

fn score(s: i64) -> Value {
    let mut answers = complete_answers();
    answers["sxs"] = json!(s);
    answers
}

async fn queue(app: &TestApp, lead: &Persona, query: &str) -> Value {
    let response = lead
        .api
        .get(app.url(&format!("/api/v1/review{query}")))
        .go()
        .await;
    json_with(response, StatusCode::OK).await
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["rating_id"].as_str().unwrap().to_owned())
        .collect()
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

/// Two batches: `first` (three raters on two tasks, one rating out of scope) and
/// `second` (one rating), and who rated what.
struct Scene {
    admin: Persona,
    lead: Persona,
    first: String,
    second: String,
    /// r1 on t1 (score 2), r1 on t2 (6), r2 on t1 (2), r2 on t2 (2).
    r1_t1: String,
    r1_t2: String,
    r2_t1: String,
    r2_t2: String,
    /// r3's out-of-scope rating of t1.
    r3_oos: String,
    /// r1's rating in the second batch (score 3).
    r1_second: String,
}

async fn scene(app: &TestApp) -> Scene {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let first = app
        .batch(
            &admin,
            "first",
            &tasks_jsonl(2),
            "&overlap=3&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let second = app
        .batch(
            &admin,
            "second",
            &tasks_jsonl(1),
            "&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let (r1, r2, r3) = (
        rater(app, "r1").await,
        rater(app, "r2").await,
        rater(app, "r3").await,
    );
    let by_task = |t1: i64, t2: i64| move |task: &str| score(if task == "t1" { t1 } else { t2 });
    let (a, ta) = rate_by_task(app, &r1, &first, by_task(2, 6)).await;
    let (b, _) = rate_by_task(app, &r1, &first, by_task(2, 6)).await;
    let (r1_t1, r1_t2) = if ta == "t1" { (a, b) } else { (b, a) };
    let (a, ta) = rate_by_task(app, &r2, &first, by_task(2, 2)).await;
    let (b, _) = rate_by_task(app, &r2, &first, by_task(2, 2)).await;
    let (r2_t1, r2_t2) = if ta == "t1" { (a, b) } else { (b, a) };
    let next = app.next(&r3, &first).await.unwrap();
    let oos = app
        .act(
            &r3,
            next["assignment_id"].as_str().unwrap(),
            "out-of-scope",
            &json!({"explanation": "The prompt asks for a poem, not code."}),
        )
        .await;
    let r3_oos = json_with(oos, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (r1_second, _) = rate_by_task(app, &r1, &second, |_| score(3)).await;
    Scene {
        admin,
        lead,
        first,
        second,
        r1_t1,
        r1_t2,
        r2_t1,
        r2_t2,
        r3_oos,
        r1_second,
    }
}

async fn each_queue_filter_narrows_the_list_and_the_total(app: &TestApp) {
    let s = scene(app).await;
    let lead = &s.lead;
    let all = queue(app, lead, "").await;
    assert_eq!(all["total"], 6);
    let t = |page: &Value| page["total"].as_i64().unwrap();

    let first = queue(app, lead, &format!("?batch={}", s.first)).await;
    assert_eq!(t(&first), 5);
    let r1 = queue(app, lead, "?rater=r1").await;
    assert_eq!(
        sorted(ids(&r1)),
        sorted(vec![s.r1_t1.clone(), s.r1_t2.clone(), s.r1_second.clone()])
    );
    let oos = queue(app, lead, "?outcome=out_of_scope").await;
    assert_eq!(ids(&oos), vec![s.r3_oos.clone()]);
    assert_eq!(oos["items"][0]["outcome"], "out_of_scope");
    let both = queue(app, lead, &format!("?batch={}&rater=r1", s.first)).await;
    assert_eq!(
        sorted(ids(&both)),
        sorted(vec![s.r1_t1.clone(), s.r1_t2.clone()])
    );

    // An answer: the side-by-side score 2, then with a batch whose rubric is checked.
    let twos = queue(app, lead, "?question=sxs&answer=2").await;
    assert_eq!(
        sorted(ids(&twos)),
        sorted(vec![s.r1_t1.clone(), s.r2_t1.clone(), s.r2_t2.clone()])
    );
    let six = queue(
        app,
        lead,
        &format!("?batch={}&question=sxs&answer=6", s.first),
    )
    .await;
    assert_eq!(ids(&six), vec![s.r1_t2.clone()]);
    let no_code = queue(
        app,
        lead,
        "?question=b.executability&answer=no_code&rater=r2",
    )
    .await;
    assert_eq!(t(&no_code), 2);

    // Disagreement: on t2 r1 said 6 and r2 said 2; t1 is agreed (the out-of-scope
    // rating does not count and has no score).
    let split = queue(app, lead, "?disagrees=true").await;
    assert_eq!(
        sorted(ids(&split)),
        sorted(vec![s.r1_t2.clone(), s.r2_t2.clone()])
    );
    assert!(split["items"][0]["disagrees"].as_bool().unwrap());
    let calm = queue(app, lead, &format!("?rater=r2&batch={}", s.first)).await;
    let flags: Vec<(String, bool)> = calm["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["rating_id"].as_str().unwrap().to_owned(),
                i["disagrees"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(flags.contains(&(s.r2_t1.clone(), false)) && flags.contains(&(s.r2_t2.clone(), true)));

    // The summary reads the rubric's labels.
    let one = queue(
        app,
        lead,
        &format!("?batch={}&question=sxs&answer=6", s.first),
    )
    .await;
    assert_eq!(
        one["items"][0]["preview"],
        json!([{"question": "Which answer is better overall?", "answer": "B better"}])
    );

    // Status: decided ratings leave the default view and can be browsed.
    assert_eq!(queue(app, lead, "?status=accepted").await["total"], 0);
    let accepted = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{}/review", s.r1_t1)))
        .json(&json!({"decision": "accept", "version": 1}))
        .go()
        .await;
    assert_eq!(accepted.status(), StatusCode::OK);
    assert_eq!(
        ids(&queue(app, lead, "?status=accepted").await),
        vec![s.r1_t1.clone()]
    );
    assert_eq!(queue(app, lead, "").await["total"], 5);
    assert_eq!(
        queue(app, lead, "?status=accepted&rater=r2").await["total"],
        0
    );
}
db_test!(each_queue_filter_narrows_the_list_and_the_total: TestApp);

async fn pages_of_a_filtered_queue_add_up_to_its_total(app: &TestApp) {
    let s = scene(app).await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("?batch={}&limit=2&cursor={c}", s.first),
            None => format!("?batch={}&limit=2", s.first),
        };
        let page = queue(app, &s.lead, &query).await;
        assert_eq!(
            page["total"], 5,
            "the total of every page is the whole list's"
        );
        assert!(page["items"].as_array().unwrap().len() <= 2);
        seen.extend(ids(&page));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (5, 5));

    // The rubric's filters page the same way: three ratings gave a score of 2.
    let mut twos = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("?question=sxs&answer=2&limit=2&cursor={c}"),
            None => "?question=sxs&answer=2&limit=2".to_owned(),
        };
        let page = queue(app, &s.lead, &query).await;
        assert_eq!(page["total"], 3);
        twos.extend(ids(&page));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(
        sorted(twos),
        sorted(vec![s.r1_t1.clone(), s.r2_t1.clone(), s.r2_t2.clone()])
    );

    // The page says where in the list it is.
    let browser = s.lead.browser_for(app).await;
    let html = browser
        .get(app.url(&format!("/review?batch={}&limit=2", s.first)))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("1–2 of 5"), "{html}");
    assert!(html.contains("Accept all 5 shown by these filters"));
    let second = html
        .split("rel=\"next\"")
        .next()
        .and_then(|before| before.rsplit("href=\"").next())
        .map(|href| href.trim_end_matches("\" ").replace("&#38;", "&"))
        .expect("a link to the next page");
    let html = browser
        .get(app.url(&second))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("3–4 of 5"), "{second}: {html}");
    let html = browser
        .get(app.url("/review?question=sxs&answer=2&limit=2"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("1–2 of 3"), "{html}");
}
db_test!(pages_of_a_filtered_queue_add_up_to_its_total: TestApp);

async fn bad_filters_are_refused_naming_the_field(app: &TestApp) {
    let s = scene(app).await;
    let first = &s.first;
    let cases = [
        ("?batch=nope".to_owned(), "batch"),
        ("?rater=nobody".to_owned(), "rater"),
        ("?rater=tab%09name".to_owned(), "rater"),
        ("?outcome=maybe".to_owned(), "outcome"),
        ("?outcome=skipped".to_owned(), "outcome"),
        ("?status=draft".to_owned(), "status"),
        ("?status=pending".to_owned(), "status"),
        ("?question=sxs".to_owned(), "answer"),
        ("?answer=2".to_owned(), "question"),
        ("?question=DROP%20TABLE&answer=1".to_owned(), "question"),
        (
            format!("?batch={first}&question=helpfulness&answer=a"),
            "question",
        ),
        (format!("?batch={first}&question=sxs&answer=9"), "answer"),
        (
            format!("?batch={first}&question=a.correctness&answer=fine"),
            "answer",
        ),
        (
            format!("?batch={first}&question=sxs_explanation&answer=x"),
            "question",
        ),
        ("?disagrees=maybe".to_owned(), "disagrees"),
        ("?limit=0".to_owned(), "limit"),
    ];
    for (query, field) in cases {
        let response = s
            .lead
            .api
            .get(app.url(&format!("/api/v1/review{query}")))
            .go()
            .await;
        let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(body["fields"][field].is_string(), "{query}: {body}");
    }
    let unknown = queue_status(app, &s.lead, "?colour=red").await;
    assert_eq!(unknown, StatusCode::BAD_REQUEST);
    // The rubric names its questions when a batch is picked.
    let body = json_with(
        s.lead
            .api
            .get(app.url(&format!(
                "/api/v1/review?batch={first}&question=nope&answer=1"
            )))
            .go()
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        body["fields"]["question"]
            .as_str()
            .unwrap()
            .contains("a.correctness")
    );
    // The page shows the reason beside its filters.
    let browser = s.lead.browser_for(app).await;
    let page = browser.get(app.url("/review?status=draft")).go().await;
    assert_eq!(page.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = page.text().await.unwrap();
    assert!(html.contains("role=\"alert\">status "), "{html}");
    assert!(html.contains("name=\"rater\""));
}
db_test!(bad_filters_are_refused_naming_the_field: TestApp);

async fn queue_status(app: &TestApp, who: &Persona, query: &str) -> StatusCode {
    who.api
        .get(app.url(&format!("/api/v1/review{query}")))
        .go()
        .await
        .status()
}

async fn leads_see_and_accept_only_the_batches_they_lead(app: &TestApp) {
    let s = scene(app).await;
    let other = app.persona("lead2", verdict::auth::Role::Lead).await;
    let restricted = s
        .admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{}", s.second)))
        .json(&json!({"leads": ["lead"]}))
        .go()
        .await;
    assert_eq!(restricted.status(), StatusCode::OK);
    assert_eq!(queue(app, &other, "").await["total"], 5);
    let hidden = queue_status(app, &other, &format!("?batch={}", s.second)).await;
    assert_eq!(hidden, StatusCode::NOT_FOUND);
    let spread = other
        .api
        .get(app.url(&format!("/api/v1/batches/{}/disagreements", s.second)))
        .go()
        .await;
    assert_eq!(
        spread.status(),
        StatusCode::NOT_FOUND,
        "not a batch lead2 leads"
    );

    let accept = |who: &Persona, body: Value| {
        who.api
            .post(app.url("/api/v1/review/accept"))
            .json(&body)
            .go()
    };
    let r1 = rater(app, "r9").await;
    assert_eq!(accept(&r1, json!({})).await.status(), StatusCode::FORBIDDEN);
    let other_batch = accept(&other, json!({"batch": s.second})).await;
    assert_eq!(other_batch.status(), StatusCode::NOT_FOUND);
    let bad = json_with(
        accept(&other, json!({"batch": "nope", "outcome": "maybe"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(bad["fields"]["batch"].is_string() && bad["fields"]["outcome"].is_string());
    let nul = json_with(
        accept(&other, json!({"rater": "nul\u{0}name"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(nul["fields"]["rater"].is_string(), "{nul}");
    let zero = json!({"seen": [{"rating_id": s.r1_t1, "version": 0}]});
    let zero = json_with(accept(&other, zero).await, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(zero["fields"]["seen[0].version"].is_string(), "{zero}");

    // Without a batch, a lead's bulk accept stays inside the batches they lead.
    let done = json_with(accept(&other, json!({"rater": "r1"})).await, StatusCode::OK).await;
    assert_eq!(done["accepted"], 2);
    assert_eq!(
        sorted(
            done["accepted_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        ),
        sorted(vec![s.r1_t1.clone(), s.r1_t2.clone()])
    );
    assert_eq!(
        ids(&queue(app, &s.lead, "?rater=r1").await),
        vec![s.r1_second.clone()]
    );
}
db_test!(leads_see_and_accept_only_the_batches_they_lead: TestApp);

async fn bulk_accept_reviews_each_rating_and_skips_what_changed(app: &TestApp) {
    let s = scene(app).await;
    let lead = &s.lead;
    let seen = queue(app, lead, &format!("?batch={}", s.first)).await;
    let mut listed: Vec<Value> = seen["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| json!({"rating_id": i["rating_id"], "version": i["version"]}))
        .collect();
    // Meanwhile another lead returns r2's rating of t1, and one entry names a version
    // the lead never saw.
    let other = app.persona("lead2", verdict::auth::Role::Lead).await;
    let returned = other
        .api
        .post(app.url(&format!("/api/v1/ratings/{}/review", s.r2_t1)))
        .json(&json!({"decision": "return", "comment": "Explain B again.", "version": 1}))
        .go()
        .await;
    assert_eq!(returned.status(), StatusCode::OK);
    for entry in &mut listed {
        if entry["rating_id"] == json!(s.r3_oos) {
            entry["version"] = json!(7);
        }
    }
    let history_before = app
        .count("SELECT COUNT(*) FROM rating_history WHERE action = 'review: accept'")
        .await;
    let done = json_with(
        lead.api
            .post(app.url("/api/v1/review/accept"))
            .json(&json!({"batch": s.first, "seen": listed}))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["accepted"], 3, "{done}");
    let skipped: Vec<String> = done["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["rating_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sorted(skipped),
        sorted(vec![s.r2_t1.clone(), s.r3_oos.clone()])
    );
    assert!(
        done["skipped"]
            .to_string()
            .contains("changed since you saw it")
    );
    // Each accept is a normal review: history, a review row and an audit entry.
    let history_after = app
        .count("SELECT COUNT(*) FROM rating_history WHERE action = 'review: accept'")
        .await;
    assert_eq!(history_after - history_before, 3);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM reviews WHERE decision = 'accept'")
            .await,
        3
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'rating.review'")
            .await,
        4,
        "three accepts and the other lead's return"
    );
    let rating = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/ratings/{}", s.r1_t2)))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(rating["status"], "accepted");
    let returned = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/ratings/{}", s.r2_t1)))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        returned["status"], "returned",
        "the other lead's decision stands"
    );

    // The page: a confirmation listing what it would accept, then the result.
    let browser = lead.browser_for(app).await;
    let confirm = browser
        .get(app.url(&format!("/review/accept?batch={}", s.second)))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(confirm.contains("Accept 1 rating?"), "{confirm}");
    let seen_field = format!("{}:1", s.r1_second);
    assert!(confirm.contains(&seen_field));
    let posted = browser
        .post(app.url("/review/accept"))
        .form(&[
            ("csrf_token", csrf_token(&confirm).as_str()),
            ("batch", s.second.as_str()),
            ("seen", seen_field.as_str()),
        ])
        .go()
        .await;
    assert_eq!(posted.status(), StatusCode::OK);
    assert!(posted.text().await.unwrap().contains("Accepted 1 rating"));
    assert_eq!(
        ids(&queue(app, lead, "").await),
        vec![s.r3_oos.clone()],
        "only the skipped stale one still waits"
    );
}
db_test!(bulk_accept_reviews_each_rating_and_skips_what_changed: TestApp);

async fn after_a_decision_the_lead_lands_on_the_next_rating_of_the_filtered_queue(app: &TestApp) {
    let s = scene(app).await;
    let browser = s.lead.browser_for(app).await;
    // r1's ratings, oldest first: t1, t2, then the second batch's.
    let order = ids(&queue(app, &s.lead, "?rater=r1").await);
    assert_eq!(order.len(), 3);
    let decide = async |rating: &str, decision: &str| {
        let page = browser
            .get(app.url(&format!("/review/{rating}?rater=r1")))
            .go()
            .await
            .text()
            .await
            .unwrap();
        assert!(
            page.contains(&format!("action=\"/review/{rating}?rater=r1\"")),
            "{page}"
        );
        let posted = browser
            .post(app.url(&format!("/review/{rating}?rater=r1")))
            .form(&[
                ("csrf_token", csrf_token(&page).as_str()),
                ("decision", decision),
                ("comment", "Say which line fails."),
                ("version", "1"),
            ])
            .go()
            .await;
        assert_eq!(posted.status(), StatusCode::SEE_OTHER);
        posted.headers()["location"].to_str().unwrap().to_owned()
    };
    assert_eq!(
        decide(&order[0], "accept").await,
        format!("/review/{}?rater=r1", order[1])
    );
    assert_eq!(
        decide(&order[1], "return").await,
        format!("/review/{}?rater=r1", order[2])
    );
    assert_eq!(decide(&order[2], "reject").await, "/review?rater=r1");
    let empty = browser
        .get(app.url("/review?rater=r1"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(empty.contains("Queue empty"));
}
db_test!(after_a_decision_the_lead_lands_on_the_next_rating_of_the_filtered_queue: TestApp);

fn aspects(helpful: &str, clear: &str) -> Value {
    json!({"helpfulness": helpful, "clarity": clear, "factuality": "tie", "depth": "tie",
           "engagement": "tie", "safety": "tie", "rationale": "They differ in how they explain it."})
}

async fn the_disagreement_view_puts_the_widest_spread_first(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "spread",
            &tasks_jsonl(3),
            "&overlap=3&randomize=false&raters_see_external_ids=true",
        )
        .await;
    // t1: 2, 2, 2 (agreed); t2: 1, 7, 4 (spread 6); t3: 3, 5, 4 (spread 2).
    let scores = [("t1", [2, 2, 2]), ("t2", [1, 7, 4]), ("t3", [3, 5, 4])];
    for i in 0..3 {
        let who = rater(app, &format!("s{i}")).await;
        for _ in 0..3 {
            rate_by_task(app, &who, &batch, |task| {
                let (_, s) = scores.iter().find(|(t, _)| *t == task).unwrap();
                score(s[i])
            })
            .await;
        }
    }
    let found = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{batch}/disagreements")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let order: Vec<&str> = found["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["external_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["t2", "t3", "t1"]);
    let top = &found["tasks"][0];
    assert_eq!(
        (top["raters"].as_i64(), top["disagreeing"].as_i64()),
        (Some(3), Some(2))
    );
    assert_eq!(top["questions"][0]["question"], "sxs");
    assert_eq!(top["questions"][0]["spread"], 6.0);
    assert_eq!(found["tasks"][1]["questions"][0]["spread"], 2.0);

    let browser = lead.browser_for(app).await;
    let html = browser
        .get(app.url(&format!("/batches/{batch}/disagreements")))
        .go()
        .await
        .text()
        .await
        .unwrap();
    let at = |t: &str| html.find(&format!("/tasks/{t}\"")).unwrap();
    assert!(at("t2") < at("t3") && at("t3") < at("t1"));
    assert!(
        html.contains("spread 6 (A much better to B much better, 3 answers)"),
        "{html}"
    );
    let batch_page = browser
        .get(app.url(&format!("/batches/{batch}")))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(batch_page.contains(&format!("href=\"/batches/{batch}/disagreements\"")));

    let r = rater(app, "outsider").await;
    let refused = r
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/disagreements")))
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let missing = lead
        .api
        .get(app.url("/api/v1/batches/0190f4c6-0000-7000-8000-000000000000/disagreements"))
        .go()
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    // Another rubric: options of a preference spread from A to B.
    let pairwise = app
        .batch(
            &admin,
            "aspects",
            &tasks_jsonl(2),
            "&rubric=pairwise-aspects&overlap=2&randomize=false&raters_see_external_ids=true",
        )
        .await;
    for (i, helpful) in ["a", "b"].into_iter().enumerate() {
        let who = rater(app, &format!("p{i}")).await;
        for _ in 0..2 {
            rate_by_task(app, &who, &pairwise, |task| {
                if task == "t2" {
                    aspects(helpful, "tie")
                } else {
                    aspects("tie", "tie")
                }
            })
            .await;
        }
    }
    let found = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{pairwise}/disagreements")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(found["tasks"][0]["external_id"], "t2");
    assert_eq!(found["tasks"][0]["questions"][0]["spread"], 2.0);
    assert_eq!(found["tasks"][1]["largest_share"], 0.0);
    let side_by_side = browser
        .get(app.url(&format!("/batches/{pairwise}/tasks/t2")))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(
        side_by_side.contains("≠ differs</span> A is better"),
        "{side_by_side}"
    );
    assert!(!side_by_side.contains("Classifications"), "no empty rows");
    let queue = queue(app, &lead, &format!("?batch={pairwise}&disagrees=true")).await;
    assert_eq!(queue["total"], 2);
    let filtered = queue_status(
        app,
        &lead,
        &format!("?batch={pairwise}&question=helpfulness&answer=b"),
    )
    .await;
    assert_eq!(filtered, StatusCode::OK);
}
db_test!(the_disagreement_view_puts_the_widest_spread_first: TestApp);

/// The slice of a page's answer table that holds the row labelled `label`.
fn answer_row<'h>(html: &'h str, label: &str) -> &'h str {
    let start = html
        .find(&format!("<th scope=\"row\">{label}</th>"))
        .unwrap_or_else(|| panic!("no row {label}"));
    let end = html[start..].find("</tr>").unwrap() + start;
    &html[start..end]
}

async fn a_swapped_rating_reads_in_the_tasks_order_and_as_the_rater_saw_it_on_asking(
    app: &TestApp,
) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let who = rater(app, "r1").await;
    let batch = app
        .batch(
            &admin,
            "turned",
            &tasks_jsonl(30),
            "&raters_see_external_ids=true",
        )
        .await;
    // Take tasks until one is shown swapped (B, "Use `...`", first).
    let (assignment, swapped_task) = loop {
        let next = app
            .next(&who, &batch)
            .await
            .expect("a swapped task among 30");
        let assignment = next["assignment_id"].as_str().unwrap().to_owned();
        if next["task"]["response_a"]
            .as_str()
            .unwrap()
            .starts_with("Use `")
        {
            break (
                assignment,
                next["task"]["external_id"].as_str().unwrap().to_owned(),
            );
        }
        app.act(&who, &assignment, "submit", &score(4)).await;
    };
    let mut answers = complete_answers();
    answers["a"]["correctness"] = json!("minor_issues");
    answers["a"]["correctness_explanation"] =
        json!("My A, the first one I saw, squares with ** but names nothing.");
    let done = app.act(&who, &assignment, "submit", &answers).await;
    let rating = json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let browser = lead.browser_for(app).await;
    let page = |query: &'static str| {
        let url = app.url(&format!("/review/{rating}{query}"));
        let browser = browser.clone();
        async move { browser.get(url).go().await.text().await.unwrap() }
    };
    let pane = |html: &str| {
        let start = html.find("Response A</h2>").unwrap();
        let end = html[start..].find("</section>").unwrap() + start;
        html[start..end].to_owned()
    };

    // Every lead view reads the task's own order by default: the rater's A is the
    // task's B, and its explanation is marked as written the other way round.
    let canonical = page("").await;
    assert!(canonical.contains("The task's own order"));
    let b = answer_row(&canonical, "B · Correctness");
    assert!(
        b.contains("My A, the first one I saw") && b.contains("written when B was shown first"),
        "canonically it is B, marked: {b}"
    );
    assert!(!answer_row(&canonical, "A · Correctness").contains("My A"));
    let overall = answer_row(&canonical, "Which answer is better overall?");
    assert!(overall.contains("B better"), "{overall}");
    let canonical_a = pane(&canonical);
    assert!(
        !canonical_a.contains("Use ") && canonical_a.contains("class=\"code"),
        "{canonical_a}"
    );
    assert!(canonical.contains(&format!("href=\"/review/{rating}?view=shown\"")));
    assert_eq!(
        page("?view=canonical").await,
        canonical,
        "the default, asked by name"
    );

    // The queue names the same side for the same rating.
    let queue = page_text(app, &browser, "/review").await;
    let at = queue
        .find(&format!("href=\"/review/{rating}"))
        .expect("the rating in the queue");
    let row = &queue[queue[..at].rfind("<tr").unwrap()..at];
    assert!(
        row.contains("B better") && !row.contains("A better"),
        "{row}"
    );

    // As the rater saw it, on asking: A is the response they were shown first, and the
    // explanation reads as written, unmarked.
    let shown = page("?view=shown").await;
    assert!(shown.contains("As the rater saw it"));
    let a = answer_row(&shown, "A · Correctness");
    assert!(
        a.contains("Minor issue(s)") && a.contains("My A, the first one I saw"),
        "{a}"
    );
    assert!(!shown.contains("written when B was shown first"));
    assert!(answer_row(&shown, "Which answer is better overall?").contains("A better"));
    let first = pane(&shown);
    assert!(
        first.contains("Use ") && !first.contains("class=\"code"),
        "the rater's A was the task's B: {first}"
    );
    assert!(shown.contains(&format!("href=\"/review/{rating}?view=canonical\"")));
    let bad = browser
        .get(app.url(&format!("/review/{rating}?view=sideways")))
        .go()
        .await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!swapped_task.is_empty());
}
db_test!(a_swapped_rating_reads_in_the_tasks_order_and_as_the_rater_saw_it_on_asking: TestApp);

async fn ticked_ratings_are_decided_together_and_a_return_needs_its_comment(app: &TestApp) {
    let s = scene(app).await;
    let browser = s.lead.browser_for(app).await;
    let page = browser
        .get(app.url("/review?rater=r1"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("id=\"bulk-form\""), "{page}");
    let csrf = csrf_token(&page);
    let post = async |fields: &[(&str, &str)]| {
        let mut form = vec![("csrf_token", csrf.as_str())];
        form.extend_from_slice(fields);
        let posted = browser
            .post(app.url("/review/selected?rater=r1"))
            .form(&form)
            .go()
            .await;
        assert_eq!(posted.status(), StatusCode::SEE_OTHER);
        let to = posted.headers()["location"].to_str().unwrap().to_owned();
        assert_eq!(to, "/review?rater=r1", "back under the same filters");
        page_text(app, &browser, &to).await
    };
    let (t1, t2) = (format!("{}:1", s.r1_t1), format!("{}:1", s.r1_t2));
    // A return without its comment changes nothing, and says so.
    let said = post(&[("decision", "return"), ("seen", &t1), ("seen", &t2)]).await;
    assert!(
        said.contains("Nothing was changed: the comment is required to return ratings"),
        "{said}"
    );
    assert_eq!(ids(&queue(app, &s.lead, "?rater=r1").await).len(), 3);
    // Returned together, each with the comment, as a normal review.
    let said = post(&[
        ("decision", "return"),
        ("comment", "Explain the score."),
        ("seen", &t1),
        ("seen", &t2),
    ])
    .await;
    assert!(
        said.contains("Returned 2 ratings to their raters, with your comment."),
        "{said}"
    );
    for id in [&s.r1_t1, &s.r1_t2] {
        let rating = json_with(
            s.lead
                .api
                .get(app.url(&format!("/api/v1/ratings/{id}")))
                .go()
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(rating["status"], "returned");
        assert_eq!(rating["review_comment"], "Explain the score.", "{rating}");
    }
    // A version the lead did not see, and one no longer waiting, are left alone.
    let said = post(&[
        ("decision", "reject"),
        ("seen", &format!("{}:7", s.r1_second)),
    ])
    .await;
    assert!(
        said.contains("Rejected 0 ratings: their tasks go to other raters. 1 was left alone: changed since you saw it (version 7 is now 1)."),
        "{said}"
    );
    let said = post(&[("decision", "accept"), ("seen", &t1)]).await;
    assert!(
        said.contains("Accepted 0 ratings. 1 was left alone: no longer waits"),
        "{said}"
    );
    // An unknown decision is refused by its name; nothing ticked changes nothing.
    let said = post(&[
        ("decision", "maybe"),
        ("seen", &format!("{}:1", s.r1_second)),
    ])
    .await;
    assert!(
        said.contains(
            "Nothing was changed: unknown decision &quot;maybe&quot;: use accept, return or reject."
        ) || said.contains(
            "Nothing was changed: unknown decision &#34;maybe&#34;: use accept, return or reject."
        ),
        "{said}"
    );
    let said = post(&[("decision", "accept")]).await;
    assert!(said.contains("Tick the ratings to decide first"), "{said}");
    assert_eq!(
        ids(&queue(app, &s.lead, "?rater=r1").await),
        vec![s.r1_second.clone()]
    );
}
db_test!(ticked_ratings_are_decided_together_and_a_return_needs_its_comment: TestApp);
