//! Webhook subscriptions and their outbox. An event is written, once per subscription
//! that asks for it, by [`emit!`] inside the transaction of the change it reports; a
//! delivery worker claims what is due ([`Store::claim_deliveries`]), sends it and records
//! the attempt ([`Store::record_attempt`]). A claim is a lease: if the instance sending
//! it dies, another sends it again once the lease runs out, so a receiver gets every
//! event at least once and tells repeats apart by the message id.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;
use verdict_core::webhook::{DeliveryState, EventKind};

use crate::page::{Cursor, Page};
use crate::{Store, StoreResult, read, transaction, write};

/// A subscription as stored (its secret stays sealed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Webhook {
    pub id: Uuid,
    pub url: String,
    /// Kept as the text of a JSON array on both databases, so that one `LIKE` finds
    /// the subscriptions of an event ([`EventKind::like_pattern`]).
    #[sqlx(try_from = "String")]
    pub events: EventList,
    pub batch_id: Option<Uuid>,
    pub secret_sealed: String,
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    /// When it was stopped because its owner lost the right to its events; it is sent
    /// nothing more.
    pub stopped_at: Option<DateTime<Utc>>,
    /// Why, in words for admins.
    pub stopped_why: Option<String>,
}

/// The events a subscription asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventList(pub Vec<EventKind>);

impl TryFrom<String> for EventList {
    type Error = serde_json::Error;

    fn try_from(stored: String) -> Result<Self, Self::Error> {
        serde_json::from_str(&stored).map(Self)
    }
}

/// A delivery the worker claimed, with where and how it goes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Due {
    pub webhook_id: Uuid,
    pub event_id: Uuid,
    pub payload: String,
    /// The number of this attempt, counted over every attempt at this delivery.
    pub attempts: i32,
    /// Of those, the attempts before it was last redelivered by hand.
    pub attempts_before: i32,
}

/// One attempt at a delivery.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Attempt {
    pub attempt: i32,
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status; none when it never answered (`error` says why).
    pub status: Option<i32>,
    pub error: Option<String>,
    pub duration_ms: i32,
}

/// A delivery as listed, with its attempts.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Delivery {
    /// The message id the receiver sees in `webhook-id`.
    pub event_id: Uuid,
    pub event: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub attempts: i32,
    /// When the next attempt is due, while pending.
    pub next_attempt_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    /// The body sent, exactly as signed.
    pub payload: String,
    #[sqlx(skip)]
    pub tried: Vec<Attempt>,
}

/// What an attempt led to.
#[derive(Debug, Clone, Copy)]
pub enum Outcome {
    Delivered,
    RetryAt(DateTime<Utc>),
    GaveUp,
}

/// The events any subscription asks for of batch `$batch` (its own or every batch's),
/// read inside the transaction `$tx`: one read per change, and an event is only put
/// together (with what it names read) when someone asked for it, so a change nobody
/// subscribed to costs that one indexed read of a small table.
macro_rules! subscribed {
    ($tx:expr, $batch:expr) => {
        async {
            let lists: Vec<(String,)> = sqlx::query_as(
                "SELECT events FROM webhooks
                 WHERE (batch_id IS NULL OR batch_id = $1) AND stopped_at IS NULL",
            )
            .bind($batch)
            .fetch_all(&mut *$tx)
            .await?;
            let mut kinds: Vec<verdict_core::webhook::EventKind> = Vec::new();
            for (list,) in lists {
                // Written only from checked names; one that does not read asks for nothing.
                if let Ok($crate::webhooks::EventList(asked)) =
                    $crate::webhooks::EventList::try_from(list)
                {
                    kinds.extend(asked);
                }
            }
            Ok::<_, sqlx::Error>(kinds)
        }
        .await
    };
}
pub(crate) use subscribed;

/// Writes `$event` (a [`verdict_core::webhook::Event`]) into the outbox of every
/// subscription that asks for its kind, to its batch or to every batch, inside the
/// transaction `$tx`. Evaluates to the number of deliveries written. A macro for the
/// reason `insert_history!` is one: it runs on either backend's transaction.
macro_rules! emit {
    ($tx:expr, $event:expr) => {{
        let event: &verdict_core::webhook::Event = $event;
        sqlx::query(
            "INSERT INTO webhook_deliveries (webhook_id, event_id, event, batch_id, payload, state,
                                             attempts, next_attempt_at, created_at)
             SELECT w.id, $1, $2, $3, $4, 'pending', 0, $5, $5 FROM webhooks w
             WHERE (w.batch_id IS NULL OR w.batch_id = $3) AND w.events LIKE $6
               AND w.stopped_at IS NULL",
        )
        .bind(event.id)
        .bind(event.kind.as_str())
        .bind(event.batch_id)
        .bind(event.body())
        .bind(event.at)
        .bind(event.kind.like_pattern())
        .execute(&mut *$tx)
        .await
        .map(|done| done.rows_affected())
    }};
}
pub(crate) use emit;

