-- verdict schema, PostgreSQL flavour. Keep in step with migrations/sqlite/0001_schema.sql.

CREATE TABLE users (
    id                  UUID PRIMARY KEY NOT NULL,
    username            TEXT NOT NULL UNIQUE,
    password_hash       TEXT NOT NULL,
    role                TEXT NOT NULL CHECK (role IN ('rater', 'lead', 'admin')),
    active              BOOLEAN NOT NULL DEFAULT TRUE,
    created_at          TIMESTAMPTZ NOT NULL,
    password_changed_at TIMESTAMPTZ NOT NULL
);

-- Server-side sessions (tower-sessions records). user_id is copied out of the record so
-- that every session of a user can be ended at once.
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY NOT NULL,
    user_id    UUID REFERENCES users (id) ON DELETE CASCADE,
    data       JSONB NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);

-- API bearer tokens; only a SHA-256 digest of the secret is kept.
CREATE TABLE api_tokens (
    id           UUID PRIMARY KEY NOT NULL,
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);
CREATE INDEX api_tokens_user_id ON api_tokens (user_id);

CREATE TABLE batches (
    id                   UUID PRIMARY KEY NOT NULL,
    name                 TEXT NOT NULL UNIQUE,
    rubric               TEXT NOT NULL,
    overlap              INTEGER NOT NULL DEFAULT 1 CHECK (overlap >= 1),
    randomize            BOOLEAN NOT NULL DEFAULT TRUE,
    state                TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),
    lease_minutes        INTEGER NOT NULL DEFAULT 45 CHECK (lease_minutes >= 1),
    min_explanation_len  INTEGER NOT NULL DEFAULT 20 CHECK (min_explanation_len >= 0),
    -- Conversation-classification questions, answered once per task.
    classifications      JSONB NOT NULL DEFAULT '[]'::jsonb,
    -- FALSE: every rater (lead) may work on the batch; TRUE: only those in batch_members.
    raters_restricted    BOOLEAN NOT NULL DEFAULT FALSE,
    leads_restricted     BOOLEAN NOT NULL DEFAULT FALSE,
    created_by           UUID REFERENCES users (id) ON DELETE SET NULL,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL
);

CREATE TABLE batch_members (
    batch_id UUID NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    user_id  UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role     TEXT NOT NULL CHECK (role IN ('rater', 'lead')),
    PRIMARY KEY (batch_id, user_id, role)
);
CREATE INDEX batch_members_user_id ON batch_members (user_id);

CREATE TABLE tasks (
    id            UUID PRIMARY KEY NOT NULL,
    batch_id      UUID NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    -- Upload order within the batch; the pool hands tasks out in this order.
    seq           BIGINT NOT NULL,
    external_id   TEXT NOT NULL,
    -- A JSON string, or a conversation: a list of {role, content} messages.
    prompt        JSONB NOT NULL,
    response_a    TEXT NOT NULL,
    response_b    TEXT NOT NULL,
    model_a       TEXT,
    model_b       TEXT,
    metadata      JSONB NOT NULL DEFAULT '{}'::jsonb,
    -- Digest of the canonical content, so a re-upload can tell "same" from "changed".
    content_hash  TEXT NOT NULL,
    -- Completed ratings (rated or out of scope) plus open assignments.
    claimed       INTEGER NOT NULL DEFAULT 0 CHECK (claimed >= 0),
    -- claimed >= the batch's overlap: nothing left to hand out. Kept beside claimed so
    -- that picking the next task is one ordered index lookup, whatever the overlap.
    is_full       BOOLEAN NOT NULL DEFAULT FALSE,
    -- The prompt and responses rendered to sanitised HTML, made on first view.
    rendered      JSONB,
    created_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (batch_id, external_id),
    UNIQUE (batch_id, seq)
);
CREATE INDEX tasks_pool ON tasks (batch_id, is_full, seq);

CREATE TABLE assignments (
    id               UUID PRIMARY KEY NOT NULL,
    task_id          UUID NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    batch_id         UUID NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    rater_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- TRUE when the rater was shown B on the left as "A".
    swapped          BOOLEAN NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('open', 'done', 'skipped', 'expired')),
    lease_expires_at TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    UNIQUE (task_id, rater_id)
);
CREATE INDEX assignments_rater ON assignments (rater_id, batch_id, state);
-- A rater holds at most one open assignment per batch, even under concurrent requests.
CREATE UNIQUE INDEX assignments_one_open ON assignments (rater_id, batch_id) WHERE state = 'open';
CREATE INDEX assignments_lease ON assignments (batch_id, state, lease_expires_at);

CREATE TABLE ratings (
    id             UUID PRIMARY KEY NOT NULL,
    assignment_id  UUID NOT NULL UNIQUE REFERENCES assignments (id) ON DELETE CASCADE,
    task_id        UUID NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    batch_id       UUID NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    rater_id       UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    outcome        TEXT NOT NULL CHECK (outcome IN ('rated', 'skipped', 'out_of_scope')),
    status         TEXT NOT NULL CHECK (status IN ('draft', 'submitted', 'returned', 'accepted', 'rejected')),
    -- The answers in the task's canonical orientation.
    answers        JSONB NOT NULL DEFAULT '{}'::jsonb,
    skip_reason    TEXT CHECK (skip_reason IN ('unfamiliar', 'too_long', 'other')),
    note           TEXT,
    time_spent_s   INTEGER NOT NULL DEFAULT 0 CHECK (time_spent_s >= 0),
    -- Optimistic concurrency: bumped on every change.
    version        INTEGER NOT NULL DEFAULT 1,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    submitted_at   TIMESTAMPTZ,
    reviewed_at    TIMESTAMPTZ,
    reviewed_by    UUID REFERENCES users (id) ON DELETE SET NULL,
    review_comment TEXT
);
CREATE INDEX ratings_batch ON ratings (batch_id, status, outcome);
CREATE INDEX ratings_task ON ratings (task_id);
CREATE INDEX ratings_rater ON ratings (rater_id, updated_at);

-- Every change to a rating: who, when, what it was before and after.
CREATE TABLE rating_history (
    id         UUID PRIMARY KEY NOT NULL,
    rating_id  UUID NOT NULL REFERENCES ratings (id) ON DELETE CASCADE,
    actor_id   UUID REFERENCES users (id) ON DELETE SET NULL,
    action     TEXT NOT NULL,
    before     JSONB,
    after      JSONB NOT NULL,
    at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX rating_history_rating ON rating_history (rating_id, at);

CREATE TABLE reviews (
    id          UUID PRIMARY KEY NOT NULL,
    rating_id   UUID NOT NULL REFERENCES ratings (id) ON DELETE CASCADE,
    reviewer_id UUID REFERENCES users (id) ON DELETE SET NULL,
    decision    TEXT NOT NULL CHECK (decision IN ('accept', 'return', 'reject')),
    comment     TEXT,
    -- The rating version the reviewer saw.
    version     INTEGER NOT NULL,
    at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX reviews_rating ON reviews (rating_id, at);

-- Admin and lead actions (user changes, uploads, reviews, exports).
CREATE TABLE audit_log (
    id       UUID PRIMARY KEY NOT NULL,
    actor_id UUID REFERENCES users (id) ON DELETE SET NULL,
    action   TEXT NOT NULL,
    target   TEXT,
    detail   JSONB NOT NULL DEFAULT '{}'::jsonb,
    at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
