-- The session hub mirrors each session's state here (the hub's own SQLite is the source of
-- truth): why it is in that state, and the launcher's reference to its runner, for
-- GET /api/admin/sessions without waking every hub.
ALTER TABLE sessions ADD COLUMN state_reason TEXT;
ALTER TABLE sessions ADD COLUMN runner_ref TEXT;
CREATE INDEX sessions_by_state ON sessions (state, created_at);
