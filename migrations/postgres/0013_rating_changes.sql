-- Each rating's place in the order of changes, so that an instance keeping a batch's
-- metrics in memory reads only the ratings changed since its last read (also those
-- changed through another instance or process). Keep in step with
-- migrations/sqlite/0013_rating_changes.sql.
--
-- Every insert and update of a rating records its transaction's id. Transactions commit
-- in another order than they start, so a reader does not ask for ids above the highest
-- it saw: it asks for those at or above the oldest transaction still running when it
-- last read (its snapshot's xmin). Everything older had committed, and was read, by
-- then; a rating read twice is simply read again.
-- (As a BIGINT, like SQLite's counter: a transaction id fits in 63 bits for thousands
-- of years of transactions.)
ALTER TABLE ratings ADD COLUMN changed BIGINT NOT NULL DEFAULT pg_current_xact_id()::TEXT::BIGINT;
CREATE INDEX ratings_changed ON ratings (batch_id, changed);

CREATE FUNCTION ratings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.changed := pg_current_xact_id()::TEXT::BIGINT;
    RETURN NEW;
END
$$;

CREATE TRIGGER ratings_changed BEFORE UPDATE ON ratings
    FOR EACH ROW EXECUTE FUNCTION ratings_changed();

-- The metrics' other reads of a batch's ratings find only the few rows they count:
-- graded gold ratings, and ratings waiting for review first.
CREATE INDEX ratings_graded ON ratings (batch_id) WHERE gold_grade IS NOT NULL;
CREATE INDEX ratings_held ON ratings (batch_id) WHERE review_first = TRUE AND status = 'submitted';
