-- What a rater has written into a revision of a rating but not yet sent, saved as they
-- type. Kept beside the rating, never in it: the lead, the metrics and the exports see
-- the rating as last sent until the revision is. Sending the revision clears it.
ALTER TABLE ratings ADD COLUMN revision_draft TEXT;
ALTER TABLE ratings ADD COLUMN revision_time_s INTEGER CHECK (revision_time_s >= 0);

-- Every signed-in page counts the user's returned ratings for the menu: an index on
-- (rater, status) makes that a look at a few entries, not a walk over all their ratings.
CREATE INDEX ratings_rater_status ON ratings (rater_id, status);
