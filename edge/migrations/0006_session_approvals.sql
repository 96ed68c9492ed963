-- Tool approvals (DESIGN "Tool approvals"): each session's mode, chosen at creation.
ALTER TABLE sessions ADD COLUMN approvals TEXT NOT NULL DEFAULT 'auto' CHECK (approvals IN ('auto', 'ask'));
