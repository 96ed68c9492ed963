-- Switchyard edge schema. Times are integer milliseconds since the epoch; ids are ULIDs.

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  -- NOCASE: "Ada" and "ada" are one account, for uniqueness and for login.
  username TEXT NOT NULL COLLATE NOCASE UNIQUE,
  -- pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>; never the password.
  password_hash TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
  disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Login sessions (kind 'session', cookie or bearer) and personal API tokens (kind 'api').
CREATE TABLE auth_tokens (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('session', 'api')),
  name TEXT,
  -- SHA-256 hex of the secret; the secret itself is never stored.
  token_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX auth_tokens_by_user ON auth_tokens (user_id, kind);

-- Failed-login counters per account ("account:<name>") and per client address ("address:<ip>").
CREATE TABLE login_throttle (
  key TEXT PRIMARY KEY,
  failures INTEGER NOT NULL,
  window_started_at INTEGER NOT NULL,
  locked_until INTEGER
);

-- One row: the settings JSON (validated by the edge on read and write) and a version for
-- compare-and-set updates.
CREATE TABLE settings (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  value TEXT NOT NULL,
  version INTEGER NOT NULL,
  updated_at INTEGER,
  updated_by TEXT
);
INSERT INTO settings (id, value, version) VALUES (1, '{}', 0);

-- Last probe answer per backend, shared by all isolates.
CREATE TABLE backend_status (
  name TEXT PRIMARY KEY,
  available INTEGER NOT NULL,
  version TEXT,
  reason TEXT,
  fix TEXT,
  checked_at INTEGER NOT NULL
);

-- Filled by the session hub. The backend is pinned here at creation.
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  backend TEXT NOT NULL CHECK (backend IN ('claude', 'pi')),
  title TEXT,
  state TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  stopped_at INTEGER
);
CREATE INDEX sessions_by_user ON sessions (user_id, created_at);

-- Who changed what, when; before/after hold only the changed fields (JSON). No foreign key on
-- the actor: the trail outlives deleted users, so their name is copied in.
CREATE TABLE audit_log (
  id TEXT PRIMARY KEY,
  at INTEGER NOT NULL,
  actor_id TEXT,
  actor_username TEXT,
  action TEXT NOT NULL,
  target TEXT,
  before TEXT,
  after TEXT
);
CREATE INDEX audit_log_by_action ON audit_log (action, id);
