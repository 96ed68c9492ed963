-- One backend probe at a time (a probe can be a Fargate task polled for minutes): whoever
-- inserts or takes over an expired row runs it; everyone else reads backend_status.
CREATE TABLE probe_lease (
  name TEXT PRIMARY KEY,
  lease_id TEXT NOT NULL,
  until INTEGER NOT NULL
);
