//! The test harness: a fresh database per test, the real app on a random port, and
//! persona clients that talk HTTP to it.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Once;

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Client, StatusCode, Url, redirect};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use verdict::auth::Role;
use verdict::services::accounts::{self, NewUser};
use verdict::store::Backend;
use verdict::{AppState, Config, Store};

/// Runs the test function `$name(&fixture)` once on SQLite and once on PostgreSQL (when
/// `TEST_DATABASE_URL` names a server), each time against a fresh database. The function
/// stays a plain `async fn` beside the macro call, so rustfmt and clippy see it.
macro_rules! db_test {
    ($name:ident: $ty:ty) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let fixture =
                    <$ty as $crate::helpers::Fixture>::setup(verdict::store::Backend::Sqlite)
                        .await
                        .expect("SQLite");
                super::$name(&fixture).await;
                $crate::helpers::Fixture::teardown(fixture).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(fixture) =
                    <$ty as $crate::helpers::Fixture>::setup(verdict::store::Backend::Postgres)
                        .await
                {
                    super::$name(&fixture).await;
                    $crate::helpers::Fixture::teardown(fixture).await;
                }
            }
        }
    };
}
pub(crate) use db_test;

/// Something a test needs built before it and torn down after it.
pub trait Fixture: Sized {
    /// `None` when the backend is not configured (PostgreSQL without `TEST_DATABASE_URL`).
    async fn setup(backend: Backend) -> Option<Self>;
    async fn teardown(self);
}

/// A fresh, empty database.
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    /// SQLite: the folder holding the file (removed on drop).
    dir: Option<tempfile::TempDir>,
    /// PostgreSQL: the server to drop the database on, and its name.
    postgres: Option<(String, String)>,
}

static PG_NOT_RUN: Once = Once::new();

impl TestDb {
    /// An existing SQLite database (a backup, say), left in place afterwards.
    pub fn at(url: String) -> Self {
        Self {
            url,
            backend: Backend::Sqlite,
            dir: None,
            postgres: None,
        }
    }

    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        self.dir.as_ref().map(|d| d.path().join("verdict.db"))
    }

    pub async fn store(&self) -> Store {
        let store = Store::connect(&self.url).await.expect("connect");
        store.migrate().await.expect("migrate");
        store
    }

    /// Runs one statement on the database.
    pub async fn execute(&self, sql: &str) {
        match self.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&self.url).await.expect("connect");
                sqlx::query(sql).execute(&pool).await.expect(sql);
                pool.close().await;
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&self.url).await.expect("connect");
                sqlx::query(sql).execute(&pool).await.expect(sql);
                pool.close().await;
            }
        }
    }

    /// One number from the database.
    pub async fn count(&self, sql: &str) -> i64 {
        match self.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&self.url).await.expect("connect");
                let (n,): (i64,) = sqlx::query_as(sql).fetch_one(&pool).await.expect(sql);
                pool.close().await;
                n
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&self.url).await.expect("connect");
                let (n,): (i64,) = sqlx::query_as(sql).fetch_one(&pool).await.expect(sql);
                pool.close().await;
                n
            }
        }
    }
}

impl TestDb {
    /// Rows of two text columns from the database.
    pub async fn pairs(&self, sql: &str) -> Vec<(String, String)> {
        match self.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&self.url).await.expect("connect");
                let rows = sqlx::query_as(sql).fetch_all(&pool).await.expect(sql);
                pool.close().await;
                rows
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&self.url).await.expect("connect");
                let rows = sqlx::query_as(sql).fetch_all(&pool).await.expect(sql);
                pool.close().await;
                rows
            }
        }
    }
}

