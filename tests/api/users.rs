//! The users API: creation rules, error formats, updates, and where passwords end up.

use reqwest::StatusCode;
use serde_json::json;
use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{Fixture, Go, PASSWORD, TestApp, db_test, json_with};

async fn admin_creates_a_user_who_can_then_sign_in(app: &TestApp) {
    let admin = app.admin().await;
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "mira", "role": "lead", "password": "mira's long password"}))
        .go()
        .await;
    let created = json_with(response, StatusCode::CREATED).await;
    assert_eq!(created["username"], "mira");
    assert_eq!(created["role"], "lead");
    assert_eq!(created["active"], true);
    assert!(created.get("password").is_none() && created.get("password_hash").is_none());

    let list = json_with(
        admin.api.get(app.url("/api/v1/users")).go().await,
        StatusCode::OK,
    )
    .await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "mira"]);
    app.login("mira", "mira's long password").await;
}
db_test!(admin_creates_a_user_who_can_then_sign_in: TestApp);

async fn a_duplicate_username_gets_409(app: &TestApp) {
    let admin = app.admin().await;
    app.rater().await;
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "rater", "role": "lead", "password": "another password"}))
        .go()
        .await;
    assert_eq!(
        json_with(response, StatusCode::CONFLICT).await["error"],
        "username is already taken"
    );
    assert_eq!(
        app.store.user_by_name("rater").await.unwrap().unwrap().role,
        verdict::auth::Role::Rater
    );
}
db_test!(a_duplicate_username_gets_409: TestApp);

async fn an_unknown_role_gets_422_naming_the_field(app: &TestApp) {
    let admin = app.admin().await;
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "zed", "role": "superuser", "password": "long enough pw"}))
        .go()
        .await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        body["fields"]["role"],
        "unknown role \"superuser\": use rater, lead or admin"
    );
    assert!(app.store.user_by_name("zed").await.unwrap().is_none());
}
db_test!(an_unknown_role_gets_422_naming_the_field: TestApp);

async fn every_broken_field_is_reported_at_once(app: &TestApp) {
    let admin = app.admin().await;
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "<script>", "password": "short"}))
        .go()
        .await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(body["error"], "3 fields are invalid");
    assert_eq!(
        body["fields"]["username"],
        "may contain only letters, digits and . _ - @"
    );
    assert_eq!(body["fields"]["role"], "is required (rater, lead or admin)");
    assert_eq!(body["fields"]["password"], "must be at least 10 characters");
}
db_test!(every_broken_field_is_reported_at_once: TestApp);

async fn malformed_json_gets_400_with_a_json_error(app: &TestApp) {
    let admin = app.admin().await;
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .header("content-type", "application/json")
        .body("{\"username\": \"x\",")
        .go()
        .await;
    let body = json_with(response, StatusCode::BAD_REQUEST).await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed JSON"),
        "{body}"
    );
}
db_test!(malformed_json_gets_400_with_a_json_error: TestApp);

async fn json_of_the_wrong_shape_or_type_is_refused(app: &TestApp) {
    let admin = app.admin().await;
    let wrong_type = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": 7}))
        .go()
        .await;
    assert_eq!(wrong_type.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // Fields the API does not offer are refused, not ignored (no mass assignment).
    let extra = admin.api.post(app.url("/api/v1/users"))
        .json(&json!({"username": "eve", "role": "rater", "password": "long enough pw", "active": false, "id": "x"}))
        .go().await;
    let body = json_with(extra, StatusCode::UNPROCESSABLE_ENTITY).await;
    // The first field it does not offer is named (JSON objects here are sorted by key).
    let why = body["fields"]["active"].as_str().unwrap_or_default();
    assert!(why.starts_with("is not a field here"), "{body}");
    assert!(app.store.user_by_name("eve").await.unwrap().is_none());
}
db_test!(json_of_the_wrong_shape_or_type_is_refused: TestApp);

async fn a_body_that_is_not_json_gets_415(app: &TestApp) {
    let admin = app.admin().await;
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .header("content-type", "text/plain")
        .body("username=x")
        .go()
        .await;
    let body = json_with(response, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    assert!(body["error"].as_str().unwrap().contains("application/json"));
}
db_test!(a_body_that_is_not_json_gets_415: TestApp);

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    let config = Config {
        max_upload_bytes: 1024 * 1024,
        ..Config::default()
    };
    let app = TestApp::with_config(Backend::Sqlite, config).await.unwrap();
    let admin = app.admin().await;
    let huge = json!({"username": "big", "role": "rater", "password": "x".repeat(2 * 1024 * 1024)});
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&huge)
        .go()
        .await;
    let body = json_with(response, StatusCode::PAYLOAD_TOO_LARGE).await;
    assert_eq!(
        body["error"],
        "request body is larger than the limit of 1 MiB"
    );
    assert!(app.store.user_by_name("big").await.unwrap().is_none());
    app.teardown().await;
}

