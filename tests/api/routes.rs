//! Every route, for every kind of caller, gets the status this table says. The routes
//! are read from the router's source (every `.route(` call under `src/`) and, for the
//! API, from the OpenAPI document the API's router builds as it registers each handler,
//! so a route added without a row here fails this test; a row without a route does too.
//!
//! The same run checks three more promises: no GET changes what the database holds, no
//! page or JSON a rater can load shows another rater's answers, and every POST page form
//! refuses a request without its CSRF token.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::{Client, Method, StatusCode};
use serde_json::json;

use crate::helpers::{
    Go, Persona, TestApp, complete_answers, csrf_token, db_test, json_with, tasks_jsonl,
};

/// Who asks, in the order of the columns of [`MATRIX`].
const CALLERS: [&str; 6] = [
    "anonymous",
    "rater",
    "other rater",
    "lead",
    "admin",
    "deactivated",
];

/// What each placeholder stands for: `{assignment}` the rater's open assignment,
/// `{rating}` the rater's submitted rating, `{user}` an account nobody else touches,
/// `{token}` and `{page_token}` spare tokens of the rater, `{batch}` and `{task}` the batch and one of its
/// tasks, `{doomed}` a batch of its own to delete and restore, `{rubric}` and `{version}` a built-in rubric and its first version, `{judge}`
/// a judge and `{run}` a cancelled run of it over the batch, `{webhook}` a subscription
/// to the batch and `{event}` a delivery nobody has. Requests carry a body that is valid in form but not in content (an empty JSON
/// object, a form with only its CSRF token), so 422 (or 400 for a form missing a field)
/// means "let through to validation", and an empty change is a 200 or 303 that changes
/// nothing. Leads and admins may read a rating, not change it. Anonymous and deactivated
/// callers have no session, so a form's CSRF token cannot match: 403.
///
/// Expected statuses, one per caller in the order of [`CALLERS`].
#[rustfmt::skip]
const MATRIX: &[(&str, &str, [u16; 6])] = &[
    // Public.
    ("GET", "/healthz", [200, 200, 200, 200, 200, 200]),
    ("GET", "/static/app.css", [200, 200, 200, 200, 200, 200]),
    ("GET", "/api/v1/openapi.json", [200, 200, 200, 200, 200, 200]),
    // The code runner's workers and the Pyodide files (tests/api/runner.rs checks them);
    // a version this server does not serve is 404 for everyone.
    ("GET", "/runner/js-worker.js", [200, 200, 200, 200, 200, 200]),
    ("GET", "/runner/python-worker.js", [200, 200, 200, 200, 200, 200]),
    ("GET", "/runner/pyodide/{version}/{file}", [404, 404, 404, 404, 404, 404]),
    ("GET", "/login", [200, 303, 303, 303, 303, 200]),
    // The sign-in form's token is its own cookie's, never a session's (issue 22).
    ("POST", "/login", [403, 403, 403, 403, 403, 403]),
    // Sign-in through an identity provider: not set up on this server, so not found
    // (tests/api/oidc.rs runs them against a real provider).
    ("GET", "/auth/oidc/start", [404, 404, 404, 404, 404, 404]),
    ("GET", "/auth/oidc/callback", [404, 404, 404, 404, 404, 404]),
    // Everyone signed in.
    ("GET", "/", [303, 200, 200, 200, 200, 303]),
    ("GET", "/api/v1/me", [401, 200, 200, 200, 200, 401]),
    ("PATCH", "/api/v1/me", [401, 200, 200, 200, 200, 401]),
    // Skills: everyone's own; a lead's, raters' too; an admin's, anyone's.
    ("GET", "/skills", [303, 200, 200, 200, 200, 303]),
    ("POST", "/skills", [303, 303, 303, 303, 303, 303]),
    ("POST", "/skills/{user}", [303, 403, 403, 303, 303, 303]),
    ("GET", "/api/v1/tokens", [401, 200, 200, 200, 200, 401]),
    ("POST", "/api/v1/tokens", [401, 422, 422, 422, 422, 401]),
    ("DELETE", "/api/v1/tokens/{token}", [401, 204, 404, 404, 404, 401]),
    // The token page: anyone's own tokens (an admin's: everyone's). The rater's second
    // spare token is revoked by the rater first, so later callers find it gone.
    ("GET", "/tokens", [303, 200, 200, 200, 200, 303]),
    ("POST", "/tokens", [303, 422, 422, 422, 422, 303]),
    ("POST", "/tokens/{page_token}/revoke", [303, 303, 404, 404, 404, 303]),
    ("GET", "/ratings", [303, 200, 200, 200, 200, 303]),
    ("GET", "/api/v1/ratings", [401, 200, 200, 200, 200, 401]),
    // A rater's own work: nobody else's, not even an admin's.
    ("GET", "/ratings/{rating}", [303, 200, 404, 200, 200, 303]),
    ("POST", "/ratings/{rating}", [303, 422, 404, 403, 403, 303]),
    ("POST", "/ratings/{rating}/draft", [303, 200, 404, 403, 403, 303]),
    ("GET", "/api/v1/ratings/{rating}", [401, 200, 404, 200, 200, 401]),
    ("GET", "/api/v1/ratings/{rating}/history", [401, 200, 404, 200, 200, 401]),
    ("PUT", "/api/v1/ratings/{rating}", [401, 422, 404, 403, 403, 401]),
    ("GET", "/assignments/{assignment}", [303, 200, 404, 404, 404, 303]),
    // The A vs B diff of the rater's own assignment, as they were shown it.
    ("GET", "/assignments/{assignment}/diff", [303, 200, 404, 404, 404, 303]),
    ("POST", "/assignments/{assignment}/submit", [303, 422, 404, 404, 404, 303]),
    ("POST", "/assignments/{assignment}/draft", [303, 200, 404, 404, 404, 303]),
    ("POST", "/assignments/{assignment}/check", [303, 200, 404, 404, 404, 303]),
    ("POST", "/assignments/{assignment}/skip", [303, 422, 404, 404, 404, 303]),
    ("POST", "/assignments/{assignment}/out-of-scope", [303, 422, 404, 404, 404, 303]),
    ("PUT", "/api/v1/assignments/{assignment}/draft", [401, 200, 404, 404, 404, 401]),
    ("POST", "/api/v1/assignments/{assignment}/submit", [401, 422, 404, 404, 404, 401]),
    ("POST", "/api/v1/assignments/{assignment}/skip", [401, 422, 404, 404, 404, 401]),
    ("POST", "/api/v1/assignments/{assignment}/out-of-scope", [401, 422, 404, 404, 404, 401]),
    // Taking work from a batch one rates in.
    ("GET", "/batches/{batch}/next", [303, 303, 303, 200, 200, 303]),
    ("POST", "/batches/{batch}/next", [303, 303, 303, 303, 303, 303]),
    ("POST", "/api/v1/batches/{batch}/next", [401, 200, 200, 200, 200, 401]),
    ("GET", "/api/v1/batches", [401, 200, 200, 200, 200, 401]),
    ("GET", "/api/v1/batches/{batch}", [401, 200, 200, 200, 200, 401]),
    // Leads and admins.
    ("GET", "/batches/{batch}", [303, 403, 403, 200, 200, 303]),
    ("GET", "/api/v1/batches/{batch}/metrics", [401, 403, 403, 200, 200, 401]),
    ("GET", "/api/v1/batches/{batch}/gold", [401, 403, 403, 200, 200, 401]),
    ("PATCH", "/api/v1/batches/{batch}/gold", [401, 403, 403, 200, 200, 401]),
    // The batch page's gold form: nothing typed asks for no gold and no review first.
    ("POST", "/batches/{batch}/gold", [303, 403, 403, 303, 303, 303]),
    // Qualification: its raters see their own, its leads everyone's.
    ("GET", "/api/v1/batches/{batch}/qualification", [401, 200, 200, 200, 200, 401]),
    ("GET", "/batches/{batch}/qualification", [303, 200, 200, 200, 200, 303]),
    ("GET", "/api/v1/batches/{batch}/export", [401, 403, 403, 200, 200, 401]),
    // The batch page's export form: no filters, so on to the export itself.
    ("GET", "/batches/{batch}/export", [303, 403, 403, 303, 303, 303]),
    ("GET", "/batches/{batch}/tasks/{task}", [303, 403, 403, 200, 200, 303]),
    ("GET", "/batches/{batch}/tasks/{task}/diff", [303, 403, 403, 200, 200, 303]),
    ("GET", "/api/v1/batches/{batch}/tasks/{task}", [401, 403, 403, 200, 200, 401]),
    ("GET", "/review", [303, 403, 403, 200, 200, 303]),
    ("GET", "/api/v1/review", [401, 403, 403, 200, 200, 401]),
    ("GET", "/review/{rating}", [303, 403, 403, 200, 200, 303]),
    ("POST", "/review/{rating}", [303, 403, 403, 400, 400, 303]),
    ("POST", "/api/v1/ratings/{rating}/review", [401, 403, 403, 422, 422, 401]),
    ("GET", "/batches/{batch}/disagreements", [303, 403, 403, 200, 200, 303]),
    ("GET", "/api/v1/batches/{batch}/disagreements", [401, 403, 403, 200, 200, 401]),
    // The confirmation step, then the bulk accept itself: the page's form lists the
    // ratings it confirms (none here), the API's empty filters take every waiting rating
    // of the lead's batches, so the lead's call accepts them and the admin's finds none.
    ("GET", "/review/accept", [303, 403, 403, 200, 200, 303]),
    ("POST", "/review/accept", [303, 403, 403, 200, 200, 303]),
    // No decision in the form: nothing decided, and back to the queue that says so.
    ("POST", "/review/selected", [303, 403, 403, 303, 303, 303]),
    ("POST", "/api/v1/review/accept", [401, 403, 403, 200, 200, 401]),
    // The team's hours and the flags (issue 31): the flags name no batch here, so 422.
    ("GET", "/reports/hours", [303, 403, 403, 200, 200, 303]),
    ("GET", "/api/v1/reports/hours", [401, 403, 403, 200, 200, 401]),
    ("GET", "/api/v1/reports/flags", [401, 403, 403, 422, 422, 401]),
    // Admins only.
    ("GET", "/admin/users", [303, 403, 403, 403, 200, 303]),
    ("POST", "/admin/users", [303, 403, 403, 403, 422, 303]),
    ("POST", "/admin/users/{user}", [303, 403, 403, 403, 303, 303]),
    // Only the CSRF token: no new password, 422 with the page.
    ("POST", "/admin/users/{user}/password", [303, 403, 403, 403, 422, 303]),
    ("GET", "/api/v1/users", [401, 403, 403, 403, 200, 401]),
    ("POST", "/api/v1/users", [401, 403, 403, 403, 422, 401]),
    // A lead may change a rater's skills (and an empty change changes nothing).
    ("PATCH", "/api/v1/users/{user}", [401, 403, 403, 200, 200, 401]),
    ("GET", "/admin/batches", [303, 403, 403, 403, 200, 303]),
    ("GET", "/admin/batches/{batch}", [303, 403, 403, 403, 200, 303]),
    ("POST", "/admin/batches/{batch}", [303, 403, 403, 403, 422, 303]),
    // Only the CSRF token: no settings to confirm, 422.
    ("POST", "/admin/batches/{batch}/confirm", [303, 403, 403, 403, 422, 303]),
    ("POST", "/api/v1/batches", [401, 403, 403, 403, 422, 401]),
    ("PATCH", "/api/v1/batches/{batch}", [401, 403, 403, 403, 200, 401]),
    // Corrections (issue 51): `{doomed}` is a batch of its own, deleted by the admin,
    // then restored, so the rows after it find it again.
    ("GET", "/api/v1/batches/deleted", [401, 403, 403, 403, 200, 401]),
    ("DELETE", "/api/v1/batches/{doomed}", [401, 403, 403, 403, 200, 401]),
    ("POST", "/api/v1/batches/{doomed}/restore", [401, 403, 403, 403, 200, 401]),
    ("GET", "/admin/batches/{doomed}/delete", [303, 403, 403, 403, 200, 303]),
    // Without the name typed: refused by name.
    ("POST", "/admin/batches/{doomed}/delete", [303, 403, 403, 403, 422, 303]),
    // Not deleted: nothing to restore.
    ("POST", "/admin/batches/{doomed}/restore", [303, 403, 403, 403, 409, 303]),
    // An empty change names what it wants.
    ("PATCH", "/api/v1/batches/{batch}/tasks/{task}", [401, 403, 403, 422, 422, 401]),
    // No final answer is recorded: none to read or withdraw; an empty one is refused.
    ("GET", "/api/v1/batches/{batch}/tasks/{task}/final", [401, 403, 403, 404, 404, 401]),
    ("PUT", "/api/v1/batches/{batch}/tasks/{task}/final", [401, 403, 403, 422, 422, 401]),
    ("DELETE", "/api/v1/batches/{batch}/tasks/{task}/final", [401, 403, 403, 404, 404, 401]),
    ("GET", "/batches/{batch}/tasks/{task}/final", [303, 403, 403, 200, 200, 303]),
    ("POST", "/batches/{batch}/tasks/{task}/final", [303, 403, 403, 422, 422, 303]),
    ("POST", "/batches/{batch}/tasks/{task}/final/remove", [303, 403, 403, 404, 404, 303]),
    ("GET", "/admin/audit", [303, 403, 403, 403, 200, 303]),
    ("GET", "/admin/rubrics", [303, 403, 403, 403, 200, 303]),
    ("POST", "/admin/rubrics", [303, 403, 403, 403, 422, 303]),
    ("POST", "/api/v1/rubrics", [401, 403, 403, 403, 422, 401]),
    // Rubric documents are no secret: anyone signed in reads them.
    ("GET", "/api/v1/rubrics", [401, 200, 200, 200, 200, 401]),
    ("GET", "/api/v1/rubrics/{rubric}", [401, 200, 200, 200, 200, 401]),
    ("GET", "/api/v1/rubrics/{rubric}/versions/{version}", [401, 200, 200, 200, 200, 401]),
    ("GET", "/api/v1/rubrics/{rubric}/versions/{version}/compare/{version}", [401, 200, 200, 200, 200, 401]),
    ("GET", "/api/v1/audit", [401, 403, 403, 403, 200, 401]),
    // Judges: admins configure and run them; leads of a batch follow its runs. The run
    // is cancelled, so no transition is open to it (409) and no worker writes meanwhile.
    ("GET", "/api/v1/judges", [401, 403, 403, 403, 200, 401]),
    ("POST", "/api/v1/judges", [401, 403, 403, 403, 422, 401]),
    ("PATCH", "/api/v1/judges/{judge}", [401, 403, 403, 403, 200, 401]),
    ("POST", "/api/v1/batches/{batch}/judge-runs", [401, 403, 403, 403, 422, 401]),
    ("GET", "/api/v1/batches/{batch}/judge-runs", [401, 403, 403, 200, 200, 401]),
    ("GET", "/api/v1/judge-runs/{run}", [401, 403, 403, 200, 200, 401]),
    ("POST", "/api/v1/judge-runs/{run}/pause", [401, 403, 403, 403, 409, 401]),
    ("POST", "/api/v1/judge-runs/{run}/resume", [401, 403, 403, 403, 409, 401]),
    ("POST", "/api/v1/judge-runs/{run}/cancel", [401, 403, 403, 403, 409, 401]),
    ("GET", "/api/v1/judge-runs/{run}/calls", [401, 403, 403, 200, 200, 401]),
    ("GET", "/api/v1/judge-runs/{run}/export", [401, 403, 403, 200, 200, 401]),
    // Their pages: only the CSRF token names no judge (422), so no run starts and no
    // worker writes; the run's buttons find it cancelled and the batch page says so (409).
    ("GET", "/admin/judges", [303, 403, 403, 403, 200, 303]),
    ("POST", "/admin/judges", [303, 403, 403, 403, 422, 303]),
    ("GET", "/admin/judges/{judge}", [303, 403, 403, 403, 200, 303]),
    // Only the CSRF token: an empty URL and model, which a judge cannot have (422).
    ("POST", "/admin/judges/{judge}", [303, 403, 403, 403, 422, 303]),
    ("POST", "/batches/{batch}/judge-runs", [303, 403, 403, 403, 422, 303]),
    ("POST", "/judge-runs/{run}/pause", [303, 403, 403, 403, 409, 303]),
    ("POST", "/judge-runs/{run}/resume", [303, 403, 403, 403, 409, 303]),
    ("POST", "/judge-runs/{run}/cancel", [303, 403, 403, 403, 409, 303]),
    ("GET", "/judge-runs/{run}/calls", [303, 403, 403, 200, 200, 303]),
    // Webhooks: admins, and leads for the batches they lead. `{webhook}` is a
    // subscription to the batch, `{event}` a delivery it does not have. The lead's delete
    // on the page goes first, so every later one finds it gone.
    ("GET", "/api/v1/webhooks", [401, 403, 403, 200, 200, 401]),
    ("POST", "/api/v1/webhooks", [401, 403, 403, 422, 422, 401]),
    ("GET", "/api/v1/webhooks/{webhook}/deliveries", [401, 403, 403, 200, 200, 401]),
    ("POST", "/api/v1/webhooks/{webhook}/deliveries/{event}/redeliver", [401, 403, 403, 404, 404, 401]),
    // Their pages; only the CSRF token names no URL and no event (422).
    ("GET", "/webhooks", [303, 403, 403, 200, 200, 303]),
    ("POST", "/webhooks", [303, 403, 403, 422, 422, 303]),
    ("GET", "/webhooks/{webhook}", [303, 403, 403, 200, 200, 303]),
    ("POST", "/webhooks/{webhook}/deliveries/{event}/redeliver", [303, 403, 403, 404, 404, 303]),
    ("POST", "/webhooks/{webhook}/delete", [303, 403, 403, 303, 404, 303]),
    ("DELETE", "/api/v1/webhooks/{webhook}", [401, 403, 403, 404, 404, 401]),
    // Operators' figures: off unless the server is started with a token or open.
    ("GET", "/metrics", [404, 404, 404, 404, 404, 404]),
    // Releasing the rater's open assignment (after every row that works on it): the
    // first lead's request releases it, every later one finds it no longer open.
    ("POST", "/batches/{batch}/assignments/{assignment}/release", [303, 403, 403, 303, 409, 303]),
    ("POST", "/api/v1/assignments/{assignment}/release", [401, 403, 403, 409, 409, 401]),
    // Last: it ends the session it is sent with.
    ("POST", "/logout", [403, 303, 303, 303, 303, 403]),
];