impl Fixture for TestDb {
    async fn setup(backend: Backend) -> Option<Self> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}", dir.path().join("verdict.db").display());
                Some(Self {
                    url,
                    backend,
                    dir: Some(dir),
                    postgres: None,
                })
            }
            Backend::Postgres => {
                let Ok(server) = std::env::var("TEST_DATABASE_URL") else {
                    // CI asks for both halves: the PostgreSQL one may not pass by not running.
                    assert!(
                        std::env::var_os("VERDICT_REQUIRE_POSTGRES").is_none(),
                        "VERDICT_REQUIRE_POSTGRES is set but TEST_DATABASE_URL is not"
                    );
                    PG_NOT_RUN.call_once(|| {
                        // Written past the test harness's capture, so it shows in `cargo
                        // test`'s summary, once per process. cargo-nextest gives each test
                        // a process and keeps what a passing one writes, so it shows nothing
                        // there: README says to set VERDICT_REQUIRE_POSTGRES.
                        let _ = writeln!(
                            std::io::stderr(),
                            "note: PostgreSQL tests were not run: set TEST_DATABASE_URL \
                             (e.g. postgres://postgres@127.0.0.1:5432/postgres) to run them"
                        );
                    });
                    return None;
                };
                let name = format!("verdict_test_{}", uuid::Uuid::new_v4().simple());
                let admin = sqlx::PgPool::connect(&server)
                    .await
                    .expect("connect to TEST_DATABASE_URL");
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&admin)
                    .await
                    .expect("create test database");
                admin.close().await;
                let mut url = Url::parse(&server).expect("TEST_DATABASE_URL is a URL");
                url.set_path(&name);
                Some(Self {
                    url: url.to_string(),
                    backend,
                    dir: None,
                    postgres: Some((server, name)),
                })
            }
        }
    }

    async fn teardown(self) {
        if let Some((server, name)) = &self.postgres {
            let admin = sqlx::PgPool::connect(server).await.expect("connect");
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&admin)
                .await
                .expect("drop test database");
            admin.close().await;
        }
    }
}

/// The real app, served on a random port of 127.0.0.1.
pub struct TestApp {
    pub addr: SocketAddr,
    pub db: TestDb,
    /// A second handle on the app's database, for setting up and inspecting.
    pub store: Store,
    state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl Fixture for TestApp {
    async fn setup(backend: Backend) -> Option<Self> {
        Self::with_config(backend, Config::default()).await
    }

    async fn teardown(mut self) {
        self.stop().await;
        self.store.close().await;
        self.db.teardown().await;
    }
}

/// A person using the app, with their own cookie jar and an API token.
pub struct Persona {
    pub username: String,
    pub id: uuid::Uuid,
    /// Sends `Authorization: Bearer <token>` on every request.
    pub api: Client,
    /// The API token itself, for requests made by hand.
    pub token: String,
}

pub const PASSWORD: &str = "correct horse battery";

impl TestApp {
    pub async fn with_config(backend: Backend, config: Config) -> Option<Self> {
        let db = TestDb::setup(backend).await?;
        Some(Self::on(db, config).await)
    }

    /// The app served on a database made beforehand (one copied into, say).
    pub async fn on(db: TestDb, config: Config) -> Self {
        Self::on_with(db, move |_| config).await
    }

