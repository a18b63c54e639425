-- Gold tasks and review first. Keep in step with migrations/sqlite/0009_gold.sql.

-- A batch's gold tasks: tasks whose right answers a lead knows, with the expected
-- answers by path and their tolerance (JSON). A gold task stays out of the pool (its
-- task is stored full, with nothing claimed) and is handed out only as gold.
CREATE TABLE gold_tasks (
    task_id   UUID PRIMARY KEY NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    batch_id  UUID NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    expected  JSONB NOT NULL
);
CREATE INDEX gold_tasks_batch ON gold_tasks (batch_id);

-- The share of a rater's new assignments that are gold tasks (0: none), and the gold
-- accuracy below which a rater's new ratings go to review first (NULL: never).
ALTER TABLE batches ADD COLUMN gold_rate DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (gold_rate >= 0 AND gold_rate <= 1);
ALTER TABLE batches ADD COLUMN review_first_below DOUBLE PRECISION CHECK (review_first_below > 0 AND review_first_below <= 1);

-- A rating of a gold task: how it did against the expected answers (JSON; NULL for
-- any other rating). A rating held for review first counts in no metric until a lead
-- accepts it.
ALTER TABLE ratings ADD COLUMN gold_grade JSONB;
ALTER TABLE ratings ADD COLUMN review_first BOOLEAN NOT NULL DEFAULT FALSE;
