//! Sign-in through a real OpenID provider (oidc-provider, started from tests/oidc): the
//! whole authorization code flow with PKCE over HTTP, accounts matched by email, made for
//! allowed domains with the role their groups give, and every way a sign-in must fail:
//! a wrong state, a sign-in begun elsewhere, a code used twice, an ID token for another
//! audience, an expired one, an unverified email, no account. Password sign-in can be
//! switched off.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use verdict::Config;
use verdict::credentials::oidc::OidcConfig;
use verdict::credentials::sealed::SealingKey;
use verdict::store::Backend;
use verdict_core::sign_in::{MatchClaim, Policy};

use crate::helpers::{Fixture, Go, TestApp, TestDb, csrf_token, db_test, json_with};

const SECRET: &str = "verdict-client-secret-0123456789";

/// The people the provider knows, by account id, with their claims.
fn accounts() -> Value {
    json!({
        "alice": {"email": "Alice@Example.com", "email_verified": true, "groups": ["staff"]},
        "bob": {"email": "bob@elsewhere.org", "email_verified": true},
        "carol": {"email": "carol@example.com", "email_verified": false},
        "dave": {"email": "dave@example.com", "email_verified": true, "groups": ["verdict-leads"]},
        "erin": {"email": "erin@example.com", "email_verified": true,
                 "groups": ["verdict-leads", "verdict-admins"]},
        "frank": {"email": "frank@example.com", "email_verified": true},
        "kate": {"email": "kate@example.com", "email_verified": true},
        // A verified address that lower case alone would fold into kate's: its first
        // letter is the Kelvin sign.
        "kelvin": {"email": "\u{212A}ate@example.com", "email_verified": true},
    })
}

