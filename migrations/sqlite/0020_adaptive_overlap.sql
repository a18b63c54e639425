-- Adaptive overlap (issue 31): a batch may ask one more rater at a time, up to
-- `max_overlap`, of a task whose answers disagree by its rule (`escalate`, written as
-- `<rule>[:<question>][:<n>]`; none: the rubric's default). `tasks.extra` counts the
-- raters a task gained so: it needs `overlap + extra`. Keep in step with
-- migrations/postgres/0020_adaptive_overlap.sql.
ALTER TABLE batches ADD COLUMN max_overlap INTEGER;
ALTER TABLE batches ADD COLUMN escalate TEXT;
ALTER TABLE tasks ADD COLUMN extra INTEGER NOT NULL DEFAULT 0;
