//! Webhooks: the events a subscription may ask for, what a subscription's settings must
//! be, the message each event sends, and when a failed delivery is tried again.
//!
//! Messages follow the Standard Webhooks layout: a JSON body `{type, timestamp, data}`,
//! sent with the headers `webhook-id` (the event's id, the same on every attempt),
//! `webhook-timestamp` and `webhook-signature` (the app signs; this module knows no
//! keys).

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fields::FieldErrors;

/// What happened, as a subscription names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventKind {
    /// Every task of a batch has the ratings its overlap asks for, none held or returned
    /// any more: sent once per completion.
    #[serde(rename = "batch.completed")]
    BatchCompleted,
    /// A completed batch has work again: a rating returned or rejected, a task added,
    /// corrected or put back, or one more rater asked of a task.
    #[serde(rename = "batch.reopened")]
    BatchReopened,
    /// Tasks of an open batch need more ratings than the people who could take them can
    /// give (see [`crate::stall`]): sent when the stuck count goes from none to some.
    #[serde(rename = "batch.stalled")]
    BatchStalled,
    /// A rater finished an assignment: rated, out of scope or skipped (`outcome` says).
    #[serde(rename = "rating.submitted")]
    RatingSubmitted,
    /// A rater sent a submitted or returned rating again (`version` says which).
    #[serde(rename = "rating.revised")]
    RatingRevised,
    /// A lead accepted, returned or rejected a rating.
    #[serde(rename = "rating.reviewed")]
    RatingReviewed,
    /// A judge run went through every task of its batch.
    #[serde(rename = "judge_run.finished")]
    JudgeRunFinished,
    /// A task's answers disagreed enough for adaptive overlap to ask one more rater.
    #[serde(rename = "task.escalated")]
    TaskEscalated,
}

impl EventKind {
    pub const ALL: [EventKind; 8] = [
        EventKind::BatchCompleted,
        EventKind::BatchReopened,
        EventKind::BatchStalled,
        EventKind::RatingSubmitted,
        EventKind::RatingRevised,
        EventKind::RatingReviewed,
        EventKind::JudgeRunFinished,
        EventKind::TaskEscalated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::BatchCompleted => "batch.completed",
            EventKind::BatchReopened => "batch.reopened",
            EventKind::BatchStalled => "batch.stalled",
            EventKind::RatingSubmitted => "rating.submitted",
            EventKind::RatingRevised => "rating.revised",
            EventKind::RatingReviewed => "rating.reviewed",
            EventKind::JudgeRunFinished => "judge_run.finished",
            EventKind::TaskEscalated => "task.escalated",
        }
    }

    /// What a person reads on the webhooks page.
    pub fn describe(self) -> &'static str {
        match self {
            EventKind::BatchCompleted => "every task of the batch has all its ratings",
            EventKind::BatchReopened => {
                "a completed batch has work again (a return, a rejection, a task added or corrected, one more rater)"
            }
            EventKind::BatchStalled => {
                "tasks of the batch need ratings that nobody who could take them can give"
            }
            EventKind::RatingRevised => "a rater sent a submitted or returned rating again",
            EventKind::RatingSubmitted => {
                "a rater finished a task (rated, out of scope or skipped)"
            }
            EventKind::RatingReviewed => "a lead accepted, returned or rejected a rating",
            EventKind::JudgeRunFinished => "a judge run went through its whole batch",
            EventKind::TaskEscalated => "adaptive overlap asked one more rater of a task",
        }
    }

    /// The pattern a subscription's stored event list (a JSON array of names) matches
    /// when it asks for this event, for SQL `LIKE`: the quoted name, which no other
    /// name contains (`_` matches itself among the rest).
    pub fn like_pattern(self) -> String {
        format!("%\"{}\"%", self.as_str())
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EventKind {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| {
                format!(
                    "{name:?} is not an event; the events are {}",
                    Self::ALL.map(EventKind::as_str).join(", ")
                )
            })
    }
}

