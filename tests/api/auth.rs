//! Signing in and out, sessions, tokens, CSRF, rate limits and role checks.

use reqwest::StatusCode;
use reqwest::header::{LOCATION, RETRY_AFTER, SET_COOKIE};
use serde_json::json;
use std::time::{Duration, Instant};

use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{Fixture, Go, PASSWORD, TestApp, bearer, csrf_token, db_test, json_with};

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
    let before = page.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    let token = csrf_token(&page.text().await.unwrap());
    let login = browser
        .post(app.url("/login"))
        .form(&[
            ("csrf_token", token.as_str()),
            ("username", "rater"),
            ("password", PASSWORD),
            ("next", "/"),
        ])
        .go()
        .await;
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
    let limit = Config::default().login_per_account_per_min;
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
    let admin = app.admin().await;
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
    // Another user cannot revoke it; its owner can.
    assert_eq!(
        admin
            .api
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
