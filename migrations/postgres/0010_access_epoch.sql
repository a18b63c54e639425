-- The access epoch. Keep in step with migrations/sqlite/0010_access_epoch.sql.
--
-- Every app instance keeps in memory what it has read about who may do what: sessions,
-- accounts, token owners, batches and who may rate in them. It reads this one number on
-- each signed-in request and uses a cached entry only while the number is the one the
-- entry was read under. The triggers below move it forward in the same transaction as
-- any change to those rows (a session ended or saved, an account changed or removed, a
-- token revoked, a batch's settings or members changed), so the change holds on every
-- instance from the next request on, whoever made it: an instance, another process,
-- `verdict user deactivate`.
CREATE TABLE access_epoch (
    id      INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO access_epoch (id, version) VALUES (1, 0);

CREATE FUNCTION access_epoch_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE access_epoch SET version = version + 1;
    RETURN NULL;
END
$$;

-- Deferred to the commit, so that moving the epoch is the last lock a transaction takes:
-- one that ends a user's sessions cannot deadlock with a request saving one of them.
CREATE CONSTRAINT TRIGGER sessions_changed_epoch AFTER UPDATE OR DELETE ON sessions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_epoch_forward();
CREATE CONSTRAINT TRIGGER users_changed_epoch AFTER UPDATE OR DELETE ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_epoch_forward();
CREATE CONSTRAINT TRIGGER api_tokens_changed_epoch AFTER UPDATE OR DELETE ON api_tokens
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_epoch_forward();
CREATE CONSTRAINT TRIGGER batches_changed_epoch AFTER UPDATE OR DELETE ON batches
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_epoch_forward();
CREATE CONSTRAINT TRIGGER batch_members_changed_epoch AFTER INSERT OR UPDATE OR DELETE ON batch_members
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION access_epoch_forward();
