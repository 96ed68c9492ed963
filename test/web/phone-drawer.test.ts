/// <reference lib="dom" />
// The session drawer on a phone (390x844) in real Chromium against the real stack: closed, it is
// out of the tab order; open, a dimmed backdrop closes it on a tap, Escape closes it and gives
// focus back to the ☰ button, and following a session link (the current one too) closes it.
// On a desktop (1280x800) the session list stays a plain sidebar: always there, no ☰ button.
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { closeContexts, launchBrowser, openSignedIn, screenshot, type SignedInPage } from '../helpers/browser.ts';
import { Api } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };

let running: TestStack;
let stack: Stack;
let browser: Browser;
let admin: Api;
const contexts: BrowserContext[] = [];
/** Two sessions made through the API, with titles to find their links by. */
const sessions: Array<{ id: string; title: string }> = [];

beforeAll(async () => {
  running = await startTestStack('phone-drawer');
  stack = running.stack;
  admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  // Every test opens a session page; their runners must not hit the per-user cap.
  const raised = await admin.call('PUT', '/api/admin/settings', { maxLiveRunnersPerUser: 50 });
  if (raised.status !== 200) throw new Error(`raising maxLiveRunnersPerUser: ${raised.status} ${raised.text}`);
  for (const title of ['Parser refactor', 'Flaky test hunt']) {
    const created = await admin.call<{ id: string }>('POST', '/api/sessions', {});
    if (created.status !== 201) throw new Error(`creating a session: ${created.status} ${created.text}`);
    const renamed = await admin.call('PATCH', `/api/sessions/${created.body.id}`, { title });
    if (renamed.status !== 200) throw new Error(`renaming a session: ${renamed.status} ${renamed.text}`);
    sessions.push({ id: created.body.id, title });
  }
  browser = await launchBrowser();
}, STACK_READY_MS + 60_000);

afterEach(({ task }) => closeContexts(contexts, task, 'failed-phone-drawer'));

afterAll(async () => {
  await browser?.close();
  await running?.stop();
}, 120_000);

/** Signed in as the admin with the first session open; page errors are collected for the test to check. */
async function openSession(opts: BrowserContextOptions): Promise<SignedInPage> {
  const signed = await openSignedIn({
    browser,
    contexts,
    options: opts,
    url: `${stack.url}/sessions/${sessions[0]!.id}`,
    user: { username: stack.admin.username, password: stack.admin.password },
    stackLog: () => running.log,
  });
  await signed.page.getByRole('heading', { name: sessions[0]!.title, level: 1 }).waitFor();
  await sessionLink(signed.page, sessions[1]!.title).waitFor({ state: 'attached' });
  return signed;
}

const nav = (page: Page) => page.getByRole('navigation', { name: 'Sessions' });
const toggle = (page: Page) => page.getByRole('button', { name: 'Sessions', exact: true });
const backdrop = (page: Page) => page.getByRole('button', { name: 'Close sessions' });
const sessionLink = (page: Page, title: string) => nav(page).getByRole('link', { name: new RegExp(title) });

/** What the drawer looks like to a person: where it is, whether its controls can be reached. */
async function drawer(page: Page) {
  return page.evaluate(() => {
    const el = document.getElementById('sessions-nav')!;
    const r = el.getBoundingClientRect();
    return {
      left: r.left,
      right: r.right,
      width: r.width,
      inert: el.inert,
      expanded: document.querySelector('.nav-toggle')?.getAttribute('aria-expanded') ?? null,
      backdrop: document.querySelector('.drawer-backdrop') !== null,
    };
  });
}

const CLOSED = { right: 0, inert: true, expanded: 'false', backdrop: false };
const OPEN = { left: 0, inert: false, expanded: 'true', backdrop: true };

async function openDrawer(page: Page): Promise<void> {
  await toggle(page).tap();
  // Settled once the slide-in is done.
  await expect.poll(() => drawer(page)).toMatchObject(OPEN);
}

async function closed(page: Page): Promise<void> {
  await expect.poll(() => drawer(page)).toMatchObject(CLOSED);
}

type Stop = { label: string; inViewport: boolean; inDrawer: boolean; inMain: boolean };

/**
 * Presses Tab from the top of the page until focus has gone round once, recording every element it
 * lands on: its label, whether it is inside the viewport, in the drawer, in the page's content.
 */
async function tabWalk(page: Page): Promise<Stop[]> {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  const stops: Stop[] = [];
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    const stop = await page.evaluate(() => {
      const el = document.activeElement;
      if (el === null || el === document.body) return null;
      const r = el.getBoundingClientRect();
      return {
        label: (el.getAttribute('aria-label') ?? (el as HTMLElement).innerText ?? el.tagName).trim().split('\n')[0]!,
        inViewport: r.width > 0 && r.right > 0 && r.bottom > 0 && r.left < innerWidth && r.top < innerHeight,
        inDrawer: el.closest('#sessions-nav') !== null,
        inMain: el.closest('main') !== null,
      };
    });
    // Focus left the page (to the browser): once round.
    if (stop === null) {
      if (stops.length > 0) return stops;
      continue;
    }
    stops.push(stop);
  }
  throw new Error(`Tab never left the page: ${stops.map((s) => s.label).join(', ')}`);
}

