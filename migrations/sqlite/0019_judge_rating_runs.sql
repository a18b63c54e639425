-- A judge's rating names the run it came from, and only the run that stands for the judge
-- over the batch (its latest run there that is not cancelled) counts: the metrics, the
-- task page and both exports read that run's answers alone (issue 30). Keep in step with
-- migrations/postgres/0019_judge_rating_runs.sql.
ALTER TABLE ratings ADD COLUMN judge_run_id BLOB REFERENCES judge_runs (id) ON DELETE SET NULL;

-- Ratings from before: the judge's latest run over the batch that answered about the
-- task, whose answers the rating was last saved from.
UPDATE ratings SET judge_run_id = (
    SELECT r.id FROM judge_runs r JOIN judges j ON j.id = r.judge_id
    WHERE j.user_id = ratings.rater_id AND r.batch_id = ratings.batch_id
      AND EXISTS (SELECT 1 FROM judge_calls c
                  WHERE c.run_id = r.id AND c.task_id = ratings.task_id AND c.status = 'answered')
    ORDER BY r.created_at DESC, r.id DESC LIMIT 1)
WHERE rater_kind = 'judge';