/// The longest URL a subscription may have.
pub const MAX_URL_CHARS: usize = 2000;

/// A subscription's settings as given, checked: the URL's form (where it may point is the
/// server's policy, checked by the app), and at least one event, each known, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub url: String,
    pub events: Vec<EventKind>,
}

impl Subscription {
    /// Checks `url` and `events`; every problem is named under its field.
    pub fn check(url: &str, events: &[String]) -> Result<Self, FieldErrors> {
        let mut errors = FieldErrors::new();
        let url = url.trim();
        if url.is_empty() {
            errors.insert("url".into(), "is required".into());
        } else if url.chars().count() > MAX_URL_CHARS {
            errors.insert(
                "url".into(),
                format!("must be at most {MAX_URL_CHARS} characters"),
            );
        } else if !(url.starts_with("https://") || url.starts_with("http://")) {
            errors.insert("url".into(), "must start with https:// or http://".into());
        }
        let mut kinds = Vec::new();
        if events.is_empty() {
            errors.insert("events".into(), "name at least one event".into());
        }
        for name in events {
            match name.trim().parse::<EventKind>() {
                Ok(kind) if kinds.contains(&kind) => {
                    errors.insert("events".into(), format!("{kind} is named twice"));
                }
                Ok(kind) => kinds.push(kind),
                Err(why) => {
                    errors.insert("events".into(), why);
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        kinds.sort();
        Ok(Self {
            url: url.to_owned(),
            events: kinds,
        })
    }
}

/// One event, as stored for each subscription that asks for it and sent as the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The message id (`webhook-id`): the same for every subscription and every attempt,
    /// so a receiver can drop a message it has already handled.
    pub id: Uuid,
    pub kind: EventKind,
    /// The batch it concerns: subscriptions to one batch get only its events.
    pub batch_id: Uuid,
    pub at: DateTime<Utc>,
    pub data: Value,
}

impl Event {
    pub fn new(kind: EventKind, batch_id: Uuid, at: DateTime<Utc>, data: Value) -> Self {
        Self {
            id: Uuid::now_v7(),
            kind,
            batch_id,
            at,
            data,
        }
    }

    /// The body sent: `{"type", "timestamp", "data"}`, the batch's id inside `data`.
    pub fn body(&self) -> String {
        let mut data = self.data.clone();
        if let Value::Object(map) = &mut data {
            map.insert("batch_id".into(), json!(self.batch_id));
        }
        json!({
            "type": self.kind.as_str(),
            "timestamp": self.at.to_rfc3339_opts(SecondsFormat::Micros, true),
            "data": data,
        })
        .to_string()
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Waiting for its first or next attempt.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed; only a redelivery by hand tries again.
    Failed,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        }
    }
}

impl TryFrom<String> for DeliveryState {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        match name.as_str() {
            "pending" => Ok(DeliveryState::Pending),
            "delivered" => Ok(DeliveryState::Delivered),
            "failed" => Ok(DeliveryState::Failed),
            _ => Err(format!("{name:?} is not a delivery state")),
        }
    }
}

/// When failed attempts are tried again: the first wait, doubled after each failure up
/// to a ceiling, for at most `attempts` attempts in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    pub first_wait: Duration,
    pub longest_wait: Duration,
    pub attempts: u32,
}

