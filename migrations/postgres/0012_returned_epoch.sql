-- The access epoch also moves when a rating is returned for revision, or leaves that
-- state. Keep in step with migrations/sqlite/0012_returned_epoch.sql.
--
-- Every signed-in page shows how many of the rater's ratings wait for revision; with
-- this, each instance keeps that count in memory beside the rest of what the epoch
-- guards. Returns are a lead's occasional act, so the epoch seldom moves for them, and
-- the many other changes to ratings do not move it at all.
CREATE CONSTRAINT TRIGGER ratings_returned_epoch AFTER UPDATE OF status ON ratings
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.status = 'returned' OR NEW.status = 'returned')
    EXECUTE FUNCTION access_epoch_forward();
