-- What the metrics and the export read of a rating's assignment and task, copied onto
-- the rating. Keep in step with migrations/postgres/0011_rating_facts.sql.
--
-- None of it ever changes after the rating is made (an assignment keeps its orientation,
-- a task its external id, models, responses and whether it is gold), so the copies stay
-- true, and a scan of a batch's ratings no longer looks up each one's assignment and
-- task by id: at a million ratings those lookups were most of the metrics' time.
ALTER TABLE ratings ADD COLUMN swapped BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE ratings ADD COLUMN external_id TEXT NOT NULL DEFAULT '';
ALTER TABLE ratings ADD COLUMN model_a TEXT;
ALTER TABLE ratings ADD COLUMN model_b TEXT;
ALTER TABLE ratings ADD COLUMN len_a INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN len_b INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ratings ADD COLUMN gold BOOLEAN NOT NULL DEFAULT FALSE;

UPDATE ratings SET
    swapped = (SELECT a.swapped FROM assignments a WHERE a.id = ratings.assignment_id),
    external_id = (SELECT t.external_id FROM tasks t WHERE t.id = ratings.task_id),
    model_a = (SELECT t.model_a FROM tasks t WHERE t.id = ratings.task_id),
    model_b = (SELECT t.model_b FROM tasks t WHERE t.id = ratings.task_id),
    len_a = (SELECT LENGTH(t.response_a) FROM tasks t WHERE t.id = ratings.task_id),
    len_b = (SELECT LENGTH(t.response_b) FROM tasks t WHERE t.id = ratings.task_id),
    gold = EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = ratings.task_id);

-- Every new rating gets its copies as it is stored, whichever code path stores it.
CREATE TRIGGER ratings_copy_facts AFTER INSERT ON ratings
BEGIN
    UPDATE ratings SET
        swapped = (SELECT a.swapped FROM assignments a WHERE a.id = NEW.assignment_id),
        external_id = (SELECT t.external_id FROM tasks t WHERE t.id = NEW.task_id),
        model_a = (SELECT t.model_a FROM tasks t WHERE t.id = NEW.task_id),
        model_b = (SELECT t.model_b FROM tasks t WHERE t.id = NEW.task_id),
        len_a = (SELECT LENGTH(t.response_a) FROM tasks t WHERE t.id = NEW.task_id),
        len_b = (SELECT LENGTH(t.response_b) FROM tasks t WHERE t.id = NEW.task_id),
        gold = EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = NEW.task_id)
    WHERE id = NEW.id;
END;
