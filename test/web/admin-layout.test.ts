/// <reference lib="dom" />
// The admin console's layout and lists in real Chromium against the real stack, on a phone
// (390x844) and a desktop (1280x800): no tab scrolls sideways and every control is on screen (on a
// phone the tables are cards); a very long session title is cut with an ellipsis, whole in its
// tooltip, inside the table; the Live sessions refresh keeps the rows "Load more" loaded; the
// Limits panel shows and takes sizes in KiB/MiB/GiB and the API gets exact bytes. The size
// formatter and parser are pinned on their own first.
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { formatSize, parseSize, sizeToEdit } from '../../web/src/ui/format.ts';
import { closeContexts, launchBrowser, openSignedIn, screenshot } from '../helpers/browser.ts';
import { Api } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const MiB = 1024 * 1024;

const LONG_NAME = 'dave.the.operations.team.lead.01';
const LONG_TITLE =
  `Refactor the authentication middleware so that ${'tokens are validated before the body is parsed '.repeat(3)}`
    .trim()
    .slice(0, 190);

describe('sizes in binary units (web/src/ui/format.ts)', () => {
  it('shows a size in the largest unit that keeps it exact, and reads one back as exact bytes', () => {
    expect(sizeToEdit(10 * MiB)).toEqual({ amount: '10', unit: 'MiB' });
    expect(sizeToEdit(1536)).toEqual({ amount: '1.5', unit: 'KiB' });
    expect(sizeToEdit(64 * 1024 * MiB)).toEqual({ amount: '64', unit: 'GiB' });
    expect(sizeToEdit(1_000_000)).toEqual({ amount: '1000000', unit: 'bytes' });
    expect(formatSize(10 * MiB)).toBe('10 MiB');
    expect(formatSize(1_000_000)).toBe('976.6 KiB');
    expect(parseSize(' 2.5 ', 'MiB')).toEqual({ bytes: 2.5 * MiB });
    expect(parseSize('1', 'GiB')).toEqual({ bytes: 1024 * MiB });
  });

  it('refuses what is not a whole number of bytes, a word, nothing and zero', () => {
    expect(parseSize('1.1', 'KiB')).toEqual({ problem: expect.stringContaining('not a whole number of bytes') });
    expect(parseSize('ten', 'MiB')).toEqual({ problem: expect.stringContaining('not a number') });
    expect(parseSize('-1', 'MiB')).toEqual({ problem: expect.stringContaining('not a number') });
    expect(parseSize('', 'MiB')).toEqual({ problem: 'enter a size' });
    expect(parseSize('0', 'MiB')).toEqual({ problem: 'must be more than 0' });
  });
});

