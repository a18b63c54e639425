-- The access epoch. Keep in step with migrations/postgres/0010_access_epoch.sql.
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
    version INTEGER NOT NULL
);
INSERT INTO access_epoch (id, version) VALUES (1, 0);

CREATE TRIGGER sessions_changed_epoch AFTER UPDATE ON sessions
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER sessions_ended_epoch AFTER DELETE ON sessions
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER users_changed_epoch AFTER UPDATE ON users
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER users_removed_epoch AFTER DELETE ON users
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER api_tokens_changed_epoch AFTER UPDATE ON api_tokens
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER api_tokens_removed_epoch AFTER DELETE ON api_tokens
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER batches_changed_epoch AFTER UPDATE ON batches
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER batches_removed_epoch AFTER DELETE ON batches
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER batch_members_added_epoch AFTER INSERT ON batch_members
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER batch_members_changed_epoch AFTER UPDATE ON batch_members
BEGIN UPDATE access_epoch SET version = version + 1; END;
CREATE TRIGGER batch_members_removed_epoch AFTER DELETE ON batch_members
BEGIN UPDATE access_epoch SET version = version + 1; END;
