-- Login throttling reserves an attempt before the password is checked (see edge/src/auth/throttle.ts).

-- One row per login attempt, alive only inside the D1 batch that reserves it: whether the attempt
-- may proceed is decided once, before any counter moves, and every counter update in the batch
-- reads that one decision.
CREATE TABLE login_attempt_gate (
  id TEXT PRIMARY KEY,
  allowed INTEGER NOT NULL
);

-- Addresses an account has logged in from successfully ("familiar", as identity providers call
-- them). Attempts from a familiar address are not held back by the account-wide lock, so a
-- stranger failing on purpose cannot lock the real user out.
CREATE TABLE login_familiar (
  account TEXT NOT NULL,
  address TEXT NOT NULL,
  last_success_at INTEGER NOT NULL,
  PRIMARY KEY (account, address)
);
