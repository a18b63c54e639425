-- What the metrics and the export read of a rating's assignment and task, copied onto
-- the rating. Keep in step with migrations/sqlite/0011_rating_facts.sql.
--
-- None of it ever changes after the rating is made (an assignment keeps its orientation,
-- a task its external id, models, responses and whether it is gold), so the copies stay
-- true, and a scan of a batch's ratings no longer looks up each one's assignment and
-- task by id: at a million ratings those lookups were most of the metrics' time.
ALTER TABLE ratings
    ADD COLUMN swapped BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN external_id TEXT NOT NULL DEFAULT '',
    ADD COLUMN model_a TEXT,
    ADD COLUMN model_b TEXT,
    ADD COLUMN len_a BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN len_b BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN gold BOOLEAN NOT NULL DEFAULT FALSE;

UPDATE ratings r SET swapped = a.swapped FROM assignments a WHERE a.id = r.assignment_id;
UPDATE ratings r SET
    external_id = t.external_id,
    model_a = t.model_a,
    model_b = t.model_b,
    len_a = LENGTH(t.response_a),
    len_b = LENGTH(t.response_b),
    gold = EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id)
FROM tasks t WHERE t.id = r.task_id;

-- Every new rating gets its copies as it is stored, whichever code path stores it.
CREATE FUNCTION ratings_copy_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT a.swapped INTO NEW.swapped FROM assignments a WHERE a.id = NEW.assignment_id;
    SELECT t.external_id, t.model_a, t.model_b, LENGTH(t.response_a), LENGTH(t.response_b),
           EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = t.id)
      INTO NEW.external_id, NEW.model_a, NEW.model_b, NEW.len_a, NEW.len_b, NEW.gold
      FROM tasks t WHERE t.id = NEW.task_id;
    RETURN NEW;
END
$$;
CREATE TRIGGER ratings_copy_facts BEFORE INSERT ON ratings
    FOR EACH ROW EXECUTE FUNCTION ratings_copy_facts();
