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
    assert_eq!(
        by_action("user.update")["detail"],
        json!({"role": "lead", "active": false})
    );
    assert_eq!(
        by_action("batch.settings")["detail"],
        json!({"changed": ["overlap", "lease_minutes"]})
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
