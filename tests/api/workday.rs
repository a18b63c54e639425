//! The rater's day around the form: time kept on skips and out-of-scope marks, returned
//! ratings counted where the rater looks, revisions saved as they are written, progress
//! with its denominator, and tasks no rater is left for flagged to leads.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{
    Go, Persona, TestApp, assignment_id, complete_answers, csrf_token, db_test, json_with,
    page_text as page, tasks_jsonl,
};

async fn skips_and_out_of_scope_keep_the_time_spent(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "timed", &tasks_jsonl(3), "").await;

    // A time that is no time is refused with the field named, and nothing is stored.
    let first = assignment_id(&app.next(&rater, &batch).await.unwrap());
    for bad in [
        json!(-1),
        json!("ten"),
        json!(1.5),
        json!(7 * 24 * 3600 + 1),
    ] {
        let body = json!({"reason": "too_long", "time_spent_s": bad});
        let refused = app.act(&rater, &first, "skip", &body).await;
        let fields = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await["fields"].clone();
        assert!(fields["time_spent_s"].is_string(), "{bad}: {fields}");
    }
    let both = json!({"reason": "bored", "time_spent_s": -3});
    let fields = json_with(
        app.act(&rater, &first, "skip", &both).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await["fields"]
        .clone();
    assert!(
        fields["reason"].is_string() && fields["time_spent_s"].is_string(),
        "every refused field at once: {fields}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE outcome = 'skipped'")
            .await,
        0
    );

    let body = json!({"reason": "too_long", "time_spent_s": 1900});
    let skipped = json_with(app.act(&rater, &first, "skip", &body).await, StatusCode::OK).await;
    let skipped = app
        .rating(&rater, skipped["rating_id"].as_str().unwrap())
        .await;
    assert_eq!(skipped["time_spent_s"], 1900);

    let second = assignment_id(&app.next(&rater, &batch).await.unwrap());
    let body =
        json!({"explanation": "This asks for a poem, not for code at all.", "time_spent_s": 240});
    let marked = json_with(
        app.act(&rater, &second, "out-of-scope", &body).await,
        StatusCode::OK,
    )
    .await;
    let marked = app
        .rating(&rater, marked["rating_id"].as_str().unwrap())
        .await;
    assert_eq!(marked["time_spent_s"], 240);
    assert!(
        marked["answers"].get("time_spent_s").is_none(),
        "the time has its own column, not an answer"
    );

    // The skip form of the page carries the timer's value too.
    let third = assignment_id(&app.next(&rater, &batch).await.unwrap());
    let browser = rater.browser_for(app).await;
    let form = page(app, &browser, &format!("/assignments/{third}")).await;
    assert!(
        form.contains(r#"id="skip-form""#) && form.matches(r#"class="time-spent""#).count() == 2,
        "both the rating form and the skip form carry the active time"
    );
    let token = csrf_token(&form);
    let sent = browser
        .post(app.url(&format!("/assignments/{third}/skip")))
        .form(&[
            ("csrf_token", token.as_str()),
            ("reason", "unfamiliar"),
            ("time_spent_s", "75"),
        ])
        .go()
        .await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.count(
            "SELECT CAST(MAX(time_spent_s) AS BIGINT) FROM ratings WHERE skip_reason = 'unfamiliar'"
        )
        .await,
        75
    );
}
db_test!(skips_and_out_of_scope_keep_the_time_spent: TestApp);

/// A rated task of `rater`'s, returned by `lead` with a comment; its rating id.
async fn returned_rating(app: &TestApp, rater: &Persona, lead: &Persona, batch: &str) -> String {
    let id = assignment_id(&app.next(rater, batch).await.unwrap());
    let done = json_with(
        app.act(rater, &id, "submit", &complete_answers()).await,
        StatusCode::OK,
    )
    .await;
    let rating = done["rating_id"].as_str().unwrap().to_owned();
    let back = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
        .json(&json!({"decision": "return", "comment": "Say why B's code would not run.", "version": 1}))
        .go()
        .await;
    assert_eq!(back.status(), StatusCode::OK);
    rating
}