/// oidc-provider on a free port of 127.0.0.1, stopped when dropped.
pub struct Provider {
    pub issuer: String,
    child: Child,
    _config: tempfile::NamedTempFile,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port: bound, read and let go.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Installs the provider's pinned packages (`npm ci`) into `dir` the first time a test
/// needs them, so `cargo nextest run` works in a fresh checkout; tests in other processes
/// wait for the one installing (a lock file), then find it done.
async fn install(dir: &std::path::Path) {
    let installed = || {
        dir.join("node_modules/oidc-provider/package.json")
            .is_file()
    };
    if installed() {
        return;
    }
    let _turn = verdict::runner::install::Turn::take(dir.join(".install.lock"))
        .await
        .expect("the install lock");
    if !installed() {
        let done = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(dir)
            .status()
            .expect("npm, to install the OpenID provider for the sign-in tests");
        assert!(done.success(), "npm ci in {} failed", dir.display());
    }
}

impl Provider {
    /// Starts the provider on `port` with `clients`.
    pub async fn start(port: u16, clients: Value) -> Self {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oidc");
        install(std::path::Path::new(dir)).await;
        let config = tempfile::NamedTempFile::new().expect("temp file");
        let body = json!({"port": port, "clients": clients, "accounts": accounts()});
        std::fs::write(config.path(), body.to_string()).expect("write config");
        let mut child = Command::new("node")
            .arg(format!("{dir}/provider.mjs"))
            .arg(config.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start node");
        let mut line = String::new();
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        out.read_line(&mut line).expect("the provider's first line");
        assert!(
            line.starts_with("listening on"),
            "the provider said {line:?}"
        );
        Self {
            issuer: format!("http://127.0.0.1:{port}"),
            child,
            _config: config,
        }
    }
}

/// An app signing in through a provider as `client_id`, its config made by `policy`.
async fn app_for(
    backend: Backend,
    issuer: &str,
    client_id: &str,
    policy: Policy,
    role_claim: Option<&str>,
    passwords: bool,
) -> TestApp {
    let db = TestDb::setup(backend).await.expect("a database");
    let issuer = issuer.to_owned();
    let client_id = client_id.to_owned();
    TestApp::on_with(db, move |addr: SocketAddr| Config {
        sealing_key: Some(
            SealingKey::from_secret("a test secret of more than thirty-two characters")
                .expect("secret"),
        ),
        oidc: Some(OidcConfig {
            issuer,
            client_id,
            client_secret: Some(SECRET.into()),
            redirect_url: format!("http://{addr}/auth/oidc/callback"),
            scopes: vec!["email".into(), "profile".into(), "groups".into()],
            role_claim: role_claim.map(str::to_owned),
            policy,
            label: "Example SSO".into(),
        }),
        password_sign_in: passwords,
        ..Config::default()
    })
    .await
}

/// A client of the provider for `app`, with a fault or none.
fn client_of(app: &TestApp, client_id: &str, fault: Option<&str>) -> Value {
    let mut client = json!({
        "client_id": client_id,
        "client_secret": SECRET,
        "redirect_uris": [app.url("/auth/oidc/callback")],
    });
    if let Some(fault) = fault {
        client["fault"] = json!(fault);
    }
    client
}

/// A browser: keeps cookies, follows no redirect.
fn browser() -> Client {
    Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("a redirect, got {}", response.status()))
        .to_str()
        .expect("text")
        .to_owned()
}

/// Goes through the provider as `login`, from verdict's start to the URL the provider
/// sends the browser back to (verdict's callback with the code and state), not yet
/// followed.
async fn to_callback(app: &TestApp, provider: &Provider, browser: &Client, login: &str) -> String {
    let start = browser
        .get(app.url("/auth/oidc/start?next=/ratings"))
        .go()
        .await;
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let authorize = location(&start);
    assert!(authorize.starts_with(&provider.issuer), "{authorize}");
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "PKCE: {authorize}"
    );
    assert!(authorize.contains("nonce="));
    let mut url = authorize;
    // The provider's own pages: its sign-in form, then back to verdict.
    for _ in 0..6 {
        let response = browser.get(&url).go().await;
        if response.status() == StatusCode::OK {
            let form = response.text().await.expect("the provider's form");
            assert!(form.contains("name=\"login\""), "{form}");
            let action = form
                .split("action=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .expect("the form's action")
                .to_owned();
            let action = if action.starts_with('/') {
                format!("{}{action}", provider.issuer)
            } else {
                action
            };
            let submitted = browser
                .post(action)
                .form(&[("prompt", "login"), ("login", login), ("password", "any")])
                .go()
                .await;
            url = location(&submitted);
        } else {
            url = location(&response);
        }
        if url.starts_with('/') {
            url = format!("{}{url}", provider.issuer);
        }
        if url.starts_with(&app.url("/auth/oidc/callback")) {
            return url;
        }
    }
    panic!("the provider never sent the browser back: last at {url}");
}

/// The whole sign-in: the callback's answer.
async fn sign_in(
    app: &TestApp,
    provider: &Provider,
    browser: &Client,
    login: &str,
) -> reqwest::Response {
    let back = to_callback(app, provider, browser, login).await;
    browser.get(back).go().await
}

/// Signs `login` in through `app` in a fresh browser, which must be refused with
/// `status` and a page saying `words`, and leave nobody signed in.
async fn refused_with(
    app: &TestApp,
    provider: &Provider,
    login: &str,
    status: StatusCode,
    words: &str,
) {
    let person = browser();
    let refused = sign_in(app, provider, &person, login).await;
    assert_eq!(refused.status(), status, "{login}");
    let said = refused.text().await.unwrap();
    assert!(said.contains(words), "{words:?} in {said}");
    assert!(me(app, &person).await.is_none());
}

/// Who the browser is signed in as, if anyone.
async fn me(app: &TestApp, browser: &Client) -> Option<Value> {
    let response = browser.get(app.url("/api/v1/me")).go().await;
    if response.status() != StatusCode::OK {
        return None;
    }
    response.json().await.ok()
}

async fn accounts_are_matched_by_verified_email_and_signing_out_ends_the_session(db: &TestDb) {
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let app = app_for(
        db.backend,
        &issuer,
        "verdict",
        Policy::default(),
        None,
        true,
    )
    .await;
    let provider = Provider::start(port, json!([client_of(&app, "verdict", None)])).await;
    let admin = app.admin().await;
    let made = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "alice@example.com", "role": "lead",
                      "password": "a long enough password for alice"}))
        .go()
        .await;
    json_with(made, StatusCode::CREATED).await;

    // The sign-in page offers the provider beside the password form.
    let page = browser()
        .get(app.url("/login"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Sign in with Example SSO") && page.contains("name=\"password\""));

    let alice = browser();
    let done = sign_in(&app, &provider, &alice, "alice").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&done), "/ratings", "back where the sign-in began");
    let who = me(&app, &alice).await.expect("signed in");
    assert_eq!(who["username"], "alice@example.com");
    assert_eq!(
        who["role"], "lead",
        "the role an admin gave stays: no role claim"
    );
    // A second sign-in finds the account by the subject it was linked to.
    let again = browser();
    assert_eq!(
        sign_in(&app, &provider, &again, "alice").await.status(),
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        me(&app, &again).await.expect("signed in")["username"],
        "alice@example.com"
    );

    // Signing out ends the local session.
    let ratings = alice
        .get(app.url("/ratings"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    let out = alice
        .post(app.url("/logout"))
        .form(&[("csrf_token", csrf_token(&ratings))])
        .go()
        .await;
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    assert!(me(&app, &alice).await.is_none());

    // Nobody's account is made by default; an unverified address opens none.
    let forbidden = StatusCode::FORBIDDEN;
    let bob = "no verdict account for bob@elsewhere.org";
    refused_with(&app, &provider, "bob", forbidden, bob).await;
    let carol = "not verified the email address";
    refused_with(&app, &provider, "carol", forbidden, carol).await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users WHERE username LIKE '%@%'")
            .await,
        1,
        "no account was made"
    );

    // A deactivated account stays shut.
    let id = made_id(&app, &admin, "alice@example.com").await;
    let off = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{id}")))
        .json(&json!({"active": false}))
        .go()
        .await;
    assert_eq!(off.status(), StatusCode::OK);
    let shut = "alice@example.com is deactivated";
    refused_with(&app, &provider, "alice", StatusCode::FORBIDDEN, shut).await;
    app.teardown().await;
}

