/// <reference lib="dom" />
// The chat page's layout and wording in real Chromium against the real stack, on a desktop
// (1280x800) and a phone (390x844): the files panel (its Changes view or a viewed file open) leaves
// the conversation a readable size; the message box grows with its text up to a limit, then
// scrolls; on a phone Enter adds a line and Send sends, on a desktop Enter sends; the "still busy"
// warning goes once the turn is over; a failed clone's error shows once; an admin's read-only view
// names the owner (its messages and its notice) where one's own session says "You"; danger
// buttons keep 4.5:1 contrast in dark and light mode. One stack for the file; each test opens its
// own browser context.
import type { Browser, BrowserContext, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type Stack } from '../../scripts/start.ts';
import { closeContexts, launchBrowser, openSignedIn, screenshot, type SignedInPage } from '../helpers/browser.ts';
import { Api, until } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
const SCREENS = [
  ['desktop', DESKTOP],
  ['phone', PHONE],
] as const;

let running: TestStack;
let stack: Stack;
let browser: Browser;
let admin: Api;
const contexts: BrowserContext[] = [];
/** The admin's session with a finished turn and forty changed files. */
let layoutSession: string;
/** Another user's session with a finished turn, and its owner's name. */
const other = { username: 'olive', password: 'olive-password-123', session: '' };

const directive = (script: Record<string, unknown>) => `#offline ${JSON.stringify(script)}`;
const REPLY = Array.from(
  { length: 6 },
  (_, i) => `Paragraph ${i + 1} of the answer: the parser now keeps its position when it backtracks.`,
).join('\n\n');

/** Sends a message through the API and waits until its turn is over. */
async function answered(api: Api, id: string, text: string): Promise<void> {
  const sent = await api.call('POST', `/api/sessions/${id}/messages`, { text });
  if (sent.status !== 202) throw new Error(`sending: ${sent.status} ${sent.text}`);
  await until(
    'the turn to end',
    async () => (await api.call<{ turn: unknown }>('GET', `/api/sessions/${id}`)).body.turn === null,
    TURN_MS,
  );
}

async function newSession(api: Api, body: Record<string, unknown> = {}): Promise<string> {
  const created = await api.call<{ id: string }>('POST', '/api/sessions', body);
  if (created.status !== 201) throw new Error(`creating a session: ${created.status} ${created.text}`);
  return created.body.id;
}

beforeAll(
  async () => {
    running = await startTestStack('chat-layout');
    stack = running.stack;
    admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
    const raised = await admin.call('PUT', '/api/admin/settings', { maxLiveRunnersPerUser: 50 });
    if (raised.status !== 200) throw new Error(`raising maxLiveRunnersPerUser: ${raised.status} ${raised.text}`);

    layoutSession = await newSession(admin);
    for (let i = 0; i < 40; i++) {
      const body = Array.from({ length: 8 }, (_, n) => `line ${n + 1} of file ${i + 1}`).join('\n');
      const put = await admin.call('PUT', `/api/sessions/${layoutSession}/files/notes/note-${i + 1}.txt`, undefined, {
        raw: `${body}\n`,
      });
      if (put.status !== 201) throw new Error(`writing a file: ${put.status} ${put.text}`);
    }
    await answered(admin, layoutSession, `Explain the parser fix.\n${directive({ text: REPLY })}`);

    const added = await admin.call('POST', '/api/admin/users', {
      username: other.username,
      password: other.password,
      currentPassword: stack.admin.password,
    });
    if (added.status !== 201) throw new Error(`adding a user: ${added.status} ${added.text}`);
    const olive = await Api.login(stack.url, other.username, other.password);
    other.session = await newSession(olive);
    await answered(olive, other.session, `Hello from olive.\n${directive({ text: 'Hello olive.' })}`);
    browser = await launchBrowser();
  },
  STACK_READY_MS + 3 * TURN_MS,
);

afterEach(({ task }) => closeContexts(contexts, task, 'failed-chat-layout'));

afterAll(async () => {
  await browser?.close();
  await running?.stop();
}, 120_000);

