-- A judge run whose every call failed ends `failed`, not `finished`, and a run shows while
-- it works what it retries and what went wrong (issue 29). Keep in step with
-- migrations/sqlite/0018_failed_runs.sql.
--
-- SQLite cannot change a column's CHECK in place, so `status` is replaced (added anew,
-- copied, the old one dropped, the new one renamed), the same way on both backends so
-- that they keep one column order. A column an index uses cannot be dropped: the index of
-- open runs goes first and comes back as it was. The new column needs a default to be
-- added NOT NULL; every insert names the status all the same.
ALTER TABLE judge_runs ADD COLUMN status_any TEXT NOT NULL DEFAULT 'running'
    CHECK (status_any IN ('running', 'paused', 'cancelled', 'finished', 'failed'));
UPDATE judge_runs SET status_any = status;
DROP INDEX judge_runs_one_open;
ALTER TABLE judge_runs DROP COLUMN status;
ALTER TABLE judge_runs RENAME COLUMN status_any TO status;
CREATE UNIQUE INDEX judge_runs_one_open ON judge_runs (judge_id, batch_id) WHERE status IN ('running', 'paused');

-- While a call waits to be asked again: the attempt it waits for (NULL when no call
-- waits, and once the run is no longer running).
ALTER TABLE judge_runs ADD COLUMN retry_attempt INTEGER CHECK (retry_attempt >= 2);
-- The latest error the run met and when: one short line (the app keeps it to 200
-- characters: an endpoint has a hand in it). Kept when the run ends.
ALTER TABLE judge_runs ADD COLUMN last_error TEXT CHECK (length(last_error) BETWEEN 1 AND 200);
ALTER TABLE judge_runs ADD COLUMN last_error_at TIMESTAMPTZ;

-- Runs from before: the latest error is their latest failed call's, and a finished run
-- that got nothing but failures failed.
UPDATE judge_runs SET
    last_error = (SELECT substr(c.error, 1, 200) FROM judge_calls c
                  WHERE c.run_id = judge_runs.id AND c.status = 'failed' AND c.error <> ''
                  ORDER BY c.created_at DESC, c.id DESC LIMIT 1),
    last_error_at = (SELECT c.created_at FROM judge_calls c
                     WHERE c.run_id = judge_runs.id AND c.status = 'failed' AND c.error <> ''
                     ORDER BY c.created_at DESC, c.id DESC LIMIT 1);
UPDATE judge_runs SET status = 'failed'
WHERE status = 'finished'
  AND EXISTS (SELECT 1 FROM judge_calls c WHERE c.run_id = judge_runs.id AND c.status = 'failed')
  AND NOT EXISTS (SELECT 1 FROM judge_calls c WHERE c.run_id = judge_runs.id AND c.status <> 'failed');
