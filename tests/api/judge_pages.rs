//! The judges' pages: the batch page's judges (figures beside the raters', the runs and
//! their buttons), a run's calls with the raw output escaped, and the admin's judges
//! page, which adds a judge with every bad field named. Who may see what: a rater gets
//! 403, a lead of another batch 404.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Go, TestApp, csrf_token, db_test, json_with, page_text};
use crate::judge_server::{Reply, ScriptedJudge, prefers_good};
use crate::judges::{add_judge, humans_prefer_good, pair_tasks, wait_for};

/// Three tasks that ask to sum a list, one response of each marked GOOD.
fn marked_tasks() -> String {
    pair_tasks(&[
        ("p1", "GOOD: sum(xs)", "a loop that skips the last item"),
        ("p2", "a loop that skips the last item", "GOOD: sum(xs)"),
        ("p3", "GOOD: math.fsum(xs)", "xs[0] + xs[-1]"),
    ])
}

/// `prefers_good`, with markup in its rationale that no page may render as markup.
fn prefers_good_in_bold(body: &Value, n: usize) -> Reply {
    match prefers_good(body, n) {
        Reply::Content(text, finish) => Reply::Content(
            text.replace("Judged each aspect", "<b>Judged</b> each aspect"),
            finish,
        ),
        other => other,
    }
}

/// Posts a page form with the page's CSRF token.
async fn post_form(
    app: &TestApp,
    browser: &reqwest::Client,
    token: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, String, Option<String>) {
    let mut form = vec![("csrf_token", token)];
    form.extend_from_slice(fields);
    let response = browser.post(app.url(path)).form(&form).go().await;
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, response.text().await.unwrap_or_default(), location)
}

/// The row of a table whose `id` is `id`, as HTML.
fn row<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<tr id=\"{id}\""))
        .unwrap_or_else(|| panic!("no row {id}"));
    let end = html[start..].find("</tr>").expect("row end") + start;
    &html[start..end]
}