describe('the admin console in Chromium', () => {
  let running: TestStack;
  let stack: Stack;
  let browser: Browser;
  let admin: Api;
  const contexts: BrowserContext[] = [];
  /** Every session made, newest last: more than two pages of 50. */
  const made: Array<{ id: string; by: Api }> = [];

  beforeAll(async () => {
    running = await startTestStack('admin-layout');
    stack = running.stack;
    admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
    // Three owners: one person may create 60 sessions in 10 minutes.
    const owners = [admin];
    for (const username of [LONG_NAME, 'second.owner']) {
      const created = await admin.call('POST', '/api/admin/users', {
        username,
        password: 'password-for-tests',
        role: 'user',
        currentPassword: stack.admin.password,
      });
      if (created.status !== 201) throw new Error(`creating ${username}: ${created.status} ${created.text}`);
      owners.push(await Api.login(stack.url, username, 'password-for-tests'));
    }
    for (let i = 0; i < 120; i++) await newSession(owners[i % 3]!);
    await newSession(admin, LONG_TITLE);
    browser = await launchBrowser();
  }, STACK_READY_MS + 120_000);

  afterEach(({ task }) => closeContexts(contexts, task, 'failed-admin-layout'));

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  }, 120_000);

  async function newSession(by: Api, title?: string): Promise<string> {
    const created = await by.call<{ id: string }>('POST', '/api/sessions', {});
    if (created.status !== 201) throw new Error(`creating a session: ${created.status} ${created.text}`);
    if (title !== undefined) await rename(by, created.body.id, title);
    made.push({ id: created.body.id, by });
    return created.body.id;
  }

  async function rename(by: Api, id: string, title: string): Promise<void> {
    const renamed = await by.call('PATCH', `/api/sessions/${id}`, { title });
    if (renamed.status !== 200) throw new Error(`renaming a session: ${renamed.status} ${renamed.text}`);
  }

  /** Signed in as the admin on an admin tab; page errors are collected for the test to check. */
  async function openAdmin(
    opts: BrowserContextOptions,
    path: string,
    before?: (page: Page) => Promise<void>,
  ): Promise<{ page: Page; errors: string[] }> {
    const signed = await openSignedIn({
      browser,
      contexts,
      options: opts,
      url: `${stack.url}${path}`,
      user: { username: stack.admin.username, password: stack.admin.password },
      stackLog: () => running.log,
      ...(before !== undefined && { beforeSignIn: before }),
    });
    const { page } = signed;
    await page.getByRole('heading', { name: 'Admin', level: 1 }).waitFor();
    return signed;
  }

  const sessionRows = (page: Page) => page.locator('section[aria-labelledby="live-title"] tbody tr');

  /** The ids of the session rows shown, in order. */
  const shownIds = (page: Page) =>
    sessionRows(page)
      .locator('a[href^="/sessions/"]')
      .evaluateAll((links) => links.map((a) => a.getAttribute('href')!.slice('/sessions/'.length)));

  async function showAllSessions(page: Page): Promise<void> {
    await page.getByLabel('Show').selectOption('all');
    await expect.poll(() => sessionRows(page).count()).toBe(50);
  }

  /**
   * What scrolls sideways (the document, the content pane, or a box inside it) and which controls
   * of the page's content lie outside the viewport, by their text or label.
   */
  function layout(page: Page) {
    return page.evaluate(() => {
      const scrolled: string[] = [];
      const root = document.documentElement;
      if (root.scrollWidth > innerWidth) scrolled.push(`page ${root.scrollWidth} > ${innerWidth}`);
      for (const el of Array.from(document.querySelectorAll<HTMLElement>('.content, main *'))) {
        const style = getComputedStyle(el);
        const scrolls = el.matches('.content') || style.overflowX === 'auto' || style.overflowX === 'scroll';
        if (scrolls && el.scrollWidth > el.clientWidth + 1)
          scrolled.push(`${el.tagName.toLowerCase()}.${el.className} ${el.scrollWidth} > ${el.clientWidth}`);
      }
      const offscreen: string[] = [];
      for (const el of Array.from(
        document.querySelectorAll<HTMLElement>('main a, main button, main select, main input'),
      )) {
        const r = el.getBoundingClientRect();
        // Not rendered (an sr-only label's box is 1px).
        if (r.width <= 1 || r.height <= 1) continue;
        if (r.left < 0 || r.right > innerWidth + 0.5)
          offscreen.push(`${el.getAttribute('aria-label') || el.innerText || el.tagName} at ${r.left}..${r.right}`);
      }
      return { scrolled, offscreen };
    });
  }

  /** Text cut with an ellipsis whose tooltip is not the whole text; and how many are cut at all. */
  function truncation(page: Page) {
    return page.evaluate(() => {
      const cut = Array.from(document.querySelectorAll<HTMLElement>('main *')).filter(
        (el) => getComputedStyle(el).textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth,
      );
      return {
        cut: cut.length,
        withoutTooltip: cut.filter((el) => el.title !== el.textContent).map((el) => el.textContent),
      };
    });
  }

  const TABS: Array<{ tab: string; link: string; ready: (page: Page) => Promise<void> }> = [
    { tab: 'users', link: 'Users', ready: (p) => p.getByRole('cell', { name: LONG_NAME, exact: true }).waitFor() },
    { tab: 'backend', link: 'Backend', ready: (p) => p.getByLabel('Backend', { exact: true }).waitFor() },
    { tab: 'limits', link: 'Limits', ready: (p) => p.getByRole('button', { name: 'Save approvals' }).waitFor() },
    { tab: 'sessions', link: 'Live sessions', ready: showAllSessions },
    { tab: 'audit', link: 'Audit log', ready: (p) => p.locator('tbody tr').first().waitFor() },
  ];

  for (const [size, opts] of [
    ['phone', PHONE],
    ['desktop', DESKTOP],
  ] as const) {
    it(`on a ${size}, no admin tab scrolls sideways and every control is on screen`, async () => {
      const { page, errors } = await openAdmin(opts, '/admin/users');
      for (const { tab, link, ready } of TABS) {
        await page.getByRole('navigation', { name: 'Admin sections' }).getByRole('link', { name: link }).click();
        await page.waitForURL(`${stack.url}/admin/${tab}`);
        await ready(page);
        await screenshot(page, `admin-${tab}-${size}`);
        if (tab === 'limits') {
          await page.getByLabel('Workspace size', { exact: true }).scrollIntoViewIfNeeded();
          await screenshot(page, `admin-limits-sizes-${size}`);
        }
        expect({ tab, ...(await layout(page)) }).toEqual({ tab, scrolled: [], offscreen: [] });
        const cut = await truncation(page);
        expect({ tab, withoutTooltip: cut.withoutTooltip }).toEqual({ tab, withoutTooltip: [] });
        // On a desktop the long title, the long owner name and audit targets are cut; on a phone they wrap.
        if (size === 'desktop' && (tab === 'sessions' || tab === 'audit')) expect(cut.cut).toBeGreaterThan(0);
        if (size === 'phone') expect(cut.cut).toBe(0);
      }
      // The user with the long name has all three actions, on screen (checked above) and visible.
      const row = page.locator('tr', { hasText: LONG_NAME });
      await page.getByRole('navigation', { name: 'Admin sections' }).getByRole('link', { name: 'Users' }).click();
      for (const name of ['Reset password', 'Disable', 'Delete'])
        await expect.poll(() => row.getByRole('button', { name }).isVisible()).toBe(true);
      await row.scrollIntoViewIfNeeded();
      await screenshot(page, `admin-users-actions-${size}`);
      expect(errors).toEqual([]);
    });
  }

  it('on a phone, a long session title wraps on its card, within the screen', async () => {
    const { page, errors } = await openAdmin(PHONE, '/admin/sessions');
    await showAllSessions(page);
    const link = page.getByRole('link', { name: LONG_TITLE });
    await link.scrollIntoViewIfNeeded();
    const box = await link.boundingBox();
    expect(box).not.toBeNull();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    // Two lines of it rather than one cut short.
    expect(box!.height).toBeGreaterThan(30);
    await screenshot(page, 'admin-sessions-long-title-phone');
    expect(errors).toEqual([]);
  });

  it('on a desktop, a long session title is cut with an ellipsis inside the table, whole in its tooltip', async () => {
    const { page, errors } = await openAdmin(DESKTOP, '/admin/sessions');
    await showAllSessions(page);
    const link = page.getByRole('link', { name: LONG_TITLE });
    expect(await link.getAttribute('title')).toBe(LONG_TITLE);
    const shown = await link.evaluate((el) => {
      const wrap = el.closest('.table-wrap')!;
      const table = wrap.querySelector('table')!;
      return {
        cut: el.scrollWidth > el.clientWidth,
        oneLine: el.getBoundingClientRect().height < 30,
        tableFits: table.getBoundingClientRect().width <= wrap.clientWidth,
      };
    });
    expect(shown).toEqual({ cut: true, oneLine: true, tableFits: true });
    await screenshot(page, 'admin-sessions-long-title-desktop');
    expect(errors).toEqual([]);
  });

  it('the Live sessions refresh keeps the rows "Load more" loaded, up to date and each once', async () => {
    // Timers run on a clock the test moves, so the 10 s refresh needs no 10 s of waiting.
    const { page, errors } = await openAdmin(DESKTOP, '/admin/sessions', (p) => p.clock.install());
    await showAllSessions(page);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => sessionRows(page).count()).toBe(100);
    const before = await shownIds(page);

    // While the page shows them: a row of the second page is renamed, and a session is created
    // (pushing every row one down, so a page boundary moves).
    const renamed = made.find((s) => s.id === before[80])!;
    await rename(renamed.by, renamed.id, 'Renamed while shown');
    const added = await newSession(admin, 'Created while shown');
    await page.clock.runFor(10_000);

    await expect.poll(() => sessionRows(page).filter({ hasText: 'Renamed while shown' }).count()).toBe(1);
    const after = await shownIds(page);
    expect(after).toEqual([added, ...before]);
    expect(await sessionRows(page).filter({ hasText: 'Created while shown' }).count()).toBe(1);
    await sessionRows(page).filter({ hasText: 'Renamed while shown' }).scrollIntoViewIfNeeded();
    await screenshot(page, 'admin-sessions-after-refresh-desktop');

    // "Load more" goes on from where the person was: the rest, each once.
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => sessionRows(page).count()).toBe(made.length);
    const all = await shownIds(page);
    expect(new Set(all).size).toBe(all.length);
    expect(new Set(all)).toEqual(new Set(made.map((s) => s.id)));
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('Limits shows sizes in MiB, saves exact bytes, and refuses a bad size naming its field', async () => {
    const { page, errors } = await openAdmin(DESKTOP, '/admin/limits');
    const amount = page.getByLabel('Largest message', { exact: true });
    const unit = page.getByLabel('Largest message: unit');
    // The defaults: 1 MiB, 32 MiB, 512 MiB.
    await expect.poll(() => amount.inputValue()).toBe('1');
    expect(await unit.inputValue()).toBe('MiB');
    expect(await page.getByLabel('Largest workspace file', { exact: true }).inputValue()).toBe('32');
    expect(await page.getByLabel('Workspace size', { exact: true }).inputValue()).toBe('512');
    const save = page.getByRole('button', { name: 'Save limits' });
    const settings = async () =>
      (await admin.call<{ maxMessageBytes: number; workspaceMaxBytes: number }>('GET', '/api/admin/settings')).body;

    await amount.fill('2.5');
    await page.getByLabel('Workspace size', { exact: true }).fill('1');
    await page.getByLabel('Workspace size: unit').selectOption('GiB');
    await save.click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    expect(await settings()).toMatchObject({ maxMessageBytes: 2.5 * MiB, workspaceMaxBytes: 1024 * MiB });
    await screenshot(page, 'admin-limits-saved-desktop');

    // Not a whole number of bytes: refused here, on its field, and nothing is sent.
    await amount.fill('1.1');
    await unit.selectOption('KiB');
    await save.click();
    // Every message the form shows, read without waiting, so a wrong one fails with its text.
    const alerts = () => page.getByRole('alert').allInnerTexts();
    await expect.poll(alerts).toEqual(['Largest message: 1.1 KiB is not a whole number of bytes; use a smaller unit']);
    expect(await amount.getAttribute('aria-invalid')).toBe('true');
    expect(await amount.evaluate((el) => el === document.activeElement)).toBe(true);
    await screenshot(page, 'admin-limits-refused-desktop');

    // Over the server's bound: its refusal in the form's words and units.
    await amount.fill('20');
    await unit.selectOption('MiB');
    await save.click();
    await expect.poll(alerts).toEqual(['Largest message: must be from 1 KiB to 10 MiB']);
    expect(await settings()).toMatchObject({ maxMessageBytes: 2.5 * MiB });
    await amount.fill('2.5');

    // A count: nothing typed is refused here; a rule between two limits is named in words.
    const perUser = page.getByLabel('Runners per user', { exact: true });
    await perUser.fill('');
    await save.click();
    await expect.poll(alerts).toEqual(['Runners per user: enter a whole number, 1 or more']);
    await perUser.fill('60');
    await save.click();
    await expect.poll(alerts).toEqual(['Runners per user: must be at most the runners in total (50)']);
    await screenshot(page, 'admin-limits-rule-refused-desktop');

    // Shown again after a reload in the unit that keeps it exact.
    await page.reload();
    await expect.poll(() => amount.inputValue()).toBe('2.5');
    expect(await unit.inputValue()).toBe('MiB');
    expect(await page.getByLabel('Workspace size', { exact: true }).inputValue()).toBe('1');
    expect(await page.getByLabel('Workspace size: unit').inputValue()).toBe('GiB');
    expect(errors).toEqual([]);
  });
});
