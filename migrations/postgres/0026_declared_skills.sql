-- What a rater says they know, beside the skills a lead or an admin set (`skills`): a
-- rater's own list only puts matching tasks first where a batch prefers them; a batch that
-- routes strictly goes by `skills` alone, which a rater cannot change. Skills kept from
-- before stay in `skills` (the skills page shows them to leads to review).
ALTER TABLE users ADD COLUMN declared_skills TEXT NOT NULL DEFAULT '[]';
