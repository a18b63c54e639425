//! Signing in and out, sessions, tokens, CSRF, rate limits and role checks.

use reqwest::StatusCode;
use reqwest::header::{LOCATION, RETRY_AFTER, SET_COOKIE};
use serde_json::json;
use std::time::{Duration, Instant};

use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{
    Fixture, Go, PASSWORD, TestApp, bearer, complete_answers, csrf_token, db_test, json_with,
    resident_kib, tasks_jsonl,
};

async fn anonymous_api_calls_get_401_json(app: &TestApp) {
    let anon = app.browser();
    for path in ["/api/v1/me", "/api/v1/users", "/api/v1/tokens"] {
        let body = json_with(anon.get(app.url(path)).go().await, StatusCode::UNAUTHORIZED).await;
        assert_eq!(body["error"], "sign in first", "{path}");
    }
    let post = anon
        .post(app.url("/api/v1/users"))
        .json(&json!({}))
        .go()
        .await;
    assert_eq!(
        json_with(post, StatusCode::UNAUTHORIZED).await["error"],
        "sign in first"
    );
}
db_test!(anonymous_api_calls_get_401_json: TestApp);

async fn anonymous_page_visits_redirect_to_login(app: &TestApp) {
    let anon = app.browser();
    for (path, next) in [("/", "%2F"), ("/admin/users", "%2Fadmin%2Fusers")] {
        let response = anon.get(app.url(path)).go().await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(response.headers()[LOCATION], format!("/login?next={next}"));
    }
}
db_test!(anonymous_page_visits_redirect_to_login: TestApp);

async fn bad_or_malformed_tokens_get_401(app: &TestApp) {
    app.admin().await;
    for header in [
        "Bearer vdt_not-a-real-token",
        "Bearer ",
        "Basic YWRtaW46cGFzc3dvcmQ=",
        "vdt_x",
    ] {
        let response = app
            .browser()
            .get(app.url("/api/v1/me"))
            .header("authorization", header)
            .go()
            .await;
        assert_eq!(
            json_with(response, StatusCode::UNAUTHORIZED).await["error"],
            "sign in first",
            "{header}"
        );
    }
}
db_test!(bad_or_malformed_tokens_get_401: TestApp);

