//! What Schemathesis (`.ci/schemathesis`) found: the API and its OpenAPI document agree,
//! and no request breaks a response off.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{Go, TestApp, complete_answers, db_test, json_with, tasks_jsonl};

async fn a_compressed_export_arrives_whole(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "zipped", &tasks_jsonl(3), "").await;
    let next = app.next(&rater, &batch).await.expect("a task");
    let assignment = next["assignment_id"].as_str().unwrap();
    let submitted = app
        .act(&rater, assignment, "submit", &complete_answers())
        .await;
    assert_eq!(submitted.status(), StatusCode::OK);
    for format in ["csv", "jsonl"] {
        let response = lead
            .api
            .get(app.url(&format!("/api/v1/batches/{batch}/export?format={format}")))
            .header("accept-encoding", "gzip")
            .go()
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{format}");
        assert_eq!(response.headers()["content-encoding"], "gzip", "{format}");
        // The stream used to panic once polled past its end, which cut the body off.
        let body = response.bytes().await.expect("the whole body");
        assert!(body.starts_with(&[0x1f, 0x8b]), "{format}: gzip data");
    }
}
db_test!(a_compressed_export_arrives_whole: TestApp);

async fn the_openapi_document_describes_parameters_errors_and_cookie_as_served(app: &TestApp) {
    let doc = app.openapi().await;
    // Query structs are query parameters, each optional.
    for (path, method, name) in [
        ("/api/v1/audit", "get", "limit"),
        ("/api/v1/batches", "post", "name"),
        ("/api/v1/batches/{id}/export", "get", "format"),
    ] {
        let parameters = doc["paths"][path][method]["parameters"].as_array().unwrap();
        let parameter = parameters
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{method} {path} ?{name}"));
        assert_eq!(parameter["in"], "query", "{method} {path} ?{name}");
        assert_ne!(parameter["required"], true, "{method} {path} ?{name}");
    }
    // The session scheme names the cookie the server sets.
    assert_eq!(
        doc["components"]["securitySchemes"]["session"]["name"],
        verdict::SESSION_COOKIE
    );
    // The upload takes each of the formats it reads.
    let upload = &doc["paths"]["/api/v1/batches"]["post"]["requestBody"]["content"];
    for media_type in ["application/x-ndjson", "application/json", "text/csv"] {
        assert!(upload[media_type].is_object(), "{media_type}");
    }
    // A prompt is a string or a list of messages, not always an object.
    let prompt = &doc["components"]["schemas"]["TaskView"]["properties"]["prompt"];
    assert_ne!(prompt["type"], "object", "{prompt}");
    // Schemas share one namespace: two types of one name would leave one of them
    // described as the other. The metrics' `Side` (a count and a mean) and the code
    // runs' side of a response (`a` or `b`) are both there, each as itself.
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["Side"]["type"], "object", "{}", schemas["Side"]);
    assert!(schemas["Side"]["properties"]["n"].is_object());
    assert_eq!(
        schemas["ResponseSide"]["enum"],
        serde_json::json!(["a", "b"])
    );

    // Every status the shared extractors answer with is documented where they apply, and
    // the server does answer with it.
    let rater = app.rater().await;
    for (path, method) in [
        ("/api/v1/batches/{id}", "get"),
        ("/api/v1/assignments/{id}/submit", "post"),
        ("/api/v1/tokens/{id}", "delete"),
    ] {
        let responses = &doc["paths"][path][method]["responses"];
        for status in ["400", "401"] {
            assert!(responses[status].is_object(), "{method} {path} {status}");
        }
        let url = app.url(&path.replace("{id}", "not-a-uuid"));
        let request = match method {
            "get" => rater.api.get(url),
            "post" => rater.api.post(url),
            _ => rater.api.delete(url),
        };
        let body: Value = json_with(request.go().await, StatusCode::BAD_REQUEST).await;
        assert!(body["error"].is_string(), "{body}");
    }
    let submit = &doc["paths"]["/api/v1/assignments/{id}/submit"]["post"]["responses"];
    for status in ["403", "413", "415", "422"] {
        assert!(submit[status].is_object(), "submit {status}");
    }
    let missing_type = rater
        .api
        .post(app.url(&format!(
            "/api/v1/assignments/{}/submit",
            uuid::Uuid::now_v7()
        )))
        .body("{}")
        .go()
        .await;
    assert_eq!(missing_type.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}
db_test!(the_openapi_document_describes_parameters_errors_and_cookie_as_served: TestApp);

/// Issue 26: a method a route does not take answers 405 in the app's error format, as
/// the README promises: JSON on the API, an error page on pages, with the methods it
/// takes in `Allow`.
async fn a_wrong_method_gets_405_in_the_error_format(app: &TestApp) {
    let admin = app.admin().await;
    let id = uuid::Uuid::new_v4();
    let response = admin
        .api
        .delete(app.url(&format!("/api/v1/judges/{id}")))
        .go()
        .await;
    let allow = response.headers().get("allow").cloned();
    let body = json_with(response, StatusCode::METHOD_NOT_ALLOWED).await;
    assert_eq!(allow.as_ref().map(|v| v.to_str().unwrap()), Some("PATCH"));
    assert_eq!(body["error"], "this address does not take DELETE requests");

    let page = app.browser().put(app.url("/login")).go().await;
    assert_eq!(page.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(page.headers()["allow"], "GET,HEAD,POST");
    let html = page.text().await.unwrap();
    assert!(
        html.contains("this address does not take PUT requests"),
        "{html}"
    );
}
db_test!(a_wrong_method_gets_405_in_the_error_format: TestApp);