async fn admin_changes_role_and_cannot_lock_themselves_out(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let promote = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", rater.id)))
        .json(&json!({"role": "lead"}))
        .go()
        .await;
    assert_eq!(json_with(promote, StatusCode::OK).await["role"], "lead");
    let lead_view = rater.api.get(app.url("/api/v1/me")).go().await;
    assert_eq!(json_with(lead_view, StatusCode::OK).await["role"], "lead");

    let own = format!("/api/v1/users/{}", admin.id);
    let demote = admin
        .api
        .patch(app.url(&own))
        .json(&json!({"role": "rater", "active": false}))
        .go()
        .await;
    let body = json_with(demote, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        body["fields"]["role"],
        "an admin cannot demote their own account"
    );
    assert_eq!(
        body["fields"]["active"],
        "an admin cannot deactivate their own account"
    );
    let me = app.store.user_by_id(admin.id).await.unwrap().unwrap();
    assert!(
        me.active && me.role == verdict::auth::Role::Admin,
        "nothing changed"
    );

    let unknown = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", uuid::Uuid::now_v7())))
        .json(&json!({"role": "lead"}))
        .go()
        .await;
    assert_eq!(
        json_with(unknown, StatusCode::NOT_FOUND).await["error"],
        "not found"
    );
    let bad_id = admin
        .api
        .patch(app.url("/api/v1/users/not-a-uuid"))
        .json(&json!({}))
        .go()
        .await;
    assert_eq!(bad_id.status(), StatusCode::BAD_REQUEST);
}
db_test!(admin_changes_role_and_cannot_lock_themselves_out: TestApp);

async fn the_password_is_nowhere_in_the_database(app: &TestApp) {
    let admin = app.admin().await;
    let secret = "unmistakable-Pa55word-7f3c";
    let response = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "kai", "role": "rater", "password": secret}))
        .go()
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    app.login("kai", secret).await;
    let dump = crate::helpers::dump_database(app).await;
    assert!(dump.contains("kai"), "the dump covers the users table");
    assert!(
        dump.contains("$argon2id$"),
        "passwords are stored as argon2id hashes"
    );
    assert!(!dump.contains(secret), "the password itself is not stored");
    assert!(!dump.contains(PASSWORD));
}
db_test!(the_password_is_nowhere_in_the_database: TestApp);

/// Issue 29: a password that is easy to guess (common, a pattern, or the username) is
/// refused with the reason wherever one is set, and the pages say what is asked.
async fn guessable_passwords_are_refused_wherever_a_password_is_set(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    for (username, password, why) in [
        ("kim", "          ", "is too easy to guess"),
        ("kim", "1234567890", "is too easy to guess"),
        ("margarethe.k", "margarethe.k1", "contains the username"),
    ] {
        let response = admin
            .api
            .post(app.url("/api/v1/users"))
            .json(&json!({"username": username, "role": "rater", "password": password}))
            .go()
            .await;
        let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        let reason = body["fields"]["password"].as_str().unwrap_or_default();
        assert!(reason.contains(why), "{password:?}: {body}");
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users").await,
        2,
        "no account made"
    );

    let reset = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", rater.id)))
        .json(&json!({"password": "qwertyuiop"}))
        .go()
        .await;
    let body = json_with(reset, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body["fields"]["password"]
            .as_str()
            .unwrap()
            .starts_with("is too easy to guess"),
        "{body}"
    );
    app.login("rater", PASSWORD).await;

    let browser = app.login("admin", PASSWORD).await;
    let page = browser
        .get(app.url("/admin/users"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    // The rule is stated from the limits the check enforces, next to both password
    // fields (the new account's and each reset), and the fields carry the same limits.
    let (min, max) = (
        verdict::auth::password::MIN_PASSWORD_LEN,
        verdict::auth::password::MAX_PASSWORD_LEN,
    );
    assert!(
        page.contains(&format!(
            "A password must be from {min} to {max} characters and hard to guess"
        )),
        "the page states the rule"
    );
    assert!(page.contains(&format!(
        "A new password must be from {min} to {max} characters"
    )));
    assert_eq!(
        page.matches(&format!("minlength=\"{min}\" maxlength=\"{max}\""))
            .count(),
        1 + page.matches("New password for ").count()
    );
    let weak = browser
        .post(app.url("/admin/users"))
        .form(&[
            ("csrf_token", crate::helpers::csrf_token(&page).as_str()),
            ("username", "kim"),
            ("role", "rater"),
            ("password", "password123"),
        ])
        .go()
        .await;
    assert_eq!(weak.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        weak.text()
            .await
            .unwrap()
            .contains("Password is too easy to guess")
    );
    assert!(app.store.user_by_name("kim").await.unwrap().is_none());
}
db_test!(guessable_passwords_are_refused_wherever_a_password_is_set: TestApp);