describe('the session drawer on a phone', () => {
  it('closed, it is out of the tab order: focus never lands off screen', async () => {
    const { page, errors } = await openSession(PHONE);
    // Settled off screen, before anything else is asked of it, so that the walk is what fails.
    await expect.poll(async () => (await drawer(page)).right).toBe(0);
    await screenshot(page, 'phone-drawer-closed');
    const stops = await tabWalk(page);
    // Tab does go somewhere: through the top bar and into the conversation's controls.
    expect(stops.map((s) => s.label)).toContain('Sign out');
    expect(stops.some((s) => s.inMain)).toBe(true);
    expect(stops.filter((s) => s.inDrawer || !s.inViewport)).toEqual([]);
    await closed(page);
    expect(errors).toEqual([]);
  });

  it('open, its controls are reached by Tab and the content behind the backdrop is not', async () => {
    const { page, errors } = await openSession(PHONE);
    await openDrawer(page);
    const stops = await tabWalk(page);
    expect(stops.filter((s) => s.inDrawer).map((s) => s.label)).toEqual(
      expect.arrayContaining(['New session', sessions[0]!.title, sessions[1]!.title]),
    );
    expect(stops.map((s) => s.label)).toContain('Close sessions');
    expect(stops.filter((s) => s.inMain || !s.inViewport)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('a tap on the dimmed backdrop closes it', async () => {
    const { page, errors } = await openSession(PHONE);
    await openDrawer(page);
    // The drawer is a panel at the left edge, narrower than the screen, with the backdrop beside it.
    const open = await drawer(page);
    expect(open.width).toBe(300);
    const dim = await backdrop(page).evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(dim).toBe('rgba(0, 0, 0, 0.45)');
    await screenshot(page, 'phone-drawer-open');
    // Beside the drawer: the middle of the backdrop is under the drawer itself.
    await backdrop(page).tap({ position: { x: 350, y: 300 } });
    await closed(page);
    expect(new URL(page.url()).pathname).toBe(`/sessions/${sessions[0]!.id}`);
    expect(errors).toEqual([]);
  });

  it('Escape closes it and gives focus back to the ☰ button', async () => {
    const { page, errors } = await openSession(PHONE);
    await openDrawer(page);
    await sessionLink(page, sessions[1]!.title).focus();
    await page.keyboard.press('Escape');
    await closed(page);
    expect(await toggle(page).evaluate((el) => el === document.activeElement)).toBe(true);
    expect(new URL(page.url()).pathname).toBe(`/sessions/${sessions[0]!.id}`);
    expect(errors).toEqual([]);
  });

  it("following a session link closes it, the current session's link too; so does New session", async () => {
    const { page, errors } = await openSession(PHONE);
    const second = sessions[1]!;
    await openDrawer(page);
    await sessionLink(page, second.title).tap();
    await page.waitForURL(`${stack.url}/sessions/${second.id}`);
    await page.getByRole('heading', { name: second.title, level: 1 }).waitFor();
    await closed(page);

    // The link to the page already shown changes no route, yet the drawer closes.
    await openDrawer(page);
    await sessionLink(page, second.title).tap();
    await closed(page);
    expect(new URL(page.url()).pathname).toBe(`/sessions/${second.id}`);

    await openDrawer(page);
    await nav(page).getByRole('button', { name: 'New session' }).tap();
    await page.waitForURL(
      (url) => /^\/sessions\/[0-9A-Z]{26}$/.test(url.pathname) && !url.pathname.endsWith(second.id),
    );
    await closed(page);
    expect(errors).toEqual([]);
  });
});

describe('the session list on a desktop', () => {
  it('is a sidebar that is always there: no ☰ button, no backdrop, its links in the tab order', async () => {
    const { page, errors } = await openSession(DESKTOP);
    expect(await toggle(page).isVisible()).toBe(false);
    const shown = await drawer(page);
    expect(shown).toMatchObject({ left: 0, width: 290, inert: false, backdrop: false });
    await screenshot(page, 'desktop-sidebar');
    const stops = await tabWalk(page);
    expect(stops.filter((s) => s.inDrawer).map((s) => s.label)).toEqual(
      expect.arrayContaining(['New session', sessions[0]!.title, sessions[1]!.title]),
    );
    expect(stops.filter((s) => !s.inViewport)).toEqual([]);
    // Neither Escape nor following a link hides it.
    await page.keyboard.press('Escape');
    await sessionLink(page, sessions[1]!.title).click();
    await page.getByRole('heading', { name: sessions[1]!.title, level: 1 }).waitFor();
    expect(await drawer(page)).toMatchObject({ left: 0, width: 290, inert: false, backdrop: false });
    expect(await page.locator('main').evaluate((el) => (el as HTMLElement).inert)).toBe(false);
    expect(errors).toEqual([]);
  });
});
