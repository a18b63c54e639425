//! The code runner's server side: the vendored Pyodide files (only the listed ones, with
//! their content types, cached for a year, revalidated by ETag, nothing else and no way
//! out of the folder), the two workers with their own Content-Security-Policies, and the
//! rating form loading the runner's script. The runner itself is tested in Chromium
//! (browser/tests/runner.test.mjs).

use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{Fixture, Go, TestApp, db_test, page_text, tasks_jsonl};

const VERSION: &str = "9.8.7-test";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// In the folder, beside the runtime's files, but not one of them: never served.
const SECRET: &str = "not-for-the-browser";

/// The app serving a stand-in Pyodide from a folder of its own: each file holds its own
/// name, so a test can tell which one it got.
struct RunnerApp {
    app: TestApp,
    _dir: tempfile::TempDir,
}

impl Fixture for RunnerApp {
    async fn setup(backend: Backend) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("package.json"),
            format!(r#"{{"name": "pyodide", "version": "{VERSION}"}}"#),
        )
        .expect("write");
        for (name, _) in verdict::runner::pyodide::FILES {
            std::fs::write(dir.path().join(name), format!("contents of {name}")).expect("write");
        }
        for extra in [
            "console.html",
            "pyodide.js",
            "pyodide.mjs.map",
            "secret.txt",
        ] {
            std::fs::write(dir.path().join(extra), SECRET).expect("write");
        }
        let config = Config {
            pyodide_dir: dir.path().to_owned(),
            ..Config::default()
        };
        let app = TestApp::with_config(backend, config).await?;
        Some(Self { app, _dir: dir })
    }

    async fn teardown(self) {
        self.app.teardown().await;
    }
}

fn header(response: &reqwest::Response, name: reqwest::header::HeaderName) -> String {
    response
        .headers()
        .get(&name)
        .unwrap_or_else(|| panic!("no {name} on {}", response.url()))
        .to_str()
        .expect("ASCII header")
        .to_owned()
}

async fn each_runtime_file_is_served_with_its_type_kept_for_a_year_and_revalidated(
    fixture: &RunnerApp,
) {
    let app = &fixture.app;
    let client = app.browser();
    let expected = [
        ("pyodide.mjs", "text/javascript; charset=utf-8"),
        ("pyodide.asm.mjs", "text/javascript; charset=utf-8"),
        ("pyodide.asm.wasm", "application/wasm"),
        ("python_stdlib.zip", "application/zip"),
        ("pyodide-lock.json", "application/json"),
    ];
    for (name, content_type) in expected {
        let url = app.url(&format!("/runner/pyodide/{VERSION}/{name}"));
        let response = client.get(&url).go().await;
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        assert_eq!(header(&response, CONTENT_TYPE), content_type, "{name}");
        assert_eq!(header(&response, CACHE_CONTROL), IMMUTABLE, "{name}");
        let etag = header(&response, ETAG);
        assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
        assert_eq!(
            response.text().await.unwrap(),
            format!("contents of {name}")
        );
        // The browser asks again with the tag it holds: nothing is sent but the headers.
        for held in [
            etag.clone(),
            format!("W/{etag}"),
            format!("\"other\", {etag}"),
        ] {
            let again = client
                .get(&url)
                .header(IF_NONE_MATCH, held.as_str())
                .go()
                .await;
            assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{name} {held}");
            assert_eq!(header(&again, ETAG), etag);
            assert_eq!(header(&again, CACHE_CONTROL), IMMUTABLE);
            assert!(again.bytes().await.unwrap().is_empty());
        }
        let stale = client
            .get(&url)
            .header(IF_NONE_MATCH, "\"something-else\"")
            .go()
            .await;
        assert_eq!(stale.status(), StatusCode::OK, "{name} with a stale tag");
    }
}
db_test!(each_runtime_file_is_served_with_its_type_kept_for_a_year_and_revalidated: RunnerApp);

