//! The admin's batch settings page: members picked from lists, classification questions
//! edited as a form, every error at once, and a confirmation before anything changes.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Go, TestApp, contents, db_test, json_with, tasks_jsonl};

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let end = tag[start..].find('"')? + start;
    Some(unescape(&tag[start..end]))
}

/// The fields a browser would send for the form whose opening tag contains `marker`, as
/// the page fills it in: checked boxes only, each select's chosen option, textareas'
/// text.
pub fn fields_of(html: &str, marker: &str) -> Vec<(String, String)> {
    let open = html
        .find(marker)
        .unwrap_or_else(|| panic!("no form {marker} in:\n{html}"));
    let start = html[..open].rfind("<form").expect("a form");
    let end = html[start..].find("</form>").expect("the form's end") + start;
    let form = &html[start..end];
    let mut fields = Vec::new();
    let mut rest = form;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        let tag_end = rest.find('>').expect("tag end");
        let tag = &rest[..=tag_end];
        if tag.starts_with("<input") {
            let name = attr(tag, "name");
            let kind = attr(tag, "type").unwrap_or_default();
            let checkable = kind == "checkbox" || kind == "radio";
            if let Some(name) = name
                && (!checkable || tag.contains(" checked"))
            {
                let value = attr(tag, "value").unwrap_or_else(|| "on".into());
                fields.push((name, value));
            }
        } else if tag.starts_with("<select") {
            let name = attr(tag, "name").expect("a select's name");
            let close = rest.find("</select>").expect("select end");
            let options = &rest[..close];
            let chosen = options
                .split("<option")
                .skip(1)
                .find(|o| o.contains(" selected"))
                .or_else(|| options.split("<option").nth(1))
                .and_then(|o| attr(&format!(" {o}"), "value"))
                .unwrap_or_default();
            fields.push((name, chosen));
        } else if tag.starts_with("<textarea") {
            let name = attr(tag, "name").expect("a textarea's name");
            let close = rest.find("</textarea>").expect("textarea end");
            fields.push((name, unescape(&rest[tag_end + 1..close])));
        }
        rest = &rest[1..];
    }
    fields
}

/// The settings form of a settings page, as it is filled in.
pub fn form_of(html: &str) -> Vec<(String, String)> {
    fields_of(html, "id=\"settings-form\"")
}

/// Replaces (or adds) a field of a form; `None` takes it out.
fn set(form: &mut Vec<(String, String)>, name: &str, value: Option<&str>) {
    form.retain(|(n, _)| n != name);
    if let Some(value) = value {
        form.push((name.into(), value.into()));
    }
}

/// A batch's settings page as `browser` (an admin's) reads it.
pub(crate) async fn settings_page(app: &TestApp, browser: &reqwest::Client, batch: &str) -> String {
    let page = browser
        .get(app.url(&format!("/admin/batches/{batch}")))
        .go()
        .await;
    assert_eq!(page.status(), StatusCode::OK);
    page.text().await.unwrap()
}

