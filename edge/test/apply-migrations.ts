import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';

// Storage is isolated per test file; this runs before each file and is idempotent.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
