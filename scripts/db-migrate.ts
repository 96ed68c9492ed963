// Applies edge/migrations to the D1 database: local (the one `wrangler dev` uses) by default,
// the deployed one with --remote. Usage:
//   npm run db:migrate [-- --remote [--env production] | --persist-to DIR]
import { parseArgs, targetArgs, wrangler } from './lib/wrangler.ts';

try {
  const { values, flags } = parseArgs(process.argv.slice(2), { values: ['env', 'persist-to'], flags: ['remote'] });
  const target = { remote: flags.has('remote'), env: values.env, persistTo: values['persist-to'] };
  process.exit(wrangler(['d1', 'migrations', 'apply', 'DB', ...targetArgs(target)]));
} catch (err) {
  console.error(`db:migrate: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
