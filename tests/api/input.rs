//! Bad input of every kind gets a clear 4xx and stores nothing: fields a caller may not
//! set (mass assignment), broken upload files, NUL characters (which PostgreSQL cannot
//! store and SQLite can: the answer is the same on both), and bodies over the limit,
//! refused before they are read.

use reqwest::StatusCode;
use serde_json::{Value, json};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{
    Go, TestApp, complete_answers, csrf_token, db_test, json_with, page_text, tasks_jsonl,
};

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
    let said = body["fields"]["active"].as_str().unwrap_or_default();
    assert!(said.starts_with("is not a field here"), "{body}");
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

/// Uploads `body` as a new batch and returns the status and JSON answer.
async fn upload(
    app: &TestApp,
    admin: &crate::helpers::Persona,
    name: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let response = admin
        .api
        .post(app.url(&format!("/api/v1/batches?name={name}")))
        .header("content-type", content_type)
        .body(body)
        .go()
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or_default())
}

/// The message of the first bad record of a refused upload.
fn first_error(answer: &Value) -> &str {
    answer["errors"][0]["message"].as_str().unwrap_or_default()
}

async fn broken_files_are_refused_with_their_line_and_store_nothing(app: &TestApp) {
    let admin = app.admin().await;
    let good = tasks_jsonl(2);
    let task = |id: &str, prompt: &str| {
        json!({"external_id": id, "prompt": prompt, "response_a": "A", "response_b": "B"})
            .to_string()
    };
    let mut invalid_utf8 = good.clone().into_bytes();
    invalid_utf8.extend_from_slice(b"{\"external_id\": \"t9\", \"prompt\": \"caf\xe9\"}\n");
    let nested = format!(
        "{{\"external_id\": \"deep\", \"prompt\": \"p\", \"response_a\": \"A\", \"response_b\": \"B\", \"metadata\": {}1{}}}\n",
        "{\"a\": ".repeat(200),
        "}".repeat(200)
    );
    let ten_mb_line = task("huge", &"x".repeat(10 * 1024 * 1024));
    let refused: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        (
            "utf8",
            "application/x-ndjson",
            invalid_utf8,
            "not valid UTF-8",
        ),
        (
            "nul",
            "application/x-ndjson",
            format!("{good}{}\n", task("t9", "a\u{0}b")).into_bytes(),
            "prompt contains a NUL character",
        ),
        (
            "nested",
            "application/x-ndjson",
            nested.into_bytes(),
            "malformed JSON: recursion limit exceeded",
        ),
        (
            "line",
            "application/x-ndjson",
            ten_mb_line.into_bytes(),
            "prompt is 10.0 MiB, over the limit of 2 MiB for one field",
        ),
        (
            "dup",
            "application/x-ndjson",
            format!("{good}{good}").into_bytes(),
            "external_id \"t1\" appears again (first on line 1)",
        ),
        (
            "ragged",
            "text/csv",
            b"external_id,prompt,response_a,response_b\nc1,p,A,B\nc2,p,A\n".to_vec(),
            "has 3 fields, the header has 4",
        ),
    ];
    for (name, content_type, body, message) in refused {
        let (status, answer) = upload(app, &admin, name, content_type, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {answer}");
        assert!(
            first_error(&answer).starts_with(message),
            "{name}: {answer}"
        );
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM batches").await, 0);

    // A byte-order mark and CRLF line ends are how some editors save a file: accepted.
    let crlf = format!("\u{feff}{}", good.replace('\n', "\r\n"));
    let (status, answer) = upload(
        app,
        &admin,
        "bom",
        "application/x-ndjson",
        crlf.into_bytes(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let csv = "\u{feff}external_id,prompt,response_a,response_b\r\nc1,p,A,B\r\n";
    let (status, answer) = upload(app, &admin, "bomcsv", "text/csv", csv.into()).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(app.count("SELECT COUNT(*) FROM tasks").await, 3);
    let first = app
        .count("SELECT COUNT(*) FROM tasks WHERE external_id = 't1'")
        .await;
    assert_eq!(first, 1, "the mark is not part of the first id");
}
db_test!(broken_files_are_refused_with_their_line_and_store_nothing: TestApp);

/// PostgreSQL refuses NUL in text and SQLite stores it: verdict refuses it first, with
/// the same answer on both, wherever text comes in.
async fn nul_characters_get_the_same_answer_on_both_databases(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "nul", &tasks_jsonl(2), "").await;
    let next = app.next(&rater, &batch).await.unwrap();
    let assignment = next["assignment_id"].as_str().unwrap().to_owned();
    let before = crate::helpers::contents(app).await;
    let mut answers = complete_answers();
    answers["sxs_explanation"] = json!("A is right\u{0} and B is not, clearly so.");
    let mut refusals = Vec::new();
    for action in ["draft", "submit"] {
        let response = app.act(&rater, &assignment, action, &answers).await;
        refusals.push((
            action.to_owned(),
            response.status(),
            response.json::<Value>().await.unwrap_or_default(),
        ));
    }
    let user = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "nul\u{0}user", "role": "rater", "password": "a long enough password"}))
        .go()
        .await;
    refusals.push((
        "user".into(),
        user.status(),
        user.json().await.unwrap_or_default(),
    ));
    let token = rater
        .api
        .post(app.url("/api/v1/tokens"))
        .json(&json!({"name": "bad\u{0}name"}))
        .go()
        .await;
    refusals.push((
        "token".into(),
        token.status(),
        token.json().await.unwrap_or_default(),
    ));
    let (status, answer) = upload(
        app,
        &admin,
        "nul%00name",
        "application/x-ndjson",
        tasks_jsonl(1).into_bytes(),
    )
    .await;
    refusals.push(("batch name".into(), status, answer));
    let browser = rater.browser_for(app).await;
    let form = browser
        .get(app.url(&format!("/assignments/{assignment}")))
        .go()
        .await;
    let token = crate::helpers::csrf_token(&form.text().await.unwrap());
    let page_draft = browser
        .post(app.url(&format!("/assignments/{assignment}/draft")))
        .form(&[
            ("csrf_token", token.as_str()),
            ("sxs_explanation", "typed with a NUL \u{0} in it"),
        ])
        .go()
        .await;
    let page_status = page_draft.status();
    let page_text = page_draft.text().await.unwrap_or_default();
    refusals.push(("page draft".into(), page_status, json!(page_text)));
    for (what, status, answer) in &refusals {
        // A NUL in the address is a malformed request (400); in a field, a bad value.
        let expected = if what == "batch name" {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
        assert_eq!(*status, expected, "{what}: {answer}");
        let text = answer.to_string();
        assert!(text.contains("NUL"), "{what} names the NUL: {answer}");
    }
    assert!(
        before == crate::helpers::contents(app).await,
        "a refused NUL changed something"
    );
}
db_test!(nul_characters_get_the_same_answer_on_both_databases: TestApp);

