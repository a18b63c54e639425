//! The delivery worker: every instance runs one. It claims the deliveries that are due
//! (a lease, so two instances never send the same attempt and a dead one's are taken
//! over), sends each signed, and records the attempt and what follows from it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::SECRET_PREFIX;
use crate::services::judging::CheckedResolver;
use crate::services::judging::cause::RefusedAddress;
use crate::services::judging::endpoint::{EndpointPolicy, cap};
use crate::state::AppState;
use crate::store::webhooks::{Due, Outcome};
use verdict_core::webhook::AfterAttempt;

/// The most of an error kept with an attempt.
const MAX_ERROR_CHARS: usize = 500;

/// The `webhook-signature` of a message: `v1,` and the base64 of HMAC-SHA256 under the
/// secret's bytes, over `id.timestamp.body`. `None` for a secret not in the `whsec_`
/// form.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &str) -> Option<String> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// Runs until the server stops. Deliveries are claimed as sending slots come free and
/// each is sent on its own, so none waits for a slower one: at most [`IN_FLIGHT`] at
/// once, at most [`PER_RECEIVER`] to one receiver, and a receiver that keeps failing to
/// answer rests on its own (its deliveries are put back for later, untried).
pub async fn run(state: AppState) {
    let config = state.config();
    let policy = config.webhooks.endpoints.clone();
    let client = match reqwest::Client::builder()
        .timeout(config.webhooks.timeout)
        .connect_timeout(config.webhooks.timeout.min(Duration::from_secs(5)))
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(CheckedResolver(policy.clone())))
        .user_agent(concat!("verdict-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(%err, "webhooks: cannot build the HTTP client; nothing is delivered");
            return;
        }
    };
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let worker = Arc::new(Worker {
        state,
        client,
        policy,
        receivers: Receivers::default(),
        slots: Arc::clone(&slots),
    });
    loop {
        // Wait for a free slot before claiming, so nothing claimed waits for one.
        let Ok(first) = slots.clone().acquire_owned().await else {
            return;
        };
        let free = slots.available_permits() + 1;
        let due = match claim(&worker.state, free).await {
            Ok(due) => due,
            Err(err) => {
                tracing::warn!(%err, "webhooks: could not read the outbox");
                Vec::new()
            }
        };
        if due.is_empty() {
            drop(first);
            tokio::time::sleep(worker.state.config().webhooks.poll).await;
            continue;
        }
        let mut first = Some(first);
        for due in due {
            let slot = match first.take() {
                Some(slot) => slot,
                None => match slots.clone().acquire_owned().await {
                    Ok(slot) => slot,
                    Err(_) => return,
                },
            };
            let worker = Arc::clone(&worker);
            tokio::spawn(async move { attempt(&worker, due, slot).await });
        }
    }
}

/// Deliveries sent at once by one instance.
const IN_FLIGHT: usize = 64;

/// Deliveries sent at once to one receiver (its scheme, host and port).
const PER_RECEIVER: usize = 4;

/// Attempts in a row a receiver may leave unanswered (timed out, refused, cut off)
/// before it rests; each further one doubles the rest, from [`FIRST_REST`] up to
/// [`LONGEST_REST`].
const FAILURES_BEFORE_REST: u32 = 3;
const FIRST_REST: Duration = Duration::from_secs(5);
const LONGEST_REST: Duration = Duration::from_secs(300);

/// How long a delivery waits in memory for its busy receiver (without holding a sending
/// slot) before it is put back in the outbox, and how soon it is looked at again then.
const BUSY_WAIT: Duration = Duration::from_secs(1);

/// What every send needs.
struct Worker {
    state: AppState,
    client: reqwest::Client,
    policy: EndpointPolicy,
    receivers: Receivers,
    /// The instance's sending slots ([`IN_FLIGHT`]).
    slots: Arc<Semaphore>,
}

/// Claims up to `limit` deliveries that are due.
async fn claim(state: &AppState, limit: usize) -> crate::store::StoreResult<Vec<Due>> {
    let now = Utc::now();
    if !state.store().deliveries_due(now).await? {
        return Ok(Vec::new());
    }
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    state
        .store()
        .claim_deliveries(now, state.config().webhooks.lease(), limit)
        .await
}

/// What this instance knows of each receiver: its gate ([`PER_RECEIVER`] sends at once),
/// how many attempts in a row it left unanswered, and until when it rests. Kept in
/// memory: each instance paces its own sends.
#[derive(Default)]
struct Receivers(std::sync::Mutex<std::collections::HashMap<String, Receiver>>);

struct Receiver {
    gate: Arc<Semaphore>,
    unanswered: u32,
    rest_until: Option<Instant>,
}

