//! Skills routing (issue 31): people have skills; a batch routed by a task field offers a
//! rater the tasks whose value is one of their skills first (`prefer`) or only
//! (`strict`); skips before and after routing, tasks nobody allowed can take, and
//! suggestions from unfamiliar skips reach the lead; skills are set by admins, by leads
//! for raters and by leads and admins for themselves, from the API, the pages and the CLI;
//! a rater only declares theirs, which widens `prefer` and never `strict` (issue 50).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use verdict::auth::Role;

/// Tasks `t1`, `t2`, ... with these `metadata.language` values (`None`: no such key).
fn tasks_in(languages: &[Option<Value>]) -> String {
    jsonl(languages.iter().enumerate().map(|(i, language)| {
        let mut task = pair_task(
            &format!("t{}", i + 1),
            &format!("Write a function that returns {i} squared."),
            ["def f(): return 1", "f = lambda: 1"],
            ["alpha", "beta"],
        );
        if let Some(language) = language {
            task["metadata"] = json!({ "language": language });
        }
        task
    }))
}

fn lang(name: &str) -> Option<Value> {
    Some(json!(name))
}

/// Sets `who`'s skills as `by`, answering with the status and body.
async fn set_skills(
    app: &TestApp,
    by: &Persona,
    who: &Persona,
    skills: Value,
) -> (StatusCode, Value) {
    let response = by
        .api
        .patch(app.url(&format!("/api/v1/users/{}", who.id)))
        .json(&json!({ "skills": skills }))
        .go()
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The external ids `rater` is offered in turn, rating each (the batches here show
/// external ids to raters).
async fn offered(app: &TestApp, rater: &Persona, batch: &str) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(next) = app.next(rater, batch).await {
        seen.push(
            next["task"]["external_id"]
                .as_str()
                .expect("external id")
                .to_owned(),
        );
        let done = app
            .act(rater, &assignment_id(&next), "submit", &complete_answers())
            .await;
        json_with(done, StatusCode::OK).await;
    }
    seen
}

async fn strict_routing_offers_a_rater_only_the_tasks_they_know(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "strict",
            &tasks_in(&[
                lang("rust"),
                lang("python"),
                lang(" Rust "),
                lang("go"),
                None,
                Some(json!(3)),
            ]),
            "&route_by=metadata.language&routing=strict&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let view = app.batch_view(&admin, &batch).await;
    assert_eq!(view["route_by"], "metadata.language");
    assert_eq!(view["routing"], "strict");
    assert_eq!(
        set_skills(app, &admin, &ana, json!(["RUST"])).await.0,
        StatusCode::OK
    );

    // Rust (whatever its case and spaces) and the tasks without a language, in order.
    assert_eq!(offered(app, &ana, &batch).await, ["t1", "t3", "t5", "t6"]);
    // No skills: only tasks without a language, and those are taken.
    assert!(app.next(&bo, &batch).await.is_none());
    let routing = &app.metrics(&lead, &batch).await["routing"];
    assert_eq!(routing["route_by"], "metadata.language");
    assert_eq!(routing["unmatched"], json!({"go": 1, "python": 1}));
    assert_eq!(routing["unmatched_tasks"], 2);
    let page = page_text(
        app,
        &app.login("lead", PASSWORD).await,
        &format!("/batches/{batch}"),
    )
    .await;
    assert!(
        page.contains("2 tasks with room left wait for a rater with the skill"),
        "{page}"
    );

    // A lead gives bo Python: bo gets the Python task, and only it.
    let (status, user) = set_skills(app, &lead, &bo, json!(["Python"])).await;
    assert_eq!(status, StatusCode::OK, "{user}");
    assert_eq!(user["skills"], json!(["python"]));
    assert_eq!(offered(app, &bo, &batch).await, ["t2"]);
    let routing = &app.metrics(&lead, &batch).await["routing"];
    assert_eq!(routing["unmatched"], json!({"go": 1}));
}
db_test!(strict_routing_offers_a_rater_only_the_tasks_they_know: TestApp);

async fn prefer_routing_offers_matching_tasks_first_then_any(app: &TestApp) {
    let admin = app.admin().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let cy = app.persona("cy", Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "prefer",
            &tasks_in(&[lang("python"), lang("rust"), lang("python"), lang("rust")]),
            "&overlap=3&route_by=metadata.language&randomize=false&raters_see_external_ids=true",
        )
        .await;
    assert_eq!(app.batch_view(&admin, &batch).await["routing"], "prefer");
    set_skills(app, &admin, &ana, json!(["rust"])).await;
    set_skills(app, &admin, &cy, json!(["go", "python"])).await;
    assert_eq!(offered(app, &ana, &batch).await, ["t2", "t4", "t1", "t3"]);
    assert_eq!(offered(app, &bo, &batch).await, ["t1", "t2", "t3", "t4"]);
    assert_eq!(offered(app, &cy, &batch).await, ["t1", "t3", "t2", "t4"]);
}
db_test!(prefer_routing_offers_matching_tasks_first_then_any: TestApp);

async fn routing_set_later_keys_the_tasks_and_counts_skips_before_and_after(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "later",
            &tasks_in(&[lang("rust"), lang("go"), lang("rust"), lang("go")]),
            "&randomize=false&raters_see_external_ids=true",
        )
        .await;
    assert_eq!(
        app.batch_view(&admin, &batch).await["route_by"],
        Value::Null
    );
    assert!(app.metrics(&lead, &batch).await.get("routing").is_none());
    // Before routing, bo skips a Rust task as unfamiliar.
    let next = app.next(&bo, &batch).await.expect("a task");
    assert_eq!(next["task"]["external_id"], "t1");
    let skipped = app
        .act(
            &bo,
            &assignment_id(&next),
            "skip",
            &json!({"reason": "unfamiliar"}),
        )
        .await;
    json_with(skipped, StatusCode::OK).await;

    let patch = |body: Value| {
        admin
            .api
            .patch(app.url(&format!("/api/v1/batches/{batch}")))
            .json(&body)
            .go()
    };
    let changed = json_with(
        patch(json!({"route_by": "metadata.language", "routing": "strict"})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(changed["route_by"], "metadata.language", "{changed}");
    set_skills(app, &admin, &ana, json!(["rust"])).await;
    assert_eq!(offered(app, &ana, &batch).await, ["t1", "t3"]);
    let routing = &app.metrics(&lead, &batch).await["routing"];
    assert_eq!(routing["routing"], "strict");
    assert_eq!(
        routing["before"],
        json!({"finished": 1, "skipped": 1, "skipped_share": 1.0, "by_reason": {"unfamiliar": 1}})
    );
    assert_eq!(
        routing["after"],
        json!({"finished": 2, "skipped": 0, "skipped_share": 0.0, "by_reason": {}})
    );
    assert_eq!(routing["unmatched"], json!({"go": 2}));

    // Routed by nothing again: every task is anyone's, in order.
    json_with(patch(json!({"route_by": null})).await, StatusCode::OK).await;
    assert!(app.metrics(&lead, &batch).await.get("routing").is_none());
    assert_eq!(
        app.count("SELECT COUNT(*) FROM tasks WHERE route_key IS NOT NULL")
            .await,
        0
    );
    assert_eq!(offered(app, &bo, &batch).await, ["t2", "t4"]);
    // The audit log says what changed, in words.
    let audit = page_text(app, &app.login("admin", PASSWORD).await, "/admin/audit").await;
    assert!(audit.contains("Route tasks by"), "{audit}");
}
db_test!(routing_set_later_keys_the_tasks_and_counts_skips_before_and_after: TestApp);

async fn unfamiliar_skips_make_a_suggestion_for_the_lead(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let cy = app.persona("cy", Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "skips",
            &tasks_in(&[
                lang("rust"),
                lang("rust"),
                lang("rust"),
                lang("rust"),
                lang("go"),
            ]),
            "&route_by=metadata.language&randomize=false",
        )
        .await;
    set_skills(app, &admin, &cy, json!(["rust"])).await;
    for _ in 0..3 {
        let next = app.next(&cy, &batch).await.expect("a task");
        let skipped = app
            .act(
                &cy,
                &assignment_id(&next),
                "skip",
                &json!({"reason": "unfamiliar"}),
            )
            .await;
        json_with(skipped, StatusCode::OK).await;
    }
    app.rate(&cy, &batch, &complete_answers()).await;
    let routing = &app.metrics(&lead, &batch).await["routing"];
    assert_eq!(
        routing["suggestions"],
        json!([{"rater": "cy", "key": "rust", "skipped": 3, "finished": 4, "has_skill": true}])
    );
    let page = page_text(
        app,
        &app.login("lead", PASSWORD).await,
        &format!("/batches/{batch}"),
    )
    .await;
    assert!(
        page.contains("cy skipped 3 of 4 rust tasks as unfamiliar; rust is one of their skills"),
        "{page}"
    );
}
db_test!(unfamiliar_skips_make_a_suggestion_for_the_lead: TestApp);

async fn skills_are_set_by_admins_leads_and_oneself_and_checked(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let other_lead = app.persona("lea", Role::Lead).await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;

    let (status, user) = set_skills(app, &admin, &ana, json!([" Rust", "python", "rust"])).await;
    assert_eq!(status, StatusCode::OK, "{user}");
    assert_eq!(user["skills"], json!(["python", "rust"]));
    // A lead sets a rater's skills, and nothing else.
    assert_eq!(
        set_skills(app, &lead, &ana, json!(["go"])).await.0,
        StatusCode::OK
    );
    for (by, who, body) in [
        (&lead, &ana, json!({"role": "lead"})),
        (&lead, &ana, json!({"skills": ["go"], "active": false})),
        (&lead, &other_lead, json!({"skills": ["go"]})),
        (&bo, &ana, json!({"skills": ["go"]})),
    ] {
        let response = by
            .api
            .patch(app.url(&format!("/api/v1/users/{}", who.id)))
            .json(&body)
            .go()
            .await;
        assert_eq!(
            response.status(),
            StatusCode::FORBIDDEN,
            "{} on {}: {body}",
            by.username,
            who.username
        );
    }
    // Oneself, through /api/v1/me: a rater declares, a lead sets.
    let mine = bo
        .api
        .patch(app.url("/api/v1/me"))
        .json(&json!({"declared_skills": ["SQL", "go"]}))
        .go()
        .await;
    let mine = json_with(mine, StatusCode::OK).await;
    assert_eq!(
        (mine["declared_skills"].clone(), mine["skills"].clone()),
        (json!(["go", "sql"]), json!([]))
    );
    let me = json_with(bo.api.get(app.url("/api/v1/me")).go().await, StatusCode::OK).await;
    assert_eq!(me["declared_skills"], json!(["go", "sql"]));
    assert_eq!(me["role"], "rater");
    let sneaky = bo
        .api
        .patch(app.url("/api/v1/me"))
        .json(&json!({"declared_skills": ["go"], "role": "admin"}))
        .go()
        .await;
    assert!(sneaky.status().is_client_error(), "{}", sneaky.status());
    let me = json_with(bo.api.get(app.url("/api/v1/me")).go().await, StatusCode::OK).await;
    assert_eq!(
        (me["role"].clone(), me["declared_skills"].clone()),
        (json!("rater"), json!(["go", "sql"]))
    );
    let led = lead
        .api
        .patch(app.url("/api/v1/me"))
        .json(&json!({"skills": ["Go"]}))
        .go()
        .await;
    assert_eq!(
        json_with(led, StatusCode::OK).await["skills"],
        json!(["go"])
    );

    // Broken skills are refused naming the field, and change nothing.
    let many: Vec<String> = (0..51).map(|n| format!("s{n}")).collect();
    for bad in [
        json!([""]),
        json!(["a,b"]),
        json!(["x".repeat(41)]),
        json!(many),
    ] {
        let (status, body) = set_skills(app, &admin, &ana, bad.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert!(body.to_string().contains("skills"), "{body}");
    }
    let (status, _) = set_skills(app, &admin, &ana, json!("rust")).await;
    assert!(status.is_client_error(), "{status}");
    let users = json_with(
        admin.api.get(app.url("/api/v1/users")).go().await,
        StatusCode::OK,
    )
    .await;
    let ana_now = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == "ana")
        .unwrap();
    assert_eq!(ana_now["skills"], json!(["go"]));

    // Every change is in the audit log, before and after.
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'user.update' AND target = 'ana'")
            .await,
        2
    );
}
db_test!(skills_are_set_by_admins_leads_and_oneself_and_checked: TestApp);

async fn a_broken_route_is_refused_naming_the_field(app: &TestApp) {
    let admin = app.admin().await;
    for (query, field) in [
        ("&route_by=language", "route_by"),
        ("&route_by=metadata.a%20b", "route_by"),
        ("&route_by=metadata.language&routing=loose", "routing"),
    ] {
        let response = admin
            .api
            .post(app.url(&format!("/api/v1/batches?name=broken{query}")))
            .header("content-type", "application/x-ndjson")
            .body(tasks_jsonl(2))
            .go()
            .await;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_client_error(), "{query}: {status}");
        if status == StatusCode::UNPROCESSABLE_ENTITY {
            assert!(body["fields"].get(field).is_some(), "{query}: {body}");
        }
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM batches").await, 0);

    let batch = app
        .batch(
            &admin,
            "routed",
            &tasks_jsonl(2),
            "&route_by=metadata.language",
        )
        .await;
    for (body, field) in [
        (json!({"route_by": "metadata."}), "route_by"),
        (json!({"routing": "loose"}), "routing"),
    ] {
        let response = admin
            .api
            .patch(app.url(&format!("/api/v1/batches/{batch}")))
            .json(&body)
            .go()
            .await;
        let refused = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(refused["fields"].get(field).is_some(), "{body}: {refused}");
    }
    let view = app.batch_view(&admin, &batch).await;
    assert_eq!(
        (view["route_by"].clone(), view["routing"].clone()),
        (json!("metadata.language"), json!("prefer"))
    );
    // Adding tasks names a route only the batch's.
    let response = admin
        .api
        .post(app.url("/api/v1/batches?name=routed&route_by=metadata.topic"))
        .header("content-type", "application/x-ndjson")
        .body(tasks_jsonl_from(3, 1))
        .go()
        .await;
    let refused = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        refused["fields"]["route_by"]
            .as_str()
            .is_some_and(|why| why.contains("metadata.language")),
        "{refused}"
    );
    // Tasks added later are keyed as they come.
    app.batch(&admin, "routed", &tasks_jsonl_from(3, 1), "")
        .await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM tasks WHERE route_key = 'python'")
            .await,
        3
    );
}
db_test!(a_broken_route_is_refused_naming_the_field: TestApp);

