-- Start from a repository (DESIGN "Workspaces"): the git repository a session was created with,
-- cloned into its workspace before the first turn. NULL: a session that starts empty.
ALTER TABLE sessions ADD COLUMN repository_url TEXT;
ALTER TABLE sessions ADD COLUMN repository_ref TEXT;