/// Sends the head of a request that announces a body over the limit, and a little of
/// the body, then waits for the answer without sending the rest: the server must answer
/// 413 from the announced length, not read (or wait for) the whole body first.
pub(crate) async fn refused_before_the_body(app: &TestApp, head: &str, limit: u64) -> String {
    let mut stream = tokio::net::TcpStream::connect(app.url("").trim_start_matches("http://"))
        .await
        .expect("connect");
    let request = format!(
        "{head}Content-Length: {}\r\nConnection: close\r\n\r\n",
        limit + 1
    );
    stream.write_all(request.as_bytes()).await.expect("head");
    stream.write_all(&[b'x'; 1024]).await.expect("some body");
    let answer = answer_head(&mut stream, std::time::Duration::from_secs(30)).await;
    answer.unwrap_or_else(|| panic!("no answer while the body was still unsent: {head}"))
}

/// The status line and headers the server sends on `stream` within `wait`; `None` if
/// it sends none in time.
async fn answer_head(
    stream: &mut tokio::net::TcpStream,
    wait: std::time::Duration,
) -> Option<String> {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(wait, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    read.ok()
        .map(|()| String::from_utf8_lossy(&answer).into_owned())
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_before_it_is_read() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let limit = 1024 * 1024;
        let config = Config {
            max_upload_bytes: limit,
            ..Config::default()
        };
        let Some(app) = TestApp::with_config(backend, config).await else {
            continue;
        };
        let admin = app.admin().await;
        let token = &admin.token;
        let host = app.url("").trim_start_matches("http://").to_owned();
        for (what, path, content_type) in [
            ("upload", "/api/v1/batches?name=big", "application/x-ndjson"),
            ("JSON", "/api/v1/users", "application/json"),
            ("form", "/login", "application/x-www-form-urlencoded"),
        ] {
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: {content_type}\r\n"
            );
            let answer = refused_before_the_body(&app, &head, limit).await;
            assert!(
                answer.starts_with("HTTP/1.1 413"),
                "{backend:?} {what}: {answer}"
            );
        }
        assert_eq!(app.count("SELECT COUNT(*) FROM batches").await, 0);
    }
}

