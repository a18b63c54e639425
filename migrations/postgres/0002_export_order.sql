-- Exports read a batch's ratings in submission order: with this index the database walks
-- them in that order instead of sorting the whole batch first.
CREATE INDEX ratings_submitted ON ratings (batch_id, submitted_at, id);
