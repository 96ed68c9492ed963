/// <reference lib="dom" />
// The session sidebar's list in real Chromium against the real stack: a failed load says so and
// Retry loads it; a title cut to one line has all of it as a tooltip; a list longer than a page
// (50) shows older sessions on request, without duplicates, and its refreshes keep the whole listed
// range up to date. On the same stack: a provider failure in the chat reads as plain words, with
// no variable name, host or port, on the page and in the session's events.
import type { Browser, BrowserContext, BrowserContextOptions, Page, Route } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { closeContexts, launchBrowser, openSignedIn, screenshot, type SignedInPage } from '../helpers/browser.ts';
import { Api } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
/** The store's page size (web/src/sessions/session-list-store.ts). */
const PAGE = 50;
const TURN_MS = 120_000;

let running: TestStack;
let stack: Stack;
let browser: Browser;
let admin: Api;
const contexts: BrowserContext[] = [];

/** A person with a list longer than one page: `Session 01` (oldest) to `Session 53` (newest). */
const MANY = { username: 'pager', password: 'pager-password-123', count: PAGE + 3 };
let many: Api;
/** A person with a short list, one title too long for the sidebar. */
const FEW = { username: 'brief', password: 'brief-password-123' };
const LONG_TITLE =
  'Refactor the authentication middleware so that tokens are validated before the request body is parsed and logged';

const titleOf = (i: number) => `Session ${String(i).padStart(2, '0')}`;

async function addUser(user: { username: string; password: string }): Promise<Api> {
  const { username, password } = user;
  const added = await admin.call('POST', '/api/admin/users', {
    username,
    password,
    currentPassword: stack.admin.password,
  });
  if (added.status !== 201) throw new Error(`adding ${user.username}: ${added.status} ${added.text}`);
  return Api.login(stack.url, user.username, user.password);
}

async function createSession(api: Api, title: string): Promise<string> {
  const created = await api.call<{ id: string }>('POST', '/api/sessions', { title });
  if (created.status !== 201) throw new Error(`creating ${title}: ${created.status} ${created.text}`);
  return created.body.id;
}

beforeAll(async () => {
  running = await startTestStack('session-list');
  stack = running.stack;
  admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  many = await addUser(MANY);
  // One at a time: ids (ULIDs) then follow the numbering, newest last.
  for (let i = 1; i <= MANY.count; i++) await createSession(many, titleOf(i));
  const few = await addUser(FEW);
  await createSession(few, 'Short one');
  await createSession(few, LONG_TITLE);
  browser = await launchBrowser();
}, STACK_READY_MS + 120_000);

afterEach(({ task }) => closeContexts(contexts, task, 'failed-session-list'));

afterAll(async () => {
  await browser?.close();
  await running?.stop();
}, 120_000);

/**
 * A page signed in as `user` at `/`, with `beforeSignIn` run first (routes to set up before the
 * list's first request); in the background unless told otherwise. Page errors are collected for
 * the test to check.
 */
async function signedIn(
  user: { username: string; password: string },
  opts: BrowserContextOptions = DESKTOP,
  beforeSignIn?: (page: Page) => Promise<unknown>,
  background = true,
): Promise<SignedInPage> {
  return openSignedIn({
    browser,
    contexts,
    options: opts,
    url: `${stack.url}/`,
    user,
    stackLog: () => running.log,
    beforeSignIn: async (page) => {
      // A tab in the background: the list's 15 s timer refreshes nothing, so every request a test
      // sees is one it caused (a Retry, a focus, a button) and a broken one cannot hide behind it.
      if (background)
        await page.addInitScript(() => Object.defineProperty(document, 'visibilityState', { get: () => 'hidden' }));
      await beforeSignIn?.(page);
    },
  });
}

const nav = (page: Page) => page.getByRole('navigation', { name: 'Sessions' });
const links = (page: Page) => nav(page).locator('a.session-link');
const older = (page: Page) => nav(page).getByRole('button', { name: 'Show older sessions' });
const LIST_REQUEST = '**/api/sessions?**';

/** The titles the sidebar lists, top to bottom. */
async function listed(page: Page): Promise<string[]> {
  return nav(page).locator('.session-title').allInnerTexts();
}

/** What the store does when the window gets focus: reload the list. */
async function refocus(page: Page): Promise<void> {
  await page.evaluate(() => dispatchEvent(new Event('focus')));
}

const INTERNAL = JSON.stringify({ error: { code: 'internal', message: 'internal error' } });