/** A page signed in as the admin (or `as`), at `path`; its page errors collected for the test to check. */
async function signedIn(
  opts: BrowserContextOptions,
  path: string,
  as = { username: stack.admin.username, password: stack.admin.password },
): Promise<SignedInPage> {
  return openSignedIn({
    browser,
    contexts,
    options: opts,
    url: `${stack.url}${path}`,
    user: as,
    stackLog: () => running.log,
  });
}

const conversation = (page: Page) => page.getByRole('log', { name: 'Conversation' });
const messageBox = (page: Page) => page.getByLabel('Message');

/** The heights and widths a person sees: the chat column, the conversation, the files panel, the message box. */
async function boxes(page: Page) {
  return page.evaluate(() => {
    const size = (selector: string) => {
      const r = document.querySelector(selector)?.getBoundingClientRect();
      return { width: Math.round(r?.width ?? 0), height: Math.round(r?.height ?? 0) };
    };
    return {
      chat: size('.chat'),
      conversation: size('.conversation'),
      panel: size('.files-panel'),
      box: size('#message-box'),
    };
  });
}

/** 'on screen' when the element's centre is in the viewport and not clipped by a scroll box nor covered. */
async function onScreen(target: Locator): Promise<string> {
  return target.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const x = r.x + r.width / 2;
    const y = r.y + r.height / 2;
    if (x < 0 || y < 0 || x > innerWidth || y > innerHeight) return `outside: ${JSON.stringify(r)}`;
    const at = document.elementFromPoint(x, y);
    return at !== null && el.contains(at) ? 'on screen' : `clipped or covered: ${JSON.stringify(r)}`;
  });
}

