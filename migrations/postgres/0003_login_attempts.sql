-- Login attempts, counted per key (an address, or an address and an account) in a window
-- of a minute that starts at the key's first attempt. They live in the database so that
-- every instance of the app serving it counts against the same limit. The key is a
-- SHA-256 digest, so no typed username (which may be a mistyped password) is stored.
-- Windows that have ended are pruned every minute.
CREATE TABLE login_attempts (
    key          TEXT PRIMARY KEY NOT NULL,
    -- Unix time in milliseconds.
    window_start BIGINT NOT NULL,
    attempts     BIGINT NOT NULL
);
CREATE INDEX login_attempts_window_start ON login_attempts (window_start);
