-- A session holds one slot while its hub has a runner launch (starting … stopping). Slots are
-- claimed with a single INSERT that counts the user's and everyone's slots in the same statement,
-- so parallel messages cannot all pass a separate count. The hub gives its slot back when the
-- launch ends; deleting the session or the user deletes the slot with it.
CREATE TABLE runner_slots (
  session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  claimed_at INTEGER NOT NULL
);
CREATE INDEX runner_slots_by_user ON runner_slots (user_id);

-- Fixed-window request counters (key = what is limited and for whom, e.g. session creation per user).
CREATE TABLE rate_limits (
  key TEXT PRIMARY KEY,
  count INTEGER NOT NULL,
  window_started_at INTEGER NOT NULL
);
