//! The audit log: admin and lead actions are recorded, and only admins read them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Go, TestApp, complete_answers, db_test, json_with, tasks_jsonl};

async fn audit(app: &TestApp, query: &str, who: &crate::helpers::Persona) -> reqwest::Response {
    who.api
        .get(app.url(&format!("/api/v1/audit{query}")))
        .go()
        .await
}

async fn admin_and_lead_actions_are_recorded_and_only_admins_read_them(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;

    let made = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(
            &json!({"username": "newcomer", "role": "rater", "password": "a long enough password"}),
        )
        .go()
        .await;
    let newcomer = json_with(made, StatusCode::CREATED).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let changed = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{newcomer}")))
        .json(&json!({"role": "lead", "active": false}))
        .go()
        .await;
    assert_eq!(changed.status(), StatusCode::OK);
    let batch = app
        .batch(&admin, "audited", &tasks_jsonl(2), "&randomize=false")
        .await;
    let settings = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"overlap": 1, "lease_minutes": 30}))
        .go()
        .await;
    assert_eq!(settings.status(), StatusCode::OK);
    let next = app.next(&rater, &batch).await.unwrap();
    let assignment = next["assignment_id"].as_str().unwrap().to_owned();
    let done = app
        .act(&rater, &assignment, "submit", &complete_answers())
        .await;
    let rating = json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reviewed = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
        .json(&json!({"decision": "accept", "version": 1}))
        .go()
        .await;
    assert_eq!(reviewed.status(), StatusCode::OK);
    let export = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format=jsonl")))
        .go()
        .await;
    assert_eq!(export.status(), StatusCode::OK);
    let _ = export.bytes().await;
    // A rater's own work is not an admin or lead action.
    let entries = json_with(audit(app, "", &admin).await, StatusCode::OK).await["items"].clone();
    let seen: Vec<(String, String, String)> = entries
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|e| {
            (
                e["actor"].as_str().unwrap_or("").to_owned(),
                e["action"].as_str().unwrap_or("").to_owned(),
                e["target"].as_str().unwrap_or("").to_owned(),
            )
        })
        .filter(|(_, action, _)| action != "token.create")
        .collect();
    let own = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
    assert_eq!(
        seen,
        vec![
            own(&admin.username, "user.create", "newcomer"),
            own(&admin.username, "user.update", "newcomer"),
            own(&admin.username, "batch.upload", "audited"),
            own(&admin.username, "batch.settings", "audited"),
            own(&lead.username, "rating.review", &rating),
            own(&lead.username, "batch.export", "audited"),
        ]
    );
    let by_action = |action: &str| {
        entries
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["action"] == action)
            .cloned()
            .unwrap_or(Value::Null)
    };
    // Each entry names what it changed, before and after, and the ids to link to. The
    // overlap asked for was the batch's already: not a change, so not recorded.
    assert_eq!(
        by_action("user.update")["detail"],
        json!({"user_id": newcomer, "changed": ["role", "active"],
               "before": {"role": "rater", "active": true},
               "after": {"role": "lead", "active": false}})
    );
    assert_eq!(
        by_action("batch.settings")["detail"],
        json!({"batch_id": batch, "changed": ["lease_minutes"],
               "before": {"lease_minutes": 45}, "after": {"lease_minutes": 30}})
    );
    assert_eq!(by_action("rating.review")["detail"]["decision"], "accept");
    assert_eq!(by_action("batch.export")["detail"]["format"], "jsonl");

    let only = json_with(
        audit(app, "?action=user.create&limit=5", &admin).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(only["items"].as_array().unwrap().len(), 1);
    assert_eq!(only["total"], 1);
    let bad = json_with(
        audit(app, "?limit=0", &admin).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(bad["fields"]["limit"], "must be between 1 and 200");
    for (who, status) in [
        (&lead, StatusCode::FORBIDDEN),
        (&rater, StatusCode::FORBIDDEN),
    ] {
        assert_eq!(audit(app, "", who).await.status(), status);
    }

    // The page shows the same, to admins only.
    let page = admin
        .browser_for(app)
        .await
        .get(app.url("/admin/audit"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("batch.settings") && html.contains("newcomer"),
        "{html}"
    );
    // In words, with links to what each entry names.
    for shown in [
        "Lease: 45 minutes → 30 minutes",
        "Role: rater → lead",
        "Active: yes → no",
        "Decision: accept",
        &format!("<a href=\"/admin/batches/{batch}\">audited</a>"),
        &format!("<a href=\"/admin/users#user-{newcomer}\">newcomer</a>"),
        &format!("<a href=\"/review/{rating}\">{rating}</a>"),
    ] {
        assert!(html.contains(shown), "{shown}: {html}");
    }
    let refused = lead
        .browser_for(app)
        .await
        .get(app.url("/admin/audit"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}
db_test!(admin_and_lead_actions_are_recorded_and_only_admins_read_them: TestApp);

/// A settings save that changes nothing writes nothing and records nothing, whether it
/// comes from the API or from the settings page; a real change records each setting
/// before and after, once.
async fn a_save_that_changes_nothing_records_nothing(app: &TestApp) {
    let admin = app.admin().await;
    let batch = app
        .batch(&admin, "steady", &tasks_jsonl(2), "&randomize=false")
        .await;
    let url = app.url(&format!("/api/v1/batches/{batch}"));
    let same = json!({"state": "open", "overlap": 1, "randomize": false, "lease_minutes": 45,
                      "raters": null, "classifications": []});
    let before = crate::helpers::contents(app).await;
    let saved = admin.api.patch(&url).json(&same).go().await;
    assert_eq!(saved.status(), StatusCode::OK);
    let browser = admin.browser_for(app).await;
    let page = browser
        .get(app.url(&format!("/admin/batches/{batch}")))
        .go()
        .await
        .text()
        .await
        .unwrap();
    let form = crate::settings_page::form_of(&page);
    let again = browser
        .post(app.url(&format!("/admin/batches/{batch}")))
        .form(&form)
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::OK);
    assert!(
        again
            .text()
            .await
            .unwrap()
            .contains("Nothing to save: the settings are as they were.")
    );
    assert_eq!(
        crate::helpers::contents(app).await,
        before,
        "no write, no audit entry"
    );

    let changed = admin
        .api
        .patch(&url)
        .json(&json!({"overlap": 2, "lease_minutes": 45}))
        .go()
        .await;
    assert_eq!(changed.status(), StatusCode::OK);
    let entries = json_with(
        audit(app, "?action=batch.settings", &admin).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(entries["total"], 1, "{entries}");
    assert_eq!(
        entries["items"][0]["detail"],
        json!({"batch_id": batch, "changed": ["overlap"],
               "before": {"overlap": 1}, "after": {"overlap": 2}})
    );
}
db_test!(a_save_that_changes_nothing_records_nothing: TestApp);

/// The same for accounts: a role or state it already has is no change and no entry; a
/// password reset always is one, without the password.
async fn an_account_change_that_changes_nothing_records_nothing(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let url = app.url(&format!("/api/v1/users/{}", rater.id));
    let same = admin
        .api
        .patch(&url)
        .json(&json!({"role": "rater", "active": true}))
        .go()
        .await;
    assert_eq!(same.status(), StatusCode::OK);
    let updates = || async {
        json_with(
            audit(app, "?action=user.update", &admin).await,
            StatusCode::OK,
        )
        .await
    };
    assert_eq!(updates().await["total"], 0);
    let reset = admin
        .api
        .patch(&url)
        .json(&json!({"role": "rater", "password": "a fresh and long passphrase"}))
        .go()
        .await;
    assert_eq!(reset.status(), StatusCode::OK);
    let found = updates().await;
    assert_eq!(found["total"], 1);
    assert_eq!(
        found["items"][0]["detail"],
        json!({"user_id": rater.id, "changed": ["password"], "before": {}, "after": {}})
    );
}
db_test!(an_account_change_that_changes_nothing_records_nothing: TestApp);
