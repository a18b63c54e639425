-- Qualification (issue 31): a batch may ask each rater to pass a round of its gold tasks
-- (`qualify_tasks` a try, NULL: no qualification) before its real ones: a try passes when
-- the share of its tasks graded right reaches `qualify_pass`, and a rater has
-- `qualify_tries` tries. With `qualify_reveal`, a rater sees each gold task's expected
-- answers, and its explanation (`gold_tasks.explanation`, uploaded as the task's
-- `gold_explanation`), once a try is over. Keep in step with
-- migrations/postgres/0022_qualification.sql.
ALTER TABLE batches ADD COLUMN qualify_tasks INTEGER CHECK (qualify_tasks BETWEEN 1 AND 50);
ALTER TABLE batches ADD COLUMN qualify_pass REAL NOT NULL DEFAULT 0.8 CHECK (qualify_pass > 0 AND qualify_pass <= 1);
ALTER TABLE batches ADD COLUMN qualify_tries INTEGER NOT NULL DEFAULT 1 CHECK (qualify_tries BETWEEN 1 AND 10);
ALTER TABLE batches ADD COLUMN qualify_reveal BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE gold_tasks ADD COLUMN explanation TEXT;
