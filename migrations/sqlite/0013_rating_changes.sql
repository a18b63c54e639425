-- Each rating's place in the order of changes, so that an instance keeping a batch's
-- metrics in memory reads only the ratings changed since its last read (also those
-- changed through another instance or process). Keep in step with
-- migrations/postgres/0013_rating_changes.sql.
--
-- SQLite has one writer at a time, so a counter moved by every insert and update of a
-- rating gives them in the order they commit: a reader that saw the counter at N finds
-- every later change at above N.
CREATE TABLE rating_clock (value INTEGER NOT NULL);
INSERT INTO rating_clock (value) VALUES (0);

ALTER TABLE ratings ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX ratings_changed ON ratings (batch_id, changed);

CREATE TRIGGER ratings_changed_insert AFTER INSERT ON ratings
BEGIN
    UPDATE rating_clock SET value = value + 1;
    UPDATE ratings SET changed = (SELECT value FROM rating_clock) WHERE rowid = NEW.rowid;
END;

-- The trigger's own update leaves `changed` moved, so it does not fire itself again.
CREATE TRIGGER ratings_changed_update AFTER UPDATE ON ratings
WHEN NEW.changed = OLD.changed
BEGIN
    UPDATE rating_clock SET value = value + 1;
    UPDATE ratings SET changed = (SELECT value FROM rating_clock) WHERE rowid = NEW.rowid;
END;

-- The metrics' other reads of a batch's ratings find only the few rows they count:
-- graded gold ratings, and ratings waiting for review first.
CREATE INDEX ratings_graded ON ratings (batch_id) WHERE gold_grade IS NOT NULL;
CREATE INDEX ratings_held ON ratings (batch_id) WHERE review_first = TRUE AND status = 'submitted';