db_test!(accounts_are_matched_by_verified_email_and_signing_out_ends_the_session: TestDb);

/// The id of the account named `username`.
async fn made_id(app: &TestApp, admin: &crate::helpers::Persona, username: &str) -> String {
    let users = json_with(
        admin.api.get(app.url("/api/v1/users")).go().await,
        StatusCode::OK,
    )
    .await;
    users
        .as_array()
        .expect("users")
        .iter()
        .find(|u| u["username"] == username)
        .and_then(|u| u["id"].as_str())
        .expect("the account")
        .to_owned()
}

async fn accounts_are_made_for_allowed_domains_with_the_role_their_groups_give(db: &TestDb) {
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let policy = Policy {
        match_by: MatchClaim::Email,
        role_claim: true,
        role_map: vec![
            ("verdict-leads".into(), verdict_core::role::Role::Lead),
            ("verdict-admins".into(), verdict_core::role::Role::Admin),
        ],
        create_domains: vec!["example.com".into()],
    };
    let app = app_for(db.backend, &issuer, "verdict", policy, Some("groups"), true).await;
    let provider = Provider::start(port, json!([client_of(&app, "verdict", None)])).await;
    for (login, role) in [("dave", "lead"), ("erin", "admin"), ("frank", "rater")] {
        let person = browser();
        assert_eq!(
            sign_in(&app, &provider, &person, login).await.status(),
            StatusCode::SEE_OTHER
        );
        let who = me(&app, &person).await.expect("signed in");
        assert_eq!(who["username"], format!("{login}@example.com"));
        assert_eq!(who["role"], role, "{login}");
    }
    // The groups set the role at every sign-in: an admin's change lasts until then.
    let admin = app.admin().await;
    let id = made_id(&app, &admin, "dave@example.com").await;
    let changed = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{id}")))
        .json(&json!({"role": "rater"}))
        .go()
        .await;
    assert_eq!(changed.status(), StatusCode::OK);
    let dave = browser();
    sign_in(&app, &provider, &dave, "dave").await;
    assert_eq!(me(&app, &dave).await.expect("signed in")["role"], "lead");
    // Another domain gets no account.
    let bob = "no verdict account for bob@elsewhere.org";
    refused_with(&app, &provider, "bob", StatusCode::FORBIDDEN, bob).await;
    // Made accounts are in the audit log as the identity provider's doing.
    let entries = json_with(
        admin
            .api
            .get(app.url("/api/v1/audit?action=user.create"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let made: Vec<&Value> = entries["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["target"]
                .as_str()
                .is_some_and(|t| t.ends_with("@example.com"))
        })
        .collect();
    assert_eq!(made.len(), 3, "{entries}");
    assert!(
        made.iter().all(|e| e["actor"] == "identity provider"),
        "{made:?}"
    );
    app.teardown().await;
}

db_test!(accounts_are_made_for_allowed_domains_with_the_role_their_groups_give: TestDb);

async fn forged_replayed_and_untrustworthy_sign_ins_are_refused(db: &TestDb) {
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let open = Policy {
        create_domains: vec!["example.com".into()],
        ..Policy::default()
    };
    let app = app_for(db.backend, &issuer, "verdict", open.clone(), None, true).await;
    let wrong_aud = app_for(db.backend, &issuer, "verdict-aud", open.clone(), None, true).await;
    let expired = app_for(db.backend, &issuer, "verdict-exp", open, None, true).await;
    let provider = Provider::start(
        port,
        json!([
            client_of(&app, "verdict", None),
            client_of(&wrong_aud, "verdict-aud", Some("wrong_audience")),
            client_of(&expired, "verdict-exp", Some("expired")),
        ]),
    )
    .await;

    // A wrong state: the code is never exchanged.
    let person = browser();
    let back = to_callback(&app, &provider, &person, "frank").await;
    let forged = back.replace("state=", "state=x");
    let refused = person.get(&forged).go().await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(
        refused
            .text()
            .await
            .unwrap()
            .contains("state is not the one this browser began")
    );
    assert!(me(&app, &person).await.is_none());

    // The right callback, in a browser that did not begin the sign-in.
    let elsewhere = browser().get(&back).go().await;
    assert_eq!(elsewhere.status(), StatusCode::BAD_REQUEST);
    assert!(
        elsewhere
            .text()
            .await
            .unwrap()
            .contains("begun in another browser")
    );

    // A code used twice: the provider refuses it the second time, with a fresh state.
    let first = browser();
    let back = to_callback(&app, &provider, &first, "frank").await;
    assert_eq!(first.get(&back).go().await.status(), StatusCode::SEE_OTHER);
    assert!(me(&app, &first).await.is_some());
    let used = back
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("code="))
        .expect("a code")
        .to_owned();
    let second = browser();
    let fresh = to_callback(&app, &provider, &second, "frank").await;
    let fresh_code = fresh
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("code="))
        .expect("a code")
        .to_owned();
    let replayed = second.get(fresh.replace(&fresh_code, &used)).go().await;
    assert_eq!(replayed.status(), StatusCode::BAD_REQUEST);
    let said = replayed.text().await.unwrap();
    assert!(
        said.contains("refused the sign-in: invalid_grant"),
        "{said}"
    );
    assert!(me(&app, &second).await.is_none());
    // And the first callback again, in the browser that used it: its cookie is gone.
    let again = first.get(&back).go().await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);

    // ID tokens verdict must not trust, from the provider's own key.
    let untrusted = StatusCode::BAD_REQUEST;
    let audience = "cannot be trusted: Invalid audiences";
    refused_with(&wrong_aud, &provider, "frank", untrusted, audience).await;
    let stale = "cannot be trusted: Expired";
    refused_with(&expired, &provider, "frank", untrusted, stale).await;
    assert_eq!(
        wrong_aud
            .count("SELECT COUNT(*) FROM users WHERE username LIKE '%@%'")
            .await,
        0
    );
    assert_eq!(
        expired
            .count("SELECT COUNT(*) FROM users WHERE username LIKE '%@%'")
            .await,
        0
    );

    // The provider's refusal is told in our words, never in the link's (anyone can write
    // a link to the callback), and nothing is signed in.
    let denied = browser()
        .get(app.url(
            "/auth/oidc/callback?error=access_denied&error_description=Your+account+is+suspended.+Call+555-0100",
        ))
        .go()
        .await;
    assert_eq!(denied.status(), StatusCode::UNAUTHORIZED);
    let page = denied.text().await.unwrap();
    assert!(
        page.contains("The sign-in was declined at your identity provider."),
        "{page}"
    );
    assert!(
        !page.contains("suspended") && !page.contains("555-0100"),
        "{page}"
    );
    let made_up = browser()
        .get(app.url("/auth/oidc/callback?error=Your+account+is+suspended"))
        .go()
        .await;
    assert_eq!(made_up.status(), StatusCode::UNAUTHORIZED);
    let page = made_up.text().await.unwrap();
    assert!(
        page.contains("Your identity provider did not sign you in."),
        "{page}"
    );
    assert!(!page.contains("suspended"), "{page}");
    for app in [app, wrong_aud, expired] {
        app.teardown().await;
    }
}

