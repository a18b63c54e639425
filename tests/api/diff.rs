//! The A vs B diff pages: a rater's own assignment in the orientation they were shown,
//! a task for its leads in the task's own order, escaping, both layouts, and the caps.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Go, Persona, TestApp, complete_answers, db_test, json_with, page_text};

/// One task whose responses differ in a word of prose and a word of code, and each has a
/// block the other lacks.
fn pair_task(external_id: &str) -> String {
    json!({
        "external_id": external_id,
        "prompt": "Write f.",
        "response_a": "Alpha explains the loop.\n\n```python\ndef f():\n    return alpha_value\n```\n\n```bash\necho only-alpha\n```\n",
        "response_b": "Beta explains the loop.\n\n```py\ndef f():\n    return beta_value\n```\n\n```rust\nfn only_beta() {}\n```\n",
    })
    .to_string()
        + "\n"
}

/// A batch of `jsonl` shown in the task's own order (so a test decides what is swapped).
async fn batch_of(app: &TestApp, admin: &Persona, jsonl: &str) -> String {
    app.batch(admin, "diffs", jsonl, "&randomize=false").await
}

async fn a_rater_sees_their_own_assignment_as_they_were_shown_it(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = batch_of(app, &admin, &pair_task("t1")).await;
    let assignment = app.take(&rater, &batch).await;
    // Shown swapped: the rater's "Response A" is the task's response B.
    app.execute("UPDATE assignments SET swapped = TRUE WHERE state = 'open'")
        .await;
    let browser = rater.browser_for(app).await;
    let form = page_text(app, &browser, &format!("/assignments/{assignment}")).await;
    assert!(
        form.contains(&format!("href=\"/assignments/{assignment}/diff\"")),
        "the form links it"
    );
    let html = page_text(app, &browser, &format!("/assignments/{assignment}/diff")).await;
    // Side by side: A's changed line on the left (first in the row), B's on the right.
    let left = html.find("<del>beta_value</del>").expect(&html);
    let right = html.find("<ins>alpha_value</ins>").expect(&html);
    assert!(left < right, "{html}");
    assert!(
        html.contains("<del>Beta</del> explains the loop."),
        "{html}"
    );
    // Blocks matched by language (py is python); the others are only on one side.
    assert!(
        html.contains("python block 1</a>: 1 line changed"),
        "{html}"
    );
    assert!(html.contains("rust block 1</a>: only in A"), "{html}");
    assert!(html.contains("bash block 1</a>: only in B"), "{html}");
    assert!(
        html.contains(&format!("href=\"/assignments/{assignment}\"")),
        "links back to the task: {html}"
    );
    assert!(!html.to_lowercase().contains("swap"), "{html}");

    // Finished, it is still theirs to look at, and links back to the rating.
    let done = app
        .act(&rater, &assignment, "submit", &complete_answers())
        .await;
    let rating = json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let html = page_text(app, &browser, &format!("/assignments/{assignment}/diff")).await;
    assert!(html.contains("<del>beta_value</del>"), "{html}");
    assert!(
        html.contains(&format!("href=\"/ratings/{rating}\"")),
        "{html}"
    );
}
db_test!(a_rater_sees_their_own_assignment_as_they_were_shown_it: TestApp);

async fn nobody_else_sees_a_raters_assignment(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let batch = batch_of(app, &admin, &pair_task("t1")).await;
    let assignment = app.take(&rater, &batch).await;
    let path = format!("/assignments/{assignment}/diff");
    for who in [&other, &lead, &admin] {
        let browser = who.browser_for(app).await;
        let response = browser.get(app.url(&path)).go().await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{}", who.username);
        let body = response.text().await.unwrap();
        assert!(!body.contains("alpha_value"), "{body}");
    }
    let response = app.browser().get(app.url(&path)).go().await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let to = response.headers()["location"].to_str().unwrap();
    assert!(to.starts_with("/login?next="), "{to}");
    let missing = rater.browser_for(app).await;
    let response = missing
        .get(app.url(&format!("/assignments/{}/diff", uuid::Uuid::new_v4())))
        .go()
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}
db_test!(nobody_else_sees_a_raters_assignment: TestApp);

async fn leads_see_a_task_in_its_own_order(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = batch_of(app, &admin, &pair_task("t/1 x")).await;
    // A rater was shown it swapped; the lead's page keeps the task's own order.
    app.take(&rater, &batch).await;
    app.execute("UPDATE assignments SET swapped = TRUE WHERE state = 'open'")
        .await;
    let path = format!("/batches/{batch}/tasks/t%2F1%20x/diff");
    for who in [&lead, &admin] {
        let browser = who.browser_for(app).await;
        let task = page_text(app, &browser, &format!("/batches/{batch}/tasks/t%2F1%20x")).await;
        assert!(
            task.contains(&format!("href=\"{path}\"")),
            "the task page links it"
        );
        let html = page_text(app, &browser, &path).await;
        let left = html.find("<del>alpha_value</del>").expect(&html);
        let right = html.find("<ins>beta_value</ins>").expect(&html);
        assert!(left < right, "{html}");
        assert!(html.contains("bash block 1</a>: only in A"), "{html}");
        assert!(
            html.contains(&format!("href=\"/batches/{batch}/tasks/t%2F1%20x\"")),
            "links back to the task page: {html}"
        );
    }
    let browser = rater.browser_for(app).await;
    let response = browser.get(app.url(&path)).go().await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let browser = lead.browser_for(app).await;
    let response = browser
        .get(app.url(&format!("/batches/{batch}/tasks/nope/diff")))
        .go()
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = app.browser().get(app.url(&path)).go().await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
}
db_test!(leads_see_a_task_in_its_own_order: TestApp);

