-- Webhooks: subscriptions of a URL to events, and an outbox of deliveries written in the
-- same transaction as the change each reports, so none is lost to a crash and none is
-- sent for a change that was rolled back.
CREATE TABLE webhooks (
    id             BLOB PRIMARY KEY NOT NULL,
    url            TEXT NOT NULL,
    -- The events asked for, a JSON array of names ("rating.submitted", ...).
    events         TEXT NOT NULL,
    -- Only this batch's events; NULL: every batch's (admins only).
    batch_id       BLOB REFERENCES batches (id) ON DELETE CASCADE,
    -- The signing secret (whsec_...), sealed with the server's VERDICT_SECRET_KEY.
    secret_sealed  TEXT NOT NULL,
    created_by     BLOB REFERENCES users (id) ON DELETE SET NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX webhooks_batch ON webhooks (batch_id);

-- One event for one subscription. The event id is the message id a receiver sees
-- (webhook-id), the same on every attempt.
CREATE TABLE webhook_deliveries (
    webhook_id       BLOB NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id         BLOB NOT NULL,
    event            TEXT NOT NULL,
    batch_id         BLOB,
    -- The body sent, exactly: the signature covers these bytes.
    payload          TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    -- Attempts made before the last redelivery by hand: the retry budget counts from here.
    attempts_before  INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT NOT NULL,
    -- An instance sending it holds it until then; past it, another may send it again.
    lease_until      TEXT,
    created_at       TEXT NOT NULL,
    delivered_at     TEXT,
    PRIMARY KEY (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_listed ON webhook_deliveries (webhook_id, created_at);

-- Every attempt at a delivery: the receiver's status, or why there was none.
CREATE TABLE webhook_attempts (
    webhook_id   BLOB NOT NULL,
    event_id     BLOB NOT NULL,
    attempt      INTEGER NOT NULL,
    at           TEXT NOT NULL,
    status       INTEGER,
    error        TEXT,
    duration_ms  INTEGER NOT NULL,
    PRIMARY KEY (webhook_id, event_id, attempt),
    FOREIGN KEY (webhook_id, event_id) REFERENCES webhook_deliveries (webhook_id, event_id) ON DELETE CASCADE
);