    /// The app served on `db` with the config `config` makes from the address it will
    /// be served at (for settings that name the app's own URL).
    pub async fn on_with(db: TestDb, config: impl FnOnce(SocketAddr) -> Config) -> Self {
        let store = db.store().await;
        let app_store = Store::connect(&db.url).await.expect("connect");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = AppState::new(app_store, config(addr));
        let (tx, rx) = oneshot::channel();
        let server = tokio::spawn(verdict::serve(listener, state.clone(), async {
            let _ = rx.await;
        }));
        Self {
            addr,
            db,
            store,
            state,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            server
                .await
                .expect("server task")
                .expect("server stopped cleanly");
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// A browser-like client: keeps cookies, does not follow redirects.
    pub fn browser(&self) -> Client {
        Client::builder()
            .cookie_store(true)
            .redirect(redirect::Policy::none())
            .build()
            .expect("client")
    }

    /// A browser connecting from another loopback address (`127.0.0.2`, ...), which the
    /// server sees as another network address.
    pub fn browser_at(&self, address: &str) -> Client {
        Client::builder()
            .cookie_store(true)
            .redirect(redirect::Policy::none())
            .local_address(address.parse::<std::net::IpAddr>().expect("an address"))
            .build()
            .expect("client")
    }

    /// The running app's state, to look at what HTTP does not show.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Creates an account the way `verdict user add` does, with a token for the API.
    pub async fn persona(&self, username: &str, role: Role) -> Persona {
        let new = NewUser::parse(Some(username), Some(role.as_str()), Some(PASSWORD))
            .expect("valid user");
        let user = accounts::create_user(self.state.store(), self.state.hasher(), new, None)
            .await
            .expect("create user");
        let (_, token) = accounts::issue_token(self.state.store(), &user, "tests")
            .await
            .expect("token");
        Persona {
            username: username.into(),
            id: user.id,
            api: bearer(&token),
            token,
        }
    }

    pub async fn admin(&self) -> Persona {
        self.persona("admin", Role::Admin).await
    }

    pub async fn lead(&self) -> Persona {
        self.persona("lead", Role::Lead).await
    }

    pub async fn rater(&self) -> Persona {
        self.persona("rater", Role::Rater).await
    }

    /// Signs in through the login form; returns the browser holding the session.
    pub async fn login(&self, username: &str, password: &str) -> Client {
        let browser = self.browser();
        let response = self.submit_login(&browser, username, password, "/").await;
        assert_eq!(
            response.status(),
            StatusCode::SEE_OTHER,
            "login of {username} failed"
        );
        browser
    }

    /// Loads the login page, then posts the form with its CSRF token.
    pub async fn submit_login(
        &self,
        browser: &Client,
        username: &str,
        password: &str,
        next: &str,
    ) -> reqwest::Response {
        let page = browser
            .get(self.url("/login"))
            .send()
            .await
            .expect("GET /login")
            .text()
            .await
            .expect("body");
        let token = csrf_token(&page);
        browser
            .post(self.url("/login"))
            .form(&[
                ("csrf_token", token.as_str()),
                ("username", username),
                ("password", password),
                ("next", next),
            ])
            .send()
            .await
            .expect("POST /login")
    }
}

/// Sends a request and fails the test if it could not be sent at all.
pub trait Go {
    async fn go(self) -> reqwest::Response;
}

impl Go for reqwest::RequestBuilder {
    async fn go(self) -> reqwest::Response {
        self.send().await.expect("request sent")
    }
}

impl Persona {
    /// A browser signed in as this persona.
    pub async fn browser_for(&self, app: &TestApp) -> Client {
        app.login(&self.username, PASSWORD).await
    }
}

/// The resident memory of process `pid` (a server the test started), in KiB.
pub fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS")
}

/// A client that authenticates every request with a bearer token.
pub fn bearer(token: &str) -> Client {
    let mut headers = HeaderMap::new();
    headers.insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).expect("header"),
    );
    Client::builder()
        .default_headers(headers)
        .redirect(redirect::Policy::none())
        .build()
        .expect("client")
}

/// The value of the first `csrf_token` hidden field in a page.
pub fn csrf_token(html: &str) -> String {
    let marker = "name=\"csrf_token\" value=\"";
    let start = html
        .find(marker)
        .unwrap_or_else(|| panic!("no CSRF field in page:\n{html}"))
        + marker.len();
    let end = html[start..].find('"').expect("closing quote") + start;
    html[start..end].to_owned()
}

/// The HTML of a page, which must load (200) for whoever `browser` is signed in as.
pub async fn page_text(app: &TestApp, browser: &Client, path: &str) -> String {
    let response = browser.get(app.url(path)).go().await;
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    response.text().await.unwrap()
}

