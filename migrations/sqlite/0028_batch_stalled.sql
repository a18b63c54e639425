-- When a batch was last seen stalled (tasks needing more ratings than the people who
-- could take them can give), so that `batch.stalled` is sent when the stuck count goes
-- from none to some, once. NULL: not stalled when last looked at. Kept while a
-- subscription listens for the event.
ALTER TABLE batches ADD COLUMN stalled_at TEXT;
