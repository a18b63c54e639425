//! Issue 16: sessions, accounts, token owners, batches and rater permissions are served
//! from each instance's memory, and a sign-out, a deactivation, a role change, a revoked
//! token, a closed batch or a rater taken off a batch still holds at once: on the
//! instance that made the change, on a second instance that had the old state cached,
//! and when another process (the command line) made it.

use reqwest::StatusCode;
use reqwest::header::SET_COOKIE;
use serde_json::json;

use verdict_core::role::Role;

use crate::helpers::{
    Go, PASSWORD, TestApp, complete_answers, csrf_token, db_test, json_with, tasks_jsonl,
};

/// Signs `username` in on `app`; returns the browser that holds the session and the
/// session cookie (`name=value`) to replay from elsewhere.
async fn sign_in(app: &TestApp, username: &str) -> (reqwest::Client, String) {
    let browser = app.browser();
    let response = app.submit_login(&browser, username, PASSWORD, "/").await;
    assert_eq!(
        response.status(),
        StatusCode::SEE_OTHER,
        "{username} signs in"
    );
    let cookie = response.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    (browser, cookie)
}

/// A client with no cookies of its own that does not follow redirects.
fn bare() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `GET path` on `app` with the session cookie alone.
async fn by_cookie(app: &TestApp, cookie: &str, path: &str) -> reqwest::Response {
    by_cookie_url(&app.url(path), cookie).await
}

async fn by_cookie_url(url: &str, cookie: &str) -> reqwest::Response {
    bare().get(url).header("cookie", cookie).go().await
}

/// `GET path` on `app` with the bearer token alone.
async fn by_token(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    bare().get(app.url(path)).bearer_auth(token).go().await
}

/// Asserts the answer of every way in on every instance: twice each, so the second
/// answer comes from what the first one cached.
async fn each_answers(
    instances: [&TestApp; 2],
    cookie: &str,
    token: &str,
    path: &str,
    want: StatusCode,
    what: &str,
) {
    for app in instances {
        for _ in 0..2 {
            let cookie_answer = by_cookie(app, cookie, path).await.status();
            assert_eq!(cookie_answer, want, "{what}: {path} by session cookie");
            let token_answer = by_token(app, token, path).await.status();
            assert_eq!(token_answer, want, "{what}: {path} by token");
        }
    }
}

async fn signing_out_on_one_instance_ends_the_session_on_every_instance(app: &TestApp) {
    app.rater().await;
    let sibling = app.sibling().await;
    let (browser, cookie) = sign_in(app, "rater").await;
    for instance in [app, &sibling, app, &sibling] {
        let me = by_cookie(instance, &cookie, "/api/v1/me").await;
        assert_eq!(json_with(me, StatusCode::OK).await["username"], "rater");
    }
    let home = browser.get(app.url("/")).go().await.text().await.unwrap();
    let logout = browser
        .post(app.url("/logout"))
        .form(&[("csrf_token", csrf_token(&home))])
        .go()
        .await;
    assert_eq!(logout.status(), StatusCode::SEE_OTHER);
    for instance in [&sibling, app] {
        let me = by_cookie(instance, &cookie, "/api/v1/me").await;
        assert_eq!(
            me.status(),
            StatusCode::UNAUTHORIZED,
            "the session ended by signing out on the first instance"
        );
        let page = by_cookie(instance, &cookie, "/").await;
        assert_eq!(
            page.status(),
            StatusCode::SEE_OTHER,
            "pages send to sign-in"
        );
    }
    sibling.close().await;
}
db_test!(signing_out_on_one_instance_ends_the_session_on_every_instance: TestApp);

async fn role_changes_and_deactivation_hold_on_every_instance_at_once(app: &TestApp) {
    let admin = app.admin().await;
    let ines = app.persona("ines", Role::Admin).await;
    let sibling = app.sibling().await;
    let (_, cookie) = sign_in(&sibling, "ines").await;
    let both = [app, &sibling];
    each_answers(
        both,
        &cookie,
        &ines.token,
        "/api/v1/users",
        StatusCode::OK,
        "an admin",
    )
    .await;

    let demote = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", ines.id)))
        .json(&json!({"role": "rater"}))
        .go()
        .await;
    assert_eq!(json_with(demote, StatusCode::OK).await["role"], "rater");
    each_answers(
        both,
        &cookie,
        &ines.token,
        "/api/v1/users",
        StatusCode::FORBIDDEN,
        "made a rater on the first instance",
    )
    .await;
    for instance in both {
        let me = by_cookie(instance, &cookie, "/api/v1/me").await;
        assert_eq!(json_with(me, StatusCode::OK).await["role"], "rater");
    }

    // The other way round: deactivated through the second instance.
    let off = admin
        .api
        .patch(sibling.url(&format!("/api/v1/users/{}", ines.id)))
        .json(&json!({"active": false}))
        .go()
        .await;
    assert_eq!(json_with(off, StatusCode::OK).await["active"], false);
    each_answers(
        both,
        &cookie,
        &ines.token,
        "/api/v1/me",
        StatusCode::UNAUTHORIZED,
        "deactivated on the second instance",
    )
    .await;
    sibling.close().await;
}
db_test!(role_changes_and_deactivation_hold_on_every_instance_at_once: TestApp);

