-- The prior of a batch's Bradley-Terry ranking: pseudo-wins added each way to every pair
-- of models that was compared (0: the plain maximum-likelihood fit, which exists only when
-- no group of models never lost to the others). Keep in step with
-- migrations/postgres/0017_bradley_terry_prior.sql.
--
-- 0.5 is what every ranking used before it became a setting, so existing batches keep
-- their figures. The app checks the same bounds first, with a message naming the field.
ALTER TABLE batches ADD COLUMN bradley_terry_prior REAL NOT NULL DEFAULT 0.5 CHECK (bradley_terry_prior >= 0 AND bradley_terry_prior <= 1000);