/// Words in the other raters' answers that no page of the rater may show.
const RATER_SECRET: &str = "explained-by-rater-one";
const OTHER_SECRET: &str = "explained-by-rater-two";

/// The `(method, path)` of every `.route(` call in the router's source, and of every
/// operation in the API's document (whose routes are registered with it).
fn routes_in_source() -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for (path, item) in verdict::api::document().paths.paths {
        let methods = [
            ("GET", item.get.is_some()),
            ("PUT", item.put.is_some()),
            ("POST", item.post.is_some()),
            ("DELETE", item.delete.is_some()),
            ("PATCH", item.patch.is_some()),
        ];
        for (method, present) in methods {
            if present {
                found.insert((method.to_owned(), path.clone()));
            }
        }
    }
    let mut files = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(
                std::fs::read_dir(&path)
                    .expect("read src")
                    .map(|e| e.expect("entry").path()),
            );
        } else if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path).expect("read source");
            for call in source.split(".route(").skip(1) {
                found.extend(route_call(call));
            }
        }
    }
    found
}

/// The routes of one `.route(` call: its path, and each method router called at the
/// top level of its second argument (`get(a).post(b)` gives GET and POST).
fn route_call(call: &str) -> Vec<(String, String)> {
    let call = call.trim_start();
    let Some(rest) = call.strip_prefix('"') else {
        return Vec::new(); // not a call with a literal path (e.g. documentation text)
    };
    let end = rest.find('"').expect("closing quote of a route path");
    let path = &rest[..end];
    let mut methods = Vec::new();
    let mut depth = 1;
    let mut word = String::new();
    let mut in_string = false;
    for c in rest[end + 1..].chars() {
        match c {
            '"' => in_string = !in_string,
            _ if in_string => {}
            '(' | '{' | '[' => {
                if depth == 1 && !word.is_empty() {
                    methods.push(word.to_uppercase());
                }
                depth += 1;
                word.clear();
            }
            ')' | '}' | ']' => {
                depth -= 1;
                word.clear();
                if depth == 0 {
                    break;
                }
            }
            c if c.is_alphanumeric() || c == '_' => word.push(c),
            _ => word.clear(),
        }
    }
    // A mounted path with a wildcard is listed with one concrete file.
    let path = path.replace("{*path}", "app.css");
    methods
        .into_iter()
        .filter(|m| ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&m.as_str()))
        .map(|m| (m, path.clone()))
        .collect()
}

