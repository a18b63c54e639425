//! Webhooks against a real local receiver that checks every signature the Standard
//! Webhooks way: each event arrives once per subscription (by its id), signed, only to
//! subscriptions that asked for it and its batch; a receiver that is down or failing gets
//! everything once it is back, every attempt logged; a delivery that gave up can be sent
//! again by hand; bad subscriptions are refused naming the field; and nothing is lost
//! when the server is killed with SIGKILL, nor sent for a change that was refused.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::Sha256;
use verdict::Config;
use verdict::config::Delivering;
use verdict::credentials::sealed::SealingKey;
use verdict::services::judging::endpoint::EndpointPolicy;
use verdict::store::Backend;
use verdict_core::webhook::Retries;

use crate::durability::{account, kill_9, rate_all, serve_with, upload_batch};
use crate::helpers::{
    Fixture, Go, Persona, TestApp, TestDb, assignment_id, bearer, complete_answers, csrf_token,
    db_test, json_with, page_text, tasks_jsonl,
};

const SECRET_KEY: &str = "a test secret of more than thirty-two characters";

/// One message as the receiver got it.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    /// Whether the signature holds under `secret`, checked here from the Standard
    /// Webhooks rules (not with the server's code): HMAC-SHA256 under the base64-decoded
    /// part of the secret after `whsec_`, over `id.timestamp.body`, any of the
    /// space-separated `v1,` signatures.
    pub fn signed_with(&self, secret: &str) -> bool {
        let key = STANDARD
            .decode(secret.strip_prefix("whsec_").expect("a whsec_ secret"))
            .expect("base64");
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("key");
        mac.update(format!("{}.{}.{}", self.id, self.timestamp, self.body).as_bytes());
        let expected = STANDARD.encode(mac.finalize().into_bytes());
        self.signature
            .split(' ')
            .any(|s| s.strip_prefix("v1,") == Some(expected.as_str()))
    }
}

#[derive(Default)]
struct Inbox {
    got: Mutex<Vec<Received>>,
    /// Requests still to be answered 503 (a receiver having a bad time).
    failing: AtomicUsize,
}

/// A webhook receiver on a free port of 127.0.0.1: it keeps every message and answers
/// 204, or 503 while it has failures left to give.
pub struct Receiver {
    pub addr: std::net::SocketAddr,
    inbox: Arc<Inbox>,
    server: tokio::task::JoinHandle<()>,
}