/// A rating's event (`rating.submitted`, `rating.reviewed`) when `$wanted` (what
/// [`subscribed!`] read) holds its kind, with the
/// task's external id and the rater's name beside the ids, and `$extra` (a JSON object's
/// further fields) merged in.
macro_rules! rating_event {
    ($tx:expr, $wanted:expr, $kind:expr, $rating:expr, $at:expr, $extra:expr) => {
        async {
            let rating: &verdict_core::rating::Rating = $rating;
            if !$wanted.contains(&$kind) {
                return Ok::<(), sqlx::Error>(());
            }
            let (external_id, rater): (String, String) = sqlx::query_as(
                "SELECT t.external_id, u.username FROM tasks t, users u WHERE t.id = $1 AND u.id = $2",
            )
            .bind(rating.task_id)
            .bind(rating.rater_id)
            .fetch_one(&mut *$tx)
            .await?;
            let mut data = serde_json::json!({
                "rating_id": rating.id, "task_id": rating.task_id, "external_id": external_id,
                "rater": rater, "outcome": rating.outcome, "status": rating.status,
                "version": rating.version,
            });
            if let (Some(map), serde_json::Value::Object(extra)) = (data.as_object_mut(), $extra) {
                map.extend(extra);
            }
            let event = verdict_core::webhook::Event::new($kind, rating.batch_id, $at, data);
            $crate::webhooks::emit!($tx, &event)?;
            Ok(())
        }
        .await
    };
}
pub(crate) use rating_event;

/// `task.escalated` for task `$task` of batch `$batch`, when anyone subscribed.
macro_rules! escalated_event {
    ($tx:expr, $wanted:expr, $batch:expr, $task:expr, $at:expr) => {
        async {
            let kind = verdict_core::webhook::EventKind::TaskEscalated;
            if !$wanted.contains(&kind) {
                return Ok::<(), sqlx::Error>(());
            }
            let (external_id, extra): (String, i32) =
                sqlx::query_as("SELECT external_id, extra FROM tasks WHERE id = $1")
                    .bind($task)
                    .fetch_one(&mut *$tx)
                    .await?;
            let data = serde_json::json!({
                "task_id": $task, "external_id": external_id, "extra_raters": extra,
            });
            let event = verdict_core::webhook::Event::new(kind, $batch, $at, data);
            $crate::webhooks::emit!($tx, &event)?;
            Ok(())
        }
        .await
    };
}
pub(crate) use escalated_event;