describe('the session list', () => {
  it('a failed load says what went wrong, and Retry asks again until the list comes', async () => {
    let failing = true;
    let asked = 0;
    const { page, errors } = await signedIn(FEW, DESKTOP, (p) =>
      p.route(LIST_REQUEST, (route: Route) => {
        asked++;
        return failing
          ? route.fulfill({ status: 500, contentType: 'application/json', body: INTERNAL })
          : route.continue();
      }),
    );
    const alert = nav(page).getByRole('alert');
    await expect.poll(() => alert.allInnerTexts()).toEqual(['Your sessions could not be loaded: internal error']);
    expect(await nav(page).getByText('Loading…').count()).toBe(0);
    await screenshot(page, 'session-list-load-failed');

    // Still failing: Retry asks again and says so again.
    const before = asked;
    await nav(page).getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => asked).toBeGreaterThan(before);
    await expect.poll(() => alert.allInnerTexts()).toEqual(['Your sessions could not be loaded: internal error']);

    failing = false;
    await nav(page).getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => listed(page)).toEqual([LONG_TITLE, 'Short one']);
    expect(await alert.count()).toBe(0);
    expect(await nav(page).getByRole('button', { name: 'Retry' }).count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a refresh that cannot reach the server keeps the list, and Retry brings what changed meanwhile', async () => {
    let offline = false;
    const { page, errors } = await signedIn(FEW, PHONE, (p) =>
      p.route(LIST_REQUEST, (route: Route) => (offline ? route.abort('internetdisconnected') : route.continue())),
    );
    await page.getByRole('button', { name: 'Sessions', exact: true }).tap();
    await expect.poll(() => listed(page)).toEqual([LONG_TITLE, 'Short one']);
    offline = true;
    await refocus(page);
    await expect
      .poll(() => nav(page).getByRole('alert').allInnerTexts())
      .toEqual(['The list could not be refreshed: cannot reach the server; check your connection']);
    expect(await listed(page)).toEqual([LONG_TITLE, 'Short one']);
    await screenshot(page, 'session-list-refresh-failed-phone');

    // Made elsewhere while this page could not ask: Retry really asks again.
    await createSession(await Api.login(stack.url, FEW.username, FEW.password), 'Made while offline');
    offline = false;
    await nav(page).getByRole('button', { name: 'Retry' }).tap();
    await expect.poll(() => listed(page)).toEqual(['Made while offline', LONG_TITLE, 'Short one']);
    expect(await nav(page).getByRole('alert').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a title cut to one line has all of it as a tooltip', async () => {
    const { page, errors } = await signedIn(FEW);
    const title = nav(page).locator('.session-title', { hasText: 'Refactor the authentication' });
    await title.waitFor();
    const shown = await title.evaluate((el) => ({
      cut: el.scrollWidth > el.clientWidth,
      tooltip: el.getAttribute('title'),
    }));
    expect(shown).toEqual({ cut: true, tooltip: LONG_TITLE });
    expect(await nav(page).locator('.session-title', { hasText: 'Short one' }).getAttribute('title')).toBe('Short one');
    expect(errors).toEqual([]);
  });

  it('shows a page of the newest sessions, then older ones on request, each once', async () => {
    const { page, errors } = await signedIn(MANY);
    const newest = Array.from({ length: MANY.count }, (_, i) => titleOf(MANY.count - i));
    await expect.poll(() => listed(page)).toEqual(newest.slice(0, PAGE));
    await older(page).scrollIntoViewIfNeeded();
    await screenshot(page, 'session-list-older-button');

    await older(page).click();
    await expect.poll(() => listed(page)).toEqual(newest);
    // The last page: nothing more to ask for.
    expect(await older(page).count()).toBe(0);
    await links(page).last().scrollIntoViewIfNeeded();
    await screenshot(page, 'session-list-all-loaded');
    expect(errors).toEqual([]);
  });

  it('a failed request for older sessions says so; pressing again loads them', async () => {
    let offline = true;
    const { page, errors } = await signedIn(MANY, DESKTOP, (p) =>
      p.route(`**/api/sessions?**cursor=**`, (route: Route) =>
        offline ? route.abort('internetdisconnected') : route.continue(),
      ),
    );
    await older(page).click();
    const alert = nav(page).getByRole('alert');
    await expect
      .poll(() => alert.allInnerTexts())
      .toEqual(['Older sessions could not be loaded: cannot reach the server; check your connection']);
    expect(await links(page).count()).toBe(PAGE);
    await older(page).scrollIntoViewIfNeeded();
    await screenshot(page, 'session-list-older-failed');
    offline = false;
    await older(page).click();
    await expect.poll(() => links(page).count()).toBe(MANY.count);
    expect(await alert.count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('signing out forgets the list: the next person in the tab sees only theirs, from their first page', async () => {
    const { page, errors } = await signedIn(FEW);
    await expect.poll(async () => (await listed(page)).includes('Short one')).toBe(true);
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The next person's list is held back, to see what the sidebar shows before it comes.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route(LIST_REQUEST, async (route: Route) => {
      await held;
      await route.continue();
    });
    await page.getByLabel('Username').fill(MANY.username);
    await page.getByLabel('Password').fill(MANY.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await nav(page).getByText('Loading…').waitFor();
    expect(await listed(page)).toEqual([]);
    release();
    const newest = Array.from({ length: PAGE }, (_, i) => titleOf(MANY.count - i));
    await expect.poll(() => listed(page)).toEqual(newest);
    expect(await older(page).count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('refreshes keep every listed page up to date: a rename, a deletion and a new session', async () => {
    const { page, errors } = await signedIn(MANY);
    await older(page).click();
    await expect.poll(() => links(page).count()).toBe(MANY.count);
    const ids = await links(page).evaluateAll((els) => els.map((a) => a.getAttribute('href')!.split('/').pop()!));
    // Both on the older page, elsewhere (another tab, the API).
    const [second, first] = ids.slice(-2) as [string, string];
    expect((await many.call('PATCH', `/api/sessions/${second}`, { title: 'Renamed elsewhere' })).status).toBe(200);
    expect((await many.call('DELETE', `/api/sessions/${first}`)).status).toBe(204);
    const added = await createSession(many, 'Made elsewhere');
    await refocus(page);
    const expected = [
      'Made elsewhere',
      ...Array.from({ length: MANY.count - 2 }, (_, i) => titleOf(MANY.count - i)),
      'Renamed elsewhere',
    ];
    await expect.poll(() => listed(page)).toEqual(expected);
    // Everything is listed, so the list is complete: no button for more.
    expect(await older(page).count()).toBe(0);

    // New session here: at the top at once, and once only after the next refresh.
    await nav(page).getByRole('button', { name: 'New session' }).click();
    await page.waitForURL((url) => /^\/sessions\/[0-9A-Z]{26}$/.test(url.pathname));
    await expect.poll(async () => (await listed(page)).length).toBe(expected.length + 1);
    await refocus(page);
    await expect.poll(() => links(page).first().getAttribute('aria-current')).toBe('page');
    const after = await links(page).evaluateAll((els) => els.map((a) => a.getAttribute('href')));
    expect(new Set(after).size).toBe(after.length);
    expect(after).toHaveLength(expected.length + 1);
    expect(after[1]).toBe(`/sessions/${added}`);
    expect(errors).toEqual([]);
  });
});

describe('a provider failure in the chat', { timeout: 3 * TURN_MS }, () => {
  it('reads as plain words: no variable name, host or port on the page or in the events', async () => {
    const { page, errors } = await signedIn(FEW, DESKTOP, undefined, false);
    await nav(page).getByRole('button', { name: 'New session' }).click();
    await page.waitForURL((url) => /^\/sessions\/[0-9A-Z]{26}$/.test(url.pathname));
    const id = new URL(page.url()).pathname.split('/').pop()!;
    // A 500 on every attempt: claude's own text for it names its base URL, the runner's loopback proxy.
    await page.getByLabel('Message').fill('Fail, please.\n#offline {"error":500}');
    await page.getByLabel('Message').press('Enter');
    const conversation = page.getByRole('log', { name: 'Conversation' });
    await conversation.locator('article.turn[data-state="done"]').first().waitFor({ timeout: TURN_MS });
    await screenshot(page, 'chat-provider-error');
    const leaks = /SWITCHYARD_|ANTHROPIC_|127\.0\.0\.1|localhost/;
    expect(await conversation.innerText()).not.toMatch(leaks);

    const user = await Api.login(stack.url, FEW.username, FEW.password);
    const events = await user.events(id);
    try {
      const done = await events.waitFor('turn.done', (e) => e.event === 'turn.done', 30_000);
      expect(done.data).toMatchObject({ stopReason: 'error', error: { code: 'provider_unavailable' } });
      const text = JSON.stringify(events.events.map((e) => e.data));
      expect(text).toContain('provider_unavailable');
      expect(text).not.toMatch(leaks);
    } finally {
      await events.close();
    }
    expect(await conversation.locator('.notice.stop-error').innerText()).toContain(
      'The model provider failed or could not be reached (HTTP 500). Send the message again shortly; if it keeps happening, ask an administrator.',
    );
    expect(errors).toEqual([]);
  });
});
