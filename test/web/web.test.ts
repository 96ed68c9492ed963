/// <reference lib="dom" />
// The web app in real Chromium against the real stack (startStack: wrangler dev serving the
// built app and the API, the local runner host, real claude and pi CLIs, the offline model).
// One stack and one browser for the file; each test opens its own context (cookies) or page.
// Replies are scripted with the offline model's `#offline {...}` directive in the message.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { closeContexts, launchBrowser, screenshot } from '../helpers/browser.ts';
import { liveTask, offlineRequests } from '../helpers/e2e-harness.ts';
import { until } from '../helpers/poll.ts';
import { Api } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;

let running: TestStack;
let stack: Stack;
let browser: Browser;
let admin: Api;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  running = await startTestStack('web');
  stack = running.stack;
  admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  // Each test opens sessions as the admin and their runners stay up until idle: lift the
  // per-user cap so the tests do not depend on their order.
  const raised = await admin.call('PUT', '/api/admin/settings', { maxLiveRunnersPerUser: 50 });
  if (raised.status !== 200) throw new Error(`raising maxLiveRunnersPerUser: ${raised.status} ${raised.text}`);
  browser = await launchBrowser();
}, STACK_READY_MS + 60_000);

// A finished test's pages stop polling and streaming.
afterEach(({ task }) => closeContexts(contexts, task, 'failed'));

afterAll(async () => {
  await browser?.close();
  await running?.stop();
}, 120_000);

async function newContext(opts: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...opts });
  ctx.setDefaultTimeout(30_000);
  contexts.push(ctx);
  return ctx;
}

/** Page errors fail the test that caused them; a failing test leaves a screenshot and the service log. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // The page itself is saved by closeContexts, which runs first.
  onTestFailed(({ task }) => {
    console.error(`${task.name}: ${page.url()}\n${running.log.slice(-60).join('\n')}`);
  });
  return errors;
}

async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

async function adminPage(
  ctxOpts: Parameters<Browser['newContext']>[0] = {},
): Promise<{ ctx: BrowserContext; page: Page; errors: string[] }> {
  const ctx = await newContext(ctxOpts);
  const page = await ctx.newPage();
  const errors = watchErrors(page);
  await page.goto(`${stack.url}/`);
  await signIn(page, stack.admin.username, stack.admin.password);
  return { ctx, page, errors };
}

/** A user made by the admin through the API (which asks for the admin's own password). */
function addUser(username: string, password: string) {
  return admin.call('POST', '/api/admin/users', { username, password, currentPassword: stack.admin.password });
}

async function newSession(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'New session' }).click();
  await page.waitForURL(/\/sessions\/[0-9A-Z]{26}$/);
  return page.url().split('/').pop()!;
}

const conversation = (page: Page) => page.getByRole('log', { name: 'Conversation' });

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

async function turnsDone(page: Page, n: number): Promise<void> {
  await page
    .locator('article.turn[data-state="done"]')
    .nth(n - 1)
    .waitFor({ timeout: TURN_MS });
}

function directive(script: Record<string, unknown>): string {
  return `#offline ${JSON.stringify(script)}`;
}

/** Waits until the answer streaming in has reached `word` (the prompt holds it too, so only the answer counts). */
async function assistantSays(page: Page, word: string): Promise<void> {
  await conversation(page)
    .locator('.msg.assistant .markdown')
    .getByText(word, { exact: false })
    .first()
    .waitFor({ timeout: TURN_MS });
}

/** The assistant's rendered text of every turn, in order. */
async function assistantTexts(page: Page): Promise<string[]> {
  return conversation(page).locator('.msg.assistant .markdown').allInnerTexts();
}

async function sessionTurnFinished(id: string): Promise<true | undefined> {
  const r = await admin.call<{ turn: unknown }>('GET', `/api/sessions/${id}`);
  return r.status === 200 && r.body.turn === null ? true : undefined;
}

// Long enough that a reload or a network cut lands mid-answer: 40 deltas, 150 ms apart.
const SLOW_WORDS = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
const SLOW = directive({ text: SLOW_WORDS, chunks: 40, delayMs: 150 });