/** WCAG contrast ratio of an element's text colour against its background colour, as computed. */
async function contrast(target: Locator): Promise<number> {
  return target.evaluate((el) => {
    const style = getComputedStyle(el);
    const rgb = (css: string) => (css.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
    const luminance = (css: string) => {
      const [r = 0, g = 0, b = 0] = rgb(css).map((c) => {
        const s = c / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [hi, lo] = [luminance(style.color), luminance(style.backgroundColor)].sort((a, b) => b - a);
    return ((hi ?? 0) + 0.05) / ((lo ?? 0) + 0.05);
  });
}

describe('the chat page layout', () => {
  for (const [screen, opts] of SCREENS) {
    it(`on a ${screen}, the files panel with its Changes view or a viewed file open leaves the conversation a readable size`, async () => {
      const { page, errors } = await signedIn(opts, `/sessions/${layoutSession}`);
      const lastReply = conversation(page).locator('.msg.assistant').getByText('Paragraph 6 of the answer');
      await lastReply.waitFor();
      const closed = await boxes(page);
      await page.locator('details.files-panel summary').click();
      await page.getByRole('tab', { name: 'Changes' }).click();
      await page
        .getByRole('list', { name: 'Changed files' })
        .getByRole('button', { name: 'notes/note-40.txt' })
        .waitFor();
      const changes = await boxes(page);
      await screenshot(page, `chat-layout-changes-${screen}`);
      // The diff takes at most half the chat's column; the conversation keeps a good part of the
      // rest, as wide as before, and its newest reply stays in sight.
      expect(changes.panel.height).toBeLessThanOrEqual(changes.chat.height / 2 + 1);
      expect(changes.conversation.height).toBeGreaterThanOrEqual(Math.max(160, changes.chat.height * 0.2));
      expect(changes.conversation.width).toBe(closed.conversation.width);
      expect(await onScreen(lastReply)).toBe('on screen');

      await page.getByRole('tab', { name: 'Files' }).click();
      await page.getByRole('button', { name: 'View notes/note-1.txt' }).click();
      const viewer = page.getByRole('region', { name: 'Viewing notes/note-1.txt' });
      await expect.poll(() => viewer.locator('pre').innerText()).toContain('line 8 of file 1');
      const viewing = await boxes(page);
      await screenshot(page, `chat-layout-file-view-${screen}`);
      expect(viewing.panel.height).toBeLessThanOrEqual(viewing.chat.height / 2 + 1);
      expect(viewing.conversation.height).toBeGreaterThanOrEqual(Math.max(160, viewing.chat.height * 0.2));
      expect(await onScreen(viewer.getByRole('button', { name: 'Back to files' }))).toBe('on screen');
      expect(await onScreen(viewer.locator('pre'))).toBe('on screen');
      expect(await onScreen(lastReply)).toBe('on screen');
      expect(errors).toEqual([]);
    });
  }

  it('the message box grows with pasted lines and wrapped text, up to about ten lines, then scrolls', async () => {
    const { page, errors } = await signedIn(DESKTOP, `/sessions/${layoutSession}`);
    const box = messageBox(page);
    await box.waitFor();
    const height = async () => (await boxes(page)).box.height;
    const empty = await height();
    await box.focus();
    await page.keyboard.insertText(['First line', 'second line', 'third line', 'fourth line', 'fifth line'].join('\n'));
    // Four more lines of 15px text at line-height 1.45: about 87 px taller.
    await expect.poll(height).toBeGreaterThanOrEqual(empty + 80);
    await screenshot(page, 'chat-layout-composer-five-lines');

    await page.keyboard.insertText(`\n${Array.from({ length: 40 }, (_, i) => `pasted line ${i + 1}`).join('\n')}`);
    // Capped: it scrolls instead of pushing the conversation away.
    await expect.poll(height).toBeLessThanOrEqual(16 * 14 + 1);
    const capped = await height();
    expect(capped).toBeGreaterThan(empty + 150);
    expect(await box.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
    expect((await boxes(page)).conversation.height).toBeGreaterThanOrEqual(144);
    await screenshot(page, 'chat-layout-composer-capped');

    // One long paragraph without a line break grows it too, by the lines it wraps into.
    await box.fill('');
    await expect.poll(height).toBe(empty);
    await page.keyboard.insertText('A long paragraph pasted without a single line break in it. '.repeat(12));
    await expect.poll(height).toBeGreaterThanOrEqual(empty + 40);
    await screenshot(page, 'chat-layout-composer-wrapped');
    expect(errors).toEqual([]);
  });

  it('on a phone, Enter adds a line and Send sends; on a desktop, Enter sends and Shift+Enter adds a line', async () => {
    const id = await newSession(admin);
    const { page, errors } = await signedIn(PHONE, `/sessions/${id}`);
    const posts: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith(`/api/sessions/${id}/messages`)) posts.push(r.url());
    });
    const box = messageBox(page);
    await box.tap();
    await page.keyboard.type('Two lines');
    await page.keyboard.press('Enter');
    await page.keyboard.type(directive({ text: 'Got both lines.' }));
    expect(await box.inputValue()).toBe(`Two lines\n${directive({ text: 'Got both lines.' })}`);
    await screenshot(page, 'chat-layout-phone-newline');
    await page.getByRole('button', { name: 'Send' }).tap();
    await page.locator('article.turn[data-state="done"]').waitFor({ timeout: TURN_MS });
    expect(await conversation(page).locator('.msg.user .user-text').innerText()).toBe(
      `Two lines\n${directive({ text: 'Got both lines.' })}`,
    );
    expect(posts).toHaveLength(1);

    const desktop = await signedIn(DESKTOP, `/sessions/${id}`);
    const desktopBox = messageBox(desktop.page);
    await desktopBox.pressSequentially('Again');
    await desktopBox.press('Shift+Enter');
    await desktopBox.pressSequentially(directive({ text: 'Sent with Enter.' }));
    expect(await desktopBox.inputValue()).toBe(`Again\n${directive({ text: 'Sent with Enter.' })}`);
    await desktopBox.press('Enter');
    await desktop.page.locator('article.turn[data-state="done"]').nth(1).waitFor({ timeout: TURN_MS });
    expect(await desktopBox.inputValue()).toBe('');
    expect(await desktop.page.locator('.composer-hint').innerText()).toBe(
      'Enter sends · Shift+Enter adds a line · paste or drop images',
    );
    expect(errors).toEqual([]);
    expect(desktop.errors).toEqual([]);
  });

  it('the "still busy" warning for a message sent mid-turn goes once the turn is over; the message is kept', async () => {
    const id = await newSession(admin);
    const { page, errors } = await signedIn(DESKTOP, `/sessions/${id}`);
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    await messageBox(page).fill(`Long answer please.\n${directive({ text: words, chunks: 40, delayMs: 150 })}`);
    await messageBox(page).press('Enter');
    await conversation(page).locator('.msg.assistant .markdown').getByText('word2').waitFor({ timeout: TURN_MS });
    const draft = 'a second thought, sent too early';
    await messageBox(page).fill(draft);
    await messageBox(page).press('Enter');
    const warning = page.locator('.composer [role=alert]');
    await expect.poll(() => warning.innerText()).toMatch(/still busy/);
    await screenshot(page, 'chat-layout-busy-warning');
    // The turn ends on its own; nobody presses Stop.
    await page.locator('article.turn[data-state="done"]').waitFor({ timeout: TURN_MS });
    await expect.poll(() => warning.count()).toBe(0);
    expect(await messageBox(page).inputValue()).toBe(draft);
    await screenshot(page, 'chat-layout-busy-over');
    expect(errors).toEqual([]);
  });

  it('a failed repository clone shows its error once', async () => {
    const url = `http://127.0.0.1:${await freePort()}/nothing-here.git`;
    const id = await newSession(admin, { repository: { url } });
    const { page, errors } = await signedIn(DESKTOP, `/sessions/${id}`);
    await messageBox(page).fill(`Look at the code.\n${directive({ text: 'never reached' })}`);
    await messageBox(page).press('Enter');
    const turn = page.locator('article.turn[data-state="done"]');
    await turn.waitFor({ timeout: TURN_MS });
    const answer = turn.locator('.msg.assistant');
    await expect.poll(() => answer.innerText()).toMatch(/Failed to connect|Couldn't connect/);
    await screenshot(page, 'chat-layout-clone-failed');
    // The message names the URL twice ("cloning URL (…) failed: unable to access 'URL/'"): its
    // opening words count the times it is shown.
    const text = await answer.innerText();
    expect(text.split(`cloning ${url}`).length - 1, text).toBe(1);
    expect(await answer.locator('.notice').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it("an admin's read-only view labels the owner's messages with the owner's name; one's own session says You", async () => {
    const { page, errors } = await signedIn(PHONE, `/sessions/${other.session}`);
    const author = conversation(page).locator('.msg.user .msg-author');
    await expect.poll(() => author.textContent()).toBe(other.username);
    expect(await page.locator('.notice.readonly').innerText()).toBe(
      `Read-only: this session belongs to ${other.username}.`,
    );
    await screenshot(page, 'chat-layout-read-only');

    await page.goto(`${stack.url}/sessions/${layoutSession}`);
    await conversation(page).locator('.msg.assistant').getByText('Paragraph 6 of the answer').waitFor();
    expect(await author.textContent()).toBe('You');
    expect(await page.locator('.notice.readonly').count()).toBe(0);

    // The owner sees their own messages as "You" too.
    const owner = await signedIn(DESKTOP, `/sessions/${other.session}`, other);
    await conversation(owner.page).locator('.msg.assistant').getByText('Hello olive.').waitFor();
    expect(await conversation(owner.page).locator('.msg.user .msg-author').textContent()).toBe('You');
    expect(errors).toEqual([]);
    expect(owner.errors).toEqual([]);
  });

  for (const scheme of ['dark', 'light'] as const) {
    it(`in ${scheme} mode, danger buttons read at 4.5:1 or more, hovered too`, async () => {
      const { page, errors } = await signedIn({ ...DESKTOP, colorScheme: scheme }, `/sessions/${layoutSession}`);
      const outline = page.locator('.chat-actions').getByRole('button', { name: 'Delete' });
      await outline.waitFor();
      expect(await contrast(outline)).toBeGreaterThanOrEqual(4.5);
      await outline.click();
      const question = page.getByRole('dialog', { name: 'Delete this session?' });
      const confirm = question.getByRole('button', { name: 'Delete session' });
      await confirm.waitFor();
      // Focus rings and hover aside: the button as it first shows.
      await question.getByRole('heading').hover();
      expect(await contrast(confirm)).toBeGreaterThanOrEqual(4.5);
      await screenshot(page, `chat-layout-danger-${scheme}`);
      await confirm.hover();
      await expect.poll(() => confirm.evaluate((el) => el.matches(':hover'))).toBe(true);
      expect(await contrast(confirm)).toBeGreaterThanOrEqual(4.5);
      await screenshot(page, `chat-layout-danger-hover-${scheme}`);
      await question.getByRole('button', { name: 'Cancel' }).click();
      await question.waitFor({ state: 'detached' });
      expect(errors).toEqual([]);
    });
  }
});