db_test!(forged_replayed_and_untrustworthy_sign_ins_are_refused: TestDb);

/// An app whose provider may make accounts for example.com, with the provider running.
async fn open_to_example_com(db: &TestDb) -> (TestApp, Provider) {
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let open = Policy {
        create_domains: vec!["example.com".into()],
        ..Policy::default()
    };
    let app = app_for(db.backend, &issuer, "verdict", open, None, false).await;
    let provider = Provider::start(port, json!([client_of(&app, "verdict", None)])).await;
    (app, provider)
}

async fn password_sign_in_can_be_switched_off(db: &TestDb) {
    let (app, provider) = open_to_example_com(db).await;
    let admin = app.admin().await;
    let page = browser()
        .get(app.url("/login"))
        .go()
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Sign in with Example SSO"));
    assert!(!page.contains("name=\"password\""), "no password form");
    // A password that is right still does not sign in; API tokens still work.
    let person = browser();
    let form = person.get(app.url("/login")).go().await;
    // The sign-in form's token is its cookie's (the page shows no form to carry it).
    let token = form
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix("verdict_login_csrf="))
        .and_then(|c| c.split(';').next())
        .expect("the sign-in form's token")
        .to_owned();
    let refused = person
        .post(app.url("/login"))
        .form(&[
            ("csrf_token", token.as_str()),
            ("username", admin.username.as_str()),
            ("password", crate::helpers::PASSWORD),
        ])
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(
        refused
            .text()
            .await
            .unwrap()
            .contains("Password sign-in is off")
    );
    assert!(me(&app, &person).await.is_none());
    let by_token = admin.api.get(app.url("/api/v1/me")).go().await;
    assert_eq!(by_token.status(), StatusCode::OK);
    let frank = browser();
    assert_eq!(
        sign_in(&app, &provider, &frank, "frank").await.status(),
        StatusCode::SEE_OTHER
    );
    assert!(me(&app, &frank).await.is_some());
    app.teardown().await;
}

