-- Skip reasons come from each batch's rubric (issue 28): the column takes any reason a
-- rubric lists (the app checks its form: lower-case letters, digits and underscores),
-- not three fixed ones. SQLite cannot change a column's CHECK in place, so the column is
-- replaced (added anew, copied, the old one dropped, the new one renamed), the same way
-- on both backends so that they keep one column order.
ALTER TABLE ratings ADD COLUMN skip_reason_any TEXT CHECK (length(skip_reason_any) BETWEEN 1 AND 64);
UPDATE ratings SET skip_reason_any = skip_reason WHERE skip_reason IS NOT NULL;
ALTER TABLE ratings DROP COLUMN skip_reason;
ALTER TABLE ratings RENAME COLUMN skip_reason_any TO skip_reason;