#[test]
fn every_route_has_a_row_and_every_row_a_route() {
    let routes = routes_in_source();
    assert!(routes.len() > 40, "the source scan found {routes:?}");
    let rows: BTreeSet<(String, String)> = MATRIX
        .iter()
        .map(|(m, p, _)| (m.to_string(), pattern(p)))
        .collect();
    assert_eq!(rows.len(), MATRIX.len(), "a route has two rows");
    let routes: BTreeSet<(String, String)> =
        routes.into_iter().map(|(m, p)| (m, pattern(&p))).collect();
    let missing: Vec<_> = routes.difference(&rows).collect();
    let stale: Vec<_> = rows.difference(&routes).collect();
    assert!(missing.is_empty(), "routes without a row: {missing:?}");
    assert!(stale.is_empty(), "rows without a route: {stale:?}");
}

/// A path with every placeholder reduced to `{}`, so the router's names and the
/// table's can differ.
fn pattern(path: &str) -> String {
    let mut out = String::new();
    let mut in_placeholder = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_placeholder = true;
                out.push_str("{}");
            }
            '}' => in_placeholder = false,
            _ if in_placeholder => {}
            _ => out.push(c),
        }
    }
    out
}

/// One caller: how it signs its requests.
struct Caller {
    name: &'static str,
    /// For `/api/` paths: a bearer token, or nothing.
    api: Client,
    /// For pages: a cookie session, and the CSRF token of that session.
    browser: Client,
    csrf: Option<String>,
}