impl Default for Retries {
    /// Sixteen attempts over about six and a half hours: 5 s, 10 s, 20 s, ... then an
    /// hour apart, so a receiver down for a morning still gets everything.
    fn default() -> Self {
        Self {
            first_wait: Duration::from_secs(5),
            longest_wait: Duration::from_secs(3600),
            attempts: 16,
        }
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterAttempt {
    Delivered,
    RetryIn(Duration),
    GiveUp,
}

impl Retries {
    /// After attempt number `attempt` (from 1), which succeeded or not.
    pub fn after(&self, attempt: u32, succeeded: bool) -> AfterAttempt {
        if succeeded {
            return AfterAttempt::Delivered;
        }
        if attempt >= self.attempts {
            return AfterAttempt::GiveUp;
        }
        let doublings = attempt.saturating_sub(1).min(30);
        let wait = self
            .first_wait
            .saturating_mul(1u32 << doublings)
            .min(self.longest_wait);
        AfterAttempt::RetryIn(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_name_reads_back_and_no_pattern_matches_another() {
        for kind in EventKind::ALL {
            assert_eq!(kind.as_str().parse::<EventKind>(), Ok(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
            for other in EventKind::ALL {
                let stored = serde_json::to_string(&[other]).unwrap();
                let pattern = kind.like_pattern();
                let inner = pattern.trim_matches('%');
                assert_eq!(stored.contains(inner), kind == other, "{kind} in {stored}");
            }
        }
        let unknown = "rating.created".parse::<EventKind>().unwrap_err();
        assert!(
            unknown.contains("batch.completed, batch.reopened, batch.stalled, rating.submitted"),
            "{unknown}"
        );
    }

    #[test]
    fn a_subscription_names_every_problem_under_its_field() {
        let ok = Subscription::check(
            " https://hooks.example.com/verdict ",
            &["rating.reviewed".into(), "batch.completed".into()],
        )
        .unwrap();
        assert_eq!(ok.url, "https://hooks.example.com/verdict");
        assert_eq!(
            ok.events,
            vec![EventKind::BatchCompleted, EventKind::RatingReviewed]
        );
        let errors = Subscription::check("ftp://x", &[]).unwrap_err();
        assert_eq!(
            errors.get("url").unwrap(),
            "must start with https:// or http://"
        );
        assert_eq!(errors.get("events").unwrap(), "name at least one event");
        let errors =
            Subscription::check("", &["rating.submitted".into(), "rating.submitted".into()])
                .unwrap_err();
        assert_eq!(errors.get("url").unwrap(), "is required");
        assert!(errors.get("events").unwrap().contains("named twice"));
        let long = format!("https://x/{}", "a".repeat(MAX_URL_CHARS));
        assert!(
            Subscription::check(&long, &["task.escalated".into()])
                .unwrap_err()
                .get("url")
                .unwrap()
                .contains("at most 2000")
        );
    }

    #[test]
    fn the_body_carries_type_timestamp_and_the_batch() {
        let batch = Uuid::now_v7();
        let at = DateTime::parse_from_rfc3339("2026-11-28T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let event = Event::new(
            EventKind::RatingSubmitted,
            batch,
            at,
            json!({"rating_id": "r1", "outcome": "rated"}),
        );
        let body: Value = serde_json::from_str(&event.body()).unwrap();
        assert_eq!(body["type"], "rating.submitted");
        assert_eq!(body["timestamp"], "2026-11-28T10:00:00.000000Z");
        assert_eq!(body["data"]["batch_id"], json!(batch));
        assert_eq!(body["data"]["outcome"], "rated");
    }

    #[test]
    fn retries_wait_longer_each_time_up_to_the_ceiling_then_give_up() {
        let retries = Retries::default();
        assert_eq!(retries.after(1, true), AfterAttempt::Delivered);
        let waits: Vec<u64> = (1..16)
            .map(|attempt| match retries.after(attempt, false) {
                AfterAttempt::RetryIn(wait) => wait.as_secs(),
                other => panic!("attempt {attempt}: {other:?}"),
            })
            .collect();
        assert_eq!(
            waits,
            [
                5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600, 3600, 3600, 3600
            ]
        );
        // About six and a half hours from the first attempt to the last.
        assert_eq!(waits.iter().sum::<u64>(), 23_115);
        assert_eq!(retries.after(16, false), AfterAttempt::GiveUp);
        assert_eq!(retries.after(40, false), AfterAttempt::GiveUp);
    }
}