async fn a_valid_token_identifies_its_owner(app: &TestApp) {
    let rater = app.rater().await;
    let me = json_with(
        rater.api.get(app.url("/api/v1/me")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(me["username"], "rater");
    assert_eq!(me["role"], "rater");
    assert_eq!(me["id"], rater.id.to_string());
}
db_test!(a_valid_token_identifies_its_owner: TestApp);

async fn raters_and_leads_get_403_on_admin_routes(app: &TestApp) {
    let admin = app.admin().await;
    for persona in [app.rater().await, app.lead().await] {
        let list = persona.api.get(app.url("/api/v1/users")).go().await;
        assert_eq!(
            json_with(list, StatusCode::FORBIDDEN).await["error"],
            "your role does not allow this"
        );
        let create = persona
            .api
            .post(app.url("/api/v1/users"))
            .json(&json!({"username": "sneaky", "role": "admin", "password": "0123456789ab"}))
            .go()
            .await;
        assert_eq!(create.status(), StatusCode::FORBIDDEN);
        let patch = persona
            .api
            .patch(app.url(&format!("/api/v1/users/{}", admin.id)))
            .json(&json!({"active": false}))
            .go()
            .await;
        assert_eq!(patch.status(), StatusCode::FORBIDDEN);
        let browser = app.login(&persona.username, PASSWORD).await;
        let page = browser.get(app.url("/admin/users")).go().await;
        assert_eq!(page.status(), StatusCode::FORBIDDEN);
        assert!(
            page.text().await.unwrap().contains("<h1>403"),
            "an HTML error page"
        );
    }
    assert!(
        app.store.user_by_name("sneaky").await.unwrap().is_none(),
        "nothing was created"
    );
    assert!(
        app.store
            .user_by_id(admin.id)
            .await
            .unwrap()
            .unwrap()
            .active,
        "nothing was changed"
    );
}
db_test!(raters_and_leads_get_403_on_admin_routes: TestApp);

async fn login_renews_the_session_id_and_logout_kills_it(app: &TestApp) {
    app.rater().await;
    let browser = app.browser();
    let page = browser.get(app.url("/login")).go().await;
    let set: Vec<String> = page
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert!(
        set.iter().all(|c| !c.starts_with(verdict::SESSION_COOKIE)),
        "no session before sign-in: {set:?}"
    );
    let token = csrf_token(&page.text().await.unwrap());
    let sign_in = || {
        browser
            .post(app.url("/login"))
            .form(&[
                ("csrf_token", token.as_str()),
                ("username", "rater"),
                ("password", PASSWORD),
                ("next", "/"),
            ])
            .send()
    };
    let first = sign_in().await.unwrap();
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    let before = first.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    // Signing in from a browser that already holds a session id gives it a new one.
    let login = sign_in().await.unwrap();
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let after = login.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    let session_id = |cookie: &str| cookie.split(';').next().unwrap().to_owned();
    assert_ne!(
        session_id(&before),
        session_id(&after),
        "a new session id at login"
    );
    assert!(
        after.contains("HttpOnly") && after.contains("SameSite=Lax"),
        "{after}"
    );
    let old = app
        .browser()
        .get(app.url("/api/v1/me"))
        .header("cookie", session_id(&before))
        .go()
        .await;
    assert_eq!(
        old.status(),
        StatusCode::UNAUTHORIZED,
        "the id from before the new sign-in is dead"
    );

    let me = browser.get(app.url("/api/v1/me")).go().await;
    assert_eq!(json_with(me, StatusCode::OK).await["username"], "rater");

    // Keep the old cookie, log out, then replay it from another client.
    let home = browser.get(app.url("/")).go().await.text().await.unwrap();
    let logout = browser
        .post(app.url("/logout"))
        .form(&[("csrf_token", csrf_token(&home))])
        .go()
        .await;
    assert_eq!(logout.headers()[LOCATION], "/login");
    let replay = app
        .browser()
        .get(app.url("/api/v1/me"))
        .header("cookie", session_id(&after))
        .go()
        .await;
    assert_eq!(
        replay.status(),
        StatusCode::UNAUTHORIZED,
        "the old cookie is dead after logout"
    );
}
db_test!(login_renews_the_session_id_and_logout_kills_it: TestApp);

async fn wrong_password_and_unknown_user_get_the_same_answer(app: &TestApp) {
    app.rater().await;
    let wrong = app
        .submit_login(&app.browser(), "rater", "not the password", "/")
        .await;
    let unknown = app
        .submit_login(&app.browser(), "nobody", "not the password", "/")
        .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(unknown.status(), StatusCode::UNAUTHORIZED);
    let (wrong, unknown) = (wrong.text().await.unwrap(), unknown.text().await.unwrap());
    assert!(wrong.contains("Wrong username or password."));
    assert!(unknown.contains("Wrong username or password."));
    let strip = |page: &str| {
        page.replace(&csrf_token(page), "")
            .replace("value=\"nobody\"", "value=\"rater\"")
    };
    assert_eq!(
        strip(&wrong),
        strip(&unknown),
        "pages differ only in the echoed username and token"
    );
}
db_test!(wrong_password_and_unknown_user_get_the_same_answer: TestApp);

async fn login_redirects_only_to_local_paths(app: &TestApp) {
    app.rater().await;
    let local = app
        .submit_login(&app.browser(), "rater", PASSWORD, "/ratings")
        .await;
    assert_eq!(local.headers()[LOCATION], "/ratings");
    let hostile = app
        .submit_login(&app.browser(), "rater", PASSWORD, "//evil.example/x")
        .await;
    assert_eq!(hostile.headers()[LOCATION], "/");
}
db_test!(login_redirects_only_to_local_paths: TestApp);

async fn repeated_wrong_passwords_get_429(app: &TestApp) {
    app.rater().await;
    let browser = app.browser();
    let limit = Config::default().login_per_account_and_address_per_min;
    for attempt in 1..=limit {
        let response = app
            .submit_login(&browser, "rater", "guess number x", "/")
            .await;
        assert_eq!(
            response.status(),
            StatusCode::UNAUTHORIZED,
            "attempt {attempt}"
        );
    }
    let limited = app
        .submit_login(&browser, "RATER", "guess number x", "/")
        .await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = limited.headers()[RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    // While limited, even the right password is refused: the limit is not an oracle.
    let right = app.submit_login(&browser, "rater", PASSWORD, "/").await;
    assert_eq!(right.status(), StatusCode::TOO_MANY_REQUESTS);
}
db_test!(repeated_wrong_passwords_get_429: TestApp);

#[tokio::test]
async fn login_attempts_are_limited_per_address() {
    let config = Config {
        login_per_address_per_min: 3,
        ..Config::default()
    };
    let app = TestApp::with_config(verdict::store::Backend::Sqlite, config)
        .await
        .unwrap();
    for name in ["a1", "a2", "a3"] {
        let response = app
            .submit_login(&app.browser(), name, "whatever pw", "/")
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    let response = app
        .submit_login(&app.browser(), "a4", "whatever pw", "/")
        .await;
    assert_eq!(
        response.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "a new name from the same address"
    );
    app.teardown().await;
}

async fn forms_without_a_valid_csrf_token_are_refused(app: &TestApp) {
    app.rater().await;
    let browser = app.browser();
    browser.get(app.url("/login")).go().await;
    for form in [vec![], vec![("csrf_token", "forged")]] {
        let mut fields = form.clone();
        fields.extend([("username", "rater"), ("password", PASSWORD)]);
        let response = browser.post(app.url("/login")).form(&fields).go().await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{form:?}");
    }
    // The right token from a cross-site page is refused too.
    let token = csrf_token(
        &browser
            .get(app.url("/login"))
            .go()
            .await
            .text()
            .await
            .unwrap(),
    );
    let fields = [
        ("csrf_token", token.as_str()),
        ("username", "rater"),
        ("password", PASSWORD),
    ];
    let cross = browser
        .post(app.url("/login"))
        .header("origin", "http://evil.example")
        .form(&fields)
        .go()
        .await;
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    let fetch = browser
        .post(app.url("/login"))
        .header("sec-fetch-site", "cross-site")
        .form(&fields)
        .go()
        .await;
    assert_eq!(fetch.status(), StatusCode::FORBIDDEN);
    let ok = browser.post(app.url("/login")).form(&fields).go().await;
    assert_eq!(
        ok.status(),
        StatusCode::SEE_OTHER,
        "the same form, same-site, goes through"
    );
}
db_test!(forms_without_a_valid_csrf_token_are_refused: TestApp);

async fn cookie_authenticated_api_writes_need_the_csrf_header(app: &TestApp) {
    app.rater().await;
    let browser = app.login("rater", PASSWORD).await;
    let body = json!({"name": "from the browser"});
    let refused = browser
        .post(app.url("/api/v1/tokens"))
        .json(&body)
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let page = browser.get(app.url("/")).go().await.text().await.unwrap();
    let accepted = browser
        .post(app.url("/api/v1/tokens"))
        .header("x-csrf-token", csrf_token(&page))
        .json(&body)
        .go()
        .await;
    assert_eq!(
        json_with(accepted, StatusCode::CREATED).await["name"],
        "from the browser"
    );
}
db_test!(cookie_authenticated_api_writes_need_the_csrf_header: TestApp);

async fn deactivated_users_are_refused_everywhere(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let browser = app.login("rater", PASSWORD).await;
    assert_eq!(app.store.count_sessions(rater.id).await.unwrap(), 1);
    let patch = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", rater.id)))
        .json(&json!({"active": false}))
        .go()
        .await;
    assert_eq!(json_with(patch, StatusCode::OK).await["active"], false);

    assert_eq!(
        app.store.count_sessions(rater.id).await.unwrap(),
        0,
        "sessions ended"
    );
    let by_token = rater.api.get(app.url("/api/v1/me")).go().await;
    assert_eq!(by_token.status(), StatusCode::UNAUTHORIZED);
    let by_cookie = browser.get(app.url("/")).go().await;
    assert_eq!(by_cookie.status(), StatusCode::SEE_OTHER);
    let login = app
        .submit_login(&app.browser(), "rater", PASSWORD, "/")
        .await;
    assert_eq!(login.status(), StatusCode::UNAUTHORIZED);
    assert!(
        login
            .text()
            .await
            .unwrap()
            .contains("Wrong username or password."),
        "no hint that the account exists"
    );

    let patch = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", rater.id)))
        .json(&json!({"active": true}))
        .go()
        .await;
    assert_eq!(patch.status(), StatusCode::OK);
    assert_eq!(
        rater.api.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::UNAUTHORIZED,
        "deactivation revoked the token for good"
    );
    let reactivated = app
        .login(&rater.username, PASSWORD)
        .await
        .get(app.url("/api/v1/me"))
        .go()
        .await;
    assert_eq!(reactivated.status(), StatusCode::OK, "reactivated");
}
db_test!(deactivated_users_are_refused_everywhere: TestApp);

async fn a_password_change_ends_the_users_sessions(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let browser = app.login("rater", PASSWORD).await;
    let patch = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", rater.id)))
        .json(&json!({"password": "a brand new password"}))
        .go()
        .await;
    assert_eq!(patch.status(), StatusCode::OK);
    assert_eq!(
        browser.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        app.submit_login(&app.browser(), "rater", PASSWORD, "/")
            .await
            .status(),
        StatusCode::UNAUTHORIZED
    );
    app.login("rater", "a brand new password").await;
}
db_test!(a_password_change_ends_the_users_sessions: TestApp);

async fn tokens_are_shown_once_listed_without_secret_and_revocable(app: &TestApp) {
    let lead = app.lead().await;
    let rater = app.rater().await;
    let created = json_with(
        rater
            .api
            .post(app.url("/api/v1/tokens"))
            .json(&json!({"name": "nightly"}))
            .go()
            .await,
        StatusCode::CREATED,
    )
    .await;
    let secret = created["token"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("vdt_"));
    let list = json_with(
        rater.api.get(app.url("/api/v1/tokens")).go().await,
        StatusCode::OK,
    )
    .await;
    let listed = serde_json::to_string(&list).unwrap();
    assert!(
        listed.contains("nightly") && !listed.contains(&secret),
        "{listed}"
    );
    assert!(!listed.contains("token_hash"));

    let own = bearer(&secret);
    assert_eq!(
        own.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::OK
    );
    let id = created["id"].as_str().unwrap();
    // Another user (not an admin: admins revoke anyone's) cannot revoke it; its owner can.
    assert_eq!(
        lead.api
            .delete(app.url(&format!("/api/v1/tokens/{id}")))
            .go()
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        rater
            .api
            .delete(app.url(&format!("/api/v1/tokens/{id}")))
            .go()
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        own.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::UNAUTHORIZED
    );
}
db_test!(tokens_are_shown_once_listed_without_secret_and_revocable: TestApp);

async fn only_admins_make_tokens_for_others(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    app.lead().await;
    let for_lead = json!({"name": "x", "username": "lead"});
    let refused = rater
        .api
        .post(app.url("/api/v1/tokens"))
        .json(&for_lead)
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let made = json_with(
        admin
            .api
            .post(app.url("/api/v1/tokens"))
            .json(&for_lead)
            .go()
            .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(made["username"], "lead");
    let me = bearer(made["token"].as_str().unwrap())
        .get(app.url("/api/v1/me"))
        .go()
        .await;
    assert_eq!(json_with(me, StatusCode::OK).await["username"], "lead");
    let nameless = rater
        .api
        .post(app.url("/api/v1/tokens"))
        .json(&json!({"name": "  "}))
        .go()
        .await;
    assert!(
        json_with(nameless, StatusCode::UNPROCESSABLE_ENTITY).await["fields"]["name"].is_string()
    );
}
db_test!(only_admins_make_tokens_for_others: TestApp);

/// Signs in and returns the session cookie (`name=value`), to send by hand: a browser
/// would drop it client-side once its Max-Age passes, and this checks the server.
async fn session_cookie(app: &TestApp, username: &str) -> String {
    let login = app
        .submit_login(&app.browser(), username, PASSWORD, "/")
        .await;
    let cookie = login.headers()[SET_COOKIE].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// Whether the server still signs in a request with this cookie; a request that renews
/// the session hands back a new cookie, which replaces `cookie`.
async fn signed_in(app: &TestApp, cookie: &mut String) -> bool {
    let me = reqwest::Client::new()
        .get(app.url("/api/v1/me"))
        .header(reqwest::header::COOKIE, cookie.as_str())
        .send()
        .await
        .unwrap();
    if let Some(renewed) = me.headers().get(SET_COOKIE) {
        *cookie = renewed
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
    }
    me.status() == StatusCode::OK
}

/// How many times a lifetime test starts over when the machine was too slow for a
/// request to prove anything (two requests further apart than the lifetime allows).
const LIFETIME_ATTEMPTS: usize = 5;

#[tokio::test]
async fn an_idle_session_ends_and_an_active_one_lives_on() {
    let idle = Duration::from_millis(2000);
    // The server renews the expiry at most once a tenth of the idle time, so a request
    // proves the session alive only if it came within nine tenths of the previous one.
    let provable = idle * 8 / 10;
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let config = Config {
            session_idle: idle,
            ..Config::default()
        };
        let Some(app) = TestApp::with_config(backend, config).await else {
            continue;
        };
        let admin = app.admin().await;
        let mut lived = false;
        for _ in 0..LIFETIME_ATTEMPTS {
            let signed_in_at = Instant::now();
            let mut active = session_cookie(&app, &admin.username).await;
            let mut idle_cookie = session_cookie(&app, &admin.username).await;
            let mut previous = signed_in_at;
            // Three idle lifetimes, with a request every tenth of one.
            while signed_in_at.elapsed() < idle * 3 {
                tokio::time::sleep(idle / 10).await;
                let sent = Instant::now();
                let alive = signed_in(&app, &mut active).await;
                let gap = previous.elapsed();
                if !alive {
                    assert!(
                        gap >= provable,
                        "{backend:?}: an active session ended {gap:?} after its last request"
                    );
                    break; // too slow to tell: start over
                }
                previous = sent;
            }
            if signed_in_at.elapsed() >= idle * 3 {
                lived = true;
                assert!(
                    !signed_in(&app, &mut idle_cookie).await,
                    "{backend:?}: the idle session ended on the server"
                );
                break;
            }
        }
        assert!(lived, "{backend:?}: no attempt kept a session busy");
    }
}

#[tokio::test]
async fn a_session_ends_at_its_absolute_lifetime_however_active() {
    let absolute = Duration::from_secs(3);
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let config = Config {
            session_absolute: absolute,
            ..Config::default()
        };
        let Some(app) = TestApp::with_config(backend, config).await else {
            continue;
        };
        let admin = app.admin().await;
        let mut proved_alive = false;
        for _ in 0..LIFETIME_ATTEMPTS {
            let before_login = Instant::now();
            let mut cookie = session_cookie(&app, &admin.username).await;
            let signed_in_at = Instant::now();
            // Busy for the whole lifetime and a little beyond it.
            while signed_in_at.elapsed() < absolute + absolute / 3 {
                let alive = signed_in(&app, &mut cookie).await;
                // The server started the session between `before_login` and
                // `signed_in_at`: an answer that came before `before_login + absolute` was
                // certainly within the lifetime, one sent after `signed_in_at + absolute`
                // certainly past it.
                if before_login.elapsed() < absolute {
                    assert!(alive, "{backend:?}: ended within the lifetime");
                    proved_alive = true;
                }
                tokio::time::sleep(absolute / 10).await;
            }
            assert!(
                !signed_in(&app, &mut cookie).await,
                "{backend:?}: past the lifetime"
            );
            if proved_alive {
                break;
            }
        }
        assert!(
            proved_alive,
            "{backend:?}: no request came within the lifetime"
        );
    }
}

/// Issue 9: a refused CSRF token is named as such (header or form field, missing or
/// wrong), not reported as a matter of role, and nothing is saved.
async fn csrf_refusals_name_the_missing_or_wrong_token(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "csrf", &tasks_jsonl(1), "").await;
    let next = app.next(&rater, &batch).await.unwrap();
    let assignment = next["assignment_id"].as_str().unwrap().to_owned();
    let browser = rater.browser_for(app).await;
    let api = app.url(&format!("/api/v1/assignments/{assignment}/draft"));
    let mut answers = complete_answers();
    answers["sxs_explanation"] = json!("sent without the token");

    let missing = browser.put(&api).json(&answers).go().await;
    let error = json_with(missing, StatusCode::FORBIDDEN).await["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.starts_with("missing CSRF token") && error.contains("X-CSRF-Token"),
        "{error}"
    );
    assert!(!error.contains("role"), "{error}");
    let wrong = browser
        .put(&api)
        .header("x-csrf-token", "forged")
        .json(&answers)
        .go()
        .await;
    let error = json_with(wrong, StatusCode::FORBIDDEN).await["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.starts_with("wrong CSRF token in the X-CSRF-Token header"),
        "{error}"
    );

    let page = app.url(&format!("/assignments/{assignment}/draft"));
    for (form, says) in [
        (vec![("sxs", "2")], "the form has no CSRF token"),
        (
            vec![("csrf_token", "forged"), ("sxs", "2")],
            "CSRF token is wrong or has expired",
        ),
    ] {
        let response = browser.post(&page).form(&form).go().await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{form:?}");
        let html = response.text().await.unwrap();
        assert!(
            html.contains(says) && !html.contains("role does not allow"),
            "{form:?}: {html}"
        );
    }
    let again = app.next(&rater, &batch).await.unwrap();
    assert!(
        !again.to_string().contains("sent without the token"),
        "nothing was saved: {again}"
    );
}
db_test!(csrf_refusals_name_the_missing_or_wrong_token: TestApp);

/// Issue 22: anonymous visits store no session, a failed sign-in neither; the sign-in
/// form's token lives in a cookie of its own, and still has to match.
async fn anonymous_visits_store_no_session(app: &TestApp) {
    app.rater().await;
    let anon = app.browser();
    for path in [
        "/login",
        "/login?next=%2Fratings",
        "/login",
        "/",
        "/ratings",
        "/admin/users",
        "/healthz",
        "/no/such/page",
    ] {
        let response = anon.get(app.url(path)).go().await;
        assert!(response.status().as_u16() < 500, "{path}");
    }
    for _ in 0..2 {
        let wrong = app
            .submit_login(&anon, "rater", "not the password", "/")
            .await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    }
    let logout = anon
        .post(app.url("/logout"))
        .form(&[("csrf_token", "x")])
        .go()
        .await;
    assert_eq!(logout.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM sessions").await,
        0,
        "anonymous requests stored a session"
    );

    // The token of a page, sent by a client without the page's cookie, is refused.
    let page = anon.get(app.url("/login")).go().await.text().await.unwrap();
    let token = csrf_token(&page);
    let fields = [
        ("csrf_token", token.as_str()),
        ("username", "rater"),
        ("password", PASSWORD),
    ];
    let cookieless = app
        .browser()
        .post(app.url("/login"))
        .form(&fields)
        .go()
        .await;
    assert_eq!(cookieless.status(), StatusCode::FORBIDDEN);
    assert!(
        cookieless
            .text()
            .await
            .unwrap()
            .contains("CSRF cookie is missing")
    );
    // Another browser's cookie does not match this page's token either.
    let other = app.browser();
    other.get(app.url("/login")).go().await;
    let mismatched = other.post(app.url("/login")).form(&fields).go().await;
    assert_eq!(mismatched.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.count("SELECT COUNT(*) FROM sessions").await, 0);

    let signed_in = anon.post(app.url("/login")).form(&fields).go().await;
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM sessions").await,
        1,
        "one session, made at sign-in"
    );
    let me = anon.get(app.url("/api/v1/me")).go().await;
    assert_eq!(json_with(me, StatusCode::OK).await["username"], "rater");
}
db_test!(anonymous_visits_store_no_session: TestApp);

/// Issues 21 and 27: a `next` with whitespace, a control character or a backslash
/// falls back to `/`, and the sign-in still succeeds.
async fn next_with_control_characters_falls_back_to_home(app: &TestApp) {
    app.rater().await;
    for hostile in [
        "/\t/127.0.0.1:18999/",
        "/\n/x",
        "/x\r\nSet-Cookie: a=b",
        "/\u{7f}",
    ] {
        let browser = app.browser();
        let response = app.submit_login(&browser, "rater", PASSWORD, hostile).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{hostile:?}");
        assert_eq!(response.headers()[LOCATION], "/", "{hostile:?}");
        let me = browser.get(app.url("/api/v1/me")).go().await;
        assert_eq!(me.status(), StatusCode::OK, "{hostile:?}: signed in");
    }
    let browser = app.login("rater", PASSWORD).await;
    for raw in [
        "/%09/127.0.0.1:18999/",
        "/%0A/x",
        "/%0D/x",
        "/%7F",
        "/%20/x",
        "/%5Cevil.example",
        "%2F%2Fevil.example",
    ] {
        let response = browser
            .get(app.url(&format!("/login?next={raw}")))
            .go()
            .await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{raw}");
        assert_eq!(response.headers()[LOCATION], "/", "{raw}");
    }
    let kept = browser
        .get(app.url("/login?next=%2Fratings%3Fpage%3D2"))
        .go()
        .await;
    assert_eq!(kept.headers()[LOCATION], "/ratings?page=2");
    let anonymous = app.browser().get(app.url("/login?next=/%0A/x")).go().await;
    assert_eq!(anonymous.status(), StatusCode::OK);
    assert!(
        anonymous
            .text()
            .await
            .unwrap()
            .contains(r#"name="next" value="/""#)
    );
}
db_test!(next_with_control_characters_falls_back_to_home: TestApp);

/// Issue 28: wrong passwords from one address do not lock the owner out at theirs.
async fn a_stranger_cannot_lock_the_owner_out(app: &TestApp) {
    app.rater().await;
    let stranger = app.browser_at("127.0.0.2");
    let limit = Config::default().login_per_account_and_address_per_min;
    for attempt in 1..=limit {
        let response = app
            .submit_login(&stranger, "rater", "guess number x", "/")
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{attempt}");
    }
    let limited = app
        .submit_login(&stranger, "rater", "guess number x", "/")
        .await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let owner = app.browser_at("127.0.0.3");
    let signed_in = app.submit_login(&owner, "rater", PASSWORD, "/").await;
    assert_eq!(
        signed_in.status(),
        StatusCode::SEE_OTHER,
        "the owner signs in from their own address"
    );
    let still = app.submit_login(&stranger, "rater", PASSWORD, "/").await;
    assert_eq!(
        still.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "the stranger's address stays limited"
    );
}
db_test!(a_stranger_cannot_lock_the_owner_out: TestApp);

/// Issue 8: two instances on one database share the limit.
async fn the_login_limit_holds_across_instances(app: &TestApp) {
    app.rater().await;
    let sibling = app.sibling().await;
    let limit = Config::default().login_per_account_and_address_per_min;
    for attempt in 0..limit {
        let instance = if attempt % 2 == 0 { app } else { &sibling };
        let response = instance
            .submit_login(&instance.browser(), "rater", "guess number x", "/")
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{attempt}");
    }
    for instance in [app, &sibling] {
        let response = instance
            .submit_login(&instance.browser(), "rater", "guess number x", "/")
            .await;
        assert_eq!(
            response.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "the limit counts the attempts made on both instances"
        );
    }
    sibling.close().await;
}
db_test!(the_login_limit_holds_across_instances: TestApp);

/// Issue 18: a flood of sign-ins runs at most `max_concurrent_hashes` argon2 hashes at
/// once (each takes about 19 MiB); the rest queue, and every request gets a proper answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_flood_hashes_a_bounded_number_of_passwords_at_once() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let config = Config {
            max_concurrent_hashes: 2,
            login_per_address_per_min: 1000,
            login_per_account_and_address_per_min: 1000,
            ..Config::default()
        };
        let Some(app) = TestApp::with_config(backend, config).await else {
            continue;
        };
        app.rater().await;
        let statuses = login_flood(&app, 40).await;
        assert!(
            statuses.iter().all(|s| *s == StatusCode::UNAUTHORIZED),
            "{backend:?}: {statuses:?}"
        );
        let peak = app.state().hasher().peak_in_flight();
        assert_eq!(
            peak, 2,
            "{backend:?}: the bound holds, and the flood reached it"
        );
        app.teardown().await;

        // Beyond the wait, a check is refused with 503 rather than queued for ever.
        let config = Config {
            max_concurrent_hashes: 1,
            hash_wait: Duration::from_millis(1),
            login_per_address_per_min: 1000,
            login_per_account_and_address_per_min: 1000,
            ..Config::default()
        };
        let app = TestApp::with_config(backend, config).await.unwrap();
        app.rater().await;
        let statuses = login_flood(&app, 20).await;
        assert!(
            statuses
                .iter()
                .all(|s| [StatusCode::UNAUTHORIZED, StatusCode::SERVICE_UNAVAILABLE].contains(s)),
            "{backend:?}: {statuses:?}"
        );
        assert!(
            statuses.contains(&StatusCode::SERVICE_UNAVAILABLE),
            "{backend:?}: {statuses:?}"
        );
        assert_eq!(app.state().hasher().peak_in_flight(), 1, "{backend:?}");
        app.teardown().await;
    }
}

