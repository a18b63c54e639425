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

use super::SECRET_PREFIX;
use crate::services::judging::CheckedResolver;
use crate::services::judging::cause::RefusedAddress;
use crate::services::judging::endpoint::{EndpointPolicy, cap};
use crate::state::AppState;
use crate::store::webhooks::{Due, Outcome};
use verdict_core::webhook::AfterAttempt;

/// Deliveries one round claims at most; they are sent at once.
const ROUND: i64 = 16;

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

/// Runs until the server stops: a round whenever the last one found work, else after
/// `poll`.
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
    loop {
        let sent = match round(&state, &client, &policy).await {
            Ok(sent) => sent,
            Err(err) => {
                tracing::warn!(%err, "webhooks: could not read the outbox");
                0
            }
        };
        if sent == 0 {
            tokio::time::sleep(state.config().webhooks.poll).await;
        }
    }
}

/// Claims what is due and sends it; the number sent.
async fn round(
    state: &AppState,
    client: &reqwest::Client,
    policy: &EndpointPolicy,
) -> crate::store::StoreResult<usize> {
    let now = Utc::now();
    if !state.store().deliveries_due(now).await? {
        return Ok(0);
    }
    let due = state
        .store()
        .claim_deliveries(now, state.config().webhooks.lease(), ROUND)
        .await?;
    let count = due.len();
    let sends = due
        .into_iter()
        .map(|due| attempt(state, client, policy, due));
    futures_util::future::join_all(sends).await;
    Ok(count)
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
}

/// One attempt at one delivery, recorded whatever happens.
async fn attempt(state: &AppState, client: &reqwest::Client, policy: &EndpointPolicy, due: Due) {
    let started = Instant::now();
    let (status, error, stopped) = match send(state, client, policy, &due).await {
        Sent::Answered(status) => (Some(i32::from(status.as_u16())), None, false),
        Sent::Failed(why) => (None, Some(cap(why, MAX_ERROR_CHARS)), false),
        Sent::Stopped(why) => (None, Some(format!("not sent: {why}")), true),
    };
    let succeeded = status.is_some_and(|s| (200..300).contains(&s));
    let error = match (status, error) {
        (Some(s), None) if !succeeded => Some(format!("the receiver answered {s}")),
        (_, error) => error,
    };
    let attempt = u32::try_from(due.attempts - due.attempts_before).unwrap_or(u32::MAX);
    let now = Utc::now();
    let outcome = match state.config().webhooks.retries.after(attempt, succeeded) {
        _ if stopped => Outcome::GaveUp,
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
async fn send(
    state: &AppState,
    client: &reqwest::Client,
    policy: &EndpointPolicy,
    due: &Due,
) -> Sent {
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
    match post(state, client, policy, due, &webhook).await {
        Ok(status) => Sent::Answered(status),
        Err(why) => Sent::Failed(why),
    }
}

/// Posts the delivery to the subscription's URL, signed; the receiver's status.
async fn post(
    state: &AppState,
    client: &reqwest::Client,
    policy: &EndpointPolicy,
    due: &Due,
    webhook: &crate::store::webhooks::Webhook,
) -> Result<reqwest::StatusCode, String> {
    let url =
        reqwest::Url::parse(&webhook.url).map_err(|e| format!("the URL is not valid: {e}"))?;
    policy.check_url(&url)?;
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
