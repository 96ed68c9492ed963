// Creates (or with --reset, re-keys) an account directly in D1, for the first admin and for
// recovering a locked-out one. The password is read from stdin when stdin is piped, otherwise
// generated and written to a mode-0600 file. It is never printed, logged or passed as an argument.
//
//   npm run admin:create -- --username ada                          # local D1, generated password
//   printf '%s' "$PW" | npm run admin:create -- --username ada      # password from stdin
//   npm run admin:create -- --username ada --remote --env production
//
// Options: --role admin|user (default admin), --out FILE (where a generated password goes;
// default .switchyard/admin-<username>.json), --reset (replace the password of an existing
// account, re-enable it, end its login sessions and lift its login lockout), --persist-to DIR
// (local state directory).
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { hashPassword } from '../edge/src/auth/password.ts';
import { newId } from '../edge/src/ids.ts';
import { pairKeyPrefix } from '../edge/src/auth/throttle-keys.ts';
import { NewPasswordSchema, RoleSchema, UsernameSchema } from '../edge/src/users/schemas.ts';
import { parseArgs, ROOT, targetArgs, wrangler } from './lib/wrangler.ts';

function fail(message: string): never {
  console.error(`admin:create: ${message}`);
  process.exit(2);
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // `echo pw | ...` adds one newline that is not part of the password.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** SQL string literal; the inputs are already constrained, this is belt and braces. */
const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;

function buildSql(o: {
  id: string;
  username: string;
  hash: string;
  role: string;
  now: number;
  reset: boolean;
}): string {
  const user = `(SELECT id FROM users WHERE username = ${lit(o.username)})`;
  const after = JSON.stringify({ username: o.username, role: o.role, disabled: false, via: 'admin:create' });
  const lines = [
    `INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at)
     VALUES (${lit(o.id)}, ${lit(o.username)}, ${lit(o.hash)}, ${lit(o.role)}, 0, ${o.now}, ${o.now})` +
      (o.reset
        ? ` ON CONFLICT(username) DO UPDATE SET password_hash = excluded.password_hash, role = excluded.role,
             disabled = 0, updated_at = excluded.updated_at;`
        : ';'),
  ];
  if (o.reset) {
    lines.push(
      // A reset revokes API tokens too: whoever knew the old password may have minted some.
      `UPDATE auth_tokens SET revoked_at = ${o.now} WHERE revoked_at IS NULL AND user_id = ${user};`,
      // Recovering a locked-out admin should not wait out the lock.
      `DELETE FROM login_throttle WHERE key = ${lit(`account:${o.username.toLowerCase()}`)}
         OR substr(key, 1, ${pairKeyPrefix(o.username.toLowerCase()).length}) = ${lit(pairKeyPrefix(o.username.toLowerCase()))};`,
    );
  }
  // The operator is not a user, so the entry has no actor; `via` says where it came from.
  lines.push(
    `INSERT INTO audit_log (id, at, actor_id, actor_username, action, target, before, after)
     VALUES (${lit(newId(o.now))}, ${o.now}, NULL, NULL, ${lit(o.reset ? 'user.update' : 'user.create')},
             'user:' || ${user}, NULL, ${lit(o.reset ? JSON.stringify({ passwordChanged: true, via: 'admin:create --reset' }) : after)});`,
  );
  return lines.join('\n');
}

async function main() {
  const { values, flags } = parseArgs(process.argv.slice(2), {
    values: ['username', 'role', 'out', 'env', 'persist-to'],
    flags: ['remote', 'reset'],
  });
  const username = UsernameSchema.safeParse(values.username);
  if (!username.success) fail(`--username: ${username.error.issues[0]?.message ?? 'required'}`);
  const role = RoleSchema.safeParse(values.role ?? 'admin');
  if (!role.success) fail('--role must be admin or user');
  const target = { remote: flags.has('remote'), env: values.env, persistTo: values['persist-to'] };

  let password = await readStdin();
  let outFile: string | undefined;
  if (password === '') {
    password = randomBytes(24).toString('base64url');
    outFile = path.resolve(values.out ?? path.join(ROOT, '.switchyard', `admin-${username.data}.json`));
  } else {
    const ok = NewPasswordSchema.safeParse(password);
    if (!ok.success) fail(`password from stdin: ${ok.error.issues[0]?.message ?? 'invalid'}`);
  }

  const now = Date.now();
  const sql = buildSql({
    id: newId(now),
    username: username.data,
    hash: await hashPassword(password),
    role: role.data,
    now,
    reset: flags.has('reset'),
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-admin-'));
  const file = path.join(dir, 'admin.sql');
  let status: number;
  try {
    writeFileSync(file, sql, { mode: 0o600 });
    status = wrangler(['d1', 'execute', 'DB', ...targetArgs(target), '--yes', '--file', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (status !== 0) {
    fail(
      `wrangler failed (exit ${status}). If the account already exists, pass --reset to give it a new password; ` +
        'if the users table is missing, run `npm run db:migrate` first.',
    );
  }

  if (outFile !== undefined) {
    mkdirSync(path.dirname(outFile), { recursive: true, mode: 0o700 });
    writeFileSync(outFile, `${JSON.stringify({ username: username.data, password }, null, 2)}\n`, { mode: 0o600 });
    chmodSync(outFile, 0o600); // an existing file keeps its old mode on overwrite
    console.log(
      `${role.data} ${username.data} ready on the ${target.remote ? 'remote' : 'local'} database; password written to ${outFile} (mode 0600)`,
    );
  } else {
    console.log(
      `${role.data} ${username.data} ready on the ${target.remote ? 'remote' : 'local'} database; password as given on stdin`,
    );
  }
}

main().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