/// Many raters with skills take a strictly routed batch at once, on two instances: every
/// task gets exactly its overlap of ratings, each from a rater who has its language.
async fn strict_routing_holds_exactly_k_under_concurrency(app: &TestApp) {
    const TASKS: usize = 24;
    let admin = app.admin().await;
    let lead = app.lead().await;
    let languages = ["rust", "go", "python"];
    let tasks: Vec<Option<Value>> = (0..TASKS).map(|i| lang(languages[i % 3])).collect();
    let batch = app
        .batch(
            &admin,
            "busy",
            &tasks_in(&tasks),
            "&overlap=2&route_by=metadata.language&routing=strict&randomize=false",
        )
        .await;
    let mut raters = Vec::new();
    for i in 0..8 {
        let rater = app.persona(&format!("r{i}"), Role::Rater).await;
        let skills = json!([languages[i % 3], languages[(i + 1) % 3]]);
        set_skills(app, &admin, &rater, skills).await;
        raters.push((rater, [languages[i % 3], languages[(i + 1) % 3]]));
    }
    let sibling = app.sibling().await;
    let mut workers = tokio::task::JoinSet::new();
    for (i, (rater, _)) in raters.iter().enumerate() {
        let base = if i % 2 == 0 {
            app.url("")
        } else {
            sibling.url("")
        };
        let api = rater.api.clone();
        let batch = batch.clone();
        workers.spawn(async move {
            let mut rated = 0;
            loop {
                let next = api
                    .post(format!("{base}/api/v1/batches/{batch}/next"))
                    .go()
                    .await;
                if next.status() == StatusCode::NO_CONTENT {
                    return rated;
                }
                let next = json_with(next, StatusCode::OK).await;
                let done = api
                    .post(format!(
                        "{base}/api/v1/assignments/{}/submit",
                        assignment_id(&next)
                    ))
                    .json(&complete_answers())
                    .go()
                    .await;
                json_with(done, StatusCode::OK).await;
                rated += 1;
            }
        });
    }
    let mut rated = 0;
    while let Some(done) = workers.join_next().await {
        rated += done.expect("worker");
    }
    assert_eq!(rated, 2 * TASKS);
    let rows = app
        .pairs(
            "SELECT t.route_key, u.username FROM ratings r
             JOIN tasks t ON t.id = r.task_id JOIN users u ON u.id = r.rater_id
             WHERE r.status <> 'draft'",
        )
        .await;
    assert_eq!(rows.len(), 2 * TASKS);
    for (key, username) in &rows {
        let (_, skills) = raters
            .iter()
            .find(|(r, _)| &r.username == username)
            .expect("a rater");
        assert!(
            skills.contains(&key.as_str()),
            "{username} rated a {key} task"
        );
    }
    let per_task = app
        .count(
            "SELECT COUNT(*) FROM (SELECT task_id FROM ratings WHERE status <> 'draft'
             GROUP BY task_id HAVING COUNT(*) <> 2) off",
        )
        .await;
    assert_eq!(per_task, 0, "every task has exactly two ratings");
    assert_eq!(
        app.metrics(&lead, &batch).await["routing"]["unmatched_tasks"],
        0
    );
    sibling.close().await;
}
db_test!(strict_routing_holds_exactly_k_under_concurrency: TestApp);