async fn a_judge_is_run_from_the_batch_page_and_its_calls_are_shown_escaped(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let raters = [
        app.rater().await,
        app.persona("rater2", verdict::auth::Role::Rater).await,
    ];
    let batch = app
        .batch(
            &admin,
            "judged",
            &marked_tasks(),
            "&rubric=pairwise-aspects&overlap=2&randomize=false",
        )
        .await;
    for rater in &raters {
        app.rate_all(rater, &batch, humans_prefer_good).await;
    }
    let scripted = ScriptedJudge::start(prefers_good_in_bold).await;
    // Several calls at once: the two orders of a task finish together, and both rate it.
    add_judge(
        app,
        &admin,
        "scripted",
        &scripted.base_url,
        json!({"concurrency": 4}),
    )
    .await;
    let browser = admin.browser_for(app).await;
    let batch_page = format!("/batches/{batch}");

    // Before any run: the judges say so in words, and the admin gets the start form.
    let html = page_text(app, &browser, &batch_page).await;
    assert!(
        html.contains("No judge has answered about this batch yet: no judge has been run over it.")
    );
    assert!(html.contains("No judge has been run over this batch yet."));
    assert!(html.contains(&format!("action=\"/batches/{batch}/judge-runs\"")));
    assert!(html.contains("<option value=\"scripted\">scripted</option>"));
    assert!(!html.contains("/static/judges.js"), "nothing to follow");
    let token = csrf_token(&html);

    // A start without a judge, or with one that does not exist, is refused in words.
    let path = format!("/batches/{batch}/judge-runs");
    let (status, html, _) = post_form(app, &browser, &token, &path, &[("judge", "")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(html.contains("No run was started."), "{html}");
    assert!(html.contains("Judge: is required: choose a judge"));
    let (status, html, _) = post_form(app, &browser, &token, &path, &[("judge", "ghost")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        html.contains("Judge: there is no judge &#34;ghost&#34;"),
        "{html}"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM judge_runs").await, 0);

    // The Start button starts the run and goes back to the batch's runs.
    let (status, _, location) =
        post_form(app, &browser, &token, &path, &[("judge", "scripted")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        location.as_deref(),
        Some(format!("/batches/{batch}#judge-runs").as_str())
    );
    let runs = admin
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/judge-runs")))
        .go()
        .await;
    let runs = json_with(runs, StatusCode::OK).await;
    let run = runs[0]["id"].as_str().expect("a run").to_owned();
    wait_for(app, &admin, &run, "finished").await;

    // The judge's figures beside the raters', and the run's row.
    let html = page_text(app, &browser, &batch_page).await;
    assert!(
        html.contains("<h3 id=\"judge-scripted\">scripted</h3>"),
        "{html}"
    );
    assert!(html.contains(
        "3 tasks asked in 6 calls (6 answered, 0 unparsed, 0 failed) · rated 3: coverage 100%"
    ));
    let help = {
        let start = html
            .find("<th scope=\"row\">Helpfulness</th>")
            .expect("a row per question, by its label");
        &html[start..start + html[start..].find("</tr>").unwrap()]
    };
    // Three tasks compared with the consensus, all agreeing; the raters agree too (three
    // tasks, a pair of raters each, both ways round).
    for figure in [
        "100%<br><span class=\"muted\">3 of 3</span>",
        "3<br><span class=\"muted\">raters: 6 pairs</span>",
        "100%<br><span class=\"muted\">raters: 100%</span>",
        "1.00<br><span class=\"muted\">raters: 1.00</span>",
    ] {
        assert!(help.contains(figure), "{figure} in {help}");
    }
    assert!(html.contains("Position consistency (same preference in both orders)"));
    assert!(
        html.contains("aria-label=\"Judge scripted: agreement with the raters&#39; consensus"),
        "the chart has a name"
    );
    assert!(html.contains(">judge vs consensus</text>"), "and a legend");
    let run_row = row(&html, &format!("run-{run}"));
    assert!(run_row.contains("data-status=\"finished\""), "{run_row}");
    assert!(run_row.contains("<span data-field=\"done\">6</span> of 6 calls"));
    assert!(run_row.contains("<td class=\"num\" data-field=\"failed\">0</td>"));
    assert!(run_row.contains("600 + 120"), "tokens: {run_row}");
    assert!(run_row.contains(&format!("href=\"/judge-runs/{run}/calls\"")));
    // A finished run without failures can only be left as it is.
    assert!(run_row.contains("data-action=\"pause\" hidden"));
    assert!(run_row.contains("data-action=\"cancel\" formaction"));
    assert!(run_row.contains(" hidden>Cancel</button>"));

    // A button the run's status no longer allows says why, on the batch page.
    let (status, html, _) = post_form(
        app,
        &browser,
        &token,
        &format!("/judge-runs/{run}/pause"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        html.contains("The run of scripted: the run is finished: it cannot be paused now."),
        "{html}"
    );

    // The calls: every order of every task, the raw output escaped.
    let calls_path = format!("/judge-runs/{run}/calls");
    let html = page_text(app, &browser, &calls_path).await;
    assert!(
        html.contains("&#60;b&#62;Judged&#60;/b&#62; each aspect"),
        "{html}"
    );
    assert!(
        !html.contains("<b>Judged</b>"),
        "markup from a judge is never rendered"
    );
    assert_eq!(html.matches("class=\"card judge-call\"").count(), 6);
    assert!(html.contains("<h2>p1 · A first · answered</h2>"));
    assert!(html.contains("<h2>p1 · B first · answered</h2>"));
    assert!(html.contains("<tr><td>Helpfulness</td><td>parsed</td></tr>"));
    assert!(html.contains("Tokens 100 + 20"));
    assert!(html.contains("<strong aria-current=\"page\">All (6)</strong>"));
    assert!(html.contains("6 shown of 6"));
    let failed = page_text(app, &browser, &format!("{calls_path}?status=failed")).await;
    assert!(failed.contains("No call of the run has this status."));
    assert!(failed.contains("<strong aria-current=\"page\">failed (0)</strong>"));

    // A lead of the batch sees the figures and the runs, without their buttons.
    let lead_browser = lead.browser_for(app).await;
    let html = page_text(app, &lead_browser, &batch_page).await;
    assert!(html.contains(&format!("<tr id=\"run-{run}\"")));
    assert!(!html.contains("data-action=\"pause\""));
    assert!(!html.contains(&format!("action=\"/batches/{batch}/judge-runs\"")));
    page_text(app, &lead_browser, &calls_path).await;
    let (status, _, _) = post_form(
        app,
        &lead_browser,
        &csrf_token(&html),
        &format!("/judge-runs/{run}/cancel"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a lead does not run judges");

    // A rater may not see any of it; a lead of another batch does not learn it exists.
    let rater_browser = raters[0].browser_for(app).await;
    for path in [&calls_path, &batch_page, &"/admin/judges".to_owned()] {
        let response = rater_browser.get(app.url(path)).go().await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{path}");
    }
    let restricted = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"leads": ["lead"]}))
        .go()
        .await;
    assert_eq!(restricted.status(), StatusCode::OK);
    let other = app.persona("other-lead", verdict::auth::Role::Lead).await;
    let other_browser = other.browser_for(app).await;
    for path in [&calls_path, &batch_page] {
        let response = other_browser.get(app.url(path)).go().await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
}
db_test!(a_judge_is_run_from_the_batch_page_and_its_calls_are_shown_escaped: TestApp);

async fn an_admin_adds_a_judge_on_the_page_with_every_bad_field_named(app: &TestApp) {
    let admin = app.admin().await;
    let browser = admin.browser_for(app).await;
    let html = page_text(app, &browser, "/admin/judges").await;
    assert!(html.contains("No judge yet: add one below."));
    assert!(
        html.contains("<a href=\"/admin/judges\">Judges</a>"),
        "in the menu"
    );
    let token = csrf_token(&html);

    let bad = [
        ("name", "bad name!"),
        ("base_url", "ftp://127.0.0.1/v1"),
        ("model", " "),
        ("api_key_env", "lower_case"),
        ("api_key", "sk-typed-secret"),
        ("temperature", "3"),
        ("max_tokens", "0"),
        ("seed", "x"),
        ("timeout_s", "0"),
        ("max_text_chars", "many"),
        ("concurrency", "65"),
        ("requests_per_minute", "0"),
        (
            "templates",
            r#"{"ghost-rubric": {"text": "Rate it.", "format": "answers"}}"#,
        ),
    ];
    let (status, html, _) = post_form(app, &browser, &token, "/admin/judges", &bad).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{html}");
    assert!(
        html.contains("Nothing was saved: 13 fields need changing."),
        "{html}"
    );
    for field in [
        "name",
        "base_url",
        "model",
        "api_key_env",
        "api_key",
        "temperature",
        "max_tokens",
        "seed",
        "timeout_s",
        "max_text_chars",
        "concurrency",
        "requests_per_minute",
    ] {
        assert!(
            html.contains(&format!("<p class=\"error\" id=\"{field}-error\">")),
            "{field} is named beside its field"
        );
    }
    assert!(html.contains("Temperature must be a number from 0 to 2"));
    assert!(html.contains("Base URL must start with http:// or https://"));
    assert!(
        html.contains("Templates, ghost-rubric: there is no rubric"),
        "{html}"
    );
    assert!(
        html.contains("value=\"bad name!\""),
        "what was typed is kept"
    );
    assert!(
        !html.contains("sk-typed-secret"),
        "a key is never shown back"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM judges").await, 0);

    let good = [
        ("name", "paged"),
        ("base_url", "http://127.0.0.1:9/v1"),
        ("model", "qwen"),
        ("api_key_env", "VERDICT_JUDGE_KEY_PAGED"),
        ("temperature", "0"),
        ("seed", "7"),
        ("structured_output", "on"),
        ("concurrency", "2"),
        ("requests_per_minute", "30"),
    ];
    let (status, _, location) = post_form(app, &browser, &token, "/admin/judges", &good).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some("/admin/judges?added=paged"));
    let html = page_text(app, &browser, "/admin/judges?added=paged").await;
    assert!(html.contains("Judge paged was added."));
    assert!(html.contains("key from $VERDICT_JUDGE_KEY_PAGED"));
    assert!(html.contains("temperature 0 · seed 7 · structured output"));
    let judges = admin.api.get(app.url("/api/v1/judges")).go().await;
    let judges = json_with(judges, StatusCode::OK).await;
    let stored = &judges[0];
    assert_eq!(stored["name"], "paged");
    assert_eq!(stored["api_key_env"], "VERDICT_JUDGE_KEY_PAGED");
    assert_eq!(stored["params"]["seed"], 7);
    assert_eq!(stored["params"]["structured_output"], true);
    assert_eq!(
        (
            stored["concurrency"].as_i64(),
            stored["requests_per_minute"].as_i64()
        ),
        (Some(2), Some(30))
    );
    let audited = app
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'judge.create'")
        .await;
    assert_eq!(audited, 1);

    // The name is taken now: said beside it, nothing stored.
    let (status, html, _) = post_form(app, &browser, &token, "/admin/judges", &good).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        html.contains("Name is taken: a judge is already named &#34;paged&#34;"),
        "{html}"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM judges").await, 1);

    // Changing it: the form holds its settings (never its key); a bad change names its
    // fields and changes nothing; a good one changes what differs, and records that.
    let id = stored["id"].as_str().expect("judge id");
    let edit_path = format!("/admin/judges/{id}");
    let html = page_text(app, &browser, &edit_path).await;
    assert!(html.contains("key from $VERDICT_JUDGE_KEY_PAGED"));
    for filled in [
        "name=\"model\" value=\"qwen\"",
        "name=\"temperature\" value=\"0\"",
        "name=\"seed\" value=\"7\"",
        "name=\"concurrency\" value=\"2\"",
    ] {
        assert!(html.contains(filled), "{filled}");
    }
    assert!(html.contains("name=\"structured_output\" checked"));
    let kept = [
        ("base_url", "http://127.0.0.1:9/v1"),
        ("temperature", "0"),
        ("seed", "7"),
        ("structured_output", "on"),
        ("concurrency", "2"),
        ("requests_per_minute", "30"),
    ];
    let mut bad_change = kept.to_vec();
    bad_change.extend([("model", ""), ("max_tokens", "-1")]);
    let (status, html, _) = post_form(app, &browser, &token, &edit_path, &bad_change).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        html.contains("Nothing was saved: 2 fields need changing."),
        "{html}"
    );
    assert!(html.contains("<p class=\"error\" id=\"model-error\">Model must not be empty</p>"));
    assert!(html.contains("<p class=\"error\" id=\"max_tokens-error\">"));
    let mut same = kept.to_vec();
    same.push(("model", "qwen"));
    let (status, _, location) = post_form(app, &browser, &token, &edit_path, &same).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some("/admin/judges?changed=paged"));
    let updates = "SELECT COUNT(*) FROM audit_log WHERE action = 'judge.update'";
    assert_eq!(
        app.count(updates).await,
        0,
        "nothing changed, nothing recorded"
    );
    let mut changed: Vec<(&str, &str)> = kept
        .iter()
        .filter(|(k, _)| !["temperature", "structured_output"].contains(k))
        .copied()
        .collect();
    changed.extend([("model", "llama"), ("max_tokens", "256")]);
    let (status, _, _) = post_form(app, &browser, &token, &edit_path, &changed).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let judge = admin.api.get(app.url("/api/v1/judges")).go().await;
    let judge = json_with(judge, StatusCode::OK).await[0].clone();
    assert_eq!(judge["model"], "llama");
    assert_eq!(judge["params"]["max_tokens"], 256);
    assert_eq!(judge["params"]["seed"], 7);
    assert!(
        judge["params"].get("temperature").is_none(),
        "emptied: the default"
    );
    assert_eq!(judge["params"]["structured_output"], false);
    assert_eq!(
        judge["api_key_env"], "VERDICT_JUDGE_KEY_PAGED",
        "an empty key field keeps the key"
    );
    assert_eq!(app.count(updates).await, 1);

    // Only admins configure judges.
    let lead = app.lead().await;
    let lead_browser = lead.browser_for(app).await;
    for path in ["/admin/judges", edit_path.as_str()] {
        let response = lead_browser.get(app.url(path)).go().await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{path}");
    }
}
db_test!(an_admin_adds_a_judge_on_the_page_with_every_bad_field_named: TestApp);