/// Loads the sign-in page in `n` browsers, then posts a wrong password from all of them
/// at once; returns the statuses.
async fn login_flood(app: &TestApp, n: usize) -> Vec<StatusCode> {
    let mut forms = Vec::new();
    for _ in 0..n {
        let browser = app.browser();
        let page = browser
            .get(app.url("/login"))
            .go()
            .await
            .text()
            .await
            .unwrap();
        forms.push((browser, csrf_token(&page)));
    }
    let url = app.url("/login");
    let posts = forms.into_iter().map(|(browser, token)| {
        let url = url.clone();
        tokio::spawn(async move {
            browser
                .post(url)
                .form(&[
                    ("csrf_token", token.as_str()),
                    ("username", "rater"),
                    ("password", "not the password"),
                ])
                .send()
                .await
                .expect("an answer")
                .status()
        })
    });
    let mut statuses = Vec::new();
    for post in posts.collect::<Vec<_>>() {
        statuses.push(post.await.unwrap());
    }
    statuses
}

/// Issue 26: only failed sign-ins count toward the limits, so people signing in with
/// the right password, however many from one address, never lock it.
async fn only_failed_sign_ins_count_toward_the_limits(app: &TestApp) {
    app.rater().await;
    let limit = Config::default().login_per_account_and_address_per_min;
    for attempt in 0..=2 * limit {
        let response = app
            .submit_login(&app.browser(), "rater", PASSWORD, "/")
            .await;
        assert_eq!(
            response.status(),
            StatusCode::SEE_OTHER,
            "sign-in {attempt}"
        );
    }
    let browser = app.browser();
    for attempt in 1..=limit {
        let response = app
            .submit_login(&browser, "rater", "guess number x", "/")
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{attempt}");
    }
    let limited = app
        .submit_login(&browser, "rater", "guess number x", "/")
        .await;
    assert_eq!(
        limited.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "failures still count"
    );
}
db_test!(only_failed_sign_ins_count_toward_the_limits: TestApp);

