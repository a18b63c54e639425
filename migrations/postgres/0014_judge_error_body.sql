-- The start of a judge endpoint's error reply, apart from the call's error (status and
-- cause), so that leads, who read a run's calls, never read what an endpoint sent back
-- with its error: admins only do. Keep in step with
-- migrations/sqlite/0014_judge_error_body.sql.
ALTER TABLE judge_calls ADD COLUMN error_body TEXT;
