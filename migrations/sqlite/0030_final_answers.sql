-- Adjudication (issue 51): the final answer a lead records for a task, in the task's
-- own A/B order, checked against the batch's rubric as a rating is. One per task; a
-- correction of the task removes it (it answered the earlier version).
CREATE TABLE final_answers (
    task_id     BLOB PRIMARY KEY NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    batch_id    BLOB NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    answers     TEXT NOT NULL,
    -- The rating it started from, if any.
    from_rating BLOB REFERENCES ratings (id) ON DELETE SET NULL,
    note        TEXT,
    decided_by  BLOB REFERENCES users (id) ON DELETE SET NULL,
    decided_at  TEXT NOT NULL
);
CREATE INDEX final_answers_batch ON final_answers (batch_id);

-- How the final dataset answers a task no lead adjudicated: by majority vote or by
-- Dawid-Skene over the ratings that count.
ALTER TABLE batches ADD COLUMN final_method TEXT NOT NULL DEFAULT 'majority'
    CHECK (final_method IN ('majority', 'dawid_skene'));