/// A browser that connects from `local` (a loopback address) and sends
/// `X-Forwarded-For: forwarded` with every request, as a browser behind a proxy looks to
/// verdict (the proxy being the test itself).
fn forwarded_browser(local: &str, forwarded: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-forwarded-for", forwarded.parse().unwrap());
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .local_address(local.parse::<std::net::IpAddr>().unwrap())
        .default_headers(headers)
        .build()
        .unwrap()
}

/// Issue 26: behind a trusted proxy every sign-in comes from the proxy's address, but
/// the limits count each client at its own (the right-most forwarded address that is
/// not a trusted proxy): a flood of failures from one client never stops another from
/// signing in, and what a client forwards itself is not believed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_one_clients_flood_never_stops_another() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let config = Config {
            trusted_proxies: verdict::web::client::parse_trusted_proxies("127.0.0.1").unwrap(),
            ..Config::default()
        };
        let Some(app) = TestApp::with_config(backend, config).await else {
            continue;
        };
        app.admin().await;
        let limit = Config::default().login_per_address_per_min;
        let stranger = forwarded_browser("127.0.0.1", "203.0.113.5");
        for attempt in 1..=limit {
            let response = app
                .submit_login(
                    &stranger,
                    &format!("nobody{attempt}"),
                    "guess number x",
                    "/",
                )
                .await;
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{backend:?}: {attempt}"
            );
        }
        let limited = app
            .submit_login(&stranger, "nobody-else", "guess number x", "/")
            .await;
        assert_eq!(
            limited.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{backend:?}: the flooding client is limited"
        );
        // The stranger writing the admin's address in front changes nothing: the proxy
        // appended the stranger's own.
        let spoofed = forwarded_browser("127.0.0.1", "198.51.100.7, 203.0.113.5");
        let response = app.submit_login(&spoofed, "admin", PASSWORD, "/").await;
        assert_eq!(
            response.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{backend:?}: a forged address left of the proxy's is not believed"
        );
        let admin = forwarded_browser("127.0.0.1", "198.51.100.7");
        let response = app.submit_login(&admin, "admin", PASSWORD, "/").await;
        assert_eq!(
            response.status(),
            StatusCode::SEE_OTHER,
            "{backend:?}: the admin signs in through the same proxy"
        );
        // A peer that is not a trusted proxy is the client, whatever it forwards.
        for attempt in 1..=limit {
            let forger = forwarded_browser("127.0.0.2", &format!("192.0.2.{attempt}"));
            let response = app
                .submit_login(&forger, &format!("nobody{attempt}"), "guess number x", "/")
                .await;
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{backend:?}: {attempt}"
            );
        }
        let forger = forwarded_browser("127.0.0.2", "192.0.2.200");
        let response = app
            .submit_login(&forger, "nobody-else", "guess number x", "/")
            .await;
        assert_eq!(
            response.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{backend:?}: an untrusted peer's X-Forwarded-For is ignored"
        );
        app.teardown().await;
    }
}