db_test!(password_sign_in_can_be_switched_off: TestDb);

/// Issue 50: an address the provider verified is not folded into someone else's: the
/// Kelvin sign is not a K, so `\u{212A}ate@example.com` neither signs in as
/// kate@example.com nor links her account to itself, and no account is made for it even
/// where accounts are made for the domain. Kate signs in afterwards as before.
async fn a_look_alike_address_takes_over_no_account(db: &TestDb) {
    let (app, provider) = open_to_example_com(db).await;
    let admin = app.admin().await;
    let made = admin
        .api
        .post(app.url("/api/v1/users"))
        .json(&json!({"username": "kate@example.com", "role": "lead",
                      "password": "a long enough password for kate"}))
        .go()
        .await;
    json_with(made, StatusCode::CREATED).await;

    let look_alike = "characters that stand for others";
    refused_with(&app, &provider, "kelvin", StatusCode::FORBIDDEN, look_alike).await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users WHERE oidc_subject IS NOT NULL")
            .await,
        0,
        "no account was linked to the look-alike"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users WHERE username LIKE '%@%'")
            .await,
        1,
        "no account was made for it"
    );
    let kate = browser();
    let done = sign_in(&app, &provider, &kate, "kate").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let who = me(&app, &kate).await.expect("signed in");
    assert_eq!(who["username"], "kate@example.com");
    assert_eq!(who["role"], "lead");
    app.teardown().await;
}

db_test!(a_look_alike_address_takes_over_no_account: TestDb);