async fn every_error_is_reported_at_once_and_nothing_changes(app: &TestApp) {
    let admin = app.admin().await;
    app.rater().await;
    let batch = app.batch(&admin, "errors", &tasks_jsonl(2), "").await;
    let browser = admin.browser_for(app).await;
    let page = settings_page(app, &browser, &batch).await;
    let mut form = form_of(&page);
    set(&mut form, "overlap", Some("two"));
    set(&mut form, "lease_minutes", Some("0"));
    set(&mut form, "min_explanation_len", Some("5000"));
    set(&mut form, "raters_scope", Some("only"));
    set(&mut form, "rater", Some("ghost"));
    set(&mut form, "q0.key", Some("Bad Key"));
    set(&mut form, "q0.label", Some("Language"));
    let too_many: Vec<String> = (0..=verdict_core::rubric::MAX_OPTIONS)
        .map(|i| format!("lang{i}"))
        .collect();
    set(&mut form, "q0.options", Some(&too_many.join("\n")));
    let before = contents(app).await;
    let refused = browser
        .post(app.url(&format!("/admin/batches/{batch}")))
        .form(&form)
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = refused.text().await.unwrap();
    assert!(
        html.contains("Nothing was saved: 6 fields need changing."),
        "{html}"
    );
    for named in [
        "Raters per task: must be a whole number",
        "Lease: must be from 1 to 1440",
        "Shortest explanation: must be from 0 to 1000",
        "Raters: no user named &#34;ghost&#34;",
        "Classification question 1, key: must be 1-64 of a-z, 0-9 and _",
        &format!(
            "Classification question 1, options: must be at most {} options",
            verdict_core::rubric::MAX_OPTIONS
        ),
    ] {
        assert!(html.contains(named), "{named}: {html}");
    }
    // Beside the fields too, and the form keeps what was typed.
    assert!(html.contains("<p class=\"error\">Lease must be from 1 to 1440</p>"));
    assert!(html.contains("<p class=\"error\">key must be 1-64 of a-z, 0-9 and _</p>"));
    assert!(html.contains("value=\"Bad Key\""));
    assert_eq!(contents(app).await, before, "nothing changed");
}
db_test!(every_error_is_reported_at_once_and_nothing_changes: TestApp);