async fn a_change_made_by_another_process_holds_at_once(app: &TestApp) {
    let rater = app.rater().await;
    let sibling = app.sibling().await;
    let (_, cookie) = sign_in(app, "rater").await;
    let both = [app, &sibling];
    each_answers(
        both,
        &cookie,
        &rater.token,
        "/api/v1/me",
        StatusCode::OK,
        "signed in",
    )
    .await;
    // `app.store` is a connection of its own, as `verdict user deactivate` opens.
    app.store.set_active(rater.id, false).await.unwrap();
    each_answers(
        both,
        &cookie,
        &rater.token,
        "/api/v1/me",
        StatusCode::UNAUTHORIZED,
        "deactivated from outside either server",
    )
    .await;
    sibling.close().await;
}
db_test!(a_change_made_by_another_process_holds_at_once: TestApp);

async fn a_revoked_token_is_refused_on_every_instance_at_once(app: &TestApp) {
    let rater = app.rater().await;
    let sibling = app.sibling().await;
    for instance in [app, &sibling, app, &sibling] {
        let me = by_token(instance, &rater.token, "/api/v1/me").await;
        assert_eq!(me.status(), StatusCode::OK);
    }
    let listed = json_with(
        rater.api.get(app.url("/api/v1/tokens")).go().await,
        StatusCode::OK,
    )
    .await;
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    let revoke = rater
        .api
        .delete(app.url(&format!("/api/v1/tokens/{id}")))
        .go()
        .await;
    assert!(revoke.status().is_success(), "{}", revoke.status());
    for instance in [&sibling, app] {
        let me = by_token(instance, &rater.token, "/api/v1/me").await;
        assert_eq!(me.status(), StatusCode::UNAUTHORIZED, "revoked");
    }
    sibling.close().await;
}
db_test!(a_revoked_token_is_refused_on_every_instance_at_once: TestApp);

async fn closing_a_batch_or_leaving_its_raters_holds_on_every_instance_at_once(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let sibling = app.sibling().await;
    let id = app.batch(&admin, "cached", &tasks_jsonl(6), "").await;
    let patch = |body: serde_json::Value| {
        admin
            .api
            .patch(app.url(&format!("/api/v1/batches/{id}")))
            .json(&body)
            .send()
    };
    // The second instance reads the batch and the rater's permission, and keeps both.
    let first = sibling.next(&rater, &id).await.expect("a task");
    let assignment = first["assignment_id"].as_str().unwrap().to_owned();
    let page = |instance: &TestApp| {
        bare()
            .get(instance.url(&format!("/assignments/{assignment}")))
            .bearer_auth(&rater.token)
            .send()
    };
    assert_eq!(page(&sibling).await.unwrap().status(), StatusCode::OK);

    assert_eq!(
        patch(json!({"state": "closed"})).await.unwrap().status(),
        StatusCode::OK
    );
    let next = rater
        .api
        .post(sibling.url(&format!("/api/v1/batches/{id}/next")))
        .go()
        .await;
    assert_eq!(
        next.status(),
        StatusCode::NOT_FOUND,
        "closed on the first instance"
    );
    let submit = sibling
        .act(
            &rater,
            &assignment,
            "submit",
            &json!({"answers": complete_answers()}),
        )
        .await;
    assert_eq!(
        submit.status(),
        StatusCode::CONFLICT,
        "no work on a closed batch"
    );

    assert_eq!(
        patch(json!({"state": "open", "raters": ["admin"]}))
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    let next = rater
        .api
        .post(sibling.url(&format!("/api/v1/batches/{id}/next")))
        .go()
        .await;
    assert_eq!(
        next.status(),
        StatusCode::NOT_FOUND,
        "no longer one of its raters"
    );
    assert_eq!(
        patch(json!({"raters": null})).await.unwrap().status(),
        StatusCode::OK
    );
    assert!(
        sibling.next(&rater, &id).await.is_some(),
        "let in again at once"
    );
    sibling.close().await;
}
db_test!(closing_a_batch_or_leaving_its_raters_holds_on_every_instance_at_once: TestApp);

async fn a_returned_rating_shows_in_the_menu_on_every_instance_at_once(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let sibling = app.sibling().await;
    let (_, cookie) = sign_in(&sibling, "rater").await;
    let id = app.batch(&admin, "returns", &tasks_jsonl(2), "").await;
    let next = app.next(&rater, &id).await.expect("a task");
    let assignment = next["assignment_id"].as_str().unwrap();
    let submitted = app
        .act(&rater, assignment, "submit", &complete_answers())
        .await;
    let rating = json_with(submitted, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let menu = |instance: &TestApp| {
        let cookie = cookie.clone();
        let url = instance.url("/");
        async move {
            let page = by_cookie_url(&url, &cookie).await;
            assert_eq!(page.status(), StatusCode::OK);
            page.text().await.unwrap().contains("1 returned")
        }
    };
    assert!(!menu(&sibling).await, "nothing returned yet");
    let returned = admin
        .api
        .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
        .json(&json!({"decision": "return", "version": 1, "comment": "Say more about B."}))
        .go()
        .await;
    assert_eq!(returned.status(), StatusCode::OK);
    assert!(menu(&sibling).await, "returned on the first instance");
    let revised = rater
        .api
        .put(app.url(&format!("/api/v1/ratings/{rating}")))
        .json(&complete_answers())
        .go()
        .await;
    assert_eq!(
        revised.status(),
        StatusCode::OK,
        "{:?}",
        revised.text().await
    );
    assert!(!menu(&sibling).await, "revised on the first instance");
    sibling.close().await;
}
db_test!(a_returned_rating_shows_in_the_menu_on_every_instance_at_once: TestApp);
