-- Corrections (issue 51).
--
-- A deleted batch leaves every list, page and metric at once and can be restored until
-- the retention ends, when it is purged (deleted with its tasks and ratings). NULL: not
-- deleted.
ALTER TABLE batches ADD COLUMN deleted_at TEXT;
ALTER TABLE batches ADD COLUMN deleted_by BLOB REFERENCES users (id) ON DELETE SET NULL;

-- A withdrawn task is served to no one and leaves every metric and aggregate until it
-- is put back. `version` goes up by one with each correction of its content; the
-- content it had before each is kept in task_versions.
ALTER TABLE tasks ADD COLUMN withdrawn_at TEXT;
ALTER TABLE tasks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
CREATE TABLE task_versions (
    task_id      BLOB NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    prompt       TEXT NOT NULL,
    response_a   TEXT NOT NULL,
    response_b   TEXT NOT NULL,
    model_a      TEXT,
    model_b      TEXT,
    content_hash TEXT NOT NULL,
    -- When a correction replaced it, and who made the correction.
    replaced_at  TEXT NOT NULL,
    replaced_by  BLOB REFERENCES users (id) ON DELETE SET NULL,
    PRIMARY KEY (task_id, version)
);

-- A rating's copies of its task's state: `withdrawn` while its task is withdrawn,
-- `stale` once its task was corrected after it (it rated an earlier version). Either
-- keeps it out of the metrics. Kept on the rating as `gold` is, so the metrics' scan of
-- a batch's ratings looks nothing up.
ALTER TABLE ratings ADD COLUMN withdrawn BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE ratings ADD COLUMN stale BOOLEAN NOT NULL DEFAULT FALSE;