/// The world the table is checked in.
struct World {
    callers: Vec<Caller>,
    ids: BTreeMap<&'static str, String>,
}

async fn world(app: &TestApp) -> World {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let gone = app.persona("deactivated", verdict::auth::Role::Rater).await;
    let target = app.persona("target", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(&admin, "matrix", &tasks_jsonl(12), "&overlap=3")
        .await;
    let doomed = app.batch(&admin, "doomed", &tasks_jsonl(1), "").await;
    // Each rater submits one rating (with an explanation only they wrote) and keeps
    // one assignment open with a draft.
    let mut ratings = BTreeMap::new();
    for (who, secret) in [(&rater, RATER_SECRET), (&other, OTHER_SECRET)] {
        let next = app.next(who, &batch).await.expect("a task");
        let assignment = next["assignment_id"].as_str().unwrap().to_owned();
        let mut answers = complete_answers();
        answers["sxs_explanation"] = json!(format!("{secret}: A handles the empty input."));
        let submitted = app.act(who, &assignment, "submit", &answers).await;
        let submitted = json_with(submitted, StatusCode::OK).await;
        ratings.insert(
            who.username.clone(),
            submitted["rating_id"].as_str().unwrap().to_owned(),
        );
        let next = app.next(who, &batch).await.expect("a second task");
        let open = next["assignment_id"].as_str().unwrap().to_owned();
        let mut draft = json!({});
        draft["sxs_explanation"] = json!(format!("{secret} in a draft"));
        let saved = app.act(who, &open, "draft", &draft).await;
        assert_eq!(saved.status(), StatusCode::OK, "draft of {}", who.username);
        if who.username == rater.username {
            ratings.insert("open".into(), open);
        }
    }
    let mut spares = Vec::new();
    for name in ["spare", "spare for the page"] {
        let spare = rater
            .api
            .post(app.url("/api/v1/tokens"))
            .json(&json!({ "name": name }))
            .go()
            .await;
        let spare = json_with(spare, StatusCode::CREATED).await["id"]
            .as_str()
            .expect("token id")
            .to_owned();
        spares.push(spare);
    }
    let task = "t1".to_owned();
    let judge = admin
        .api
        .post(app.url("/api/v1/judges"))
        .json(&json!({"name": "matrix-judge", "base_url": "http://127.0.0.1:9/v1", "model": "m"}))
        .go()
        .await;
    let judge = json_with(judge, StatusCode::CREATED).await["id"]
        .as_str()
        .expect("judge id")
        .to_owned();
    let run = start_cancelled_run(app, &judge, &batch).await;
    // Made in the store: this server has no key to seal a secret with.
    let webhook = verdict::store::webhooks::Webhook {
        id: uuid::Uuid::now_v7(),
        url: "http://127.0.0.1:9/hook".into(),
        events: verdict::store::webhooks::EventList(vec![
            verdict_core::webhook::EventKind::BatchCompleted,
        ]),
        batch_id: Some(batch.parse().expect("uuid")),
        secret_sealed: "sealed".into(),
        created_by: None,
        created_at: chrono::Utc::now(),
        stopped_at: None,
        stopped_why: None,
    };
    app.store.create_webhook(&webhook).await.expect("webhook");

    let mut callers = vec![Caller {
        name: "anonymous",
        api: app.browser(),
        browser: app.browser(),
        csrf: None,
    }];
    for (name, persona) in [
        ("rater", &rater),
        ("other rater", &other),
        ("lead", &lead),
        ("admin", &admin),
        ("deactivated", &gone),
    ] {
        callers.push(signed_in(app, name, persona).await);
    }
    // Signed in with a session and a token, then deactivated: both must stop working.
    let deactivated = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", gone.id)))
        .json(&json!({"active": false}))
        .go()
        .await;
    assert_eq!(deactivated.status(), StatusCode::OK);

    let ids = BTreeMap::from([
        ("batch", batch),
        ("doomed", doomed),
        ("task", task),
        ("assignment", ratings["open"].clone()),
        ("rating", ratings["rater"].clone()),
        ("user", target.id.to_string()),
        ("token", spares[0].clone()),
        ("page_token", spares[1].clone()),
        ("rubric", "blackhat".to_owned()),
        ("judge", judge),
        ("run", run),
        ("webhook", webhook.id.to_string()),
        ("event", uuid::Uuid::now_v7().to_string()),
        ("version", "1".to_owned()),
        ("file", "pyodide.mjs".to_owned()),
    ]);
    World { callers, ids }
}

/// A run of `judge` over `batch`, made in the store and cancelled at once: no worker
/// ever takes it (the matrix checks that no GET changes the database).
async fn start_cancelled_run(app: &TestApp, judge: &str, batch: &str) -> String {
    let store = &app.store;
    let judge = store
        .judge(judge.parse().expect("uuid"))
        .await
        .expect("read")
        .expect("judge");
    let batch = store
        .batch(batch.parse().expect("uuid"))
        .await
        .expect("read")
        .expect("batch");
    let run = verdict::services::judging::runs::start_run(store, None, &judge, &batch, None)
        .await
        .expect("run");
    let cancelled = store
        .set_run_status(
            run.id,
            &[verdict_core::lifecycle::RunStatus::Running],
            verdict_core::lifecycle::RunStatus::Cancelled,
        )
        .await
        .expect("cancel");
    assert!(cancelled);
    run.id.to_string()
}

async fn signed_in(app: &TestApp, name: &'static str, persona: &Persona) -> Caller {
    let browser = persona.browser_for(app).await;
    let home = browser.get(app.url("/ratings")).go().await;
    let csrf = csrf_token(&home.text().await.expect("page"));
    Caller {
        name,
        api: persona.api.clone(),
        browser,
        csrf: Some(csrf),
    }
}

impl World {
    fn path(&self, template: &str) -> String {
        let mut path = template.to_owned();
        for (name, id) in &self.ids {
            path = path.replace(&format!("{{{name}}}"), id);
        }
        assert!(!path.contains('{'), "no id for {template}");
        path
    }

    /// Sends one row's request as one caller; returns the status and the body.
    async fn send(
        &self,
        app: &TestApp,
        caller: &Caller,
        method: &str,
        path: &str,
    ) -> (u16, String) {
        let method = Method::from_bytes(method.as_bytes()).expect("method");
        let url = app.url(path);
        let request = if path.starts_with("/api/") {
            let request = caller.api.request(method.clone(), url);
            match method {
                Method::GET | Method::DELETE => request,
                _ if path == "/api/v1/batches" => request
                    .header("content-type", "application/x-ndjson")
                    .body(""),
                // A skip without a reason would be refused before its owner is known.
                _ if path.ends_with("/skip") => request.json(&json!({"reason": "not-offered"})),
                _ => request.json(&json!({})),
            }
        } else {
            let request = caller.browser.request(method.clone(), url);
            match (&method, &caller.csrf) {
                (&Method::GET, _) => request,
                (_, Some(token)) => request.form(&[("csrf_token", token.as_str())]),
                (_, None) => request.form(&[("csrf_token", "")]),
            }
        };
        let response = request.go().await;
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }
}

async fn the_route_matrix_holds_for_every_caller(app: &TestApp) {
    let world = world(app).await;
    let mut wrong = Vec::new();
    let mut shown: Vec<(&str, String, String)> = Vec::new();
    // GETs first, with the database compared before and after: no GET changes it.
    let before = crate::helpers::contents(app).await;
    for pass in ["GET", "other"] {
        if pass == "other" {
            let after = crate::helpers::contents(app).await;
            for (table, rows) in &before {
                assert_eq!(
                    rows, &after[table],
                    "a GET changed table {table} on {:?}",
                    app.db.backend
                );
            }
        }
        for (method, template, expected) in MATRIX {
            if (pass == "GET") != (*method == "GET") {
                continue;
            }
            let path = world.path(template);
            for (caller, want) in world.callers.iter().zip(expected) {
                let (got, body) = world.send(app, caller, method, &path).await;
                if got != *want {
                    wrong.push(format!(
                        "{method} {template} as {}: {got}, expected {want}",
                        caller.name
                    ));
                }
                if *method == "GET" && got == 200 {
                    shown.push((caller.name, format!("{method} {template}"), body));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{:?}: {} of {} requests got the wrong status:\n{}",
        app.db.backend,
        wrong.len(),
        MATRIX.len() * CALLERS.len(),
        wrong.join("\n")
    );
    // No rater sees the other's answers, anywhere; the leads do (so the check can fail).
    for (caller, request, body) in &shown {
        let foreign = match *caller {
            "rater" => OTHER_SECRET,
            "other rater" => RATER_SECRET,
            _ => continue,
        };
        assert!(
            !body.contains(foreign),
            "{caller} saw another rater's answers at {request}"
        );
    }
    let sees = |who: &str, request: &str, secret: &str| {
        shown
            .iter()
            .any(|(c, r, b)| *c == who && r == request && b.contains(secret))
    };
    assert!(sees("rater", "GET /ratings/{rating}", RATER_SECRET));
    assert!(sees("rater", "GET /api/v1/ratings/{rating}", RATER_SECRET));
    assert!(sees("lead", "GET /review/{rating}", RATER_SECRET));
    assert!(sees(
        "rater",
        "GET /api/v1/ratings/{rating}/history",
        RATER_SECRET
    ));
    assert!(sees(
        "lead",
        "GET /api/v1/batches/{batch}/tasks/{task}",
        OTHER_SECRET
    ));
    assert!(sees(
        "admin",
        "GET /api/v1/batches/{batch}/export",
        OTHER_SECRET
    ));
}
db_test!(the_route_matrix_holds_for_every_caller: TestApp);

/// Every POST page form, sent with a session but without its CSRF token, is refused and
/// changes nothing.
async fn every_page_form_refuses_a_missing_csrf_token(app: &TestApp) {
    let world = world(app).await;
    let admin = &world.callers[4];
    let before = crate::helpers::contents(app).await;
    for (method, template, _) in MATRIX {
        if *method != "POST" || template.starts_with("/api/") {
            continue;
        }
        let path = world.path(template);
        let response = admin
            .browser
            .post(app.url(&path))
            .form(&[("note", "no token")])
            .go()
            .await;
        assert_eq!(
            response.status(),
            StatusCode::FORBIDDEN,
            "POST {template} without a CSRF token"
        );
        let cross_site = admin
            .browser
            .post(app.url(&path))
            .header("sec-fetch-site", "cross-site")
            .form(&[("csrf_token", admin.csrf.as_deref().unwrap())])
            .go()
            .await;
        assert_eq!(
            cross_site.status(),
            StatusCode::FORBIDDEN,
            "POST {template} from another site"
        );
    }
    assert_eq!(
        before,
        crate::helpers::contents(app).await,
        "a refused form changed something"
    );
}
db_test!(every_page_form_refuses_a_missing_csrf_token: TestApp);