/// `batch.completed` and `batch.reopened` for batch `$batch`, after a change that may
/// complete or reopen it, when anyone subscribed to either. A batch is complete when every
/// task (gold aside) has the ratings its overlap asks for, none is held (an open
/// assignment) and none is back with its rater (a returned rating). `batches.completed_at`
/// keeps whether it was complete when last looked at, so a completion is reported once,
/// and a completed batch that has work again (a return, a rejection, a new task, one more
/// rater asked) is reported reopened, then completed again when that work is done. It is
/// kept only while someone listens: a subscription made later starts from the state
/// seen at the next change.
macro_rules! completion_event {
    ($tx:expr, $wanted:expr, $batch:expr, $at:expr) => {
        async {
            use verdict_core::webhook::EventKind;
            let wanted: &[EventKind] = &$wanted;
            let completed = wanted.contains(&EventKind::BatchCompleted);
            let reopened = wanted.contains(&EventKind::BatchReopened);
            if !completed && !reopened {
                return Ok::<(), sqlx::Error>(());
            }
            let (name, tasks, open, returned, was): (String, i64, i64, i64, bool) = sqlx::query_as(
                "SELECT b.name,
                        (SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id AND t.withdrawn_at IS NULL
                           AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id)),
                        (SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id AND t.is_full = FALSE
                           AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id))
                        + (SELECT COUNT(*) FROM assignments a WHERE a.batch_id = b.id AND a.state = 'open'
                           AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = a.task_id)),
                        (SELECT COUNT(*) FROM ratings r WHERE r.batch_id = b.id AND r.status = 'returned'
                           AND r.gold = FALSE AND r.rater_kind = 'human'),
                        b.completed_at IS NOT NULL
                 FROM batches b WHERE b.id = $1",
            )
            .bind($batch)
            .fetch_one(&mut *$tx)
            .await?;
            let complete = open == 0 && returned == 0;
            if complete == was {
                return Ok(());
            }
            sqlx::query("UPDATE batches SET completed_at = $2 WHERE id = $1")
                .bind($batch)
                .bind(complete.then_some($at))
                .execute(&mut *$tx)
                .await?;
            let (kind, asked) = if complete {
                (EventKind::BatchCompleted, completed)
            } else {
                (EventKind::BatchReopened, reopened)
            };
            if asked {
                let data = if complete {
                    serde_json::json!({"name": name, "tasks": tasks})
                } else {
                    serde_json::json!({
                        "name": name, "tasks": tasks, "open": open, "returned": returned,
                    })
                };
                let event = verdict_core::webhook::Event::new(kind, $batch, $at, data);
                $crate::webhooks::emit!($tx, &event)?;
            }
            Ok(())
        }
        .await
    };
}
pub(crate) use completion_event;

/// `judge_run.finished` for run `$run`, with its judge's name and its call counts, when
/// anyone subscribed to its batch's events.
macro_rules! finished_event {
    ($tx:expr, $run:expr, $at:expr) => {
        async {
            let kind = verdict_core::webhook::EventKind::JudgeRunFinished;
            let (batch, judge, tasks): (uuid::Uuid, String, i32) = sqlx::query_as(
                "SELECT r.batch_id, j.name, r.tasks FROM judge_runs r JOIN judges j ON j.id = r.judge_id
                 WHERE r.id = $1",
            )
            .bind($run)
            .fetch_one(&mut *$tx)
            .await?;
            if !$crate::webhooks::subscribed!($tx, batch)?.contains(&kind) {
                return Ok::<(), sqlx::Error>(());
            }
            let calls: Vec<(String, i64)> = sqlx::query_as(
                "SELECT status, COUNT(*) FROM judge_calls WHERE run_id = $1 GROUP BY status ORDER BY status",
            )
            .bind($run)
            .fetch_all(&mut *$tx)
            .await?;
            let calls: serde_json::Map<String, serde_json::Value> =
                calls.into_iter().map(|(status, n)| (status, n.into())).collect();
            let data = serde_json::json!({
                "run_id": $run, "judge": judge, "tasks": tasks, "calls": calls,
            });
            let event = verdict_core::webhook::Event::new(kind, batch, $at, data);
            $crate::webhooks::emit!($tx, &event)?;
            Ok(())
        }
        .await
    };
}
pub(crate) use finished_event;

const WEBHOOK_COLUMNS: &str =
    "id, url, events, batch_id, secret_sealed, created_by, created_at, stopped_at, stopped_why";

const DELIVERY_COLUMNS: &str =
    "event_id, event, state, attempts, next_attempt_at, created_at, delivered_at, payload";

impl Store {
    /// Stores a new subscription.
    pub async fn create_webhook(&self, webhook: &Webhook) -> StoreResult<()> {
        let events = serde_json::to_string(&webhook.events.0).unwrap_or_else(|_| "[]".into());
        write!(self, |pool| {
            sqlx::query(
            "INSERT INTO webhooks (id, url, events, batch_id, secret_sealed, created_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)"
        )
        .bind(webhook.id)
        .bind(&webhook.url)
        .bind(&events)
        .bind(webhook.batch_id)
        .bind(&webhook.secret_sealed)
        .bind(webhook.created_by)
        .bind(webhook.created_at)
        .execute(pool)
        .await
        .map(|done| done.rows_affected())
        })?;
        Ok(())
    }

    /// Every subscription, oldest first.
    pub async fn webhooks(&self) -> StoreResult<Vec<Webhook>> {
        let sql = format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks ORDER BY created_at, id");
        Ok(read!(self, |pool| sqlx::query_as::<_, Webhook>(&sql)
            .fetch_all(pool)
            .await)?)
    }

