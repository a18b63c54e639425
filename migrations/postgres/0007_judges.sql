-- LLM judges beside human raters. A judge answers through an account of its own (kind
-- 'judge'), which never signs in; its ratings sit in `ratings` like a human's, marked
-- with the rater's kind so that human metrics, review and progress leave them out.
ALTER TABLE users ADD COLUMN kind TEXT NOT NULL DEFAULT 'human' CHECK (kind IN ('human', 'judge'));
ALTER TABLE ratings ADD COLUMN rater_kind TEXT NOT NULL DEFAULT 'human' CHECK (rater_kind IN ('human', 'judge'));

-- An OpenAI-compatible chat completions endpoint and how to ask it.
CREATE TABLE judges (
    id                  UUID PRIMARY KEY NOT NULL,
    name                TEXT NOT NULL UNIQUE,
    -- The judge's account: its ratings are this user's.
    user_id             UUID NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    -- e.g. http://127.0.0.1:8081/v1; `/chat/completions` is appended.
    base_url            TEXT NOT NULL,
    model               TEXT NOT NULL,
    -- The API key comes from this environment variable of the server, or is stored
    -- sealed (ChaCha20-Poly1305 under the server's secret key); never served back.
    api_key_env         TEXT,
    api_key_sealed      TEXT,
    -- Sampling parameters, JSON: {temperature, max_tokens, seed, timeout_s, structured_output}.
    params              JSONB NOT NULL DEFAULT '{}'::jsonb,
    concurrency         INTEGER NOT NULL DEFAULT 4 CHECK (concurrency >= 1),
    requests_per_minute INTEGER NOT NULL DEFAULT 60 CHECK (requests_per_minute >= 1),
    -- Prompt templates by rubric name, JSON; a rubric without one uses the built-in.
    templates           JSONB NOT NULL DEFAULT '{}'::jsonb,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);

-- One judge over one batch.
CREATE TABLE judge_runs (
    id            UUID PRIMARY KEY NOT NULL,
    judge_id      UUID NOT NULL REFERENCES judges (id) ON DELETE CASCADE,
    batch_id      UUID NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    status        TEXT NOT NULL CHECK (status IN ('running', 'paused', 'cancelled', 'finished')),
    -- What the run asks with, fixed when it starts: the template, model and parameters.
    plan          JSONB NOT NULL,
    tasks         INTEGER NOT NULL DEFAULT 0,
    -- Calls the run makes in all: tasks times orders (two for a pair rubric).
    calls         INTEGER NOT NULL DEFAULT 0,
    -- The process working the run, and when it last said so; another takes over a run
    -- whose worker fell silent (it crashed or was killed).
    worker        TEXT,
    heartbeat_at  TIMESTAMPTZ,
    created_by    UUID REFERENCES users (id) ON DELETE SET NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    finished_at   TIMESTAMPTZ,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX judge_runs_batch ON judge_runs (batch_id, created_at);
-- One open run per judge and batch.
CREATE UNIQUE INDEX judge_runs_one_open ON judge_runs (judge_id, batch_id) WHERE status IN ('running', 'paused');

-- Every finished call of a run: one per task and order. A call that failed (the endpoint
-- never answered) is asked again when the run resumes; an answered or unparsed one never.
CREATE TABLE judge_calls (
    id                UUID PRIMARY KEY NOT NULL,
    run_id            UUID NOT NULL REFERENCES judge_runs (id) ON DELETE CASCADE,
    task_id           UUID NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    -- TRUE when the judge was shown B as "Response A".
    swapped           BOOLEAN NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('answered', 'unparsed', 'failed')),
    prompt_sha256     TEXT NOT NULL,
    model             TEXT NOT NULL,
    params            JSONB NOT NULL,
    raw_output        TEXT,
    finish_reason     TEXT,
    error             TEXT,
    -- Per answer path: parsed, missing, conflicting or invalid (with why).
    fields            JSONB NOT NULL DEFAULT '{}'::jsonb,
    -- What parsed, in the task's canonical orientation.
    answers           JSONB NOT NULL DEFAULT '{}'::jsonb,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_ms        INTEGER,
    attempts          INTEGER NOT NULL DEFAULT 1,
    created_at        TIMESTAMPTZ NOT NULL,
    UNIQUE (run_id, task_id, swapped)
);
CREATE INDEX judge_calls_run_status ON judge_calls (run_id, status);
