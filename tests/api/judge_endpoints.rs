//! What a judge's endpoint, or an admin's mistake in configuring one, can do to verdict:
//! replies read up to a limit (a body without end leaves the server's memory flat), and
//! what is stored of them capped; keys read only from variables meant for judges, and a
//! stored key never following a URL to another host; redirects never followed;
//! link-local, metadata and unspecified addresses and URLs with credentials refused; the
//! hosts narrowed by `--judge-allow-hosts`; and an endpoint's error reply shown short, to
//! admins only.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::Config;
use verdict::credentials::sealed::SealingKey;
use verdict::services::judging::endpoint::EndpointPolicy;
use verdict::store::Backend;

use crate::helpers::{
    Fixture, Go, Persona, TestApp, TestDb, csrf_token, db_test, json_with, resident_kib,
};
use crate::judge_server::{Reply, ScriptedJudge};
use crate::judges::{add_judge, calls, start_run, wait_for};

/// The app with quick retries, a secret to seal keys with, and a server maximum reply of
/// 8 MiB.
pub struct GuardedApp(pub TestApp);

impl Fixture for GuardedApp {
    async fn setup(backend: Backend) -> Option<Self> {
        let config = Config {
            judge_retry_delay: Duration::from_millis(20),
            judge_lease: Duration::from_secs(2),
            sealing_key: Some(
                SealingKey::from_secret("a test secret of more than thirty-two characters")
                    .expect("secret"),
            ),
            judge_endpoints: EndpointPolicy {
                max_reply_bytes: 8 * 1024 * 1024,
                ..EndpointPolicy::default()
            },
            ..Config::default()
        };
        TestApp::with_config(backend, config).await.map(Self)
    }

    async fn teardown(self) {
        self.0.teardown().await;
    }
}

/// The app of a server started with `--judge-allow-hosts 10.0.0.0/8,llm.internal`.
pub struct NarrowApp(pub TestApp);

impl Fixture for NarrowApp {
    async fn setup(backend: Backend) -> Option<Self> {
        let config = Config {
            judge_retry_delay: Duration::from_millis(20),
            judge_endpoints: EndpointPolicy {
                allow_hosts: Some(vec![
                    "10.0.0.0/8".parse().expect("CIDR"),
                    "llm.internal".parse().expect("name"),
                ]),
                ..EndpointPolicy::default()
            },
            ..Config::default()
        };
        TestApp::with_config(backend, config).await.map(Self)
    }

    async fn teardown(self) {
        self.0.teardown().await;
    }
}

/// Single-response tasks (rubric additive-5), one per marker, the marker opening the
/// response so the scripted judge can tell them apart.
fn marked_tasks(markers: &[&str]) -> String {
    markers
        .iter()
        .map(|m| {
            json!({"external_id": m.to_lowercase(), "prompt": format!("Task {m}: explain recursion."),
                   "response": format!("{m} answer"), "model": "alpha"})
            .to_string()
                + "\n"
        })
        .collect()
}

/// The marker of the task a request asks about.
fn marker<'a>(body: &Value, markers: &[&'a str]) -> &'a str {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
    markers
        .iter()
        .find(|m| prompt.contains(&format!("<response>{m}")))
        .copied()
        .unwrap_or("")
}

/// A run's calls by task (external id).
async fn calls_by_task(
    app: &TestApp,
    who: &Persona,
    run: &str,
) -> std::collections::HashMap<String, Value> {
    calls(app, who, run, None)
        .await
        .into_iter()
        .map(|c| (c["external_id"].as_str().expect("id").to_owned(), c))
        .collect()
}

/// A 422 naming `field`; returns what it says of it.
async fn refused(response: reqwest::Response, field: &str) -> String {
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    body["fields"][field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} is not named: {body}"))
        .to_owned()
}