/// Posts the skills form at `path` (`/skills`, or `/skills/{id}`) as `browser`, with the
/// page's CSRF token.
async fn post_skills(
    app: &TestApp,
    browser: &reqwest::Client,
    path: &str,
    skills: &str,
) -> reqwest::Response {
    let page = browser.get(app.url("/skills")).go().await;
    let csrf = csrf_token(&page.text().await.expect("the page"));
    browser
        .post(app.url(path))
        .form(&[("csrf_token", csrf.as_str()), ("skills", skills)])
        .go()
        .await
}

/// `who`'s skills, as they read them through the API.
async fn skills_of(app: &TestApp, who: &Persona) -> Value {
    let me = who.api.get(app.url("/api/v1/me")).go().await;
    json_with(me, StatusCode::OK).await["skills"].clone()
}

/// What `who` declared they know, as they read it through the API.
async fn declared_of(app: &TestApp, who: &Persona) -> Value {
    let me = who.api.get(app.url("/api/v1/me")).go().await;
    json_with(me, StatusCode::OK).await["declared_skills"].clone()
}

/// Skills as a lever (issue 50): a rater who declares every skill takes no task meant for
/// others under `strict`, and one who declares none (or tries to clear the skills a lead
/// set) still gets their own; under `prefer` what a rater declares comes first. The API
/// and the page refuse a rater's own `skills`, naming the field, and change nothing.
async fn a_rater_cannot_route_work_to_or_away_from_themself_by_declaring_skills(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let languages = [
        lang("rust"),
        lang("python"),
        lang("go"),
        lang("rust"),
        lang("c"),
    ];
    let strict = app
        .batch(
            &admin,
            "strict",
            &tasks_in(&languages),
            "&route_by=metadata.language&routing=strict&randomize=false&raters_see_external_ids=true",
        )
        .await;
    assert_eq!(
        set_skills(app, &lead, &ana, json!(["python"])).await.0,
        StatusCode::OK
    );
    assert_eq!(
        set_skills(app, &lead, &bo, json!(["rust"])).await.0,
        StatusCode::OK
    );

    // ana declares every skill there is, and tries to set them outright.
    let declared = ana
        .api
        .patch(app.url("/api/v1/me"))
        .json(&json!({"declared_skills": ["rust", "python", "go", "c", "java"]}))
        .go()
        .await;
    json_with(declared, StatusCode::OK).await;
    for body in [
        json!({"skills": ["rust", "python", "go", "c"]}),
        json!({"skills": [], "declared_skills": []}),
    ] {
        for who in [&ana, &bo] {
            let refused = who.api.patch(app.url("/api/v1/me")).json(&body).go().await;
            let refused = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
            assert!(
                refused.to_string().contains("skills")
                    && refused.to_string().contains("set by a lead"),
                "{refused}"
            );
        }
    }
    // bo declares nothing at all, on the page too: the skills bo's lead set still hold.
    let bo_browser = app.login("bo", PASSWORD).await;
    let saved = post_skills(app, &bo_browser, "/skills", "").await;
    assert!(!saved.status().is_client_error(), "{}", saved.status());
    let ana_browser = app.login("ana", PASSWORD).await;
    let saved = post_skills(app, &ana_browser, "/skills", "rust, python, go, c").await;
    assert!(!saved.status().is_client_error(), "{}", saved.status());
    assert_eq!(skills_of(app, &ana).await, json!(["python"]));
    assert_eq!(skills_of(app, &bo).await, json!(["rust"]));
    assert_eq!(
        declared_of(app, &ana).await,
        json!(["c", "go", "python", "rust"])
    );
    assert_eq!(declared_of(app, &bo).await, json!([]));

    // Strict goes by the skills the lead set: ana the python task only, bo both rust ones.
    assert_eq!(offered(app, &ana, &strict).await, ["t2"]);
    assert_eq!(offered(app, &bo, &strict).await, ["t1", "t4"]);
    // What nobody's lead gave them waits, whatever was declared.
    let routing = &app.metrics(&lead, &strict).await["routing"];
    assert_eq!(routing["unmatched"], json!({"c": 1, "go": 1}), "{routing}");

    // Prefer: what ana declared comes first (in upload order), then the rest.
    let prefer = app
        .batch(
            &admin,
            "prefer",
            &tasks_in(&[lang("java"), lang("kotlin"), lang("go"), lang("python")]),
            "&route_by=metadata.language&randomize=false&raters_see_external_ids=true",
        )
        .await;
    assert_eq!(offered(app, &ana, &prefer).await, ["t3", "t4", "t1", "t2"]);
    // Every change of ana's declared list is in the audit log.
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'user.update' AND target = 'ana' \
             AND CAST(detail AS TEXT) LIKE '%declared_skills%'"
        )
        .await,
        2
    );
}
db_test!(a_rater_cannot_route_work_to_or_away_from_themself_by_declaring_skills: TestApp);