async fn returned_ratings_are_counted_in_the_menu_and_listed_in_the_queue(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "returns", &tasks_jsonl(3), "&randomize=false")
        .await;
    let browser = rater.browser_for(app).await;
    let home = page(app, &browser, "/").await;
    assert!(!home.contains("returned-count"), "nothing came back yet");
    assert!(!home.contains("came back from review"));

    let first = returned_rating(app, &rater, &lead, &batch).await;
    let second = returned_rating(app, &rater, &lead, &batch).await;
    let home = page(app, &browser, "/").await;
    assert!(
        home.contains(
            r#"<span class="badge badge-returned" id="returned-count">2 returned</span>"#
        ),
        "the menu counts them"
    );
    assert!(home.contains("2 ratings came back from review"));
    for rating in [&first, &second] {
        assert!(home.contains(&format!(r#"href="/ratings/{rating}""#)));
    }
    assert!(
        home.contains("Say why B&#39;s code would not run."),
        "{home}"
    );
    // Any page shows the count in the menu.
    let ratings = page(app, &browser, "/ratings").await;
    assert!(ratings.contains("2 returned"));
    // The lead's menu counts only the lead's own.
    let lead_home = page(app, &lead.browser_for(app).await, "/").await;
    assert!(!lead_home.contains("returned-count"));
}
db_test!(returned_ratings_are_counted_in_the_menu_and_listed_in_the_queue: TestApp);

async fn a_revision_is_saved_as_it_is_written_and_sent_with_its_time(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "revisions", &tasks_jsonl(1), "&randomize=false")
        .await;
    let rating = returned_rating(app, &rater, &lead, &batch).await;
    let before = app.rating(&rater, &rating).await;
    let browser = rater.browser_for(app).await;
    let form = page(app, &browser, &format!("/ratings/{rating}")).await;
    assert!(form.contains(&format!(r#"data-draft-url="/ratings/{rating}/draft""#)));
    assert!(
        form.contains(r#"id="timer""#),
        "the timer goes on from the time so far"
    );
    assert!(form.contains(r#"data-start="95""#));
    let token = csrf_token(&form);

    // Half a revision: saved beside the rating, which the lead still sees as it was.
    let reason = "B prints nothing: the function is never called, so nothing runs.";
    let saved = browser
        .post(app.url(&format!("/ratings/{rating}/draft")))
        .form(&[
            ("csrf_token", token.as_str()),
            ("b.executability", "no"),
            ("b.executability_explanation", reason),
            ("time_spent_s", "400"),
        ])
        .go()
        .await;
    assert!(json_with(saved, StatusCode::OK).await["saved_at"].is_string());
    let now = app.rating(&rater, &rating).await;
    assert_eq!(now["answers"], before["answers"], "the rating is unchanged");
    assert_eq!(
        (now["status"].as_str(), now["version"].as_i64()),
        (Some("returned"), before["version"].as_i64())
    );

    // A draft of a bad shape is refused by field; nothing is saved.
    let bad = browser
        .post(app.url(&format!("/ratings/{rating}/draft")))
        .header("accept", "application/json")
        .form(&[("csrf_token", token.as_str()), ("time_spent_s", "-4")])
        .go()
        .await;
    let fields = json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await["fields"].clone();
    assert!(fields["time_spent_s"].is_string(), "{fields}");
    let refused = browser
        .post(app.url(&format!("/ratings/{rating}/draft")))
        .header("accept", "application/json")
        .form(&[("csrf_token", token.as_str()), ("sxs", "9")])
        .go()
        .await;
    let fields = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await["fields"].clone();
    assert!(fields["sxs"].is_string(), "{fields}");

    // Reloading the page restores the revision and the time.
    let form = page(app, &browser, &format!("/ratings/{rating}")).await;
    assert!(form.contains("Your unsent revision is restored."));
    assert!(form.contains(reason));
    assert!(form.contains(r#"data-start="400""#), "time adds up");
    assert!(form.contains(r#"name="b.executability" value="no" checked"#));

    // Someone else may not save into it.
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let other_browser = other.browser_for(app).await;
    let other_token = csrf_token(&page(app, &other_browser, "/").await);
    let intruder = other_browser
        .post(app.url(&format!("/ratings/{rating}/draft")))
        .form(&[("csrf_token", other_token.as_str()), ("sxs", "1")])
        .go()
        .await;
    assert_eq!(intruder.status(), StatusCode::NOT_FOUND);

    // Sending it: the rating changes, the draft is gone, the rater is told.
    let mut fields: Vec<(String, String)> = vec![("csrf_token".into(), token.clone())];
    let answers = complete_answers();
    for side in ["a", "b"] {
        for (key, value) in answers[side].as_object().unwrap() {
            fields.push((format!("{side}.{key}"), value.as_str().unwrap().to_owned()));
        }
    }
    fields.retain(|(k, _)| k != "b.executability");
    fields.push(("b.executability".into(), "no".into()));
    fields.push(("b.executability_explanation".into(), reason.into()));
    fields.push(("sxs".into(), "2".into()));
    fields.push((
        "sxs_explanation".into(),
        answers["sxs_explanation"].as_str().unwrap().into(),
    ));
    fields.push(("time_spent_s".into(), "460".into()));
    let sent = browser
        .post(app.url(&format!("/ratings/{rating}")))
        .form(&fields)
        .go()
        .await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        sent.headers()["location"].to_str().unwrap(),
        format!("/ratings/{rating}?sent=1")
    );
    let after = app.rating(&rater, &rating).await;
    assert_eq!(after["status"], "submitted");
    assert_eq!(after["answers"]["b"]["executability"], "no");
    assert_eq!(after["time_spent_s"], 460);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE revision_draft IS NOT NULL")
            .await,
        0,
        "sending the revision clears its draft"
    );
    let confirmed = page(app, &browser, &format!("/ratings/{rating}?sent=1")).await;
    assert!(confirmed.contains("Your revision was saved and is back with the leads for review."));
    assert!(!confirmed.contains("Your unsent revision is restored."));
    let unknown = browser
        .get(app.url(&format!("/ratings/{rating}?sent=1&colour=red")))
        .go()
        .await;
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
}
db_test!(a_revision_is_saved_as_it_is_written_and_sent_with_its_time: TestApp);

async fn progress_has_its_denominator_and_stranded_tasks_are_flagged(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    // Two ratings per task, and only the rater (and the lead and admin, who may rate an
    // open batch too) to give them.
    let batch = app
        .batch(
            &admin,
            "stranded",
            &tasks_jsonl(3),
            "&overlap=2&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let lead_browser = lead.browser_for(app).await;
    let home = page(app, &lead_browser, "/").await;
    assert!(home.contains("0 of 3 done (0%)"));
    assert!(!home.contains("class=\"card stranded\""));

    // The rater and the lead rate t1; the rater skips t2, the lead and admin rate it.
    for who in [&rater, &lead] {
        let id = assignment_id(&app.next(who, &batch).await.unwrap());
        app.act(who, &id, "submit", &complete_answers()).await;
    }
    let id = assignment_id(&app.next(&rater, &batch).await.unwrap());
    app.act(&rater, &id, "skip", &json!({"reason": "unfamiliar"}))
        .await;
    for who in [&lead, &admin] {
        let id = assignment_id(&app.next(who, &batch).await.unwrap());
        app.act(who, &id, "submit", &complete_answers()).await;
    }
    let home = page(app, &lead_browser, "/").await;
    assert!(home.contains("2 of 3 done (66%)"), "{home}");
    assert!(!home.contains("class=\"card stranded\""));

    // t3: the lead rates it, the rater and the admin skip it. No one is left to give
    // its second rating.
    let id = assignment_id(&app.next(&lead, &batch).await.unwrap());
    app.act(&lead, &id, "submit", &complete_answers()).await;
    for who in [&rater, &admin] {
        let next = app.next(who, &batch).await.unwrap();
        assert_eq!(next["task"]["external_id"], "t3");
        app.act(
            who,
            &assignment_id(&next),
            "skip",
            &json!({"reason": "too_long"}),
        )
        .await;
    }
    let home = page(app, &lead_browser, "/").await;
    assert!(home.contains("class=\"card stranded\""), "{home}");
    assert!(home.contains("1 task of"));
    assert!(home.contains(&format!(r#"href="/batches/{batch}/tasks/t3""#)));
    // The batch's page says it too.
    let dashboard = page(app, &lead_browser, &format!("/batches/{batch}")).await;
    assert!(dashboard.contains(r#"id="stranded""#), "{dashboard}");
    assert!(dashboard.contains("2 of 3 done (66%)"));
    assert!(dashboard.contains(&format!(r#"href="/batches/{batch}/tasks/t3""#)));
    // Raters are not shown it.
    let rater_home = page(app, &rater.browser_for(app).await, "/").await;
    assert!(!rater_home.contains("class=\"card stranded\""));
    // A new rater puts the task back within reach.
    app.persona("fresh", verdict::auth::Role::Rater).await;
    let home = page(app, &lead_browser, "/").await;
    assert!(!home.contains("class=\"card stranded\""));
    let dashboard = page(app, &lead_browser, &format!("/batches/{batch}")).await;
    assert!(!dashboard.contains(r#"id="stranded""#));
}
db_test!(progress_has_its_denominator_and_stranded_tasks_are_flagged: TestApp);
