-- When a batch was last seen complete (every task with its ratings, none held or
-- returned), so that `batch.completed` is sent once per completion and `batch.reopened`
-- when a completed batch has work again. NULL: not complete when last looked at. Kept
-- while a subscription listens for either event.
ALTER TABLE batches ADD COLUMN completed_at TIMESTAMPTZ;