describe('web app', { timeout: 3 * TURN_MS }, () => {
  // First in the file: nothing has read the settings as an admin yet, so no backend has been probed.
  it("a new deployment's backend page shows each probe's answer when it lands, without a reload", async () => {
    const ctx = await newContext();
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    const firstRead = page.waitForResponse(
      (r) => new URL(r.url()).pathname === '/api/settings' && r.request().method() === 'GET',
    );
    await page.goto(`${stack.url}/admin/backend`);
    await signIn(page, stack.admin.username, stack.admin.password);
    const first = (await (await firstRead).json()) as { backends: Array<{ name: string; checkedAt: string | null }> };
    expect(first.backends.map((b) => [b.name, b.checkedAt])).toEqual([
      ['claude', null],
      ['pi', null],
    ]);
    await page.locator('li.backend-card').first().waitFor();
    await screenshot(page, 'admin-backend-first-read');
    const card = (name: string) =>
      page.locator('li.backend-card').filter({ has: page.getByText(name, { exact: true }) });
    await expect.poll(() => card('pi').innerText(), { timeout: 60_000 }).toMatch(/version \S+[\s\S]*checked/);
    await expect.poll(() => card('claude').innerText(), { timeout: 60_000 }).toMatch(/checked/);
    await screenshot(page, 'admin-backend-probed');
    expect(errors).toEqual([]);
  });

  it('sends a deep link through sign-in and back; a wrong password says so', async () => {
    const ctx = await newContext();
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(`${stack.url}/tokens`);
    await page.waitForURL(/\/signin\?next=%2Ftokens$/);
    await screenshot(page, 'signin');
    await page.getByLabel('Username').fill(stack.admin.username);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toBe('Wrong username or password.');
    await screenshot(page, 'signin-wrong');
    await page.getByLabel('Password').fill(stack.admin.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'API tokens', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/tokens');
    // The credential is the HttpOnly cookie only: nothing in script-readable storage.
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie])).toEqual([
      0,
      0,
      '',
    ]);
    expect(errors).toEqual([]);
  });

  it('serves the app with a strict CSP and the SPA fallback; API routes stay JSON', async () => {
    const res = await fetch(`${stack.url}/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('strict-transport-security')).toBe('max-age=15552000; includeSubDomains');
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const api = await fetch(`${stack.url}/api/nope`);
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('streams a reply as Markdown with highlighted, copyable code; a tool call is a card; usage shows', async () => {
    const { ctx, page, errors } = await adminPage();
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
    await newSession(page);
    const reply = 'Here is **bold** and code:\n\n```ts\nconst answer: number = 42;\n```\n\nDone.';
    await send(page, `Show me code.\n${directive({ thinking: 'Let me think.', text: reply, chunks: 8, delayMs: 30 })}`);
    await turnsDone(page, 1);
    const conv = conversation(page);
    await expect.poll(() => conv.locator('strong').first().innerText()).toBe('bold');
    expect(await conv.locator('.code-block code .hljs-keyword').first().innerText()).toBe('const');
    expect(await conv.locator('details.thinking').getAttribute('open')).toBeNull();
    await expect.poll(() => conv.locator('.turn-usage').first().innerText()).toMatch(/\d+ in · \d+ out tokens/);
    await conv.getByRole('button', { name: 'Copy code' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe('const answer: number = 42;');
    await screenshot(page, 'chat');

    await send(page, `Run it.\n${directive({ tool: 'shell', command: 'echo tool-output-7' })}`);
    await turnsDone(page, 2);
    const card = conv.locator('details.tool-card').first();
    expect(await card.locator('.tool-name').innerText()).toBe('Bash');
    expect(await card.locator('.tool-state').innerText()).toBe('done');
    await card.locator('summary').click();
    await expect.poll(() => card.locator('.tool-io').nth(1).innerText()).toContain('tool-output-7');
    expect(await card.locator('.tool-io').first().innerText()).toContain('"command": "echo tool-output-7"');
    await screenshot(page, 'chat-tool-card');
    expect(errors).toEqual([]);
  });

  it('typing into a new session starts its runner before Send, once; the message is answered by that runner', async () => {
    const { page, errors } = await adminPage();
    const id = await newSession(page);
    const starts: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith(`/api/sessions/${id}/start`)) starts.push(r.url());
    });
    const badge = page.locator('.runner-state .badge');
    expect(await badge.innerText()).toBe('stopped');
    await page.getByLabel('Message').pressSequentially('Warm already?');
    // The runner comes up while the person is still writing; Send is not pressed yet.
    await badge.filter({ hasText: 'ready' }).waitFor({ timeout: TURN_MS });
    await screenshot(page, 'chat-runner-ready-before-send');
    const before = await admin.call<{ runner: { launchId: string } | null; turn: unknown }>(
      'GET',
      `/api/sessions/${id}`,
    );
    expect(before.body.turn).toBeNull();
    const launchId = before.body.runner?.launchId;
    expect(launchId).toBeTruthy();
    await page.getByLabel('Message').press('Shift+Enter');
    await page.getByLabel('Message').pressSequentially(directive({ text: 'warm reply' }));
    await page.getByLabel('Message').press('Enter');
    await turnsDone(page, 1);
    expect(await assistantTexts(page)).toEqual(['warm reply']);
    const after = await admin.call<{ runner: { launchId: string } | null }>('GET', `/api/sessions/${id}`);
    expect(after.body.runner?.launchId).toBe(launchId);
    expect(starts).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('a runner started by typing and never sent anything stops at the unused limit; typing again starts another', async () => {
    const unusedLimit = (minutes: number) =>
      admin.call('PUT', '/api/admin/settings', { unusedRunnerIdleMinutes: minutes });
    // The shortest limit there is, for the launches of this test only (a launch keeps the limits it started with).
    expect((await unusedLimit(1)).status).toBe(200);
    try {
      const { page, errors } = await adminPage();
      const id = await newSession(page);
      const starts: string[] = [];
      page.on('request', (r) => {
        if (r.method() === 'POST' && r.url().endsWith(`/api/sessions/${id}/start`)) starts.push(r.url());
      });
      const launchOf = async () =>
        (await admin.call<{ runner: { launchId: string } | null }>('GET', `/api/sessions/${id}`)).body.runner?.launchId;
      const badge = page.locator('.runner-state .badge');
      await page.getByLabel('Message').pressSequentially('A draft');
      await badge.filter({ hasText: 'ready' }).waitFor({ timeout: TURN_MS });
      const first = await launchOf();
      expect(first).toBeTruthy();
      // Nobody sends: the hub stops the runner a minute after its start.
      await badge.filter({ hasText: 'stopped' }).waitFor({ timeout: 3 * 60_000 });
      await page.locator('.runner-state').getByText('unused for 1 min').waitFor();
      await screenshot(page, 'chat-runner-unused-stopped');
      // The draft is still there; writing on starts a runner again.
      expect(await page.getByLabel('Message').inputValue()).toBe('A draft');
      await page.getByLabel('Message').pressSequentially(', continued');
      await badge.filter({ hasText: 'ready' }).waitFor({ timeout: TURN_MS });
      const second = await launchOf();
      expect(second).toBeTruthy();
      expect(second).not.toBe(first);
      expect(starts).toHaveLength(2);
      await page.getByLabel('Message').press('Shift+Enter');
      await page.getByLabel('Message').pressSequentially(directive({ text: 'answered after all' }));
      await page.getByLabel('Message').press('Enter');
      await turnsDone(page, 1);
      expect(await assistantTexts(page)).toEqual(['answered after all']);
      expect(await launchOf()).toBe(second);
      expect(errors).toEqual([]);
    } finally {
      await unusedLimit(5);
    }
  });

  it('typing into a session whose runner failed starts nothing; Send starts a new runner and is answered', async () => {
    const { page, errors } = await adminPage();
    const id = await newSession(page);
    await send(page, directive({ text: 'first reply' }));
    await turnsDone(page, 1);
    const task = await liveTask(stack, id);
    process.kill(task.pid as number, 'SIGKILL');
    const badge = page.locator('.runner-state .badge');
    await badge.filter({ hasText: 'failed' }).waitFor({ timeout: TURN_MS });
    await screenshot(page, 'chat-runner-failed');
    // Every write to this session in the order the page sent it: a start at the first keystroke
    // would come before the message.
    const writes: string[] = [];
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      if (r.method() === 'POST' && path.startsWith(`/api/sessions/${id}/`)) writes.push(path.split('/').pop() ?? '');
    });
    await page.getByLabel('Message').pressSequentially('After the failure.');
    await page.getByLabel('Message').press('Shift+Enter');
    await page.getByLabel('Message').pressSequentially(directive({ text: 'second reply' }));
    await page.getByLabel('Message').press('Enter');
    await turnsDone(page, 2);
    expect(writes).toEqual(['messages']);
    expect(await assistantTexts(page)).toEqual(['first reply', 'second reply']);
    const next = await liveTask(stack, id, task.taskArn);
    expect(next.pid).not.toBe(task.pid);
    expect(errors).toEqual([]);
  });

  it('Stop ends a running answer as interrupted; a message sent while busy (409) keeps the draft', async () => {
    const { page, errors } = await adminPage();
    await newSession(page);
    await send(page, `Long answer please.\n${SLOW}`);
    await assistantSays(page, 'word2');
    const draft = 'a second thought that must not be lost';
    await send(page, draft);
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/still busy/);
    expect(await page.getByLabel('Message').inputValue()).toBe(draft);
    await screenshot(page, 'chat-busy-409');
    await page.getByRole('button', { name: 'Stop' }).click();
    await turnsDone(page, 1);
    expect(await conversation(page).locator('.notice.stop-interrupted').innerText()).toBe('Interrupted');
    expect(await assistantTexts(page).then((t) => t[0] ?? '')).not.toContain('word39');
    // Once the turn is over the kept draft goes through.
    await page.getByRole('button', { name: 'Send' }).click();
    await turnsDone(page, 2);
    await expect.poll(() => page.getByLabel('Message').inputValue()).toBe('');
    expect(await conversation(page).locator('.msg.user .user-text').allInnerTexts()).toEqual([
      `Long answer please.\n${SLOW}`,
      draft,
    ]);
    expect(errors).toEqual([]);
  });

  it('a reload mid-answer shows the same conversation exactly once', async () => {
    const { page, errors } = await adminPage();
    await newSession(page);
    await send(page, `Reload test.\n${SLOW}`);
    await assistantSays(page, 'word3');
    await page.reload();
    await turnsDone(page, 1);
    expect(await assistantTexts(page)).toEqual([SLOW_WORDS]);
    expect(await conversation(page).locator('.msg.user').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('a session longer than one replay page reopens whole (the page follows the hub’s pages)', async () => {
    const { page, errors } = await adminPage();
    await newSession(page);
    // 2,500 deltas: more events than the hub replays on one connection.
    const words = Array.from({ length: 2500 }, (_, i) => `w${i}`).join(' ');
    await send(page, `Long log.\n${directive({ text: words, chunks: 2500 })}`);
    await turnsDone(page, 1);
    expect(await assistantTexts(page)).toEqual([words]);
    await page.reload();
    await turnsDone(page, 1);
    expect(await assistantTexts(page)).toEqual([words]);
    expect(await conversation(page).locator('.msg.user').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('offline and back: shows reconnecting, then catches up with nothing lost or doubled; two pages agree', async () => {
    const { ctx, page, errors } = await adminPage();
    const id = await newSession(page);
    const second = await ctx.newPage();
    await second.goto(`${stack.url}/sessions/${id}`);
    await conversation(second).waitFor();
    // Both pages know they are two streams of the same person.
    for (const p of [page, second]) await p.getByLabel('Watching now: you (2 tabs)').waitFor();
    await send(page, `Offline test.\n${SLOW}`);
    await assistantSays(page, 'word2');
    await ctx.setOffline(true);
    await page.getByRole('status').filter({ hasText: 'Reconnecting' }).waitFor();
    await screenshot(page, 'chat-reconnecting');
    // The answer finishes on the server while this browser is cut off.
    await until('the turn to finish on the server', () => sessionTurnFinished(id), TURN_MS);
    await ctx.setOffline(false);
    await turnsDone(page, 1);
    await turnsDone(second, 1);
    expect(await assistantTexts(page)).toEqual([SLOW_WORDS]);
    expect(await assistantTexts(second)).toEqual([SLOW_WORDS]);
    for (const p of [page, second]) expect(await conversation(p).locator('.msg.user').count()).toBe(1);
    expect(await page.getByRole('status').filter({ hasText: 'Reconnecting' }).count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('shows a provider retry while it waits, then the turn’s error with its code', async () => {
    const { page, errors } = await adminPage();
    await newSession(page);
    // 429 on every attempt: the CLI retries within the runner's budget, then gives up.
    await send(page, `Busy provider.\n${directive({ error: 429 })}`);
    await conversation(page)
      .getByText(/^Retrying \(attempt \d+ of \d+\)…/)
      .first()
      .waitFor({ timeout: TURN_MS });
    await screenshot(page, 'chat-retrying');
    await turnsDone(page, 1);
    expect(await conversation(page).locator('.notice.stop-error').innerText()).toMatch(
      /^Error \(provider_rate_limited\): /,
    );
    expect(
      await conversation(page)
        .getByText(/^Retrying/)
        .count(),
    ).toBe(0);
    expect(errors).toEqual([]);
  });

  it('resending after a lost response starts nothing twice (the draft keeps its clientMessageId)', async () => {
    const { page, errors } = await adminPage();
    await newSession(page);
    // The first POST reaches the server, but its answer never reaches the page.
    let dropped = 0;
    await page.route('**/api/sessions/*/messages', async (route) => {
      if (dropped++ > 0) return route.continue();
      await route.fetch();
      await route.abort('connectionreset');
    });
    const text = `Only once.\n${directive({ text: 'answered once' })}`;
    await send(page, text);
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/Could not reach the server/);
    expect(await page.getByLabel('Message').inputValue()).toBe(text);
    await page.getByRole('button', { name: 'Send' }).click();
    await turnsDone(page, 1);
    // The first POST's turn may be done before the resend's answer clears the draft; that answer is
    // a round trip through the edge, so it gets a turn's time. A kept draft is reported with the
    // page's alerts, which say why the composer kept it.
    await expect
      .poll(
        async () => {
          const draft = await page.getByLabel('Message').inputValue();
          return draft === ''
            ? ''
            : `draft kept; alerts: ${JSON.stringify(await page.getByRole('alert').allInnerTexts())}`;
        },
        { timeout: TURN_MS },
      )
      .toBe('');
    expect(await conversation(page).locator('.msg.user').count()).toBe(1);
    expect(await assistantTexts(page)).toEqual(['answered once']);
    expect(dropped).toBe(2);
    expect(errors).toEqual([]);
  });

  it('renders model output inert: raw HTML is text, javascript: links go nowhere, images are links', async () => {
    const { page, errors } = await adminPage();
    await newSession(page);
    const pixel = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'pixel.png')).toString('base64');
    const hostile =
      'Look: <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> [click me](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">raw</a>' +
      ` ![a fake Allow button](data:image/png;base64,${pixel}) ![the archive](/api/sessions/x/archive)`;
    await send(page, `${hostile}\n${directive({ text: hostile })}`);
    await turnsDone(page, 1);
    const assistant = conversation(page).locator('.msg.assistant .markdown').first();
    await expect.poll(() => assistant.innerText()).toContain('<img src=x onerror=');
    expect(await assistant.locator('img, script').count()).toBe(0);
    const link = assistant.getByText('click me');
    expect(await link.evaluate((el) => el.closest('a')?.getAttribute('href') ?? null)).toBeNull();
    await link.click();
    expect(await conversation(page).locator('[onerror], [onclick], a[href^="javascript:" i]').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // Images are never loaded: a data: picture is its words, a path a link to it.
    await expect.poll(() => assistant.innerText()).toContain('a fake Allow button');
    expect(
      await assistant.getByText('a fake Allow button').evaluate((el) => el.closest('a')?.getAttribute('href') ?? null),
    ).toBeNull();
    expect(await assistant.getByRole('link', { name: 'the archive' }).getAttribute('href')).toBe(
      '/api/sessions/x/archive',
    );
    expect(await conversation(page).locator('.msg.user .user-text').innerText()).toContain(
      '<script>window.__pwned=2</script>',
    );
    expect(errors).toEqual([]);
  });

  it('pastes an image: preview, the image reaches the model; a non-image is refused with a clear message', async () => {
    const { page, errors } = await adminPage();
    await newSession(page);
    const png = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'pixel.png')).toString('base64');
    const paste = (b64: string, name: string, type: string) =>
      page.getByLabel('Message').evaluate(
        (el, f) => {
          const bytes = Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0));
          const dt = new DataTransfer();
          dt.items.add(new File([bytes], f.name, { type: f.type }));
          el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
        },
        { b64, name, type },
      );
    await paste(Buffer.from('hello').toString('base64'), 'notes.txt', 'text/plain');
    await expect
      .poll(() => page.getByRole('alert').innerText())
      .toMatch(/notes\.txt: only PNG, JPEG, GIF, WEBP images can be sent/);
    await paste(png, 'pixel.png', 'image/png');
    await page.getByRole('list', { name: 'Attached images' }).getByRole('img', { name: 'pixel.png' }).waitFor();
    await screenshot(page, 'chat-image-attached');
    // The picker takes the same path as paste; a second image shows next to the first.
    await page
      .locator('form input[type="file"]')
      .setInputFiles({ name: 'picked.png', mimeType: 'image/png', buffer: Buffer.from(png, 'base64') });
    await page.getByRole('list', { name: 'Attached images' }).getByRole('img', { name: 'picked.png' }).waitFor();
    await page.getByRole('button', { name: 'Remove picked.png' }).click();
    expect(await page.getByRole('list', { name: 'Attached images' }).getByRole('img').count()).toBe(1);
    const marker = `image-marker-${Date.now()}`;
    await send(page, `What is in this image? ${marker}`);
    await turnsDone(page, 1);
    expect(await page.getByRole('list', { name: 'Attached images' }).count()).toBe(0);
    const sent = (await offlineRequests(stack)).find((r) => JSON.stringify(r.body).includes(marker));
    expect(JSON.stringify(sent?.body)).toContain(png);
    expect(errors).toEqual([]);
  });

  it('renames and deletes a session (with confirmation); the list follows', async () => {
    const { page, errors } = await adminPage();
    const id = await newSession(page);
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('Session title').fill('Refactor the parser');
    await page.getByRole('button', { name: 'Save title' }).click();
    await page.getByRole('heading', { name: 'Refactor the parser' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Sessions' });
    await nav.getByRole('link', { name: /Refactor the parser/ }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Refactor the parser' }).waitFor();
    await page.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this session?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await admin.call('GET', `/api/sessions/${id}`)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Delete session' }).click();
    await page.waitForURL(`${stack.url}/`);
    expect(await nav.getByRole('link', { name: /Refactor the parser/ }).count()).toBe(0);
    expect((await admin.call('GET', `/api/sessions/${id}`)).status).toBe(404);
    expect(errors).toEqual([]);
  });

  it('API tokens: the secret is shown once and works; revoking it stops it', async () => {
    const { ctx, page, errors } = await adminPage();
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
    await page.getByRole('link', { name: 'API tokens' }).click();
    await page.getByLabel('Token name').fill('ci-script');
    await page.getByLabel('Your current password').fill(stack.admin.password);
    await page.getByRole('button', { name: 'Create token' }).click();
    const secret = await page.getByLabel('New token secret').innerText();
    expect(secret).toMatch(/^sy_/);
    await page.getByRole('button', { name: 'Copy token' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await screenshot(page, 'tokens-created');
    expect((await admin.as(secret).call('GET', '/api/me')).status).toBe(200);
    await page.reload();
    await page.getByRole('cell', { name: 'ci-script', exact: true }).waitFor();
    expect(await page.getByText(secret).count()).toBe(0);
    await page.getByRole('button', { name: 'Revoke ci-script' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'ci-script', exact: true }).count()).toBe(0);
    expect((await admin.as(secret).call('GET', '/api/me')).status).toBe(401);
    expect(errors).toEqual([]);
  });

  it('changes one’s own password from the account page; the old one stops working', async () => {
    expect((await addUser('frank', 'frank-password-123')).status).toBe(201);
    const ctx = await newContext();
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(`${stack.url}/account`);
    await signIn(page, 'frank', 'frank-password-123');
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    await page.getByLabel('Current password').fill('not-my-password');
    await page.getByLabel('New password', { exact: true }).fill('frank-new-password-456');
    await page.getByLabel('Repeat new password').fill('frank-new-password-456');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toBe('Your password: wrong password');
    await page.getByLabel('Current password').fill('frank-password-123');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').filter({ hasText: 'Password changed' }).waitFor();
    await screenshot(page, 'account-password-changed');
    // The change ended this page's session too and started a new one: still signed in after a reload.
    await page.reload();
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    expect(await page.getByLabel('Current password').count()).toBe(1);
    expect(
      (
        await fetch(`${stack.url}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'frank', password: 'frank-password-123' }),
        })
      ).status,
    ).toBe(401);
    expect((await Api.login(stack.url, 'frank', 'frank-new-password-456')).token).toMatch(/^sy_/);
    expect(errors).toEqual([]);
  });

  it('admin console: users, audit log, live sessions; switching the backend to pi makes new sessions run pi', async () => {
    const { page, errors } = await adminPage();
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.getByLabel('New username').fill('carol');
    await page.getByLabel('Initial password').fill('carol-password-123');
    await page.getByLabel('Your password').fill(stack.admin.password);
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.getByRole('cell', { name: 'carol', exact: true }).waitFor();
    // Making an admin asks for the acting admin's password; a wrong one is refused, naming it.
    await page.getByLabel('Role of carol').selectOption('admin');
    const promote = page.getByRole('dialog', { name: 'Make carol an admin?' });
    await promote.getByLabel('Your password').fill('not-the-admin-password');
    await promote.getByRole('button', { name: 'Make admin' }).click();
    // Refused beside the field, the dialog still open for the retry; nothing changed meanwhile.
    await expect.poll(() => promote.getByRole('alert').innerText()).toBe('Wrong password');
    await screenshot(page, 'admin-users-make-admin');
    expect(await page.getByLabel('Role of carol').inputValue()).toBe('user');
    await promote.getByLabel('Your password').fill(stack.admin.password);
    await promote.getByRole('button', { name: 'Make admin' }).click();
    await page.getByRole('status').filter({ hasText: 'carol is now admin' }).waitFor();
    expect(await promote.count()).toBe(0);
    await screenshot(page, 'admin-users');
    const carol = page.getByRole('row').filter({ hasText: 'carol' });
    await carol.getByRole('button', { name: 'Disable' }).click();
    await carol.getByRole('button', { name: 'Enable' }).click();
    const enable = page.getByRole('dialog', { name: 'Enable carol?' });
    await enable.getByLabel('Your password').fill(stack.admin.password);
    await enable.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('status').filter({ hasText: 'carol is enabled' }).waitFor();
    await carol.getByRole('button', { name: 'Reset password' }).click();
    const reset = page.getByRole('dialog', { name: 'Reset the password of carol' });
    await reset.getByLabel('New password').fill('carol-new-password-456');
    await reset.getByLabel('Your password').fill(stack.admin.password);
    await screenshot(page, 'admin-users-reset-password');
    await reset.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('status').filter({ hasText: 'Password of carol reset' }).waitFor();
    expect((await Api.login(stack.url, 'carol', 'carol-new-password-456')).token).toMatch(/^sy_/);

    await page.getByRole('link', { name: 'Backend' }).click();
    await page.getByText('version', { exact: false }).first().waitFor({ timeout: 60_000 });
    await page.getByLabel('Backend').selectOption('pi');
    await page.getByRole('button', { name: 'Save' }).click();
    // The switch waits for pi's probe (a real pi run with its canary), which the local runner host
    // allows 90 s; on a loaded machine it can take over a minute.
    await page.getByRole('status').filter({ hasText: 'New sessions now use pi' }).waitFor({ timeout: TURN_MS });
    await screenshot(page, 'admin-backend');

    await page.getByRole('link', { name: 'Limits' }).click();
    await page.getByLabel('Idle timeout (minutes)').fill('0');
    await page.getByRole('button', { name: 'Save limits' }).click();
    // Refused in the page, by the field's label (admin-layout.test.ts has the server's refusals).
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/^Idle timeout: /);
    expect(await page.getByLabel('Idle timeout (minutes)').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Idle timeout (minutes)').fill('20');
    await page.getByLabel('Unused runner timeout (minutes)').fill('3');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    const limits = (
      await admin.call<{ sessionIdleMinutes: number; unusedRunnerIdleMinutes: number }>('GET', '/api/admin/settings')
    ).body;
    expect([limits.sessionIdleMinutes, limits.unusedRunnerIdleMinutes]).toEqual([20, 3]);
    await screenshot(page, 'admin-limits');

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('cell', { name: 'settings.update' }).first().waitFor();
    await page.getByRole('cell', { name: 'user.create' }).first().waitFor();
    await screenshot(page, 'admin-audit');

    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    await newSession(page);
    await page.locator('.chat-meta .backend-tag').filter({ hasText: 'pi' }).waitFor();
    await send(page, `Hello pi.\n${directive({ text: 'pi answers here' })}`);
    await turnsDone(page, 1);
    expect(await assistantTexts(page)).toEqual(['pi answers here']);

    await page.goto(`${stack.url}/admin/sessions`);
    await page.getByLabel('Show').selectOption('all');
    await page.getByRole('cell', { name: 'admin' }).first().waitFor();
    await screenshot(page, 'admin-sessions');
    const back = await admin.call('PUT', '/api/admin/settings', { llmBackend: 'claude' });
    expect(back.status).toBe(200);
    expect(errors).toEqual([]);
  });

  it('admin sets the repository hosts: a bad pattern is named beside the field, the list is kept, a host outside it is refused where the session starts', async () => {
    const { page, errors } = await adminPage();
    const hostsOf = async () =>
      (await admin.call<{ repositoryHosts: string[] }>('GET', '/api/admin/settings')).body.repositoryHosts;
    try {
      await page.goto(`${stack.url}/admin/limits`);
      const hosts = page.getByLabel(/Repository hosts/);
      await expect.poll(() => hosts.inputValue()).toBe('*');
      await hosts.fill('git.switchyard.test\nNot A Host!');
      await page.getByRole('button', { name: 'Save limits' }).click();
      await expect
        .poll(() => page.locator('#repo-hosts-error').innerText())
        .toBe('“Not A Host!”: must be `*`, `*.example.org`, a lowercase host name or an address');
      expect(await hosts.getAttribute('aria-invalid')).toBe('true');
      await screenshot(page, 'admin-repository-hosts-error');
      expect(await hostsOf()).toEqual(['*']);

      // Blank lines and spaces are not patterns; loopback here only so the session below clones nothing off this machine.
      await hosts.fill('git.switchyard.test\n\n  *.mirror.switchyard.test \n127.0.0.1');
      await page.getByRole('button', { name: 'Save limits' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
      expect(await page.locator('#repo-hosts-error').count()).toBe(0);
      expect(await hostsOf()).toEqual(['git.switchyard.test', '*.mirror.switchyard.test', '127.0.0.1']);
      await screenshot(page, 'admin-repository-hosts');

      await page.goto(`${stack.url}/`);
      await page.getByText('Start from repository…').click();
      await page.getByLabel('Repository URL').fill('https://elsewhere.example.org/team/project.git');
      await page.getByRole('button', { name: 'New session from repository' }).click();
      await expect
        .poll(() => page.locator('#repo-url-error').innerText())
        .toContain('elsewhere.example.org is not an allowed repository host');
      expect(new URL(page.url()).pathname).toBe('/');
      await screenshot(page, 'repository-host-refused');

      // The session's header shows what it started from, as text. Port 9 on loopback: nothing there.
      const created = await admin.call<{ id: string }>('POST', '/api/sessions', {
        repository: { url: 'http://127.0.0.1:9/team/project.git', ref: 'release-1' },
      });
      expect(created.status).toBe(201);
      await page.goto(`${stack.url}/sessions/${created.body.id}`);
      const shown = page.getByTestId('session-repository');
      await expect.poll(() => shown.innerText()).toBe('From http://127.0.0.1:9/team/project.git at release-1');
      expect(await shown.locator('a').count()).toBe(0);
      await screenshot(page, 'session-repository-header');
    } finally {
      expect((await admin.call('PUT', '/api/admin/settings', { repositoryHosts: ['*'] })).status).toBe(200);
    }
    expect(await hostsOf()).toEqual(['*']);
    expect(errors).toEqual([]);
  });

  it('a non-admin never sees the admin console, and the API refuses them; an admin opens their session read-only', async () => {
    const created = await addUser('dave', 'dave-password-123');
    expect(created.status).toBe(201);
    const ctx = await newContext();
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(`${stack.url}/`);
    await signIn(page, 'dave', 'dave-password-123');
    expect(await page.getByRole('link', { name: 'Admin' }).count()).toBe(0);
    await page.goto(`${stack.url}/admin/users`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    expect(await page.getByRole('button', { name: 'Add user' }).count()).toBe(0);
    const res = await page.request.get(`${stack.url}/api/admin/users`);
    expect(res.status()).toBe(403);
    await page.goto(`${stack.url}/`);
    const id = await newSession(page);
    await send(page, `From dave.\n${directive({ text: 'dave reply' })}`);
    await turnsDone(page, 1);

    const adminView = await adminPage();
    await adminView.page.goto(`${stack.url}/admin/sessions`);
    await adminView.page.getByLabel('Show').selectOption('all');
    await adminView.page.getByRole('row').filter({ hasText: 'dave' }).getByRole('link').first().click();
    await adminView.page.waitForURL(`${stack.url}/sessions/${id}`);
    await turnsDone(adminView.page, 1);
    expect(await assistantTexts(adminView.page)).toEqual(['dave reply']);
    await adminView.page.getByText('Read-only').waitFor();
    // The owner sees that an admin has the session open, and the admin sees the owner.
    await page.getByLabel('Watching now: you, admin').waitFor();
    await adminView.page.getByLabel('Watching now: you, dave').waitFor();
    await screenshot(page, 'chat-watched-by-admin');
    expect(await adminView.page.getByLabel('Message').count()).toBe(0);
    expect(errors).toEqual([]);
    expect(adminView.errors).toEqual([]);
  });

  it('works from the keyboard alone: sign in, open a new session, send', async () => {
    const ctx = await newContext();
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(`${stack.url}/`);
    await page.getByLabel('Username').waitFor();
    await page.keyboard.type(stack.admin.username);
    await page.keyboard.press('Tab');
    await page.keyboard.type(stack.admin.password);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    const focused = () => page.evaluate(() => (document.activeElement as HTMLElement | null)?.innerText?.trim() ?? '');
    let presses = 0;
    while ((await focused()) !== 'New session') {
      await page.keyboard.press('Tab');
      expect(++presses, 'New session reachable with Tab').toBeLessThan(20);
    }
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/sessions\/[0-9A-Z]{26}$/);
    // The message box has the focus when a session opens.
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('message-box');
    await page.keyboard.type('From the keyboard.');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type(directive({ text: 'keyboard reply' }));
    await page.keyboard.press('Enter');
    await turnsDone(page, 1);
    expect(await assistantTexts(page)).toEqual(['keyboard reply']);
    expect(await conversation(page).locator('.msg.user .user-text').innerText()).toBe(
      `From the keyboard.\n${directive({ text: 'keyboard reply' })}`,
    );
    expect(errors).toEqual([]);
  });

  it('fits a phone screen (the session list is a drawer) and follows the dark colour scheme', async () => {
    const { page, errors } = await adminPage({
      viewport: { width: 390, height: 844 },
      colorScheme: 'dark',
      isMobile: true,
      hasTouch: true,
    });
    const nav = page.getByRole('navigation', { name: 'Sessions' });
    const drawerX = async () => (await nav.boundingBox())?.x;
    // The list is off screen until the menu button opens it; opening a session closes it.
    expect(await nav.evaluate((el) => el.getBoundingClientRect().right)).toBeLessThanOrEqual(0);
    await page.getByRole('button', { name: 'Sessions' }).click();
    await expect.poll(drawerX).toBe(0);
    await screenshot(page, 'phone-drawer-dark');
    await newSession(page);
    await expect.poll(() => nav.evaluate((el) => el.getBoundingClientRect().right)).toBeLessThanOrEqual(0);
    // On a touch screen Enter adds a line; the Send button sends.
    await page.getByLabel('Message').fill(`Phone.\n${directive({ text: 'Short answer with `code`.' })}`);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await turnsDone(page, 1);
    await screenshot(page, 'phone-chat-dark');
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).toBe('rgb(15, 17, 21)');
    // No horizontal scrolling on a phone.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    expect(errors).toEqual([]);
  });

  it('at the per-user runner limit the composer says what to do, in words, and keeps the message', async () => {
    expect((await addUser('gina', 'gina-password-123')).status).toBe(201);
    expect((await admin.call('PUT', '/api/admin/settings', { maxLiveRunnersPerUser: 1 })).status).toBe(200);
    try {
      const ctx = await newContext();
      const page = await ctx.newPage();
      const errors = watchErrors(page);
      await page.goto(`${stack.url}/`);
      await signIn(page, 'gina', 'gina-password-123');
      await newSession(page);
      await send(page, `First.\n${directive({ text: 'one' })}`);
      await turnsDone(page, 1);
      await newSession(page);
      await page.getByText('No messages yet').waitFor();
      await send(page, 'Second, over the limit.');
      const alert = page.getByRole('alert').filter({ hasText: 'Too many of your sessions' });
      await expect
        .poll(() => alert.innerText())
        .toBe(
          'Too many of your sessions have an agent running right now. An agent stops once its session has sat unused for a while: send again then, or delete a session you no longer need. Your message is kept.',
        );
      expect(await page.getByLabel('Message').inputValue()).toBe('Second, over the limit.');
      await screenshot(page, 'chat-runner-limit');
      expect(errors).toEqual([]);
    } finally {
      expect((await admin.call('PUT', '/api/admin/settings', { maxLiveRunnersPerUser: 50 })).status).toBe(200);
    }
  });

  it('repeated wrong passwords are refused with when to try again (runs last: it throttles this address)', async () => {
    expect((await addUser('erin', 'erin-password-123')).status).toBe(201);
    const ctx = await newContext();
    const page = await ctx.newPage();
    await page.goto(`${stack.url}/signin`);
    let text = '';
    for (let i = 0; i < 30 && !/Too many/.test(text); i++) {
      await page.getByLabel('Username').fill('erin');
      await page.getByLabel('Password').fill(`wrong-${i}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign in' }).and(page.locator(':enabled')).waitFor();
      text = await page.getByRole('alert').innerText();
    }
    expect(text).toMatch(/^Too many failed attempts\. Try again in \d+ (second|minute)s?\.$/);
    await screenshot(page, 'signin-locked');
  });
});