async fn an_endless_reply_is_cut_at_the_limit_and_memory_stays_flat(db: &TestDb) {
    use crate::durability::{account, kill_9, serve_with, upload_batch};
    /// Growth that fails the test (and stops the server before it takes the machine).
    const MAX_GROWTH_KIB: u64 = 200 * 1024;
    let admin = crate::helpers::bearer(&account(db, "admin", "admin"));
    let scripted = ScriptedJudge::start(|_: &Value, _| Reply::Endless).await;
    let (mut server, base) = serve_with(db, &[]);
    let pid = server.id();
    let batch = upload_batch(
        &admin,
        &base,
        "name=endless&rubric=additive-5&randomize=false",
        marked_tasks(&["E1", "E2", "E3", "E4"]),
    )
    .await;
    let judge = admin
        .post(format!("{base}/api/v1/judges"))
        .json(
            &json!({"name": "endless", "base_url": scripted.base_url, "model": "m",
                      "concurrency": 4, "timeout_s": 60}),
        )
        .send()
        .await
        .expect("judge");
    assert_eq!(judge.status(), StatusCode::CREATED);
    let before = resident_kib(pid);
    let started = admin
        .post(format!("{base}/api/v1/batches/{batch}/judge-runs"))
        .json(&json!({"judge": "endless"}))
        .send()
        .await
        .expect("run");
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let run = started.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut peak = before;
    let view = loop {
        let rss = resident_kib(pid);
        peak = peak.max(rss);
        if rss > before + MAX_GROWTH_KIB {
            kill_9(&mut server);
            panic!("reading replies without end took the server from {before} KiB to {rss} KiB");
        }
        let view: Value = admin
            .get(format!("{base}/api/v1/judge-runs/{run}"))
            .send()
            .await
            .expect("view")
            .json()
            .await
            .expect("JSON");
        // Every call failed, so the run did.
        if view["status"] == "failed" {
            break view;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run never ended: {view}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(view["failed"], 4, "{view}");
    let page: Value = admin
        .get(format!("{base}/api/v1/judge-runs/{run}/calls"))
        .send()
        .await
        .expect("calls")
        .json()
        .await
        .expect("JSON");
    kill_9(&mut server);
    for call in page["calls"].as_array().expect("calls") {
        let error = call["error"].as_str().unwrap_or("");
        assert!(
            error.contains("past 4 MiB") && error.contains("max_reply_bytes"),
            "{call}"
        );
        assert_eq!(call["attempts"], 1, "a reply too long is not asked again");
        assert_eq!(call["raw_output"], Value::Null);
    }
    assert!(
        peak - before < MAX_GROWTH_KIB,
        "{before} KiB to a peak of {peak} KiB"
    );
}
db_test!(an_endless_reply_is_cut_at_the_limit_and_memory_stays_flat: TestDb);

async fn replies_are_read_up_to_the_judges_limit_and_stored_capped(fixture: &GuardedApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    const MARKERS: &[&str] = &["LONG"];
    // A whole chat completion of about 1 MiB: under the default limit of 4 MiB.
    let scripted = ScriptedJudge::start(|_: &Value, _| {
        Reply::text(format!("score: 1\n{}", "long ".repeat(200 * 1024)))
    })
    .await;
    let batch = app
        .batch(
            &admin,
            "long",
            &marked_tasks(MARKERS),
            "&rubric=additive-5&randomize=false",
        )
        .await;

    // The limit is a judge setting, within the server's maximum.
    for (bad, why) in [(json!(9 * 1024 * 1024), "8388608"), (json!(100), "1024")] {
        let response = admin
            .api
            .post(app.url("/api/v1/judges"))
            .json(
                &json!({"name": "bad", "base_url": scripted.base_url, "model": "m",
                          "max_reply_bytes": bad}),
            )
            .go()
            .await;
        let said = refused(response, "max_reply_bytes").await;
        assert!(said.contains(why), "{said}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM judges").await, 0);

    add_judge(app, &admin, "roomy", &scripted.base_url, json!({})).await;
    let small = add_judge(
        app,
        &admin,
        "small",
        &scripted.base_url,
        json!({"max_reply_bytes": 2048}),
    )
    .await;
    let listed = admin.api.get(app.url("/api/v1/judges")).go().await;
    let listed = json_with(listed, StatusCode::OK).await;
    let shown = listed
        .as_array()
        .expect("judges")
        .iter()
        .find(|j| j["id"] == small.as_str())
        .expect("small judge");
    assert_eq!(shown["params"]["max_reply_bytes"], 2048);

    // Within the limit: read whole, stored capped at 64 KiB with a marker.
    let run = start_run(app, &admin, &batch, "roomy").await;
    wait_for(app, &admin, &run, "finished").await;
    let call = &calls_by_task(app, &admin, &run).await["long"];
    assert_ne!(call["status"], "failed", "{}", call["error"]);
    let raw = call["raw_output"].as_str().expect("raw output");
    assert!(raw.starts_with("score: 1\nlong long"), "{}", &raw[..40]);
    assert!(raw.len() < 65 * 1024, "stored {} bytes", raw.len());
    assert!(
        raw.ends_with("more bytes not stored: verdict keeps 64 KiB of it]"),
        "{}",
        &raw[raw.len() - 100..]
    );
    let stored = app
        .count("SELECT CAST(MAX(LENGTH(raw_output)) AS BIGINT) FROM judge_calls")
        .await;
    assert!(stored < 65 * 1024, "{stored} bytes stored");

    // Past the judge's own limit: dropped, the call failed saying so (and with it the
    // run, which had no other).
    let run = start_run(app, &admin, &batch, "small").await;
    let view = wait_for(app, &admin, &run, "failed").await;
    let call = &calls_by_task(app, &admin, &run).await["long"];
    assert_eq!(view["last_error"], call["error"], "{view}");
    assert_eq!(call["status"], "failed");
    assert_eq!(call["attempts"], 1);
    assert!(
        call["error"]
            .as_str()
            .unwrap_or("")
            .contains("went on past 2 KiB (the judge's max_reply_bytes)"),
        "{call}"
    );
}
db_test!(replies_are_read_up_to_the_judges_limit_and_stored_capped: GuardedApp);

async fn a_judge_key_comes_only_from_variables_meant_for_judges(fixture: &GuardedApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    let scripted = ScriptedJudge::start(|_: &Value, _| Reply::text("score: 1\nFine.")).await;
    for var in [
        "VERDICT_SECRET_KEY",
        "DATABASE_URL",
        "HOME",
        "VERDICT_JUDGE_KEY_",
    ] {
        let response = admin
            .api
            .post(app.url("/api/v1/judges"))
            .json(
                &json!({"name": "leaky", "base_url": scripted.base_url, "model": "m",
                          "api_key_env": var}),
            )
            .go()
            .await;
        let said = refused(response, "api_key_env").await;
        assert!(
            said.contains("must begin with VERDICT_JUDGE_KEY_"),
            "{var}: {said}"
        );
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM judges").await, 0);

    let id = add_judge(
        app,
        &admin,
        "keyed",
        &scripted.base_url,
        json!({"api_key_env": "VERDICT_JUDGE_KEY_LOCAL"}),
    )
    .await;
    let changed = admin
        .api
        .patch(app.url(&format!("/api/v1/judges/{id}")))
        .json(&json!({"api_key_env": "VERDICT_SECRET_KEY"}))
        .go()
        .await;
    refused(changed, "api_key_env").await;
    let listed = admin.api.get(app.url("/api/v1/judges")).go().await;
    let listed = json_with(listed, StatusCode::OK).await;
    assert_eq!(listed[0]["api_key_env"], "VERDICT_JUDGE_KEY_LOCAL");

    // A judge stored before the rule held is not let send the server's variables.
    app.execute("UPDATE judges SET api_key_env = 'HOME'").await;
    let batch = app
        .batch(
            &admin,
            "keys",
            &marked_tasks(&["K1"]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    let started = admin
        .api
        .post(app.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .json(&json!({"judge": "keyed"}))
        .go()
        .await;
    let said = refused(started, "judge").await;
    assert!(said.contains("VERDICT_JUDGE_KEY_"), "{said}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(scripted.seen().is_empty(), "nothing was sent");
}
db_test!(a_judge_key_comes_only_from_variables_meant_for_judges: GuardedApp);

async fn a_stored_key_does_not_follow_a_base_url_to_another_host(fixture: &GuardedApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    let answer = |_: &Value, _| Reply::text("score: 1\nFine.");
    let first = ScriptedJudge::start(answer).await;
    let second = ScriptedJudge::start(answer).await;
    let batch = app
        .batch(
            &admin,
            "moved",
            &marked_tasks(&["M1"]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    let id = add_judge(
        app,
        &admin,
        "sealed",
        &first.base_url,
        json!({"api_key": "sk-first-host"}),
    )
    .await;
    let patch = |body: Value| {
        admin
            .api
            .patch(app.url(&format!("/api/v1/judges/{id}")))
            .json(&body)
            .go()
    };

    // Another port, without the key: refused, nothing changed.
    let moved = patch(json!({"base_url": second.base_url})).await;
    let said = refused(moved, "api_key").await;
    assert!(said.contains("another scheme, host or port"), "{said}");
    let listed = admin.api.get(app.url("/api/v1/judges")).go().await;
    let listed = json_with(listed, StatusCode::OK).await;
    assert_eq!(listed[0]["base_url"], first.base_url.as_str());
    assert_eq!(listed[0]["api_key_stored"], true);
    // The same host and port under another path keeps the key.
    let same = patch(json!({"base_url": format!("{}/", first.base_url)})).await;
    assert_eq!(
        json_with(same, StatusCode::OK).await["api_key_stored"],
        true
    );
    let run = start_run(app, &admin, &batch, "sealed").await;
    wait_for(app, &admin, &run, "finished").await;
    assert_eq!(
        first.seen()[0].authorization.as_deref(),
        Some("Bearer sk-first-host")
    );

    // With the key for the new host, the new host gets that key.
    let moved = patch(json!({"base_url": second.base_url, "api_key": "sk-second-host"})).await;
    assert_eq!(
        json_with(moved, StatusCode::OK).await["api_key_stored"],
        true
    );
    let run = start_run(app, &admin, &batch, "sealed").await;
    wait_for(app, &admin, &run, "finished").await;
    assert_eq!(
        second.seen()[0].authorization.as_deref(),
        Some("Bearer sk-second-host")
    );

    // Back to the first with the key dropped: it gets no key at all.
    let dropped = patch(json!({"base_url": first.base_url, "api_key": null})).await;
    assert_eq!(
        json_with(dropped, StatusCode::OK).await["api_key_stored"],
        false
    );
    let run = start_run(app, &admin, &batch, "sealed").await;
    wait_for(app, &admin, &run, "finished").await;
    let seen = first.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].authorization, None);

    // The judge's page holds to the same rule.
    let keyed = patch(json!({"api_key": "sk-page"})).await;
    assert_eq!(keyed.status(), StatusCode::OK);
    let browser = admin.browser_for(app).await;
    let path = format!("/admin/judges/{id}");
    let html = crate::helpers::page_text(app, &browser, &path).await;
    assert!(
        html.contains("name=\"drop_api_key\""),
        "the form offers to drop the key"
    );
    let token = csrf_token(&html);
    let post = |fields: Vec<(&'static str, String)>| {
        let mut form = vec![("csrf_token", token.clone())];
        form.extend(fields);
        browser.post(app.url(&path)).form(&form).go()
    };
    let moved = post(vec![
        ("base_url", second.base_url.clone()),
        ("model", "scripted".into()),
    ])
    .await;
    assert_eq!(moved.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = moved.text().await.expect("page");
    assert!(
        html.contains("<p class=\"error\" id=\"api_key-error\">API key must be given again"),
        "{html}"
    );
    let dropped = post(vec![
        ("base_url", second.base_url.clone()),
        ("model", "scripted".into()),
        ("drop_api_key", "on".into()),
    ])
    .await;
    assert_eq!(dropped.status(), StatusCode::SEE_OTHER);
    let listed = admin.api.get(app.url("/api/v1/judges")).go().await;
    let listed = json_with(listed, StatusCode::OK).await;
    assert_eq!(listed[0]["base_url"], second.base_url.as_str());
    assert_eq!(listed[0]["api_key_stored"], false);
}
db_test!(a_stored_key_does_not_follow_a_base_url_to_another_host: GuardedApp);

async fn link_local_metadata_and_credentialed_urls_are_refused(app: &TestApp) {
    let admin = app.admin().await;
    for url in [
        "http://169.254.169.254/latest",
        "http://2852039166/v1",
        "http://0/v1",
        "http://0.0.0.0:8081/v1",
        "http://[fe80::1]:8081/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://user:pw@127.0.0.1:8081/v1",
    ] {
        let response = admin
            .api
            .post(app.url("/api/v1/judges"))
            .json(&json!({"name": "odd", "base_url": url, "model": "m"}))
            .go()
            .await;
        let said = refused(response, "base_url").await;
        assert!(!said.is_empty(), "{url}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM judges").await, 0);
    // Loopback and private addresses stay allowed: local model servers.
    for (i, url) in [
        "http://[::1]:8081/v1",
        "http://127.0.0.1:5432/v1",
        "http://192.168.1.20:8000/v1",
        "http://localhost:8081/v1",
    ]
    .iter()
    .enumerate()
    {
        add_judge(app, &admin, &format!("local{i}"), url, json!({})).await;
    }
    let id = add_judge(app, &admin, "moving", "http://127.0.0.1:9/v1", json!({})).await;
    let moved = admin
        .api
        .patch(app.url(&format!("/api/v1/judges/{id}")))
        .json(&json!({"base_url": "http://169.254.169.254/v1"}))
        .go()
        .await;
    let said = refused(moved, "base_url").await;
    assert!(said.contains("link-local"), "{said}");

    // One stored before the rule held is not called.
    app.execute("UPDATE judges SET base_url = 'http://169.254.169.254/v1' WHERE name = 'moving'")
        .await;
    let batch = app
        .batch(
            &admin,
            "odd",
            &marked_tasks(&["O1"]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    let run = start_run(app, &admin, &batch, "moving").await;
    let view = wait_for(app, &admin, &run, "failed").await;
    let call = &calls_by_task(app, &admin, &run).await["o1"];
    assert_eq!(view["last_error"], call["error"], "{view}");
    assert_eq!(call["attempts"], 1, "{call}");
    assert!(
        call["error"]
            .as_str()
            .unwrap_or("")
            .starts_with("not sent: the base URL reaches 169.254.169.254, a link-local address"),
        "{call}"
    );
}
db_test!(link_local_metadata_and_credentialed_urls_are_refused: TestApp);

async fn redirects_are_not_followed_and_error_replies_reach_admins_only(fixture: &GuardedApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    const MARKERS: &[&str] = &["REDIRECT", "SECRET"];
    let secret = format!("internal token SECRET-4242 {}", "s".repeat(2000));
    let reply_secret = secret.clone();
    let scripted = ScriptedJudge::start(move |body: &Value, _| match marker(body, MARKERS) {
        "REDIRECT" => Reply::Redirect("/elsewhere".into()),
        _ => Reply::StatusBody(403, reply_secret.clone()),
    })
    .await;
    let batch = app
        .batch(
            &admin,
            "hostile",
            &marked_tasks(MARKERS),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    add_judge(app, &admin, "hostile", &scripted.base_url, json!({})).await;
    let run = start_run(app, &admin, &batch, "hostile").await;
    let view = wait_for(app, &admin, &run, "failed").await;
    assert_eq!(view["failed"], 2, "{view}");
    assert_eq!(scripted.followed(), 0, "the redirect was not followed");
    // The run's latest error is a call's status and cause, never what the endpoint said.
    let last = view["last_error"].as_str().expect("the last error");
    assert!(
        last.starts_with("HTTP 302: ") || last == "HTTP 403 Forbidden from the endpoint",
        "{view}"
    );

    let by_task = calls_by_task(app, &admin, &run).await;
    let redirect = &by_task["redirect"];
    assert_eq!(redirect["attempts"], 1);
    assert_eq!(
        redirect["error"],
        "HTTP 302: the endpoint answered with a redirect, and redirects are not followed"
    );
    let refusal = &by_task["secret"];
    assert_eq!(refusal["error"], "HTTP 403 Forbidden from the endpoint");
    let body = refusal["error_body"]
        .as_str()
        .expect("admins read the reply");
    assert!(body.starts_with("internal token SECRET-4242"), "{body}");
    assert_eq!(body.chars().count(), 200);

    // A lead of the batch reads the status and the cause, never what the endpoint said.
    let lead = app.lead().await;
    let led = lead
        .api
        .get(app.url(&format!("/api/v1/judge-runs/{run}/calls")))
        .go()
        .await;
    let led = json_with(led, StatusCode::OK).await;
    assert!(led.to_string().contains("HTTP 403 Forbidden"), "{led}");
    assert!(!led.to_string().contains("SECRET-4242"), "{led}");
    let path = format!("/judge-runs/{run}/calls");
    let lead_page = crate::helpers::page_text(app, &lead.browser_for(app).await, &path).await;
    assert!(lead_page.contains("HTTP 403 Forbidden from the endpoint"));
    assert!(!lead_page.contains("SECRET-4242"), "{lead_page}");
    let side = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/tasks/secret")))
        .go()
        .await;
    let side = json_with(side, StatusCode::OK).await;
    assert!(!side.to_string().contains("SECRET-4242"), "{side}");
    let admin_page = crate::helpers::page_text(app, &admin.browser_for(app).await, &path).await;
    assert!(admin_page.contains("internal token SECRET-4242"));
    assert!(!admin_page.contains(&"s".repeat(300)), "kept short");
}
db_test!(redirects_are_not_followed_and_error_replies_reach_admins_only: GuardedApp);

async fn an_allow_list_narrows_the_hosts_judges_reach(fixture: &NarrowApp) {
    let app = &fixture.0;
    let admin = app.admin().await;
    let scripted = ScriptedJudge::start(|_: &Value, _| Reply::text("score: 1\nFine.")).await;
    for url in [
        scripted.base_url.as_str(),
        "http://localhost:8081/v1",
        "http://169.254.169.254/v1",
    ] {
        let response = admin
            .api
            .post(app.url("/api/v1/judges"))
            .json(&json!({"name": "outside", "base_url": url, "model": "m"}))
            .go()
            .await;
        refused(response, "base_url").await;
    }
    let outside = admin
        .api
        .post(app.url("/api/v1/judges"))
        .json(&json!({"name": "outside", "base_url": scripted.base_url, "model": "m"}))
        .go()
        .await;
    let said = refused(outside, "base_url").await;
    assert!(
        said.contains("--judge-allow-hosts: 10.0.0.0/8, llm.internal"),
        "{said}"
    );
    add_judge(
        app,
        &admin,
        "named",
        "http://LLM.internal:8000/v1",
        json!({}),
    )
    .await;
    add_judge(app, &admin, "netted", "http://10.20.30.40/v1", json!({})).await;

    // Checked again when called: a judge stored before the list narrowed is not sent.
    app.execute(&format!(
        "UPDATE judges SET base_url = '{}' WHERE name = 'netted'",
        scripted.base_url
    ))
    .await;
    let batch = app
        .batch(
            &admin,
            "narrow",
            &marked_tasks(&["N1"]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    let run = start_run(app, &admin, &batch, "netted").await;
    let view = wait_for(app, &admin, &run, "failed").await;
    let call = &calls_by_task(app, &admin, &run).await["n1"];
    assert_eq!(view["last_error"], call["error"], "{view}");
    assert!(
        call["error"]
            .as_str()
            .unwrap_or("")
            .contains("which this server does not allow judges to reach"),
        "{call}"
    );
    assert!(scripted.seen().is_empty(), "nothing was sent");
}
db_test!(an_allow_list_narrows_the_hosts_judges_reach: NarrowApp);

/// A TCP server on a free local port that answers every connection with `answer`; returns
/// its `host:port`.
async fn tcp_server<F, Fut>(answer: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let at = listener.local_addr().expect("address").to_string();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream));
        }
    });
    at
}

/// Reads a request's head (up to the blank line, or until the peer closes).
async fn request_head(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Runs a judge at `base_url` over `batch` until it ends failed; returns the run and its
/// one call.
async fn failed_run(
    app: &TestApp,
    admin: &Persona,
    batch: &str,
    name: &str,
    base_url: &str,
) -> (Value, Value) {
    add_judge(app, admin, name, base_url, json!({"concurrency": 1})).await;
    let run = start_run(app, admin, batch, name).await;
    let view = wait_for(app, admin, &run, "failed").await;
    let mut calls = calls(app, admin, &run, None).await;
    assert_eq!(calls.len(), 1, "{view}");
    (view, calls.remove(0))
}

async fn connection_errors_name_their_cause_and_a_refused_port_or_non_http_reply_is_not_retried(
    fixture: &GuardedApp,
) {
    let app = &fixture.0;
    let admin = app.admin().await;
    let batch = app
        .batch(
            &admin,
            "unreachable",
            &marked_tasks(&["PLAIN"]),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    // Each fails its one call, and the run's last error says the same as the call.
    let check = |view: &Value, call: &Value, attempts: i64, cause: &str| {
        assert_eq!(call["status"], "failed", "{call}");
        assert_eq!(call["attempts"].as_i64(), Some(attempts), "{call}");
        let error = call["error"].as_str().expect("the call's error");
        assert_eq!(error, cause, "{call}");
        assert_eq!(view["last_error"], cause, "{view}");
    };

    // A port nothing listens on: refused at the first attempt.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let closed = listener.local_addr().expect("address");
    drop(listener);
    let (view, call) = failed_run(
        app,
        &admin,
        &batch,
        "refused",
        &format!("http://{closed}/v1"),
    )
    .await;
    check(
        &view,
        &call,
        1,
        &format!("connection refused: nothing listens at {closed} (is the model server up?)"),
    );

    // An SSH server: it speaks first, and not HTTP.
    let ssh = tcp_server(|mut stream| async move {
        use tokio::io::AsyncReadExt;
        use tokio::io::AsyncWriteExt;
        let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.2\r\n").await;
        // Then it reads what the client sends until the client goes.
        let mut buf = [0u8; 4096];
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await;
    let (view, call) = failed_run(app, &admin, &batch, "ssh", &format!("http://{ssh}/v1")).await;
    check(
        &view,
        &call,
        1,
        &format!("not an HTTP server at {ssh}: it answered \"SSH-2.0-OpenSSH_9.2\""),
    );

    // A PostgreSQL server (the one the suite runs on, when it does): it closes a
    // connection that does not begin as its protocol does, without a byte.
    if let Ok(url) = std::env::var("TEST_DATABASE_URL") {
        let url = reqwest::Url::parse(&url).expect("TEST_DATABASE_URL");
        let pg = format!(
            "{}:{}",
            url.host_str().expect("a host"),
            url.port().unwrap_or(5432)
        );
        let (view, call) =
            failed_run(app, &admin, &batch, "postgres", &format!("http://{pg}/v1")).await;
        check(
            &view,
            &call,
            1,
            &format!("not an HTTP server at {pg}: it closed the connection without an HTTP reply"),
        );
    }

    // An HTTP server that drops every chat request unanswered (it answers other
    // requests): a dropped connection may go otherwise next time, so it is retried.
    let dropped_posts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&dropped_posts);
    let dropping = tcp_server(move |mut stream| {
        let counted = std::sync::Arc::clone(&counted);
        async move {
            use tokio::io::AsyncWriteExt;
            if request_head(&mut stream).await.starts_with("POST") {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
        }
    })
    .await;
    let (view, call) = failed_run(
        app,
        &admin,
        &batch,
        "dropping",
        &format!("http://{dropping}/v1"),
    )
    .await;
    check(
        &view,
        &call,
        6,
        &format!("connection dropped: {dropping} closed it before a whole reply came"),
    );
    assert_eq!(
        dropped_posts.load(std::sync::atomic::Ordering::SeqCst),
        6,
        "asked six times"
    );
}
db_test!(connection_errors_name_their_cause_and_a_refused_port_or_non_http_reply_is_not_retried: GuardedApp);
