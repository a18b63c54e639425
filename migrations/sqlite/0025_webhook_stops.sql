-- A subscription whose owner lost the right to its events (deactivated, taken off its
-- batch, no longer an admin) is stopped at its next delivery: kept, with when and why,
-- for admins to see, and sent nothing more.
ALTER TABLE webhooks ADD COLUMN stopped_at TEXT;
ALTER TABLE webhooks ADD COLUMN stopped_why TEXT;