/// The skills page: everyone sets their own; a lead sets raters'; a refused list is
/// shown again with why.
async fn the_skills_page_sets_ones_own_and_raters_skills(app: &TestApp) {
    let _admin = app.admin().await;
    let _lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let rater = app.login("ana", PASSWORD).await;
    let html = page_text(app, &rater, "/skills").await;
    assert!(
        html.contains("Your skills") && !html.contains("Raters' skills"),
        "{html}"
    );
    // A rater's own form declares: the skills a lead sets stay as they are.
    let saved = post_skills(app, &rater, "/skills", "Rust, Go").await;
    assert!(!saved.status().is_client_error(), "{}", saved.status());
    assert_eq!(declared_of(app, &ana).await, json!(["go", "rust"]));
    assert_eq!(skills_of(app, &ana).await, json!([]));
    let refused = post_skills(app, &rater, "/skills", "ok, ,x").await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = refused.text().await.unwrap();
    assert!(
        html.contains("a skill is empty") && html.contains("ok, ,x"),
        "{html}"
    );
    assert_eq!(declared_of(app, &ana).await, json!(["go", "rust"]));

    let lead = app.login("lead", PASSWORD).await;
    let html = page_text(app, &lead, "/skills").await;
    assert!(
        html.contains("Raters' skills") && html.contains("Skills of ana"),
        "{html}"
    );
    // The lead reads what ana says she knows beside the skills they set.
    assert!(html.contains("go, rust"), "{html}");
    let saved = post_skills(app, &lead, &format!("/skills/{}", ana.id), "python").await;
    assert!(!saved.status().is_client_error(), "{}", saved.status());
    assert_eq!(skills_of(app, &ana).await, json!(["python"]));
    assert_eq!(declared_of(app, &ana).await, json!(["go", "rust"]));
    let html = page_text(app, &rater, "/skills").await;
    assert!(
        html.contains("Set by your lead: <strong>python</strong>"),
        "{html}"
    );
}
db_test!(the_skills_page_sets_ones_own_and_raters_skills: TestApp);

