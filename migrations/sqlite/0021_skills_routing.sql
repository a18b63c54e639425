-- Skills routing (issue 31): people have skills (a JSON array of lower-case strings); a
-- batch may route its tasks by a metadata key (`route_by`, written `metadata.<key>`),
-- preferring or only offering raters the tasks whose key is one of their skills
-- (`routing`), since `routed_since` (when routing last changed, so that skips can be
-- compared before and after). `tasks.route_key` holds each task's key, trimmed and in
-- lower case, set whenever the batch's `route_by` changes or tasks are added. Keep in
-- step with migrations/postgres/0021_skills_routing.sql.
ALTER TABLE users ADD COLUMN skills TEXT NOT NULL DEFAULT '[]';
ALTER TABLE batches ADD COLUMN route_by TEXT;
ALTER TABLE batches ADD COLUMN routing TEXT NOT NULL DEFAULT 'prefer' CHECK (routing IN ('prefer', 'strict'));
ALTER TABLE batches ADD COLUMN routed_since TEXT;
ALTER TABLE tasks ADD COLUMN route_key TEXT;
CREATE INDEX tasks_route ON tasks (batch_id, is_full, route_key, seq);
