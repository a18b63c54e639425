-- Who acted, by name, when it was not an account: `cli` for the command line, which is run
-- by whoever holds the database and signs in as nobody.
ALTER TABLE audit_log ADD COLUMN actor_name TEXT;
