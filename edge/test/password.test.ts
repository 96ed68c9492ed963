import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { constantTimeEqual } from '../src/auth/constant-time.ts';
import { hashPassword, needsRehash, PBKDF2_ITERATIONS, verifyPassword } from '../src/auth/password.ts';
import { call, createUser, makeApp } from './helpers.ts';

async function pbkdf2(iterations: number): Promise<ArrayBuffer> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('pw'), 'PBKDF2', false, ['deriveBits']);
  return crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: new Uint8Array(16), iterations }, key, 256);
}

describe('PBKDF2 in workerd', () => {
  // Cloudflare's production runtime refuses PBKDF2 above 100,000 iterations (DOMNotSupportedError,
  // DEFAULT_MAX_PBKDF2_ITERATIONS; cloudflare/workerd#1346). The open-source workerd used here has
  // lifted that default (it accepted 5,000,000 when measured), so local tests cannot prove the cap:
  // we pin our count to it and refuse stored hashes above it instead.
  it('uses the production cap, which local workerd accepts', async () => {
    expect(PBKDF2_ITERATIONS).toBe(100_000);
    await expect(pbkdf2(PBKDF2_ITERATIONS)).resolves.toBeInstanceOf(ArrayBuffer);
    const above = await pbkdf2(PBKDF2_ITERATIONS + 1).then(
      () => 'accepted',
      (e: unknown) => String(e),
    );
    // Either behaviour is a correct workerd; anything else (a different error) is not.
    expect(above === 'accepted' || /iteration counts above 100000/.test(above)).toBe(true);
  });

  it('refuses stored hashes above the cap, so nothing is stored that production cannot verify', async () => {
    const ok = await hashPassword('a password that is long', PBKDF2_ITERATIONS);
    const tooMany = ok.replace('$100000$', '$100001$');
    expect(await verifyPassword('a password that is long', ok)).toBe(true);
    expect(await verifyPassword('a password that is long', tooMany)).toBe(false);
    expect(needsRehash(tooMany)).toBe(true);
  });
});

describe('password hashes', () => {
  it('are salted PBKDF2-SHA256 at the maximum count and never contain the password', async () => {
    const a = await hashPassword('hunter2hunter2');
    const b = await hashPassword('hunter2hunter2');
    expect(a).toMatch(/^pbkdf2-sha256\$100000\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('hunter2');
    expect(await verifyPassword('hunter2hunter2', a)).toBe(true);
    expect(await verifyPassword('hunter2hunter3', a)).toBe(false);
    expect(await verifyPassword('hunter2hunter2', 'garbage')).toBe(false);
  });

  it('are what the users table stores', async () => {
    const u = await createUser({ password: 'a very particular password' });
    const row = await env.DB.prepare('SELECT * FROM users WHERE id = ?').bind(u.id).first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain('particular');
    expect(String(row?.password_hash)).toMatch(/^pbkdf2-sha256\$100000\$/);
  });

  it('are upgraded on login when stored with fewer iterations', async () => {
    const { app } = makeApp();
    const u = await createUser();
    const weak = await hashPassword(u.password, 1000);
    expect(needsRehash(weak)).toBe(true);
    await env.DB.prepare('UPDATE users SET password_hash = ? WHERE id = ?').bind(weak, u.id).run();
    const r = await call(app, 'POST', '/api/auth/login', { body: { username: u.username, password: u.password } });
    expect(r.status).toBe(200);
    const row = await env.DB.prepare('SELECT password_hash FROM users WHERE id = ?')
      .bind(u.id)
      .first<{ password_hash: string }>();
    expect(row?.password_hash).toMatch(/^pbkdf2-sha256\$100000\$/);
    expect(await verifyPassword(u.password, row?.password_hash ?? '')).toBe(true);
  });
});

describe('constantTimeEqual', () => {
  /** Wraps bytes so every indexed read is counted: work done must not depend on where bytes differ. */
  function counted(bytes: number[]): { view: ArrayLike<number>; reads: () => number } {
    let reads = 0;
    const target = Uint8Array.from(bytes);
    const view = new Proxy(target, {
      get(t, p) {
        if (typeof p === 'string' && /^\d+$/.test(p)) reads += 1;
        return Reflect.get(t, p) as unknown;
      },
    });
    return { view, reads: () => reads };
  }

  it('reads every byte whether the first or the last byte differs', () => {
    const base = Array.from({ length: 32 }, (_, i) => i);
    const firstDiffers = [255, ...base.slice(1)];
    const lastDiffers = [...base.slice(0, 31), 255];
    const counts = [firstDiffers, lastDiffers, base].map((other) => {
      const a = counted(base);
      const b = counted(other);
      const equal = constantTimeEqual(a.view, b.view);
      return { equal, reads: a.reads() + b.reads() };
    });
    expect(counts.map((c) => c.equal)).toEqual([false, false, true]);
    expect(counts.map((c) => c.reads)).toEqual([64, 64, 64]);
  });

  it('refuses different lengths', () => {
    expect(constantTimeEqual([1, 2], [1, 2, 3])).toBe(false);
  });
});