impl Default for Receiver {
    fn default() -> Self {
        Self {
            gate: Arc::new(Semaphore::new(PER_RECEIVER)),
            unanswered: 0,
            rest_until: None,
        }
    }
}

impl Receivers {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Receiver>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The gate of `origin`, or how long it still rests.
    fn gate(&self, origin: &str) -> Result<Arc<Semaphore>, Duration> {
        let mut all = self.lock();
        let receiver = all.entry(origin.to_owned()).or_default();
        let now = Instant::now();
        match receiver.rest_until.filter(|until| *until > now) {
            Some(until) => Err(until - now),
            None => Ok(Arc::clone(&receiver.gate)),
        }
    }

    /// A send to `origin` ended, answered or not.
    fn end(&self, origin: &str, answered: bool) {
        let mut all = self.lock();
        let receiver = all.entry(origin.to_owned()).or_default();
        if answered {
            receiver.unanswered = 0;
            receiver.rest_until = None;
        } else {
            receiver.unanswered += 1;
            if receiver.unanswered >= FAILURES_BEFORE_REST {
                let doublings = (receiver.unanswered - FAILURES_BEFORE_REST).min(16);
                let rest = FIRST_REST.saturating_mul(1 << doublings).min(LONGEST_REST);
                receiver.rest_until = Some(Instant::now() + rest);
            }
        }
        // Forgotten once nothing holds its gate and it owes no rest.
        let idle = Arc::strong_count(&receiver.gate) == 1;
        if idle && receiver.unanswered == 0 {
            all.remove(origin);
        }
    }
}

/// What came of trying to send a delivery.
enum Sent {
    /// The receiver answered this status.
    Answered(reqwest::StatusCode),
    /// It could not be sent this time (why); it is tried again later.
    Failed(String),
    /// It is never to be sent: the subscription's owner lost the right to its events
    /// (why), and the subscription is stopped.
    Stopped(String),
    /// Its receiver is busy or resting: put back, untried, for this long.
    Later(Duration),
}

/// One attempt at one delivery, recorded whatever happens; or, when its receiver is
/// busy or resting, the delivery put back untried.
async fn attempt(worker: &Worker, due: Due, slot: OwnedSemaphorePermit) {
    let state = &worker.state;
    let started = Instant::now();
    let (status, error, stopped) = match send(worker, &due, slot).await {
        Sent::Answered(status) => (Some(i32::from(status.as_u16())), None, false),
        Sent::Failed(why) => (None, Some(cap(why, MAX_ERROR_CHARS)), false),
        Sent::Stopped(why) => (None, Some(format!("not sent: {why}")), true),
        Sent::Later(wait) => {
            let at = Utc::now() + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
            if let Err(err) = state.store().defer_delivery(&due, at).await {
                // The lease runs out and it is claimed again: nothing is lost.
                tracing::warn!(%err, event = %due.event_id, "webhooks: could not put a delivery back");
            }
            return;
        }
    };
    let succeeded = status.is_some_and(|s| (200..300).contains(&s));
    let error = match (status, error) {
        (Some(s), None) if !succeeded => Some(format!("the receiver answered {s}")),
        (_, error) => error,
    };
    let attempt = u32::try_from(due.attempts - due.attempts_before).unwrap_or(u32::MAX);
    let now = Utc::now();
    // A delivery whose subscription stopped is not retried: it never will be sent.
    let after = if stopped {
        AfterAttempt::GiveUp
    } else {
        state.config().webhooks.retries.after(attempt, succeeded)
    };
    let outcome = match after {
        AfterAttempt::Delivered => Outcome::Delivered,
        AfterAttempt::GiveUp => Outcome::GaveUp,
        AfterAttempt::RetryIn(wait) => Outcome::RetryAt(
            now + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX),
        ),
    };
    let took = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
    if let Err(err) = state
        .store()
        .record_attempt(&due, now, status, error.as_deref(), took, outcome)
        .await
    {
        // The lease runs out and the delivery is sent again: at least once, never lost.
        tracing::warn!(%err, event = %due.event_id, "webhooks: could not record an attempt");
    }
}