/// Issue 19: the sign-in and sign-out forms are read only up to 16 KiB, page forms up to
/// 1 MiB (the rating form has long explanations), and a form over its limit gets 413
/// saying so, also when its length is not announced (a chunked body is not read to its
/// end); without the sign-in form's cookie nothing of the body is read at all.
async fn page_forms_are_refused_over_their_routes_limit(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let anon = app.browser();
    let page = anon.get(app.url("/login")).go().await.text().await.unwrap();
    let token = csrf_token(&page);
    let padding = "p".repeat(17 * 1024);
    let big_login = anon
        .post(app.url("/login"))
        .form(&[
            ("csrf_token", token.as_str()),
            ("username", "rater"),
            ("password", padding.as_str()),
        ])
        .go()
        .await;
    assert_eq!(big_login.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        big_login
            .text()
            .await
            .unwrap()
            .contains("the form is larger than the limit of 16 KiB")
    );

    // A chunked body (no length announced) gets its 413 while the rest is still unsent.
    let host = app.url("").trim_start_matches("http://").to_owned();
    let head = format!(
        "POST /login HTTP/1.1\r\nHost: {host}\r\nCookie: verdict_login_csrf={token}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let answer = answer_to_an_unfinished_body(app, &head, 64 * 1024).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // Without the form's cookie, the refusal does not wait for the body at all.
    let head = format!(
        "POST /login HTTP/1.1\r\nHost: {host}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let answer = answer_to_an_unfinished_body(app, &head, 0).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");

    let browser = rater.browser_for(app).await;
    let home = browser.get(app.url("/")).go().await.text().await.unwrap();
    let big_logout = browser
        .post(app.url("/logout"))
        .form(&[("csrf_token", csrf_token(&home)), ("x", padding.clone())])
        .go()
        .await;
    assert_eq!(big_logout.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        browser.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::OK,
        "still signed in"
    );

    // The rating form takes a long explanation, and refuses one over a mebibyte.
    let batch = app.batch(&admin, "long", &tasks_jsonl(1), "").await;
    let assignment = app.next(&rater, &batch).await.unwrap()["assignment_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let form_url = app.url(&format!("/assignments/{assignment}/draft"));
    // Longer than the login form's limit, within the 20,000 characters an explanation may have.
    let long = "a long explanation ".repeat(1000);
    let saved = browser
        .post(&form_url)
        .form(&[
            ("csrf_token", csrf_token(&home)),
            ("sxs", "2".into()),
            ("sxs_explanation", long.clone()),
        ])
        .go()
        .await;
    assert!(
        saved.status().is_success() || saved.status().is_redirection(),
        "{}",
        saved.status()
    );
    let draft = app.next(&rater, &batch).await.unwrap();
    assert!(
        draft.to_string().contains(long.trim()),
        "the draft was saved"
    );
    let huge = browser
        .post(&form_url)
        .form(&[
            ("csrf_token", csrf_token(&home)),
            ("sxs_explanation", "x".repeat(1024 * 1024)),
        ])
        .go()
        .await;
    assert_eq!(huge.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        huge.text()
            .await
            .unwrap()
            .contains("the form is larger than the limit of 1024 KiB")
    );
}
db_test!(page_forms_are_refused_over_their_routes_limit: TestApp);

/// Sends `head` (a request whose body is chunked), then `body_bytes` of body in chunks
/// without the closing chunk, and returns what the server answers meanwhile.
async fn answer_to_an_unfinished_body(app: &TestApp, head: &str, body_bytes: usize) -> String {
    let mut stream = tokio::net::TcpStream::connect(app.url("").trim_start_matches("http://"))
        .await
        .expect("connect");
    stream.write_all(head.as_bytes()).await.expect("head");
    let chunk = format!("{:x}\r\n{}\r\n", 1024, "x".repeat(1024));
    for _ in 0..body_bytes / 1024 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break; // the server answered and closed
        }
    }
    let answer = answer_head(&mut stream, std::time::Duration::from_secs(10)).await;
    answer.unwrap_or_else(|| panic!("no answer while the body was unfinished: {head}"))
}