/// One raw request, sent as written (an HTTP client would tidy `..` away before sending);
/// returns the status and the whole response.
async fn raw_get(app: &TestApp, target: &str, host: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect");
    let request = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("read");
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    (status, response)
}

async fn nothing_but_the_listed_files_is_served_and_no_path_leaves_the_folder(fixture: &RunnerApp) {
    let app = &fixture.app;
    let host = app.addr.to_string();
    let targets = [
        // In the folder, but not a file the runtime needs.
        format!("/runner/pyodide/{VERSION}/package.json"),
        format!("/runner/pyodide/{VERSION}/secret.txt"),
        format!("/runner/pyodide/{VERSION}/console.html"),
        format!("/runner/pyodide/{VERSION}/pyodide.js"),
        format!("/runner/pyodide/{VERSION}/pyodide.mjs.map"),
        // A listed file under another version than the one served.
        "/runner/pyodide/1.0.0/pyodide.mjs".to_owned(),
        // Ways out of the folder, as written and percent-encoded.
        format!("/runner/pyodide/{VERSION}/../{VERSION}/secret.txt"),
        format!("/runner/pyodide/{VERSION}/..%2fsecret.txt"),
        format!("/runner/pyodide/{VERSION}/%2e%2e%2f%2e%2e%2f%2e%2e%2fCargo.toml"),
        format!("/runner/pyodide/{VERSION}/pyodide.mjs%2f..%2fsecret.txt"),
        format!("/runner/pyodide/{VERSION}/.%2fpyodide.mjs"),
        format!("/runner/pyodide/{VERSION}/%2fetc%2fpasswd"),
        "/runner/pyodide/..%2f..%2f..%2fCargo.toml/pyodide.mjs".to_owned(),
        "/runner/pyodide/../../Cargo.toml".to_owned(),
        format!("/runner/pyodide/{VERSION}/pyodide.mjs/extra"),
        format!("/runner/pyodide/{VERSION}/"),
    ];
    for target in &targets {
        let (status, response) = raw_get(app, target, &host).await;
        assert_eq!(status, 404, "GET {target}");
        assert!(!response.contains(SECRET), "GET {target} showed {response}");
        assert!(
            !response.contains("[package]"),
            "GET {target} showed Cargo.toml"
        );
    }
}
db_test!(nothing_but_the_listed_files_is_served_and_no_path_leaves_the_folder: RunnerApp);

