//! Mass assignment: fields a caller may not set (who rated, a rating's status, an
//! account's id or role where it is not asked for) are refused by name, and nothing is
//! stored.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Go, TestApp, complete_answers, db_test, json_with, tasks_jsonl};

async fn fields_a_caller_may_not_set_are_refused_and_nothing_changes(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "guarded", &tasks_jsonl(2), "&randomize=false")
        .await;
    let before = crate::helpers::dump_database(app).await;

    let refused = |response: reqwest::Response| async move {
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        (status, body)
    };
    // A new account cannot pick its id, its activation or when it was made.
    let (status, body) = refused(
        admin
            .api
            .post(app.url("/api/v1/users"))
            .json(
                &json!({"username": "sneaky", "role": "rater", "password": "a long enough password",
                          "id": uuid::Uuid::now_v7(), "active": false, "created_at": "2000-01-01"}),
            )
            .go()
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let said = body["error"].as_str().unwrap_or_default();
    assert!(said.contains("unknown field `active`"), "{body}");
    // Changing an account cannot rename it.
    let (status, body) = refused(
        admin
            .api
            .patch(app.url(&format!("/api/v1/users/{}", rater.id)))
            .json(&json!({"username": "renamed"}))
            .go()
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    // A batch's creator is not a setting.
    let (status, body) = refused(
        admin
            .api
            .patch(app.url(&format!("/api/v1/batches/{batch}")))
            .json(&json!({"created_by": lead.id}))
            .go()
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    let after_settings = crate::helpers::dump_database(app).await;
    assert_eq!(before, after_settings, "refused requests changed nothing");

    // A rater cannot say who rated or what status the rating has.
    let next = app.next(&rater, &batch).await.unwrap();
    let assignment = next["assignment_id"].as_str().unwrap().to_owned();
    for (key, value) in [
        ("rater", json!(lead.username)),
        ("rater_id", json!(lead.id)),
        ("status", json!("accepted")),
        ("version", json!(7)),
    ] {
        let mut answers = complete_answers();
        answers[key] = value;
        let (status, body) = refused(app.act(&rater, &assignment, "submit", &answers).await).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{key}: {body}");
        assert!(
            body["fields"].get(key).is_some(),
            "{key} is named as refused: {body}"
        );
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM ratings").await, 0);

    // Nor can a lead name another reviewer.
    let done = app
        .act(&rater, &assignment, "submit", &complete_answers())
        .await;
    let rating = json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = refused(
        lead.api
            .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
            .json(&json!({"decision": "accept", "version": 1, "reviewed_by": admin.id}))
            .go()
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE status = 'submitted'")
            .await,
        1
    );
}
db_test!(fields_a_caller_may_not_set_are_refused_and_nothing_changes: TestApp);
