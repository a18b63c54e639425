-- Whether raters see the external ids of a batch's tasks. Keep in step with
-- migrations/postgres/0015_external_ids.sql.
--
-- An external id often names where a task came from (`HumanEval/12`), which a rater
-- could look up, and ids shared between raters tell gold tasks apart. Off by default:
-- raters then see each of their tasks by a neutral number ("Task 17"); leads and
-- admins always see the external id.
ALTER TABLE batches ADD COLUMN raters_see_external_ids BOOLEAN NOT NULL DEFAULT FALSE;