/// The batch's `stalled`, as a lead reads it on the batch's view.
async fn stalled_of(app: &TestApp, lead: &Persona, batch: &str) -> Value {
    let view = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}")))
        .go()
        .await;
    json_with(view, StatusCode::OK).await["stalled"].clone()
}

/// Issue 51: a strictly routed batch with one rater per rare skill stalls, and says so
/// (on the batch's view, its page and the lead's home page) at the next look after the
/// `next` that left a task short; a rater with the skill added clears it.
async fn a_stall_shows_at_once_with_its_reason_and_clears_when_raters_join(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "stalls",
            &tasks_in(&[lang("python"), lang("python"), lang("rust"), lang("go")]),
            "&overlap=2&route_by=metadata.language&routing=strict&randomize=false&raters_see_external_ids=true",
        )
        .await;
    set_skills(app, &lead, &ana, json!(["python", "rust"])).await;
    set_skills(app, &lead, &bo, json!(["python"])).await;

    // From the start: rust has one rater for two ratings, go has none.
    let stalled = stalled_of(app, &lead, &batch).await;
    assert_eq!(stalled["tasks"], 2, "{stalled}");
    assert_eq!(
        stalled["reasons"],
        json!({"no_rater_with_skill": 1, "too_few_raters": 1})
    );
    let groups = stalled["groups"].as_array().unwrap();
    let go = groups.iter().find(|g| g["key"] == "go").unwrap();
    assert_eq!(
        (&go["reason"], &go["raters_needed"]),
        (&json!("no_rater_with_skill"), &json!(2))
    );
    assert!(
        go["remedy"].as_str().unwrap().contains("the skill go"),
        "{go}"
    );
    let rust = groups.iter().find(|g| g["key"] == "rust").unwrap();
    assert_eq!(
        (&rust["reason"], &rust["raters_needed"]),
        (&json!("too_few_raters"), &json!(1))
    );
    assert_eq!(stalled["first"], json!(["t4", "t3"]), "groups by key");
    // A rater reads no stalls.
    let view = ana
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}")))
        .go()
        .await;
    assert!(
        json_with(view, StatusCode::OK)
            .await
            .get("stalled")
            .is_none()
    );

    // bo skips t1: python's t1 now needs two and only ana is left for it. It shows at
    // the next look, before anyone asks for more work.
    let next = app.next(&bo, &batch).await.expect("t1");
    assert_eq!(next["task"]["external_id"], "t1");
    let skip = app
        .act(
            &bo,
            &assignment_id(&next),
            "skip",
            &json!({"reason": "too_long"}),
        )
        .await;
    assert_eq!(skip.status(), StatusCode::OK);
    let stalled = stalled_of(app, &lead, &batch).await;
    assert_eq!(stalled["tasks"], 3, "{stalled}");
    assert_eq!(stalled["reasons"]["too_few_raters"], 2);
    assert_eq!(stalled["first"], json!(["t4", "t1", "t3"]));
    let browser = app.login("lead", PASSWORD).await;
    let home = page_text(app, &browser, "/").await;
    assert!(
        home.contains("3 tasks of <a href=\"/batches/")
            && home.contains("give 2 raters allowed on this batch the skill go"),
        "{home}"
    );
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    assert!(
        page.contains("id=\"stranded\"")
            && page.contains("1 task of rust: add 1 more rater with the skill rust"),
        "{page}"
    );

    // Two raters who know every language join: nothing is stuck any more.
    for name in ["cy", "dee"] {
        let who = app.persona(name, Role::Rater).await;
        set_skills(app, &lead, &who, json!(["go", "python", "rust"])).await;
    }
    let stalled = stalled_of(app, &lead, &batch).await;
    assert_eq!(stalled["tasks"], 0, "{stalled}");
    assert_eq!(stalled["groups"], json!([]));
    let home = page_text(app, &browser, "/").await;
    assert!(!home.contains("class=\"card stranded\""), "{home}");
}
db_test!(a_stall_shows_at_once_with_its_reason_and_clears_when_raters_join: TestApp);