/// The JSON body of a response, with its status checked first.
pub async fn json_with(response: reqwest::Response, status: StatusCode) -> Value {
    let got = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Every row of every table as text (SQLite: the raw bytes of the database file and its
/// write-ahead log, so nothing hides in free pages either).
pub async fn dump_database(app: &TestApp) -> String {
    match app.db.backend {
        Backend::Sqlite => {
            let path = app.db.sqlite_path().expect("SQLite path");
            let mut bytes = std::fs::read(&path).expect("database file");
            if let Ok(wal) = std::fs::read(path.with_extension("db-wal")) {
                bytes.extend(wal);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.db.url).await.expect("connect");
            let tables: Vec<(String,)> =
                sqlx::query_as("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
                    .fetch_all(&pool)
                    .await
                    .expect("tables");
            let mut dump = String::new();
            for (table,) in tables {
                let rows: Vec<(String,)> =
                    sqlx::query_as(&format!("SELECT t::text FROM \"{table}\" t"))
                        .fetch_all(&pool)
                        .await
                        .expect("rows");
                rows.into_iter().for_each(|(row,)| dump.push_str(&row));
            }
            pool.close().await;
            dump
        }
    }
}

/// `n` tasks as JSON Lines, ids `t1`..`tn`, each with models and metadata.
pub fn tasks_jsonl(n: usize) -> String {
    tasks_jsonl_from(1, n)
}

/// `n` tasks with external ids `t{first}` onwards, to top a batch up with new ones.
pub fn tasks_jsonl_from(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| {
            serde_json::json!({
                "external_id": format!("t{i}"),
                "prompt": format!("Write a function that returns {i} squared."),
                "response_a": format!("```python\ndef f():\n    return {i} * {i}\n```"),
                "response_b": format!("Use `{i} ** 2`."),
                "model_a": "alpha", "model_b": "beta",
                "metadata": {"language": "python"}
            })
            .to_string()
                + "\n"
        })
        .collect()
}

/// A complete, valid set of blackhat answers: A is better (score 2).
pub fn complete_answers() -> Value {
    serde_json::json!({
        "a": {"executability": "yes_fully", "instruction_following": "no_issues", "correctness": "no_issues"},
        "b": {"executability": "no_code", "instruction_following": "minor_issues",
              "instruction_following_explanation": "gives an expression, not the function asked for",
              "correctness": "no_issues"},
        "sxs": 2, "sxs_explanation": "A delivers the function that was asked for; B does not.",
        "time_spent_s": 95
    })
}

/// Tasks as JSON Lines for an upload, one line each.
pub fn jsonl(tasks: impl IntoIterator<Item = Value>) -> String {
    tasks
        .into_iter()
        .map(|task| task.to_string() + "\n")
        .collect()
}

/// A pairwise task: responses `[a, b]` by models `[model_a, model_b]`.
pub fn pair_task(
    id: &str,
    prompt: &str,
    [a, b]: [&str; 2],
    [model_a, model_b]: [&str; 2],
) -> Value {
    serde_json::json!({"external_id": id, "prompt": prompt, "response_a": a, "response_b": b,
                       "model_a": model_a, "model_b": model_b})
}

/// A task with a single response, by `model`.
pub fn single_task(id: &str, prompt: &str, response: &str, model: &str) -> Value {
    serde_json::json!({"external_id": id, "prompt": prompt, "response": response, "model": model})
}

/// The id of the assignment an answer of `next` hands out.
pub fn assignment_id(next: &Value) -> String {
    next["assignment_id"]
        .as_str()
        .expect("an assignment id")
        .to_owned()
}

impl TestApp {
    /// Uploads JSON Lines as a new batch; returns its id.
    pub async fn batch(&self, admin: &Persona, name: &str, jsonl: &str, query: &str) -> String {
        let response = admin
            .api
            .post(self.url(&format!("/api/v1/batches?name={name}{query}")))
            .header("content-type", "application/x-ndjson")
            .body(jsonl.to_owned())
            .go()
            .await;
        let body = json_with(response, StatusCode::CREATED).await;
        body["id"].as_str().expect("batch id").to_owned()
    }

    /// Takes the next task of a batch as `rater`: `None` on 204.
    pub async fn next(&self, rater: &Persona, batch: &str) -> Option<Value> {
        let response = rater
            .api
            .post(self.url(&format!("/api/v1/batches/{batch}/next")))
            .go()
            .await;
        if response.status() == StatusCode::NO_CONTENT {
            return None;
        }
        Some(json_with(response, StatusCode::OK).await)
    }

    /// Posts to one of an assignment's actions.
    pub async fn act(
        &self,
        rater: &Persona,
        assignment: &str,
        action: &str,
        body: &Value,
    ) -> reqwest::Response {
        let url = self.url(&format!("/api/v1/assignments/{assignment}/{action}"));
        let request = if action == "draft" {
            rater.api.put(url)
        } else {
            rater.api.post(url)
        };
        request.json(body).go().await
    }

    /// Takes `rater`'s next task of `batch`, which there must be; returns the assignment's
    /// id.
    pub async fn take(&self, rater: &Persona, batch: &str) -> String {
        let next = self.next(rater, batch).await.expect("a task");
        assignment_id(&next)
    }

    /// Takes `rater`'s next task of `batch` and submits `answers`, which must be accepted;
    /// returns the rating's id.
    pub async fn rate(&self, rater: &Persona, batch: &str, answers: &Value) -> String {
        self.rate_with(rater, batch, |_| answers.clone()).await.0
    }

    /// Takes `rater`'s next task of `batch` and submits what `answers` makes of the task as
    /// `next` showed it, which must be accepted; returns the rating's id and that answer
    /// of `next`.
    pub async fn rate_with(
        &self,
        rater: &Persona,
        batch: &str,
        answers: impl FnOnce(&Value) -> Value,
    ) -> (String, Value) {
        let next = self.next(rater, batch).await.expect("a task");
        let done = self
            .act(rater, &assignment_id(&next), "submit", &answers(&next))
            .await;
        let rating = json_with(done, StatusCode::OK).await["rating_id"]
            .as_str()
            .expect("a rating id")
            .to_owned();
        (rating, next)
    }

    /// Rates every task of `batch` that `rater` is offered, each with what `answers` makes
    /// of it as `next` showed it; every submission must be accepted. Returns how many.
    pub async fn rate_all(
        &self,
        rater: &Persona,
        batch: &str,
        answers: impl Fn(&Value) -> Value,
    ) -> usize {
        let mut rated = 0;
        while let Some(next) = self.next(rater, batch).await {
            let done = self
                .act(rater, &assignment_id(&next), "submit", &answers(&next))
                .await;
            json_with(done, StatusCode::OK).await;
            rated += 1;
        }
        rated
    }

    /// A rating as `who` reads it through the API.
    pub async fn rating(&self, who: &Persona, id: &str) -> Value {
        let response = who
            .api
            .get(self.url(&format!("/api/v1/ratings/{id}")))
            .go()
            .await;
        json_with(response, StatusCode::OK).await
    }

    /// The OpenAPI document, as anyone reads it.
    pub async fn openapi(&self) -> Value {
        let response = self
            .browser()
            .get(self.url("/api/v1/openapi.json"))
            .go()
            .await;
        json_with(response, StatusCode::OK).await
    }

    /// A batch's settings and progress as `who` reads them through the API.
    pub async fn batch_view(&self, who: &Persona, batch: &str) -> Value {
        let response = who
            .api
            .get(self.url(&format!("/api/v1/batches/{batch}")))
            .go()
            .await;
        json_with(response, StatusCode::OK).await
    }

    /// A batch's metrics as `who` reads them through the API.
    pub async fn metrics(&self, who: &Persona, batch: &str) -> Value {
        let response = who
            .api
            .get(self.url(&format!("/api/v1/batches/{batch}/metrics")))
            .go()
            .await;
        json_with(response, StatusCode::OK).await
    }

    /// How many ratings differ from their assignment and task in what migration 0011
    /// copies onto them (orientation, external id, models, response lengths, gold); a
    /// stale rating keeps the copies of the version of its task it rated.
    pub async fn rating_copies_off(&self) -> i64 {
        self.count(
            "SELECT COUNT(*) FROM ratings r JOIN assignments a ON a.id = r.assignment_id
               JOIN tasks t ON t.id = r.task_id
             WHERE r.stale = FALSE AND (r.swapped <> a.swapped OR r.external_id <> t.external_id
                OR NOT (r.model_a = t.model_a OR (r.model_a IS NULL AND t.model_a IS NULL))
                OR NOT (r.model_b = t.model_b OR (r.model_b IS NULL AND t.model_b IS NULL))
                OR r.len_a <> LENGTH(t.response_a) OR r.len_b <> LENGTH(t.response_b)
                OR r.gold <> EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = r.task_id))",
        )
        .await
    }

    /// Runs one statement on the app's database (for setting up what time would do).
    pub async fn execute(&self, sql: &str) {
        self.db.execute(sql).await;
    }

    /// One number from the app's database.
    pub async fn count(&self, sql: &str) -> i64 {
        self.db.count(sql).await
    }

    /// Rows of two text columns from the app's database.
    pub async fn pairs(&self, sql: &str) -> Vec<(String, String)> {
        self.db.pairs(sql).await
    }

    /// Stops an instance and closes its connections (a sibling's end; a fixture's
    /// teardown also removes the database).
    pub async fn close(mut self) {
        self.stop().await;
        self.store.close().await;
    }

    /// A second app instance on the same database (a second process would do the same).
    pub async fn sibling(&self) -> TestApp {
        let app_store = Store::connect(&self.db.url).await.expect("connect");
        let state = AppState::new(app_store, Config::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel();
        let server = tokio::spawn(verdict::serve(listener, state.clone(), async {
            let _ = rx.await;
        }));
        let db = TestDb {
            url: self.db.url.clone(),
            backend: self.db.backend,
            dir: None,
            postgres: None,
        };
        TestApp {
            addr,
            db,
            store: Store::connect(&self.db.url).await.expect("connect"),
            state,
            shutdown: Some(tx),
            server: Some(server),
        }
    }
}

/// Every table's rows as sorted text, leaving out what a read may rightly write: the
/// sessions table (a session's own expiry is renewed by activity) with the sign-in
/// epoch that moves when a session is saved, the counters of login
/// attempts (every sign-in counts, by design), the cache of a task's rendered HTML
/// (filled on first view), and the audit entries of exports (an export is a read that
/// the audit log records by design).
pub async fn contents(app: &TestApp) -> BTreeMap<String, Vec<String>> {
    let mut tables: BTreeMap<String, Vec<String>> = BTreeMap::new();
    match app.db.backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&app.db.url)
                .await
                .expect("connect");
            let names: Vec<(String,)> = sqlx::query_as(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            )
            .fetch_all(&pool)
            .await
            .expect("tables");
            for (table,) in names {
                let columns: Vec<(String,)> =
                    sqlx::query_as(&format!("SELECT name FROM pragma_table_info('{table}')"))
                        .fetch_all(&pool)
                        .await
                        .expect("columns");
                let row = columns
                    .iter()
                    .filter(|(c,)| c != "rendered")
                    .map(|(c,)| format!("quote(\"{c}\")"))
                    .collect::<Vec<_>>()
                    .join(" || ',' || ");
                let rows: Vec<(String,)> =
                    sqlx::query_as(&format!("SELECT {row} FROM \"{table}\""))
                        .fetch_all(&pool)
                        .await
                        .expect("rows");
                tables.insert(table, rows.into_iter().map(|(r,)| r).collect());
            }
            pool.close().await;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.db.url).await.expect("connect");
            let names: Vec<(String,)> =
                sqlx::query_as("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
                    .fetch_all(&pool)
                    .await
                    .expect("tables");
            for (table,) in names {
                let rows: Vec<(String,)> = sqlx::query_as(&format!(
                    "SELECT (to_jsonb(t) - 'rendered')::text FROM \"{table}\" t"
                ))
                .fetch_all(&pool)
                .await
                .expect("rows");
                tables.insert(table, rows.into_iter().map(|(r,)| r).collect());
            }
            pool.close().await;
        }
    }
    tables.remove("sessions");
    tables.remove("access_epoch");
    tables.remove("login_attempts");
    if let Some(audit) = tables.get_mut("audit_log") {
        // Exports are GETs that are audited: who took the data.
        audit.retain(|row| !row.contains("batch.export") && !row.contains("judge_run.export"));
    }
    tables.values_mut().for_each(|rows| rows.sort());
    tables
}