/// Sends the delivery if its subscription's owner may still receive it (stopping the
/// subscription if not): the receiver's status, or why it was not sent.
async fn send(worker: &Worker, due: &Due, slot: OwnedSemaphorePermit) -> Sent {
    let state = &worker.state;
    let webhook = match state.store().webhook(due.webhook_id).await {
        Ok(Some(webhook)) => webhook,
        Ok(None) => return Sent::Stopped("the subscription was deleted".into()),
        Err(e) => return Sent::Failed(e.to_string()),
    };
    match super::owner_may_receive(state, &webhook).await {
        Ok(Ok(())) => {}
        Ok(Err(why)) => {
            match state
                .store()
                .stop_webhook(webhook.id, Utc::now(), &why)
                .await
            {
                Ok(true) => {
                    tracing::warn!(webhook = %webhook.id, %why, "webhooks: a subscription was stopped")
                }
                Ok(false) => {}
                Err(e) => return Sent::Failed(e.to_string()),
            }
            return Sent::Stopped(why);
        }
        Err(e) => return Sent::Failed(e.to_string()),
    }
    // What the rules refuse is refused before the receiver counts: it is not the
    // receiver failing to answer.
    let url = match reqwest::Url::parse(&webhook.url) {
        Ok(url) => url,
        Err(e) => return Sent::Failed(format!("the URL is not valid: {e}")),
    };
    if let Err(why) = worker.policy.check_url(&url) {
        return Sent::Failed(why);
    }
    let origin = url.origin().ascii_serialization();
    let gate = match worker.receivers.gate(&origin) {
        Ok(gate) => gate,
        Err(rest) => return Sent::Later(rest),
    };
    let (slot, turn) = match Arc::clone(&gate).try_acquire_owned() {
        Ok(turn) => (slot, turn),
        Err(_) => {
            // The receiver is busy: wait for its turn without holding a sending slot, so
            // the other receivers' deliveries go on; past a while, back in the outbox.
            drop(slot);
            let waiting = Arc::clone(&gate).acquire_owned();
            let Ok(Ok(turn)) = tokio::time::timeout(BUSY_WAIT, waiting).await else {
                return Sent::Later(BUSY_WAIT);
            };
            let Ok(slot) = Arc::clone(&worker.slots).acquire_owned().await else {
                return Sent::Later(BUSY_WAIT);
            };
            (slot, turn)
        }
    };
    let sent = post(state, &worker.client, due, &webhook, url).await;
    drop((slot, turn, gate));
    worker.receivers.end(&origin, sent.is_ok());
    match sent {
        Ok(status) => Sent::Answered(status),
        Err(why) => Sent::Failed(why),
    }
}

/// Posts the delivery to the subscription's URL, signed; the receiver's status.
async fn post(
    state: &AppState,
    client: &reqwest::Client,
    due: &Due,
    webhook: &crate::store::webhooks::Webhook,
    url: reqwest::Url,
) -> Result<reqwest::StatusCode, String> {
    let key = state
        .config()
        .sealing_key
        .as_ref()
        .ok_or("this instance has no VERDICT_SECRET_KEY to open the signing secret")?;
    let secret = key
        .open(&webhook.secret_sealed)
        .ok_or("the signing secret was sealed under another VERDICT_SECRET_KEY")?;
    let id = due.event_id.to_string();
    let timestamp = Utc::now().timestamp();
    let signature =
        sign(&secret, &id, timestamp, &due.payload).ok_or("the signing secret is damaged")?;
    let response = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(due.payload.clone())
        .send()
        .await
        .map_err(|e| {
            // The whole story is for the server's log; the subscriber reads a short cause,
            // never what some service behind the URL said.
            tracing::info!(webhook = %due.webhook_id, err = ?e, "webhooks: an attempt failed");
            short_cause(&e).to_owned()
        })?;
    Ok(response.status())
}

/// Why a request got no answer, in a few words of ours: refused, timed out, or failed.
fn short_cause(e: &reqwest::Error) -> &'static str {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut refused_connection = false;
    while let Some(err) = source {
        if err.is::<RefusedAddress>() {
            return "refused: the URL's host is at an address webhooks are not sent to";
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            refused_connection |= io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        source = err.source();
    }
    if e.is_timeout() {
        "timed out"
    } else if refused_connection {
        "connection refused"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "the connection failed before a whole answer came"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_hmac_sha256_over_id_timestamp_and_body() {
        // The key bytes are 0x00..0x1f; the expected value comes from Python's hmac
        // module over the same key and message, not from this code.
        let secret = format!(
            "{SECRET_PREFIX}{}",
            STANDARD.encode((0u8..32).collect::<Vec<_>>())
        );
        let signature = sign(&secret, "msg_1", 1_700_000_000, r#"{"a":1}"#).unwrap();
        assert_eq!(signature, "v1,AMaOha7DUT/0J0JMycRuYOBSvbx3WtwLd2khXXbaVj4=");
        assert_eq!(sign("not-a-secret", "m", 1, "b"), None);
        assert_eq!(sign("whsec_***", "m", 1, "b"), None);
    }
}