async fn take(State(inbox): State<Arc<Inbox>>, headers: HeaderMap, body: String) -> AxumStatus {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let received = Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body,
    };
    let failing = inbox
        .failing
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        return AxumStatus::SERVICE_UNAVAILABLE;
    }
    inbox.got.lock().expect("inbox").push(received);
    AxumStatus::NO_CONTENT
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let inbox = Arc::new(Inbox::default());
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(take))
            .with_state(inbox.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("receiver");
        });
        Self {
            addr,
            inbox,
            server,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// Answers the next `n` requests 503.
    pub fn fail_next(&self, n: usize) {
        self.inbox.failing.store(n, Ordering::SeqCst);
    }

    pub fn got(&self) -> Vec<Received> {
        self.inbox.got.lock().expect("inbox").clone()
    }

    /// Waits until `n` distinct messages have arrived (30 s at most); returns them all.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        // However busy the machine, only a hang lasts this long.
        let deadline = std::time::Instant::now() + crate::durability::HANG;
        while std::time::Instant::now() < deadline {
            let got = self.got();
            let ids: BTreeSet<&str> = got.iter().map(|r| r.id.as_str()).collect();
            if ids.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{n} messages did not arrive; got {:?}", self.got());
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Quick delivery for tests: the outbox read every 50 ms, retries 100 ms apart doubling
/// to 400 ms, four attempts; receivers on 127.0.0.1 allowed (as an admin would allow an
/// internal host with `--webhook-allow-hosts`), since the tests' receivers are there.
pub fn quick() -> Delivering {
    Delivering {
        poll: Duration::from_millis(50),
        timeout: Duration::from_secs(2),
        retries: Retries {
            first_wait: Duration::from_millis(100),
            longest_wait: Duration::from_millis(400),
            attempts: 4,
        },
        endpoints: EndpointPolicy::webhooks(Some(vec!["127.0.0.1".parse().expect("a host")])),
        stall_check: Duration::from_millis(100),
        ..Delivering::default()
    }
}

/// The app with a secret to seal signing secrets and quick delivery.
pub struct HookApp(pub TestApp);

impl Fixture for HookApp {
    async fn setup(backend: Backend) -> Option<Self> {
        let config = Config {
            sealing_key: Some(SealingKey::from_secret(SECRET_KEY).expect("secret")),
            webhooks: quick(),
            ..Config::default()
        };
        TestApp::with_config(backend, config).await.map(Self)
    }

    async fn teardown(self) {
        self.0.teardown().await;
    }
}

/// Subscribes `url` to `events` as `who` (of `batch`, if given); the answer.
async fn subscribe(
    app: &TestApp,
    who: &Persona,
    url: &str,
    events: &[&str],
    batch: Option<&str>,
) -> reqwest::Response {
    let mut body = json!({"url": url, "events": events});
    if let Some(batch) = batch {
        body["batch"] = json!(batch);
    }
    who.api
        .post(app.url("/api/v1/webhooks"))
        .json(&body)
        .go()
        .await
}

/// A subscription's deliveries, as `who` reads them.
async fn deliveries(app: &TestApp, who: &Persona, webhook: &str) -> Vec<Value> {
    let response = who
        .api
        .get(app.url(&format!("/api/v1/webhooks/{webhook}/deliveries?limit=200")))
        .go()
        .await;
    json_with(response, StatusCode::OK).await["items"]
        .as_array()
        .expect("items")
        .clone()
}

/// Waits until every delivery of `webhook` is out of `pending` (20 s at most).
async fn settled(app: &TestApp, who: &Persona, webhook: &str) -> Vec<Value> {
    for _ in 0..400 {
        let listed = deliveries(app, who, webhook).await;
        if !listed.is_empty() && listed.iter().all(|d| d["state"] != "pending") {
            return listed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "deliveries still pending: {:?}",
        deliveries(app, who, webhook).await
    );
}

async fn events_arrive_signed_once_each_to_those_who_asked(app: &HookApp) {
    let app = &app.0;
    let (admin, lead, rater) = (app.admin().await, app.lead().await, app.rater().await);
    let batch = app
        .batch(&admin, "hooked", &tasks_jsonl(2), "&overlap=1")
        .await;
    let other = app.batch(&admin, "quiet", &tasks_jsonl(1), "").await;
    let receiver = Receiver::start().await;
    let elsewhere = Receiver::start().await;

    let created = json_with(
        subscribe(
            app,
            &admin,
            &receiver.url(),
            &["rating.submitted", "batch.completed", "rating.reviewed"],
            None,
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let secret = created["secret"].as_str().expect("the secret").to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_eq!(
        STANDARD
            .decode(&secret["whsec_".len()..])
            .expect("base64")
            .len(),
        32
    );
    let hook = created["id"].as_str().expect("id").to_owned();
    // A lead's subscription to another batch hears nothing of this one.
    let quiet = json_with(
        subscribe(
            app,
            &lead,
            &elsewhere.url(),
            &["rating.submitted"],
            Some(&other),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(quiet["batch"], json!(other));

    let first = app.rate(&rater, &batch, &complete_answers()).await;
    let second = app.rate(&rater, &batch, &complete_answers()).await;
    let review = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{first}/review")))
        .json(&json!({"decision": "accept", "version": 1}))
        .go()
        .await;
    json_with(review, StatusCode::OK).await;

    let got = receiver.wait_for(4).await;
    assert_eq!(got.len(), 4, "each event once: {got:?}");
    for message in &got {
        assert!(message.signed_with(&secret), "{message:?}");
        let sent: i64 = message.timestamp.parse().expect("a timestamp in seconds");
        assert!((chrono::Utc::now().timestamp() - sent).abs() < 60);
        // Signed under another secret, it would not hold.
        assert!(!message.signed_with(&format!("whsec_{}", STANDARD.encode([7u8; 32]))));
    }
    let ids: BTreeSet<&str> = got.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), 4, "every event has its own id");
    let mut kinds = BTreeMap::new();
    for message in &got {
        let body = message.json();
        assert_eq!(body["data"]["batch_id"], json!(batch));
        *kinds
            .entry(body["type"].as_str().unwrap_or("").to_owned())
            .or_insert(0) += 1;
        match body["type"].as_str() {
            Some("rating.submitted") => {
                assert!(
                    [&first, &second]
                        .contains(&&body["data"]["rating_id"].as_str().unwrap().to_owned())
                );
                assert_eq!(body["data"]["rater"], json!(rater.username));
                assert_eq!(body["data"]["outcome"], "rated");
                let task = body["data"]["external_id"].as_str().unwrap();
                assert!(["t1", "t2"].contains(&task), "{task}");
            }
            Some("batch.completed") => {
                assert_eq!(body["data"]["name"], "hooked");
                assert_eq!(body["data"]["tasks"], 2);
            }
            Some("rating.reviewed") => {
                assert_eq!(body["data"]["rating_id"], json!(first));
                assert_eq!(body["data"]["decision"], "accept");
                assert_eq!(body["data"]["status"], "accepted");
            }
            other => panic!("an event nobody asked for: {other:?}"),
        }
    }
    assert_eq!(
        kinds,
        BTreeMap::from([
            ("batch.completed".to_owned(), 1),
            ("rating.reviewed".to_owned(), 1),
            ("rating.submitted".to_owned(), 2),
        ])
    );
    assert!(elsewhere.got().is_empty());
    assert!(
        deliveries(app, &lead, quiet["id"].as_str().unwrap())
            .await
            .is_empty()
    );

    // The deliveries page of the API: each delivered at its first attempt, with the body
    // exactly as sent.
    let listed = settled(app, &admin, &hook).await;
    assert_eq!(listed.len(), 4);
    for delivery in &listed {
        assert_eq!(delivery["state"], "delivered");
        assert_eq!(delivery["attempts"], 1);
        assert_eq!(delivery["tried"][0]["status"], 204);
        let sent = got
            .iter()
            .find(|m| m.id == delivery["event_id"].as_str().unwrap())
            .expect("the delivery's message arrived");
        assert_eq!(delivery["payload"].as_str(), Some(sent.body.as_str()));
    }

    // Lists show no secret; a lead sees only the subscriptions of batches they lead.
    let all = json_with(
        admin.api.get(app.url("/api/v1/webhooks")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert!(!all.to_string().contains("whsec_"));
    let deleted = admin
        .api
        .delete(app.url(&format!("/api/v1/webhooks/{hook}")))
        .go()
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM webhook_deliveries").await,
        0
    );
}

db_test!(events_arrive_signed_once_each_to_those_who_asked: HookApp);

async fn bad_subscriptions_are_refused_naming_the_field(app: &HookApp) {
    let app = &app.0;
    let (admin, lead, rater) = (app.admin().await, app.lead().await, app.rater().await);
    let url = "http://127.0.0.1:9/hook";
    let refused =
        |response: reqwest::Response| json_with(response, StatusCode::UNPROCESSABLE_ENTITY);

    let by_rater = subscribe(app, &rater, url, &["rating.submitted"], None).await;
    assert_eq!(by_rater.status(), StatusCode::FORBIDDEN);

    let both = refused(subscribe(app, &admin, "ftp://x/y", &[], None).await).await;
    assert_eq!(both["fields"]["url"], "must start with https:// or http://");
    assert_eq!(both["fields"]["events"], "name at least one event");

    let unknown = refused(subscribe(app, &admin, url, &["rating.created"], None).await).await;
    assert!(
        unknown["fields"]["events"]
            .as_str()
            .unwrap()
            .contains("is not an event"),
        "{unknown}"
    );

    let metadata = refused(
        subscribe(
            app,
            &admin,
            "http://169.254.169.254/latest",
            &["task.escalated"],
            None,
        )
        .await,
    )
    .await;
    assert!(
        metadata["fields"]["url"]
            .as_str()
            .unwrap()
            .contains("169.254.169.254"),
        "{metadata}"
    );

    let everywhere = refused(subscribe(app, &lead, url, &["rating.submitted"], None).await).await;
    assert!(
        everywhere["fields"]["batch"]
            .as_str()
            .unwrap()
            .contains("is required")
    );
    let nowhere = refused(
        subscribe(
            app,
            &lead,
            url,
            &["rating.submitted"],
            Some(&uuid::Uuid::now_v7().to_string()),
        )
        .await,
    )
    .await;
    assert_eq!(nowhere["fields"]["batch"], "is not a batch you lead");

    let extra = admin
        .api
        .post(app.url("/api/v1/webhooks"))
        .json(&json!({"url": url, "events": ["rating.submitted"], "secret": "mine"}))
        .go()
        .await;
    assert_eq!(extra.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 0);

    // A server without VERDICT_SECRET_KEY cannot seal a secret, so it makes none.
    let unsealed = Config {
        webhooks: quick(),
        ..Config::default()
    };
    let unsealed = TestApp::with_config(app.db.backend, unsealed)
        .await
        .expect("a second app");
    let admin2 = unsealed.admin().await;
    let conflict = subscribe(&unsealed, &admin2, url, &["rating.submitted"], None).await;
    let body = json_with(conflict, StatusCode::CONFLICT).await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("VERDICT_SECRET_KEY")
    );
    unsealed.teardown().await;
}

db_test!(bad_subscriptions_are_refused_naming_the_field: HookApp);

async fn a_failing_receiver_gets_everything_later_and_a_failed_delivery_can_be_sent_again(
    app: &HookApp,
) {
    let app = &app.0;
    let (admin, rater) = (app.admin().await, app.rater().await);
    let batch = app.batch(&admin, "flaky", &tasks_jsonl(3), "").await;
    let receiver = Receiver::start().await;
    let created = json_with(
        subscribe(
            app,
            &admin,
            &receiver.url(),
            &["rating.submitted"],
            Some(&batch),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let hook = created["id"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap().to_owned();

    // Two 503s, then the receiver is back: delivered at the third attempt.
    receiver.fail_next(2);
    app.rate(&rater, &batch, &complete_answers()).await;
    let got = receiver.wait_for(1).await;
    assert!(got[0].signed_with(&secret));
    let listed = settled(app, &admin, &hook).await;
    let statuses: Vec<&Value> = listed[0]["tried"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["status"])
        .collect();
    assert_eq!(statuses, [&json!(503), &json!(503), &json!(204)]);
    assert_eq!(listed[0]["state"], "delivered");
    assert_eq!(listed[0]["tried"][0]["error"], "the receiver answered 503");

    // Down for longer than the four attempts: the delivery fails, and is sent again by
    // hand once the receiver is back, with the same id and body.
    receiver.fail_next(1000);
    app.rate(&rater, &batch, &complete_answers()).await;
    let listed = settled(app, &admin, &hook).await;
    let failed = listed
        .iter()
        .find(|d| d["state"] == "failed")
        .expect("a failed delivery")
        .clone();
    assert_eq!(failed["attempts"], 4);
    assert_eq!(receiver.got().len(), 1);
    receiver.fail_next(0);
    let event = failed["event_id"].as_str().unwrap();
    let again = admin
        .api
        .post(app.url(&format!(
            "/api/v1/webhooks/{hook}/deliveries/{event}/redeliver"
        )))
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    let got = receiver.wait_for(2).await;
    let resent = got.iter().find(|m| m.id == event).expect("sent again");
    assert!(resent.signed_with(&secret));
    assert_eq!(Some(resent.body.as_str()), failed["payload"].as_str());
    let listed = settled(app, &admin, &hook).await;
    let now = listed.iter().find(|d| d["event_id"] == event).unwrap();
    assert_eq!(now["state"], "delivered");
    assert_eq!(now["tried"].as_array().unwrap().len(), 5);

    // Nobody listening at all: each attempt says why there was no status.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let dead = json_with(
        subscribe(
            app,
            &admin,
            &format!("http://{closed}/hook"),
            &["rating.submitted"],
            Some(&batch),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    app.rate(&rater, &batch, &complete_answers()).await;
    let listed = settled(app, &admin, dead["id"].as_str().unwrap()).await;
    assert_eq!(listed[0]["state"], "failed");
    let tried = listed[0]["tried"].as_array().unwrap();
    assert_eq!(tried.len(), 4);
    assert!(
        tried
            .iter()
            .all(|t| t["status"].is_null() && t["error"].is_string())
    );

    // A delivery or subscription that is not there, or not the caller's, is a 404.
    let rater_reads = rater
        .api
        .get(app.url(&format!("/api/v1/webhooks/{hook}/deliveries")))
        .go()
        .await;
    assert_eq!(rater_reads.status(), StatusCode::FORBIDDEN);
    let missing = admin
        .api
        .post(app.url(&format!(
            "/api/v1/webhooks/{hook}/deliveries/{}/redeliver",
            uuid::Uuid::now_v7()
        )))
        .go()
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

db_test!(
    a_failing_receiver_gets_everything_later_and_a_failed_delivery_can_be_sent_again: HookApp
);

async fn no_event_is_lost_to_sigkill_nor_sent_for_a_refused_change(db: &TestDb) {
    let admin = bearer(&account(db, "admin", "admin"));
    let rater = account(db, "rater", "rater");
    let env = [
        ("VERDICT_SECRET_KEY", SECRET_KEY),
        ("VERDICT_WEBHOOK_TIMEOUT_S", "1"),
        ("VERDICT_WEBHOOK_ALLOW_HOSTS", "127.0.0.1"),
    ];
    let (server, base) = serve_with(db, &env);
    let mut server = Stopped(server);
    let batch = upload_batch(&admin, &base, "name=killed", tasks_jsonl(40)).await;
    let receiver = Receiver::start().await;
    let created: Value = admin
        .post(format!("{base}/api/v1/webhooks"))
        .json(&json!({"url": receiver.url(), "events": ["rating.submitted"]}))
        .send()
        .await
        .expect("subscribe")
        .json()
        .await
        .expect("JSON");
    let secret = created["secret"].as_str().expect("secret").to_owned();

    // A refused submit (answers missing) changes nothing and sends nothing.
    let client = bearer(&rater);
    let next: Value = client
        .post(format!("{base}/api/v1/batches/{batch}/next"))
        .send()
        .await
        .expect("next")
        .json()
        .await
        .expect("JSON");
    let refused = client
        .post(format!(
            "{base}/api/v1/assignments/{}/submit",
            next["assignment_id"].as_str().unwrap()
        ))
        .json(&json!({"sxs": 2}))
        .send()
        .await
        .expect("submit");
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);

    // Killed while rating goes on, then started again to finish.
    let rating = tokio::spawn(rate_all(base.clone(), rater.clone(), batch.clone()));
    // Killed once some ratings are acknowledged and reported, however fast that is.
    receiver.wait_for(3).await;
    kill_9(&mut server.0);
    let (before_kill, _) = rating.await.expect("rater");
    let (server, base) = serve_with(db, &env);
    let _server = Stopped(server);
    let (after, ended) = rate_all(base.clone(), rater.clone(), batch.clone()).await;
    assert_eq!(ended, crate::durability::Ended::Done);
    assert!(!before_kill.is_empty(), "some ratings came before the kill");

    // Every stored rating, and no other, arrives: by message id, one rating each.
    let stored = db
        .count("SELECT COUNT(*) FROM ratings WHERE status = 'submitted'")
        .await;
    assert_eq!(stored, 40);
    assert!(before_kill.len() + after.len() <= 40);
    let got = receiver.wait_for(40).await;
    let mut by_id: HashMap<String, String> = HashMap::new();
    for message in &got {
        assert!(message.signed_with(&secret));
        let rating = message.json()["data"]["rating_id"]
            .as_str()
            .expect("a rating id")
            .to_owned();
        let earlier = by_id.insert(message.id.clone(), rating.clone());
        assert!(
            earlier.is_none_or(|e| e == rating),
            "an id names one rating"
        );
    }
    let ratings: BTreeSet<&String> = by_id.values().collect();
    assert_eq!(ratings.len(), 40, "one event per stored rating");
    for (_, rating) in before_kill.iter().chain(&after) {
        if !rating.is_empty() {
            assert!(
                ratings.contains(rating),
                "acknowledged {rating} was reported"
            );
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all = receiver.got();
    let ids: BTreeSet<&String> = all.iter().map(|m| &m.id).collect();
    assert_eq!(ids.len(), 40, "nothing more arrived");
}

/// A server process killed when the test ends, whether it passed or not.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

db_test!(no_event_is_lost_to_sigkill_nor_sent_for_a_refused_change: TestDb);

async fn the_webhooks_pages_subscribe_show_the_secret_once_and_list_deliveries(app: &HookApp) {
    let app = &app.0;
    let (admin, lead, rater) = (app.admin().await, app.lead().await, app.rater().await);
    let batch = app.batch(&admin, "paged", &tasks_jsonl(2), "").await;
    let receiver = Receiver::start().await;
    let browser = lead.browser_for(app).await;
    let form = page_text(app, &browser, "/webhooks").await;
    assert!(form.contains("No webhooks yet."));
    assert!(form.contains("task.escalated"), "every event is offered");
    // A lead is offered the batches they lead, not every batch.
    assert!(!form.contains("<option value=\"\">every batch</option>"));
    let csrf = csrf_token(&form);

    // Refused: no event ticked; what was typed stays in the form.
    let refused = browser
        .post(app.url("/webhooks"))
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("url", receiver.url().as_str()),
            ("batch", batch.as_str()),
        ])
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = refused.text().await.unwrap();
    assert!(page.contains("events: name at least one event"), "{page}");
    assert!(page.contains(&receiver.url()));

    let made = browser
        .post(app.url("/webhooks"))
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("url", receiver.url().as_str()),
            ("batch", batch.as_str()),
            ("rating.submitted", "on"),
        ])
        .go()
        .await;
    assert_eq!(made.status(), StatusCode::CREATED);
    // Issue 50: the page that shows the secret is kept by no cache.
    assert_eq!(made.headers()["cache-control"], "no-store");
    let page = made.text().await.unwrap();
    let secret = page
        .split("<code id=\"secret\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .expect("the secret on the page")
        .to_owned();
    assert!(secret.starts_with("whsec_"));

    // Shown once: the list has the subscription, never the secret.
    let listed = page_text(app, &browser, "/webhooks").await;
    assert!(listed.contains(&receiver.url()) && listed.contains("paged"));
    assert!(!listed.contains(&secret));
    let listed = json_with(
        lead.api.get(app.url("/api/v1/webhooks")).go().await,
        StatusCode::OK,
    )
    .await;
    let hook = listed[0]["id"].as_str().expect("stored").to_owned();

    app.rate(&rater, &batch, &complete_answers()).await;
    let got = receiver.wait_for(1).await;
    assert!(got[0].signed_with(&secret));
    settled(app, &lead, &hook).await;
    let deliveries = page_text(app, &browser, &format!("/webhooks/{hook}")).await;
    assert!(
        deliveries.contains(&got[0].id),
        "the delivery's id is listed"
    );
    assert!(deliveries.contains("HTTP 204"));
    assert!(deliveries.contains("delivered"));

    let again = browser
        .post(app.url(&format!(
            "/webhooks/{hook}/deliveries/{}/redeliver",
            got[0].id
        )))
        .form(&[("csrf_token", csrf.as_str())])
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    let got = receiver.got();
    for _ in 0..200 {
        if receiver.got().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let twice = receiver.got();
    assert_eq!(twice.len(), 2, "sent again: {got:?}");
    assert_eq!(twice[0].id, twice[1].id, "with the same message id");

    let deleted = browser
        .post(app.url(&format!("/webhooks/{hook}/delete")))
        .form(&[("csrf_token", csrf.as_str())])
        .go()
        .await;
    assert_eq!(deleted.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 0);
}

db_test!(the_webhooks_pages_subscribe_show_the_secret_once_and_list_deliveries: HookApp);

/// The same answers as [`complete_answers`], preferring B instead of A.
fn favouring_b() -> Value {
    let mut answers = complete_answers();
    let a = answers["a"].take();
    answers["a"] = answers["b"].take();
    answers["b"] = a;
    answers["sxs"] = json!(6);
    answers["sxs_explanation"] = json!("B delivers the function that was asked for; A does not.");
    answers
}

async fn escalations_and_finished_judge_runs_are_reported_too(app: &HookApp) {
    let app = &app.0;
    let admin = app.admin().await;
    let (first, second) = (
        app.persona("first", verdict::auth::Role::Rater).await,
        app.persona("second", verdict::auth::Role::Rater).await,
    );
    let batch = app
        .batch(
            &admin,
            "disputed",
            &tasks_jsonl(1),
            "&overlap=2&max_overlap=3&randomize=false",
        )
        .await;
    let receiver = Receiver::start().await;
    let created = json_with(
        subscribe(
            app,
            &admin,
            &receiver.url(),
            &["task.escalated", "judge_run.finished"],
            Some(&batch),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let secret = created["secret"].as_str().unwrap().to_owned();

    // Two raters who disagree on the side: adaptive overlap asks a third.
    app.rate(&first, &batch, &complete_answers()).await;
    app.rate(&second, &batch, &favouring_b()).await;
    let got = receiver.wait_for(1).await;
    let escalated = got[0].json();
    assert!(got[0].signed_with(&secret));
    assert_eq!(escalated["type"], "task.escalated");
    assert_eq!(escalated["data"]["external_id"], "t1");
    assert_eq!(escalated["data"]["extra_raters"], 1);

    // A judge run over the batch, to its end.
    let scripted =
        crate::judge_server::ScriptedJudge::start(crate::judge_server::prefers_good).await;
    crate::judges::add_judge(app, &admin, "hooked", &scripted.base_url, json!({})).await;
    let run = crate::judges::start_run(app, &admin, &batch, "hooked").await;
    crate::judges::wait_for(app, &admin, &run, "finished").await;
    let got = receiver.wait_for(2).await;
    let finished = got
        .iter()
        .map(Received::json)
        .find(|m| m["type"] == "judge_run.finished")
        .expect("judge_run.finished");
    assert_eq!(finished["data"]["run_id"], json!(run));
    assert_eq!(finished["data"]["judge"], "hooked");
    assert_eq!(finished["data"]["tasks"], 1);
    // Both orders of the one pair, counted by status (the scripted judge's replies do
    // not parse for these tasks: what counts is that the counts are the run's).
    let calls: i64 = finished["data"]["calls"]
        .as_object()
        .expect("calls by status")
        .values()
        .map(|n| n.as_i64().unwrap())
        .sum();
    assert_eq!(calls, 2, "{finished}");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM judge_calls WHERE status = 'unparsed'")
            .await,
        finished["data"]["calls"]["unparsed"].as_i64().unwrap_or(0)
    );
    assert_eq!(got.len(), 2, "nothing else was sent: {got:?}");
}

db_test!(escalations_and_finished_judge_runs_are_reported_too: HookApp);

/// Issue 51: a rating sent again (revised while submitted, or after a return) is
/// `rating.revised` with its version; a batch is `batch.completed` once per completion and
/// `batch.reopened` when a return, a rejection or a new task gives it work again.
async fn revisions_and_each_completion_are_reported_once(app: &HookApp) {
    let app = &app.0;
    let (admin, lead) = (app.admin().await, app.lead().await);
    let (ana, bo) = (
        app.persona("ana", verdict::auth::Role::Rater).await,
        app.persona("bo", verdict::auth::Role::Rater).await,
    );
    let batch = app
        .batch(
            &admin,
            "revised",
            &tasks_jsonl(2),
            "&overlap=1&randomize=false",
        )
        .await;
    let receiver = Receiver::start().await;
    let events = ["batch.completed", "batch.reopened", "rating.revised"];
    json_with(
        subscribe(app, &admin, &receiver.url(), &events, Some(&batch)).await,
        StatusCode::CREATED,
    )
    .await;
    // Each step's events arrive before the next step is taken, so arrival order is the
    // order of the steps (two events of one step may arrive either way round).
    let receiver = &receiver;
    let kinds = |n: usize| async move {
        let got = receiver.wait_for(n).await;
        got.iter().map(Received::json).collect::<Vec<Value>>()
    };
    let review = |rating: String, decision: &'static str, version: i64| {
        let lead = &lead;
        async move {
            let body = json!({"decision": decision, "version": version,
                              "comment": "Say why B's loop is wrong."});
            let done = lead
                .api
                .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
                .json(&body)
                .go()
                .await;
            json_with(done, StatusCode::OK).await
        }
    };
    let revise = |rating: String| {
        let ana = &ana;
        async move {
            let done = ana
                .api
                .put(app.url(&format!("/api/v1/ratings/{rating}")))
                .json(&complete_answers())
                .go()
                .await;
            json_with(done, StatusCode::OK).await
        }
    };

    let first = app.rate(&ana, &batch, &complete_answers()).await;
    let second = app.rate(&ana, &batch, &complete_answers()).await;
    let got = kinds(1).await;
    assert_eq!(got[0]["type"], "batch.completed");
    assert_eq!(got[0]["data"]["tasks"], 2);

    // Revised while submitted: the new version is reported; the batch stays complete.
    revise(first.clone()).await;
    let got = kinds(2).await;
    assert_eq!(got[1]["type"], "rating.revised");
    assert_eq!(got[1]["data"]["rating_id"], json!(first));
    assert_eq!(got[1]["data"]["version"], 2);
    assert_eq!(got[1]["data"]["previous_status"], "submitted");

    // Returned: the batch has work again; sent back, it is complete again.
    review(first.clone(), "return", 2).await;
    let got = kinds(3).await;
    assert_eq!(got[2]["type"], "batch.reopened");
    assert_eq!(got[2]["data"]["returned"], 1);
    revise(first.clone()).await;
    let mut got = kinds(5).await;
    got[3..].sort_by_key(|m| m["type"].as_str().unwrap().to_owned());
    let last: Vec<&str> = got[3..]
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(last, ["batch.completed", "rating.revised"], "{got:?}");
    assert_eq!(got[4]["data"]["previous_status"], "returned");
    assert_eq!(got[4]["data"]["version"], 4);

    // Rejected: reopened until another rater rates the task; a new task reopens it too.
    review(second, "reject", 1).await;
    let got = kinds(6).await;
    assert_eq!(got[5]["type"], "batch.reopened");
    assert_eq!(got[5]["data"]["open"], 1);
    app.rate(&bo, &batch, &complete_answers()).await;
    let got = kinds(7).await;
    assert_eq!(got[6]["type"], "batch.completed");
    let upload = admin
        .api
        .post(app.url("/api/v1/batches?name=revised&overlap=1&randomize=false"))
        .header("content-type", "application/x-ndjson")
        .body(crate::helpers::tasks_jsonl_from(3, 1))
        .go()
        .await;
    assert!(upload.status().is_success(), "{}", upload.status());
    let got = kinds(8).await;
    assert_eq!(got[7]["type"], "batch.reopened");
    assert_eq!(got[7]["data"]["tasks"], 3);
    // An accept changes nothing: no event.
    review(first, "accept", 4).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut count = BTreeMap::new();
    for message in receiver.got() {
        *count
            .entry(message.json()["type"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    assert_eq!(
        count,
        BTreeMap::from([
            ("batch.completed".to_owned(), 3),
            ("batch.reopened".to_owned(), 3),
            ("rating.revised".to_owned(), 2),
        ])
    );
}

db_test!(revisions_and_each_completion_are_reported_once: HookApp);

/// Issue 51: `batch.stalled` is sent when a batch's stuck count goes from none to some,
/// once however long the stall lasts, and again after it cleared and came back.
async fn a_stall_is_sent_once_when_it_happens_and_again_after_it_cleared(app: &HookApp) {
    let app = &app.0;
    let admin = app.admin().await;
    let (ana, bo) = (
        app.persona("ana", verdict::auth::Role::Rater).await,
        app.persona("bo", verdict::auth::Role::Rater).await,
    );
    let batch = app
        .batch(
            &admin,
            "stalling",
            &tasks_jsonl(2),
            "&overlap=2&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let restrict = |raters: Value| {
        let admin = &admin;
        let batch = &batch;
        async move {
            let done = admin
                .api
                .patch(app.url(&format!("/api/v1/batches/{batch}")))
                .json(&json!({"raters": raters}))
                .go()
                .await;
            json_with(done, StatusCode::OK).await
        }
    };
    restrict(json!(["ana", "bo"])).await;
    let receiver = Receiver::start().await;
    json_with(
        subscribe(
            app,
            &admin,
            &receiver.url(),
            &["batch.stalled"],
            Some(&batch),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let skip = |who: &'static str| {
        let (ana, bo) = (&ana, &bo);
        let batch = &batch;
        async move {
            let rater = if who == "ana" { ana } else { bo };
            let next = app.next(rater, batch).await.expect("a task");
            assert_eq!(next["task"]["external_id"], "t1");
            let done = app
                .act(
                    rater,
                    &assignment_id(&next),
                    "skip",
                    &json!({"reason": "too_long"}),
                )
                .await;
            assert_eq!(done.status(), StatusCode::OK);
        }
    };

    // ana skips t1: it needs two ratings and only bo is left to give one.
    skip("ana").await;
    let got = receiver.wait_for(1).await;
    let stalled = got[0].json();
    assert_eq!(stalled["type"], "batch.stalled");
    assert_eq!(stalled["data"]["name"], "stalling");
    assert_eq!(stalled["data"]["tasks"], 1);
    assert_eq!(stalled["data"]["reasons"], json!({"too_few_raters": 1}));
    assert_eq!(stalled["data"]["groups"][0]["raters_needed"], 1);

    // Still stalled at every later look (ten in the time waited): not sent again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.got().len(), 1);

    // cy joins: nothing is stuck. bo skips t1 too: stuck again, and sent again.
    let cy = app.persona("cy", verdict::auth::Role::Rater).await;
    restrict(json!(["ana", "bo", "cy"])).await;
    let view = json_with(
        admin
            .api
            .get(app.url(&format!("/api/v1/batches/{batch}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(view["stalled"]["tasks"], 0, "{view}");
    // The clearing is noted at a look before the next stall: wait until one has noted it.
    let cleared = "SELECT COUNT(*) FROM batches WHERE name = 'stalling' AND stalled_at IS NULL";
    for _ in 0..200 {
        if app.count(cleared).await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        app.count(cleared).await,
        1,
        "the stall checker noted the clearing"
    );
    skip("bo").await;
    let got = receiver.wait_for(2).await;
    assert_eq!(got[1].json()["type"], "batch.stalled");
    assert_eq!(got[1].json()["data"]["tasks"], 1);
    drop(cy);
}

db_test!(a_stall_is_sent_once_when_it_happens_and_again_after_it_cleared: HookApp);

/// Issue 51: a correction reopens a completed batch (its task needs ratings again), and
/// withdrawing the task left open completes it.
async fn a_corrected_task_reopens_its_batch_and_withdrawing_it_completes_it(app: &HookApp) {
    let app = &app.0;
    let (admin, lead) = (app.admin().await, app.lead().await);
    let ana = app.persona("ana", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "fixed",
            &tasks_jsonl(1),
            "&overlap=1&randomize=false",
        )
        .await;
    let receiver = Receiver::start().await;
    let events = ["batch.completed", "batch.reopened"];
    json_with(
        subscribe(app, &admin, &receiver.url(), &events, Some(&batch)).await,
        StatusCode::CREATED,
    )
    .await;
    let change = |body: Value| {
        let lead = &lead;
        let path = format!("/api/v1/batches/{batch}/tasks/t1");
        async move {
            let done = lead.api.patch(app.url(&path)).json(&body).go().await;
            json_with(done, StatusCode::OK).await
        }
    };
    app.rate(&ana, &batch, &complete_answers()).await;
    assert_eq!(
        receiver.wait_for(1).await[0].json()["type"],
        "batch.completed"
    );
    change(json!({"response_b": "Use `1 ** 2`, which is 1."})).await;
    let got = receiver.wait_for(2).await;
    assert_eq!(got[1].json()["type"], "batch.reopened");
    assert_eq!(got[1].json()["data"]["open"], 1);
    change(json!({"withdrawn": true})).await;
    let got = receiver.wait_for(3).await;
    assert_eq!(got[2].json()["type"], "batch.completed");
    assert_eq!(got[2].json()["data"]["tasks"], 0);
}

db_test!(a_corrected_task_reopens_its_batch_and_withdrawing_it_completes_it: HookApp);

/// Issue 50: no answer that shows a secret may be kept by a cache (a new webhook's
/// signing secret, a new API token), nor any other page or API answer, which all hold
/// someone's data; the static assets, which hold nobody's, stay cacheable.
async fn answers_that_show_secrets_are_kept_by_no_cache(app: &HookApp) {
    let app = &app.0;
    let (admin, lead) = (app.admin().await, app.lead().await);
    let receiver = Receiver::start().await;
    let made = subscribe(app, &admin, &receiver.url(), &["rating.submitted"], None).await;
    assert_eq!(made.status(), StatusCode::CREATED);
    assert_eq!(made.headers()["cache-control"], "no-store");
    assert!(made.text().await.unwrap().contains("whsec_"));
    let token = admin
        .api
        .post(app.url("/api/v1/tokens"))
        .json(&json!({"name": "cached?"}))
        .go()
        .await;
    assert_eq!(token.status(), StatusCode::CREATED);
    assert_eq!(token.headers()["cache-control"], "no-store");
    for path in ["/api/v1/me", "/api/v1/webhooks", "/"] {
        let answer = lead.browser_for(app).await.get(app.url(path)).go().await;
        assert_eq!(answer.headers()["cache-control"], "no-store", "{path}");
    }
    let asset = reqwest::get(app.url("/static/app.css")).await.unwrap();
    assert_eq!(asset.status(), StatusCode::OK);
    assert!(
        asset.headers()["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("public"),
        "{:?}",
        asset.headers()
    );
}
db_test!(answers_that_show_secrets_are_kept_by_no_cache: HookApp);

/// The app with a secret to seal signing secrets, quick delivery, and no internal host
/// allowed for webhooks (a server started without `--webhook-allow-hosts`).
async fn guarded_app(backend: Backend) -> Option<TestApp> {
    let config = Config {
        sealing_key: Some(SealingKey::from_secret(SECRET_KEY).expect("secret")),
        webhooks: Delivering {
            endpoints: EndpointPolicy::webhooks(None),
            ..quick()
        },
        ..Config::default()
    };
    TestApp::with_config(backend, config).await
}

/// Internal and metadata addresses in the spellings a lead tried (issue 50): loopback
/// as a decimal, hex, octal and short number, IPv4-mapped and by name; private, unique
/// local and carrier-grade NAT; metadata services directly, through 6to4, NAT64 and the
/// IPv4-translated form, and Alibaba's and Azure's.
const INTERNAL_URLS: [&str; 20] = [
    "http://127.0.0.1:5432/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::1]/",
    "http://localhost:8080/api/v1/me",
    "http://api.localhost/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://[fd12:3456::1]/",
    "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.100.100.200/latest/meta-data/",
    "http://[2002:a9fe:a9fe::1]/",
    "http://[64:ff9b:1::a9fe:a9fe]/",
    "http://[::ffff:0:a9fe:a9fe]/",
    "http://168.63.129.16/",
];

async fn no_lead_points_a_webhook_or_a_judge_at_an_internal_address(db: &TestDb) {
    let Some(app) = guarded_app(db.backend).await else {
        return;
    };
    let (admin, lead) = (app.admin().await, app.lead().await);
    let batch = app.batch(&admin, "guarded", &tasks_jsonl(1), "").await;
    for url in INTERNAL_URLS {
        for who in [&lead, &admin] {
            let refused = subscribe(&app, who, url, &["rating.submitted"], Some(&batch)).await;
            let body = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
            let why = body["fields"]["url"].as_str().unwrap_or_default();
            assert!(
                why.contains("webhooks are never sent to")
                    || why.contains("webhooks are not sent to unless an admin allows it"),
                "{url}: {body}"
            );
        }
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 0);

    // Metadata addresses are refused for judges too, in the same spellings; an internal
    // address stays allowed for them (local model servers).
    for url in INTERNAL_URLS.iter().skip(14) {
        let refused = admin
            .api
            .post(app.url("/api/v1/judges"))
            .json(&json!({"name": "meta", "base_url": url, "model": "m"}))
            .go()
            .await;
        let body = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(
            body["fields"]["base_url"]
                .as_str()
                .is_some_and(|why| why.contains("judges are never sent to")),
            "{url}: {body}"
        );
    }
    let local = admin
        .api
        .post(app.url("/api/v1/judges"))
        .json(&json!({"name": "local", "base_url": "http://127.0.0.1:8081/v1", "model": "m"}))
        .go()
        .await;
    assert_eq!(local.status(), StatusCode::CREATED);
    app.teardown().await;
}
db_test!(no_lead_points_a_webhook_or_a_judge_at_an_internal_address: TestDb);

/// A subscription to an internal address already stored (made before the rule, or while
/// an admin allowed the host) is refused when it is sent, not only when it is made: the
/// receiver gets nothing, and the lead reads why in verdict's words.
async fn an_internal_address_is_refused_at_delivery_too(db: &TestDb) {
    let Some(app) = guarded_app(db.backend).await else {
        return;
    };
    let (admin, lead, rater) = (app.admin().await, app.lead().await, app.rater().await);
    let batch = app.batch(&admin, "stored", &tasks_jsonl(1), "").await;
    let receiver = Receiver::start().await;
    let key = SealingKey::from_secret(SECRET_KEY).expect("secret");
    let webhook = verdict::store::webhooks::Webhook {
        id: uuid::Uuid::now_v7(),
        url: receiver.url(),
        events: verdict::store::webhooks::EventList(vec![
            verdict_core::webhook::EventKind::RatingSubmitted,
        ]),
        batch_id: Some(batch.parse().expect("uuid")),
        secret_sealed: key.seal("whsec_c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IQ=="),
        created_by: Some(lead.id),
        created_at: chrono::Utc::now(),
        stopped_at: None,
        stopped_why: None,
    };
    app.store.create_webhook(&webhook).await.expect("webhook");
    app.rate(&rater, &batch, &complete_answers()).await;
    let listed = settled(&app, &lead, &webhook.id.to_string()).await;
    assert_eq!(listed[0]["state"], "failed", "{listed:?}");
    for tried in listed[0]["tried"].as_array().expect("attempts") {
        let error = tried["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("a loopback address")
                && error.contains("not sent to unless an admin allows it"),
            "{tried}"
        );
    }
    assert!(receiver.got().is_empty(), "nothing reached the receiver");
    app.teardown().await;
}
db_test!(an_internal_address_is_refused_at_delivery_too: TestDb);

/// What a lead reads of a failed attempt is a short cause of verdict's own (refused,
/// timed out, the status), never what the service behind the URL said: a closed port, a
/// port where something that is not HTTP answers (the database), and a receiver that
/// answers an error.
async fn a_failed_delivery_reads_as_a_short_cause(app: &HookApp) {
    let app = &app.0;
    let (admin, rater) = (app.admin().await, app.rater().await);
    let batch = app.batch(&admin, "causes", &tasks_jsonl(1), "").await;
    let closed = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        socket.local_addr().expect("addr").port()
    };
    let not_http = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let not_http_port = not_http.local_addr().expect("addr").port();
    let speaker = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut conn, _)) = not_http.accept().await {
            let _ = conn
                .write_all(b"SSH-2.0-OpenSSH_9.2 internal-build-host.corp\r\n")
                .await;
        }
    });
    let failing = Receiver::start().await;
    failing.fail_next(100);
    let mut hooks = Vec::new();
    for url in [
        format!("http://127.0.0.1:{closed}/hook"),
        format!("http://127.0.0.1:{not_http_port}/hook"),
        failing.url(),
    ] {
        let made = subscribe(app, &admin, &url, &["rating.submitted"], Some(&batch)).await;
        let made = json_with(made, StatusCode::CREATED).await;
        hooks.push(made["id"].as_str().expect("id").to_owned());
    }
    app.rate(&rater, &batch, &complete_answers()).await;
    let mut errors = Vec::new();
    for hook in &hooks {
        let listed = settled(app, &admin, hook).await;
        let tried = listed[0]["tried"].as_array().expect("attempts");
        errors.push(tried[0]["error"].as_str().unwrap_or_default().to_owned());
    }
    speaker.abort();
    assert_eq!(errors[0], "connection refused", "{errors:?}");
    assert_eq!(
        errors[1], "the connection failed before a whole answer came",
        "{errors:?}"
    );
    assert_eq!(errors[2], "the receiver answered 503", "{errors:?}");
    for error in &errors {
        assert!(
            !error.contains("SSH") && !error.contains("os error") && !error.contains("corp"),
            "{error}"
        );
    }
}
db_test!(a_failed_delivery_reads_as_a_short_cause: HookApp);

/// Issue 50: a subscription follows its owner's access at every delivery. A lead taken
/// off the batch, or an admin deactivated, gets no more events (no rater name, no
/// external id): the subscription is stopped, kept for admins with why, and its events
/// are no longer written.
async fn a_webhook_stops_when_its_owner_loses_access(app: &HookApp) {
    let app = &app.0;
    let (admin, lead, rater) = (app.admin().await, app.lead().await, app.rater().await);
    let other_lead = app.persona("lead2", verdict::auth::Role::Lead).await;
    let boss = app.persona("boss", verdict::auth::Role::Admin).await;
    let batch = app.batch(&admin, "followed", &tasks_jsonl(4), "").await;
    let receiver = Receiver::start().await;
    let mut hooks = Vec::new();
    for (who, scope) in [(&lead, Some(batch.as_str())), (&boss, None)] {
        let made = subscribe(app, who, &receiver.url(), &["rating.submitted"], scope).await;
        let made = json_with(made, StatusCode::CREATED).await;
        hooks.push(made["id"].as_str().expect("id").to_owned());
    }
    app.rate(&rater, &batch, &complete_answers()).await;
    // One event, one message id, sent once to each subscription.
    for hook in &hooks {
        let listed = settled(app, &admin, hook).await;
        assert_eq!(listed[0]["state"], "delivered", "both owners may see it");
    }
    assert_eq!(receiver.got().len(), 2);

    // The lead is taken off the batch; the second admin is deactivated.
    let taken_off = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"leads": [other_lead.username]}))
        .go()
        .await;
    assert_eq!(taken_off.status(), StatusCode::OK);
    let deactivated = admin
        .api
        .patch(app.url(&format!("/api/v1/users/{}", boss.id)))
        .json(&json!({"active": false}))
        .go()
        .await;
    assert_eq!(deactivated.status(), StatusCode::OK);

    app.rate(&rater, &batch, &complete_answers()).await;
    for (hook, why) in hooks.iter().zip([
        "its owner, lead, no longer leads its batch",
        "its owner, boss, was deactivated",
    ]) {
        let listed = settled(app, &admin, hook).await;
        assert_eq!(listed[0]["state"], "failed", "{listed:?}");
        assert_eq!(
            listed[0]["tried"][0]["error"],
            format!("not sent: {why}"),
            "{listed:?}"
        );
    }
    let all = json_with(
        admin.api.get(app.url("/api/v1/webhooks")).go().await,
        StatusCode::OK,
    )
    .await;
    for (hook, why) in hooks
        .iter()
        .zip(["no longer leads its batch", "was deactivated"])
    {
        let listed = all
            .as_array()
            .expect("a list")
            .iter()
            .find(|w| w["id"] == hook.as_str())
            .expect("kept for admins");
        assert!(listed["stopped_at"].is_string(), "{listed}");
        assert!(
            listed["stopped_why"]
                .as_str()
                .is_some_and(|w| w.contains(why)),
            "{listed}"
        );
    }
    let page = page_text(app, &admin.browser_for(app).await, "/webhooks").await;
    assert!(
        page.contains("Stopped: its owner, boss, was deactivated"),
        "{page}"
    );

    // Nothing more is written for a stopped subscription, and nothing arrived.
    let written = app.count("SELECT COUNT(*) FROM webhook_deliveries").await;
    app.rate(&rater, &batch, &complete_answers()).await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM webhook_deliveries").await,
        written
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.got().len(), 2, "nothing after the access ended");
}
db_test!(a_webhook_stops_when_its_owner_loses_access: HookApp);

/// A receiver that takes connections and never answers, counting how many it holds at
/// once.
struct DeadReceiver {
    port: u16,
    most_at_once: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

impl DeadReceiver {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let open = Arc::new(AtomicUsize::new(0));
        let most_at_once = Arc::new(AtomicUsize::new(0));
        let (counting, most) = (open.clone(), most_at_once.clone());
        let server = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let now = counting.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let counting = counting.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt;
                    let mut sink = [0u8; 1024];
                    // Read and never answer, until the sender gives up and closes.
                    while matches!(conn.read(&mut sink).await, Ok(n) if n > 0) {}
                    counting.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            port,
            most_at_once,
            server,
        }
    }
}

impl Drop for DeadReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Issue 50: one lead's receiver that never answers slows only itself. With 48 of that
/// lead's subscriptions to it, held for a long time-out, another lead's delivery arrives
/// while every attempt at the dead receiver is still waiting (none has ended), and the
/// dead receiver is sent at most four at a time.
async fn one_slow_receiver_slows_only_itself(db: &TestDb) {
    let config = Config {
        sealing_key: Some(SealingKey::from_secret(SECRET_KEY).expect("secret")),
        webhooks: Delivering {
            timeout: Duration::from_secs(60),
            ..quick()
        },
        ..Config::default()
    };
    let Some(app) = TestApp::with_config(db.backend, config).await else {
        return;
    };
    let admin = app.admin().await;
    let (slow_lead, lead) = (
        app.persona("slowlead", verdict::auth::Role::Lead).await,
        app.lead().await,
    );
    let rater = app.rater().await;
    let dead_batch = app.batch(&admin, "dead", &tasks_jsonl(2), "").await;
    let live_batch = app.batch(&admin, "live", &tasks_jsonl(2), "").await;
    let dead = DeadReceiver::start().await;
    for i in 0..48 {
        let url = format!("http://127.0.0.1:{}/hook{i}", dead.port);
        let made = subscribe(
            &app,
            &slow_lead,
            &url,
            &["rating.submitted"],
            Some(&dead_batch),
        )
        .await;
        assert_eq!(made.status(), StatusCode::CREATED, "{i}");
    }
    let receiver = Receiver::start().await;
    let made = subscribe(
        &app,
        &lead,
        &receiver.url(),
        &["rating.submitted"],
        Some(&live_batch),
    )
    .await;
    assert_eq!(made.status(), StatusCode::CREATED);

    app.rate(&rater, &dead_batch, &complete_answers()).await;
    // The dead receiver has its first connections before the other lead's event exists.
    for _ in 0..400 {
        if dead.most_at_once.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        dead.most_at_once.load(Ordering::SeqCst) > 0,
        "the dead receiver was tried"
    );
    app.rate(&rater, &live_batch, &complete_answers()).await;
    receiver.wait_for(1).await;
    let ended = app
        .count(&format!(
            "SELECT COUNT(*) FROM webhook_attempts a JOIN webhooks w ON w.id = a.webhook_id
             WHERE w.url LIKE '%:{}/%'",
            dead.port
        ))
        .await;
    assert_eq!(
        ended, 0,
        "the other lead's delivery came while every attempt at the dead receiver was still \
         waiting (its attempt is recorded once the receiver has answered it)"
    );
    assert!(
        dead.most_at_once.load(Ordering::SeqCst) <= 4,
        "{} connections at once to one receiver",
        dead.most_at_once.load(Ordering::SeqCst)
    );
    app.teardown().await;
}
db_test!(one_slow_receiver_slows_only_itself: TestDb);

/// Issue 50: subscriptions are capped per person and per batch (settings), with a 422
/// naming the field past the cap, and nothing stored.
async fn subscriptions_are_capped_per_owner_and_per_batch(db: &TestDb) {
    let config = Config {
        sealing_key: Some(SealingKey::from_secret(SECRET_KEY).expect("secret")),
        webhooks: Delivering {
            max_per_owner: 3,
            max_per_batch: 4,
            ..quick()
        },
        ..Config::default()
    };
    let Some(app) = TestApp::with_config(db.backend, config).await else {
        return;
    };
    let (admin, lead) = (app.admin().await, app.lead().await);
    let other = app.persona("lead2", verdict::auth::Role::Lead).await;
    let batch = app.batch(&admin, "capped", &tasks_jsonl(1), "").await;
    let url = "http://127.0.0.1:9/hook";
    for _ in 0..3 {
        let made = subscribe(&app, &lead, url, &["rating.submitted"], Some(&batch)).await;
        assert_eq!(made.status(), StatusCode::CREATED);
    }
    let over = subscribe(&app, &lead, url, &["rating.submitted"], Some(&batch)).await;
    let over = json_with(over, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        over["fields"]["url"]
            .as_str()
            .is_some_and(|why| why.contains("--webhook-max-per-owner")),
        "{over}"
    );
    let made = subscribe(&app, &other, url, &["rating.submitted"], Some(&batch)).await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let full = subscribe(&app, &other, url, &["rating.submitted"], Some(&batch)).await;
    let full = json_with(full, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        full["fields"]["batch"]
            .as_str()
            .is_some_and(|why| why.contains("--webhook-max-per-batch")),
        "{full}"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM webhooks").await, 4);
    app.teardown().await;
}
db_test!(subscriptions_are_capped_per_owner_and_per_batch: TestDb);