async fn each_worker_has_its_own_policy_allowing_only_what_it_needs(fixture: &RunnerApp) {
    let app = &fixture.app;
    let client = app.browser();
    let js = client.get(app.url("/runner/js-worker.js")).go().await;
    assert_eq!(js.status(), StatusCode::OK);
    assert_eq!(
        header(&js, CONTENT_SECURITY_POLICY),
        "default-src 'none'; script-src 'unsafe-eval'"
    );
    assert_eq!(header(&js, CONTENT_TYPE), "text/javascript; charset=utf-8");
    assert_eq!(header(&js, CACHE_CONTROL), "no-cache");
    let etag = header(&js, ETAG);
    assert!(js.text().await.unwrap().contains("self.onmessage"));
    let again = client
        .get(app.url("/runner/js-worker.js"))
        .header(IF_NONE_MATCH, etag.as_str())
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    // The Python worker may load and fetch the Pyodide files of the version served, from
    // this host, and nothing else: not the API, not another path, not another site.
    let python = client.get(app.url("/runner/python-worker.js")).go().await;
    assert_eq!(python.status(), StatusCode::OK);
    let base = format!("{}/runner/pyodide/{VERSION}/", app.addr);
    assert_eq!(
        header(&python, CONTENT_SECURITY_POLICY),
        format!("default-src 'none'; script-src {base} 'wasm-unsafe-eval'; connect-src {base}")
    );
    assert_eq!(
        header(&python, CONTENT_TYPE),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(header(&python, CACHE_CONTROL), "no-cache");
    let source = python.text().await.unwrap();
    assert!(
        source.contains(&format!(
            "const PYODIDE_INDEX = \"/runner/pyodide/{VERSION}/\";"
        )),
        "the worker is told where Pyodide is"
    );

    // A Host header that is not a plain host[:port] never reaches the policy.
    for host in [
        "evil.example; connect-src *",
        "a b",
        "[::1]:80",
        "x'y",
        "127.0.0.1:80/api",
    ] {
        let (status, response) = raw_get(app, "/runner/python-worker.js", host).await;
        assert_eq!(status, 200, "Host: {host}");
        let policy = response
            .lines()
            .find_map(|line| line.strip_prefix("content-security-policy: "))
            .unwrap_or_else(|| panic!("no policy in {response}"));
        assert_eq!(
            policy, "default-src 'none'; script-src 'none'; connect-src 'none'",
            "Host: {host}"
        );
    }
    let (_, response) = raw_get(app, "/runner/python-worker.js", "Verdict.Example:8443").await;
    assert!(
        response.contains(&format!(
            "connect-src verdict.example:8443/runner/pyodide/{VERSION}/\r\n"
        )),
        "{response}"
    );
}
db_test!(each_worker_has_its_own_policy_allowing_only_what_it_needs: RunnerApp);

/// Without Pyodide the Python worker says so (its page shows it) and loads nothing, and
/// no file is served; JavaScript still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_pyodide_the_python_worker_says_so_and_javascript_still_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = Config {
        pyodide_dir: dir.path().join("not-installed"),
        ..Config::default()
    };
    let app = TestApp::with_config(Backend::Sqlite, config)
        .await
        .expect("app");
    let client = app.browser();
    let python = client.get(app.url("/runner/python-worker.js")).go().await;
    assert_eq!(python.status(), StatusCode::OK);
    assert_eq!(
        header(&python, CONTENT_SECURITY_POLICY),
        "default-src 'none'; script-src 'none'; connect-src 'none'"
    );
    assert!(
        python
            .text()
            .await
            .unwrap()
            .contains("const PYODIDE_INDEX = null;")
    );
    let js = client.get(app.url("/runner/js-worker.js")).go().await;
    assert_eq!(js.status(), StatusCode::OK);
    for version in [VERSION, "null", "314.0.7"] {
        let file = client
            .get(app.url(&format!("/runner/pyodide/{version}/pyodide.mjs")))
            .go()
            .await;
        assert_eq!(file.status(), StatusCode::NOT_FOUND, "{version}");
    }
    app.teardown().await;
}

async fn the_rating_form_loads_the_runner_after_the_form_script(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let batch = app.batch(&admin, "runner", &tasks_jsonl(1), "").await;
    let next = app.next(&rater, &batch).await.expect("a task");
    let assignment = next["assignment_id"].as_str().unwrap();
    let browser = rater.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/assignments/{assignment}")).await;
    let form = page
        .find(r#"<script src="/static/form.js" defer></script>"#)
        .expect("form.js");
    let runner = page
        .find(r#"<script src="/static/runner.js" defer></script>"#)
        .expect("runner.js");
    assert!(
        form < runner,
        "runner.js works on the blocks form.js has boxed"
    );
    // Nothing of a runtime on the page itself: it loads when the rater presses Run.
    assert!(
        !page.contains("/runner/"),
        "no worker or Pyodide link on the page"
    );
    let script = browser.get(app.url("/static/runner.js")).go().await;
    assert_eq!(script.status(), StatusCode::OK);
    assert!(header(&script, CONTENT_TYPE).contains("javascript"));
    let source = script.text().await.unwrap();
    for worker in ["/runner/python-worker.js", "/runner/js-worker.js"] {
        assert!(source.contains(worker), "runner.js starts {worker}");
    }
}
db_test!(the_rating_form_loads_the_runner_after_the_form_script: TestApp);
