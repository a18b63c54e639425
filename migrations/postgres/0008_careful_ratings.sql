-- Tools for careful ratings. Keep in step with migrations/sqlite/0008_careful_ratings.sql.

-- The ids of the rubric's consistency warnings the rater's answers met and the rater
-- confirmed on sending them (a JSON list; empty when none applied).
ALTER TABLE ratings ADD COLUMN confirmed_warnings JSONB NOT NULL DEFAULT '[]'::jsonb;
-- Code the rater ran in the browser: each block's last result, and the runs attached
-- with their code and output (JSON, in the task's canonical orientation; NULL: none).
ALTER TABLE ratings ADD COLUMN evidence JSONB;
-- A lead's comments on single answers when reviewing, by answer path, as a JSON object:
-- on the review itself, and the latest beside the rating for the rater to see.
ALTER TABLE reviews ADD COLUMN field_comments JSONB NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE ratings ADD COLUMN review_fields JSONB NOT NULL DEFAULT '{}'::jsonb;