/// Issue 30: a query parameter that does not decode to UTF-8 is refused with 400 naming
/// it, wherever the app reads a query, and nothing is stored.
async fn query_text_that_is_not_utf8_is_refused(app: &TestApp) {
    let admin = app.admin().await;
    let upload = admin
        .api
        .post(app.url("/api/v1/batches?name=%FF%FE&rubric=blackhat"))
        .header("content-type", "application/x-ndjson")
        .body(tasks_jsonl(1))
        .go()
        .await;
    let error = json_with(upload, StatusCode::BAD_REQUEST).await["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(error, "query parameter \"name\" is not valid UTF-8");
    assert_eq!(app.count("SELECT COUNT(*) FROM batches").await, 0);

    let batch = app.batch(&admin, "fine", &tasks_jsonl(1), "").await;
    for (path, name) in [
        (
            format!("/api/v1/batches/{batch}/export?format=csv&rater=%C3%28"),
            "\"rater\"",
        ),
        ("/api/v1/audit?action=user.%80".to_owned(), "\"action\""),
        ("/api/v1/audit?%FF=1".to_owned(), "name is not valid UTF-8"),
    ] {
        let response = admin.api.get(app.url(&path)).go().await;
        let body = json_with(response, StatusCode::BAD_REQUEST).await;
        let error = body["error"].as_str().unwrap();
        assert!(
            error.contains(name) && error.contains("UTF-8"),
            "{path}: {error}"
        );
    }
    let page = app.browser().get(app.url("/login?next=%FF")).go().await;
    assert_eq!(page.status(), StatusCode::BAD_REQUEST);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("query parameter &#34;next&#34; is not valid UTF-8"),
        "{html}"
    );
    // Well-formed non-ASCII text is still read.
    app.batch(&admin, "caf%C3%A9", &tasks_jsonl(1), "").await;
    assert!(app.store.batch_by_name("café").await.unwrap().is_some());
}
db_test!(query_text_that_is_not_utf8_is_refused: TestApp);

/// Issue 28: a limit on words counts words as a reader does (Unicode word boundaries), on
/// the API and the page's check alike: words joined by an invisible space, a dash or a
/// slash are not one word, and a full stop standing alone is not a word.
async fn word_limits_count_words_as_a_reader_does(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let tasks: String = (1..=2)
        .map(|i| {
            format!(
                "{}\n",
                json!({"external_id": format!("w{i}"), "prompt": "p", "response": "r"})
            )
        })
        .collect();
    let batch = app
        .batch(
            &admin,
            "wordy",
            &tasks,
            "&rubric=additive-5&randomize=false",
        )
        .await;
    let assignment = app.take(&rater, &batch).await;
    let answers = |justification: String| {
        json!({"relevant": true, "substantial": true, "useful": true, "comprehensive": false,
               "expert": false, "repetitive": false, "justification": justification})
    };
    for with in ["\u{200B}", "\u{2014}", "/"] {
        let long = answers(vec!["word"; 101].join(with));
        let refused = app.act(&rater, &assignment, "submit", &long).await;
        let refused = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert_eq!(
            refused["fields"]["justification"], "must be at most 100 words (has 101)",
            "joined by {with:?}: {refused}"
        );
        // The form's check, which the page asks before it sends, says the same.
        let browser = rater.browser_for(app).await;
        let form = page_text(app, &browser, &format!("/assignments/{assignment}")).await;
        let token = csrf_token(&form);
        let checked = browser
            .post(app.url(&format!("/assignments/{assignment}/check")))
            .form(&[
                ("csrf_token", token.as_str()),
                ("relevant", "true"),
                ("justification", long["justification"].as_str().unwrap()),
            ])
            .go()
            .await;
        let checked = json_with(checked, StatusCode::OK).await;
        assert_eq!(
            checked["fields"]["justification"], "must be at most 100 words (has 101)",
            "{checked}"
        );
    }
    let full_stop = answers(format!("{} .", vec!["word"; 100].join(" ")));
    let taken = app.act(&rater, &assignment, "submit", &full_stop).await;
    let taken = json_with(taken, StatusCode::OK).await;
    assert_eq!(taken["status"], "submitted");
}
db_test!(word_limits_count_words_as_a_reader_does: TestApp);