async fn raters_and_leads_are_picked_from_their_accounts(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    app.lead().await;
    let batch = app.batch(&admin, "pickers", &tasks_jsonl(2), "").await;
    let browser = admin.browser_for(app).await;
    let page = settings_page(app, &browser, &batch).await;
    assert!(page.contains("<input type=\"checkbox\" name=\"rater\" value=\"rater\">"));
    assert!(page.contains("<input type=\"checkbox\" name=\"lead\" value=\"lead\">"));
    assert!(
        !page.contains("name=\"rater\" value=\"lead\"")
            && !page.contains("name=\"lead\" value=\"rater\""),
        "each list offers its own role"
    );
    assert!(
        !page.contains("name=\"rater\" value=\"admin\""),
        "nor admins"
    );

    // Ticking the rater: a confirmation first, nothing changed until Confirm.
    let mut form = form_of(&page);
    set(&mut form, "raters_scope", Some("only"));
    form.push(("rater".into(), "rater".into()));
    set(&mut form, "overlap", Some("2"));
    let before = contents(app).await;
    let confirm = browser
        .post(app.url(&format!("/admin/batches/{batch}")))
        .form(&form)
        .go()
        .await;
    assert_eq!(confirm.status(), StatusCode::OK);
    let html = confirm.text().await.unwrap();
    assert!(html.contains("You are about to change"), "{html}");
    for row in [
        "<th scope=\"row\">Raters per task</th><td>1</td><td>2</td>",
        "<th scope=\"row\">Raters</th><td>every rater</td><td>rater</td>",
    ] {
        assert!(html.contains(row), "{row}: {html}");
    }
    assert!(html.contains(&format!("href=\"/admin/batches/{batch}\">Cancel</a>")));
    assert_eq!(
        contents(app).await,
        before,
        "nothing changed before Confirm"
    );

    let confirmed_form = fields_of(&html, "/confirm\"");
    let applied = browser
        .post(app.url(&format!("/admin/batches/{batch}/confirm")))
        .form(&confirmed_form)
        .go()
        .await;
    assert_eq!(applied.status(), StatusCode::SEE_OTHER);
    let to = applied.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, format!("/admin/batches/{batch}?saved=overlap,raters"));
    let after = browser.get(app.url(&to)).go().await.text().await.unwrap();
    assert!(after.contains("Saved: Raters per task, Raters changed."));
    assert!(after.contains("<input type=\"checkbox\" name=\"rater\" value=\"rater\" checked>"));
    let view = json_with(
        admin
            .api
            .get(app.url(&format!("/api/v1/batches/{batch}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (view["overlap"].as_i64(), view["raters"].clone()),
        (Some(2), json!([rater.username]))
    );

    // The same confirmation again finds nothing left to change: 409, nothing written.
    let before = contents(app).await;
    let again = browser
        .post(app.url(&format!("/admin/batches/{batch}/confirm")))
        .form(&confirmed_form)
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    assert_eq!(contents(app).await, before);
    // A confirmation carrying something that is not settings is refused by name.
    let forged = browser
        .post(app.url(&format!("/admin/batches/{batch}/confirm")))
        .form(&[
            ("csrf_token", crate::helpers::csrf_token(&html).as_str()),
            ("settings", "{\"overlap\": 1}"),
        ])
        .go()
        .await;
    assert_eq!(forged.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(contents(app).await, before);
}
db_test!(raters_and_leads_are_picked_from_their_accounts: TestApp);

/// Apply a settings form: save, then confirm what the confirmation shows.
async fn save_and_confirm(
    app: &TestApp,
    browser: &reqwest::Client,
    batch: &str,
    form: &[(String, String)],
) {
    let confirm = browser
        .post(app.url(&format!("/admin/batches/{batch}")))
        .form(form)
        .go()
        .await;
    let html = confirm.text().await.unwrap();
    let applied = browser
        .post(app.url(&format!("/admin/batches/{batch}/confirm")))
        .form(&fields_of(&html, "/confirm\""))
        .go()
        .await;
    assert_eq!(applied.status(), StatusCode::SEE_OTHER, "{html}");
}

async fn classification_questions_round_trip_through_the_form(app: &TestApp) {
    let admin = app.admin().await;
    let batch = app.batch(&admin, "questions", &tasks_jsonl(2), "").await;
    let browser = admin.browser_for(app).await;
    let questions = || async {
        json_with(
            admin
                .api
                .get(app.url(&format!("/api/v1/batches/{batch}")))
                .go()
                .await,
            StatusCode::OK,
        )
        .await["classifications"]
            .clone()
    };

    // Add one in the empty row at the end.
    let mut form = form_of(&settings_page(app, &browser, &batch).await);
    set(&mut form, "q0.key", Some("language"));
    set(&mut form, "q0.label", Some("Programming language"));
    set(&mut form, "q0.options", Some("python\r\nrust\r\n"));
    save_and_confirm(app, &browser, &batch, &form).await;
    assert_eq!(
        questions().await,
        json!([{"key": "language", "label": "Programming language", "multiple": false,
                "required": true, "options": ["python", "rust"]}])
    );

    // The page shows it for editing, with a new empty row; edit it and add a second.
    let page = settings_page(app, &browser, &batch).await;
    let mut form = form_of(&page);
    assert!(form.contains(&("q0.options".into(), "python\nrust".into())));
    assert!(form.contains(&("q1.key".into(), String::new())));
    set(&mut form, "q0.label", Some("Language"));
    set(&mut form, "q0.options", Some("python\nrust\ngo"));
    set(&mut form, "q0.required", None);
    set(&mut form, "q1.key", Some("kind"));
    set(&mut form, "q1.label", Some("Kind"));
    set(&mut form, "q1.options", Some("bug\nfeature"));
    set(&mut form, "q1.multiple", Some("on"));
    save_and_confirm(app, &browser, &batch, &form).await;
    assert_eq!(
        questions().await,
        json!([{"key": "language", "label": "Language", "multiple": false,
                "required": false, "options": ["python", "rust", "go"]},
               {"key": "kind", "label": "Kind", "multiple": true,
                "required": true, "options": ["bug", "feature"]}])
    );

    // Remove the first.
    let mut form = form_of(&settings_page(app, &browser, &batch).await);
    set(&mut form, "q0.remove", Some("on"));
    save_and_confirm(app, &browser, &batch, &form).await;
    assert_eq!(questions().await[0]["key"], "kind");
    assert_eq!(questions().await.as_array().unwrap().len(), 1);

    // The JSON stays an alternative when asked for.
    let mut form = form_of(&settings_page(app, &browser, &batch).await);
    set(&mut form, "use_json", Some("on"));
    set(
        &mut form,
        "classifications",
        Some(r#"[{"key": "topic", "label": "Topic", "options": ["a", "b"]}]"#),
    );
    save_and_confirm(app, &browser, &batch, &form).await;
    assert_eq!(questions().await[0]["key"], "topic");
}
db_test!(classification_questions_round_trip_through_the_form: TestApp);
