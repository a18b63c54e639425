//! Pages, headers, static files, errors and the API description.

use reqwest::StatusCode;
use reqwest::header::{
    CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION,
};

use crate::helpers::{Go, PASSWORD, TestApp, csrf_token, db_test, json_with};

const SECURITY_HEADERS: [(&str, &str); 4] = [
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
    (
        "content-security-policy",
        verdict::web::headers::CONTENT_SECURITY_POLICY,
    ),
];

async fn every_kind_of_response_carries_the_security_headers(app: &TestApp) {
    let anon = app.browser();
    for path in [
        "/login",
        "/",
        "/api/v1/me",
        "/static/app.css",
        "/healthz",
        "/no-such-page",
        "/api/v1/openapi.json",
    ] {
        let response = anon.get(app.url(path)).go().await;
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(
                response.headers().get(name).map(|v| v.to_str().unwrap()),
                Some(value),
                "{name} on {path}"
            );
        }
        assert!(
            response.headers().contains_key("x-request-id"),
            "request id on {path}"
        );
    }
    let csp = verdict::web::headers::CONTENT_SECURITY_POLICY;
    assert!(
        csp.contains("script-src 'self';")
            && !csp.contains("unsafe-inline")
            && !csp.contains("unsafe-eval")
    );
    for directive in [
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive}");
    }
}
db_test!(every_kind_of_response_carries_the_security_headers: TestApp);

async fn each_role_lands_on_its_own_page(app: &TestApp) {
    for (persona, heading) in [
        (app.rater().await, "<h1>Your queue</h1>"),
        (app.lead().await, "<h1>Batches you lead</h1>"),
        (app.admin().await, "<h1>Administration</h1>"),
    ] {
        let browser = app.login(&persona.username, PASSWORD).await;
        let page = browser.get(app.url("/")).go().await;
        assert_eq!(page.status(), StatusCode::OK);
        let html = page.text().await.unwrap();
        assert!(
            html.contains(heading),
            "{} sees {heading}",
            persona.username
        );
        assert_eq!(
            html.contains("href=\"/admin/users\""),
            persona.username == "admin",
            "only admins see Users"
        );
        assert!(!html.contains("<script>"), "no inline script");
    }
}
db_test!(each_role_lands_on_its_own_page: TestApp);

async fn a_signed_in_visit_to_login_goes_home(app: &TestApp) {
    app.rater().await;
    let browser = app.login("rater", PASSWORD).await;
    let response = browser.get(app.url("/login")).go().await;
    assert_eq!(response.headers()[LOCATION], "/");
}
db_test!(a_signed_in_visit_to_login_goes_home: TestApp);

async fn admin_manages_users_from_the_users_page(app: &TestApp) {
    app.admin().await;
    let browser = app.login("admin", PASSWORD).await;
    let page = browser
        .get(app.url("/admin/users"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    let token = csrf_token(&page);
    assert!(
        page.contains("admin (you)"),
        "an admin's own row offers no demotion"
    );
    assert_eq!(
        page.matches(">Deactivate</button>").count(),
        0,
        "nor deactivation"
    );
    let form = |username: &'static str, password: &'static str| {
        vec![
            ("csrf_token", token.clone()),
            ("username", username.into()),
            ("role", "lead".into()),
            ("password", password.into()),
        ]
    };
    let created = browser
        .post(app.url("/admin/users"))
        .form(&form("noor", "noor's password!"))
        .go()
        .await;
    assert_eq!(created.headers()[LOCATION], "/admin/users");
    let noor = app
        .store
        .user_by_name("noor")
        .await
        .unwrap()
        .expect("created");
    assert_eq!(noor.role, verdict::auth::Role::Lead);

    let short = browser
        .post(app.url("/admin/users"))
        .form(&form("omar", "short"))
        .go()
        .await;
    assert_eq!(short.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = short.text().await.unwrap();
    assert!(
        html.contains("Password must be at least 10 characters"),
        "inline error"
    );
    assert!(
        html.contains("value=\"omar\""),
        "the form keeps what was typed"
    );
    assert!(app.store.user_by_name("omar").await.unwrap().is_none());

    let duplicate = browser
        .post(app.url("/admin/users"))
        .form(&form("noor", "noor's password!"))
        .go()
        .await;
    assert_eq!(duplicate.status(), StatusCode::CONFLICT);
    assert!(
        duplicate
            .text()
            .await
            .unwrap()
            .contains("Username username is already taken")
    );

    let deactivate = browser
        .post(app.url(&format!("/admin/users/{}", noor.id)))
        .form(&[("csrf_token", token.as_str()), ("active", "false")])
        .go()
        .await;
    assert_eq!(deactivate.status(), StatusCode::SEE_OTHER);
    assert!(!app.store.user_by_id(noor.id).await.unwrap().unwrap().active);
    let forged = browser
        .post(app.url(&format!("/admin/users/{}", noor.id)))
        .form(&[("csrf_token", "forged"), ("active", "true")])
        .go()
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(
        !app.store.user_by_id(noor.id).await.unwrap().unwrap().active,
        "forged form changed nothing"
    );
}
db_test!(admin_manages_users_from_the_users_page: TestApp);

async fn unknown_paths_get_404_in_the_callers_format(app: &TestApp) {
    let rater = app.rater().await;
    let api = rater.api.get(app.url("/api/v1/nothing-here")).go().await;
    assert_eq!(
        json_with(api, StatusCode::NOT_FOUND).await["error"],
        "not found"
    );
    let browser = app.login("rater", PASSWORD).await;
    let page = browser.get(app.url("/nothing-here")).go().await;
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    assert!(
        page.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.text().await.unwrap().contains("404 · Not Found"));
}
db_test!(unknown_paths_get_404_in_the_callers_format: TestApp);

async fn static_files_are_cached_revalidated_and_compressed(app: &TestApp) {
    let anon = app.browser();
    let css = anon.get(app.url("/static/app.css")).go().await;
    assert_eq!(css.status(), StatusCode::OK);
    assert_eq!(css.headers()[CONTENT_TYPE], "text/css");
    assert_eq!(css.headers()[CACHE_CONTROL], "public, max-age=3600");
    let etag = css.headers()[ETAG].clone();
    let again = anon
        .get(app.url("/static/app.css"))
        .header(IF_NONE_MATCH, etag)
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let gzip = anon
        .get(app.url("/static/app.css"))
        .header("accept-encoding", "gzip")
        .go()
        .await;
    assert_eq!(gzip.headers()[CONTENT_ENCODING], "gzip");
    assert_eq!(
        anon.get(app.url("/static/nope.css")).go().await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        anon.get(app.url("/static/../Cargo.toml"))
            .go()
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
}
db_test!(static_files_are_cached_revalidated_and_compressed: TestApp);

async fn healthz_answers_when_the_database_does(app: &TestApp) {
    let response = app.browser().get(app.url("/healthz")).go().await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "ok");
}
db_test!(healthz_answers_when_the_database_does: TestApp);

async fn the_openapi_document_describes_the_api(app: &TestApp) {
    let doc = app.openapi().await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for (path, method) in [
        ("/api/v1/me", "get"),
        ("/api/v1/users", "post"),
        ("/api/v1/users/{id}", "patch"),
        ("/api/v1/tokens", "post"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}
db_test!(the_openapi_document_describes_the_api: TestApp);