/// Issue 26: a flood of concurrent failed sign-ins (each from its own address, so no
/// limit stops it) leaves the server's memory within 100 MB of where it was: passwords
/// are hashed on a few fixed threads that reuse their buffers, so the allocator keeps no
/// 19 MiB buffer per thread that ever hashed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_flood_leaves_memory_near_where_it_was() {
    let db = crate::helpers::TestDb::setup(Backend::Sqlite)
        .await
        .expect("SQLite");
    let (mut child, base) = crate::durability::serve_with(&db, &[]);
    let page = reqwest::get(format!("{base}/login")).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let before = resident_kib(child.id());
    let mut statuses = Vec::new();
    for round in 1..=4u8 {
        let mut forms = Vec::new();
        for client in 1..=60u8 {
            let browser = reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .local_address(std::net::IpAddr::from([127, 1, round, client]))
                .build()
                .unwrap();
            let page = browser
                .get(format!("{base}/login"))
                .go()
                .await
                .text()
                .await
                .unwrap();
            forms.push((browser, csrf_token(&page)));
        }
        let posts: Vec<_> = forms
            .into_iter()
            .map(|(browser, token)| {
                let url = format!("{base}/login");
                tokio::spawn(async move {
                    browser
                        .post(url)
                        .form(&[
                            ("csrf_token", token.as_str()),
                            ("username", "nobody"),
                            ("password", "not the password"),
                        ])
                        .send()
                        .await
                        .expect("an answer")
                        .status()
                })
            })
            .collect();
        for post in posts {
            statuses.push(post.await.unwrap());
        }
    }
    let after = resident_kib(child.id());
    crate::durability::kill_9(&mut child);
    assert!(
        statuses.iter().all(|s| *s == StatusCode::UNAUTHORIZED),
        "every attempt was checked: {statuses:?}"
    );
    let added_mib = after.saturating_sub(before) / 1024;
    assert!(
        added_mib < 100,
        "the flood added {added_mib} MiB ({before} KiB before, {after} KiB after)"
    );
}
