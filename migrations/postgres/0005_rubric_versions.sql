-- Rubrics are documents kept with a version: a change is a new version, and a batch pins
-- the version it was created with, so no rating is read under rules it was not made by.
-- The built-in documents are added at start-up (version 1 on a new database).
CREATE TABLE rubrics (
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    -- The checked document as JSON text, exactly as it is served back.
    document    TEXT NOT NULL,
    created_by  UUID REFERENCES users (id) ON DELETE SET NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (name, version)
);

-- Every batch so far was made with the first version of its built-in rubric.
ALTER TABLE batches ADD COLUMN rubric_version INTEGER NOT NULL DEFAULT 1;