    pub async fn webhook(&self, id: Uuid) -> StoreResult<Option<Webhook>> {
        let sql = format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1");
        Ok(read!(self, |pool| sqlx::query_as::<_, Webhook>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?)
    }

    /// Stops a subscription for `why`; false when it was stopped already (or is gone).
    pub async fn stop_webhook(&self, id: Uuid, at: DateTime<Utc>, why: &str) -> StoreResult<bool> {
        let stopped = write!(self, |pool| sqlx::query(
            "UPDATE webhooks SET stopped_at = $2, stopped_why = $3
             WHERE id = $1 AND stopped_at IS NULL"
        )
        .bind(id)
        .bind(at)
        .bind(why)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(stopped == 1)
    }

    /// Deletes a subscription with its deliveries; false when there was none.
    pub async fn delete_webhook(&self, id: Uuid) -> StoreResult<bool> {
        let gone = write!(self, |pool| sqlx::query(
            "DELETE FROM webhooks WHERE id = $1"
        )
        .bind(id)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(gone == 1)
    }

    /// Whether any delivery is due at `now` and held by nobody: a read, so an outbox with
    /// nothing to send costs the writer nothing.
    pub async fn deliveries_due(&self, now: DateTime<Utc>) -> StoreResult<bool> {
        Ok(read!(self, |pool| sqlx::query_scalar::<_, bool>(
            "SELECT EXISTS (SELECT 1 FROM webhook_deliveries
                            WHERE state = 'pending' AND next_attempt_at <= $1
                              AND (lease_until IS NULL OR lease_until <= $1))"
        )
        .bind(now)
        .fetch_one(pool)
        .await)?)
    }

    /// Claims up to `limit` deliveries due at `now` that nobody holds, for `lease`: each
    /// counts as one more attempt from now on.
    pub async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: i64,
    ) -> StoreResult<Vec<Due>> {
        let until = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let sql = format!(
            "UPDATE webhook_deliveries SET lease_until = $2, attempts = attempts + 1
             WHERE (webhook_id, event_id) IN (
                 SELECT webhook_id, event_id FROM webhook_deliveries
                 WHERE state = 'pending' AND next_attempt_at <= $1
                   AND (lease_until IS NULL OR lease_until <= $1)
                 ORDER BY next_attempt_at LIMIT $3{})
             RETURNING webhook_id, event_id, payload, attempts, attempts_before",
            self.skip_locked_clause()
        );
        Ok(write!(self, |pool| sqlx::query_as::<_, Due>(&sql)
            .bind(now)
            .bind(until)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    /// Gives a claimed delivery back unsent, due again at `at`: the claim's attempt is
    /// not counted (its receiver was busy or resting, so nothing was tried).
    pub async fn defer_delivery(&self, due: &Due, at: DateTime<Utc>) -> StoreResult<()> {
        write!(self, |pool| sqlx::query(
            "UPDATE webhook_deliveries SET attempts = attempts - 1, lease_until = NULL,
                 next_attempt_at = $3
             WHERE webhook_id = $1 AND event_id = $2 AND attempts = $4"
        )
        .bind(due.webhook_id)
        .bind(due.event_id)
        .bind(at)
        .bind(due.attempts)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// How many subscriptions `owner` made, and how many are of batch `batch`.
    pub async fn webhook_counts(
        &self,
        owner: Uuid,
        batch: Option<Uuid>,
    ) -> StoreResult<(i64, i64)> {
        Ok(read!(self, |pool| sqlx::query_as::<_, (i64, i64)>(
            "SELECT (SELECT COUNT(*) FROM webhooks WHERE created_by = $1),
                    (SELECT COUNT(*) FROM webhooks WHERE batch_id = $2)"
        )
        .bind(owner)
        .bind(batch)
        .fetch_one(pool)
        .await)?)
    }

    /// Records attempt `due.attempts` and where the delivery now stands; the lease ends.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_attempt(
        &self,
        due: &Due,
        at: DateTime<Utc>,
        status: Option<i32>,
        error: Option<&str>,
        duration_ms: i32,
        outcome: Outcome,
    ) -> StoreResult<()> {
        let (state, next, delivered) = match outcome {
            Outcome::Delivered => (DeliveryState::Delivered, at, Some(at)),
            Outcome::RetryAt(next) => (DeliveryState::Pending, next, None),
            Outcome::GaveUp => (DeliveryState::Failed, at, None),
        };
        transaction!(self, |tx| {
            sqlx::query(
                "INSERT INTO webhook_attempts (webhook_id, event_id, attempt, at, status, error, duration_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            )
            .bind(due.webhook_id)
            .bind(due.event_id)
            .bind(due.attempts)
            .bind(at)
            .bind(status)
            .bind(error)
            .bind(duration_ms)
            .execute(&mut *tx)
            .await?;
            // Only while it is still this attempt's: a redelivery by hand meanwhile
            // keeps its own schedule.
            sqlx::query(
                "UPDATE webhook_deliveries SET state = $3, next_attempt_at = $4, delivered_at = $5,
                     lease_until = NULL
                 WHERE webhook_id = $1 AND event_id = $2 AND attempts = $6",
            )
            .bind(due.webhook_id)
            .bind(due.event_id)
            .bind(state.as_str())
            .bind(next)
            .bind(delivered)
            .bind(due.attempts)
            .execute(&mut *tx)
            .await?;
        });
        Ok(())
    }

    /// Puts a delivery back in the queue, due now, with a fresh set of retries; false
    /// when the subscription has no such delivery.
    pub async fn redeliver(&self, webhook_id: Uuid, event_id: Uuid) -> StoreResult<bool> {
        let now = Utc::now();
        let changed = write!(self, |pool| {
            sqlx::query(
            "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $3, lease_until = NULL,
                 attempts_before = attempts
             WHERE webhook_id = $1 AND event_id = $2"
        )
        .bind(webhook_id)
        .bind(event_id)
        .bind(now)
        .execute(pool)
        .await
        .map(|done| done.rows_affected())
        })?;
        Ok(changed == 1)
    }

    /// A subscription's deliveries, newest first, each with its attempts (oldest first).
    pub async fn deliveries(
        &self,
        webhook_id: Uuid,
        after: Option<Cursor>,
        limit: i64,
    ) -> StoreResult<Page<Delivery>> {
        let sql = format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries
             WHERE webhook_id = $1 AND ($2 OR created_at < $3 OR (created_at = $3 AND event_id < $4))
             ORDER BY created_at DESC, event_id DESC LIMIT $5"
        );
        let (at, id) = after.map_or((Utc::now(), Uuid::max()), |c| (c.at, c.id));
        let mut rows = read!(self, |pool| sqlx::query_as::<_, Delivery>(&sql)
            .bind(webhook_id)
            .bind(after.is_none())
            .bind(at)
            .bind(id)
            .bind(limit + 1)
            .fetch_all(pool)
            .await)?;
        let total: i64 = read!(self, |pool| sqlx::query_scalar(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = $1"
        )
        .bind(webhook_id)
        .fetch_one(pool)
        .await)?;
        // Every attempt of the page's deliveries in one read, each delivery's in order.
        #[derive(sqlx::FromRow)]
        struct Tried {
            event_id: Uuid,
            #[sqlx(flatten)]
            attempt: Attempt,
        }
        if !rows.is_empty() {
            let ids: Vec<String> = (0..rows.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "SELECT event_id, attempt, at, status, error, duration_ms FROM webhook_attempts
                 WHERE webhook_id = $1 AND event_id IN ({}) ORDER BY attempt",
                ids.join(", ")
            );
            let tried = read!(self, |pool| {
                let mut query = sqlx::query_as::<_, Tried>(&sql).bind(webhook_id);
                for delivery in &rows {
                    query = query.bind(delivery.event_id);
                }
                query.fetch_all(pool).await
            })?;
            let mut by_event: std::collections::HashMap<Uuid, Vec<Attempt>> =
                std::collections::HashMap::new();
            for t in tried {
                by_event.entry(t.event_id).or_default().push(t.attempt);
            }
            for delivery in &mut rows {
                delivery.tried = by_event.remove(&delivery.event_id).unwrap_or_default();
            }
        }
        Ok(Page::of(rows, limit, total, |d| Cursor {
            at: d.created_at,
            id: d.event_id,
        }))
    }

    /// Deliveries in the database by state, for operators.
    pub async fn webhook_delivery_counts(&self) -> StoreResult<Vec<(String, i64)>> {
        Ok(read!(self, |pool| sqlx::query_as::<_, (String, i64)>(
            "SELECT state, COUNT(*) FROM webhook_deliveries GROUP BY state ORDER BY state"
        )
        .fetch_all(pool)
        .await)?)
    }
}