async fn hostile_content_is_shown_as_text(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let task = json!({
        "external_id": "x1",
        "prompt": "p",
        "response_a": "Look: <script>alert(1)</script>\n\n```<img src=x onerror=alert(1)>\nq = \"'&\" + '<b>'\n```\n",
        "response_b": "Look: <script>alert(2)</script>\n\n```<img src=x onerror=alert(1)>\nq = \"'&\" + '</td>'\n```\n",
    })
    .to_string();
    let batch = batch_of(app, &admin, &(task + "\n")).await;
    let browser = lead.browser_for(app).await;
    for view in ["side", "inline"] {
        let html = page_text(
            app,
            &browser,
            &format!("/batches/{batch}/tasks/x1/diff?view={view}"),
        )
        .await;
        let main = &html[html.find("<main>").unwrap()..];
        for raw in ["<script", "<img", "<b>", "'</td>'", "\"'&\""] {
            assert!(!main.contains(raw), "{view}: {raw} in {main}");
        }
        assert!(main.contains("&#60;script&#62;alert("), "{main}");
        // The fence's first word names the language.
        assert!(
            main.contains("&#60;img block 1</a>: 1 line changed"),
            "{main}"
        );
        assert!(main.contains("&#34;&#39;&#38;&#34;"), "{main}");
    }
}
db_test!(hostile_content_is_shown_as_text: TestApp);

async fn both_layouts_render_and_a_bad_view_is_refused(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = batch_of(app, &admin, &pair_task("t1")).await;
    let assignment = app.take(&rater, &batch).await;
    let browser = rater.browser_for(app).await;
    let path = format!("/assignments/{assignment}/diff");
    let default = page_text(app, &browser, &path).await;
    let side = page_text(app, &browser, &format!("{path}?view=side")).await;
    let inline = page_text(app, &browser, &format!("{path}?view=inline")).await;
    assert!(side.contains("class=\"diff diff-side\""), "{side}");
    assert!(!side.contains("diff-inline"), "{side}");
    assert!(default.contains("class=\"diff diff-side\""), "{default}");
    assert!(inline.contains("class=\"diff diff-inline\""), "{inline}");
    assert!(!inline.contains("diff-side"), "{inline}");
    // Inline: A's line, then B's line that replaces it, each with its sign.
    let removed = inline.find("<del>alpha_value</del>").expect(&inline);
    let added = inline.find("<ins>beta_value</ins>").expect(&inline);
    assert!(removed < added, "{inline}");
    assert!(inline.contains(">−</span><span class=\"visually-hidden\">only in A"));
    assert!(inline.contains(">+</span><span class=\"visually-hidden\">only in B"));
    // Each layout links to the other, and marks the one shown.
    assert!(inline.contains(&format!("href=\"{path}?view=side\">Side by side")));
    assert!(inline.contains(&format!(
        "href=\"{path}?view=inline\" aria-current=\"page\""
    )));

    for bad in ["?view=sideways", "?view=", "?colour=red"] {
        let response = browser.get(app.url(&format!("{path}{bad}"))).go().await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
        let body = response.text().await.unwrap();
        if bad.starts_with("?view") {
            assert!(body.contains("view must be side or inline"), "{body}");
        }
    }
}
db_test!(both_layouts_render_and_a_bad_view_is_refused: TestApp);

async fn a_single_response_rubric_has_nothing_to_compare(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let task = json!({"external_id": "s1", "prompt": "p", "response": "```python\nx = 1\n```"});
    let batch = app
        .batch(
            &admin,
            "single",
            &format!("{task}\n"),
            "&rubric=additive-5&randomize=false",
        )
        .await;
    let assignment = app.take(&rater, &batch).await;
    let form = page_text(
        app,
        &rater.browser_for(app).await,
        &format!("/assignments/{assignment}"),
    )
    .await;
    assert!(
        !form.contains("/diff\""),
        "a single response has no diff to link"
    );
    for (who, path) in [
        (&rater, format!("/assignments/{assignment}/diff")),
        (&lead, format!("/batches/{batch}/tasks/s1/diff")),
    ] {
        let browser = who.browser_for(app).await;
        let response = browser.get(app.url(&path)).go().await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        let body = response.text().await.unwrap();
        assert!(
            body.contains("This rubric judges one response: there is nothing to compare."),
            "{body}"
        );
    }
}
db_test!(a_single_response_rubric_has_nothing_to_compare: TestApp);

async fn a_huge_response_is_shown_without_a_diff(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    // A megabyte of code against a small change of it, and a long prose of distinct
    // lines against another: neither may hold the server up.
    let code: String = (0..60_000).map(|i| format!("v{i} = {i} * 3\n")).collect();
    let prose_a: String = (0..3_000).map(|i| format!("alpha line {i}\n")).collect();
    let prose_b: String = (0..3_000).map(|i| format!("beta line {i}\n")).collect();
    let task = json!({
        "external_id": "big",
        "prompt": "p",
        "response_a": format!("{prose_a}\n```python\n{code}```\n"),
        "response_b": format!("{prose_b}\n```python\nv0 = 0\n```\n"),
    })
    .to_string();
    assert!(task.len() > 1_000_000);
    let batch = batch_of(app, &admin, &(task + "\n")).await;
    let browser = lead.browser_for(app).await;
    let started = std::time::Instant::now();
    let html = page_text(app, &browser, &format!("/batches/{batch}/tasks/big/diff")).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        html.contains("python block 1</a>: too large to diff; shown without a diff"),
        "the code block"
    );
    assert!(html.contains("v59999 = 59999 * 3"), "shown as it is");
    assert!(html.contains("Prose</a>: "), "the prose is diffed");
}
db_test!(a_huge_response_is_shown_without_a_diff: TestApp);
