// The files panel in the browser (DESIGN "Workspaces", "Web app"): real Chromium against the
// stack `npm start` runs, real claude behind it. A file uploads from the page; the agent's file
// shows in the tree once its turn's save is announced, is viewed as text (escaped) and
// downloaded; delete asks, then removes it. (The agent reading uploads: test/e2e/workspace.test.ts.)
// The viewer opens where it is seen, a long name wraps, Upload is reached by Tab, on a desktop and
// a phone screen. The Changes view shows the diff and follows each save; the repository field
// shows the server's refusal beside itself.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { Browser, BrowserContext, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { startGitServer, type GitServer } from '../helpers/git-server.ts';
import { Api } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let running: TestStack;
let stack: Stack;
let browser: Browser;
let admin: Api;
let ctx: BrowserContext;
let git: GitServer;

beforeAll(async () => {
  git = await startGitServer();
  running = await startTestStack('web-files');
  stack = running.stack;
  admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  browser = await launchBrowser();
}, STACK_READY_MS + 60_000);

afterAll(async () => {
  await ctx?.close().catch(() => undefined);
  await browser?.close();
  await running?.stop();
  await git?.stop();
}, 120_000);

function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  onTestFailed(async () => {
    await screenshot(page, 'failed-files').catch(() => undefined);
    console.error(running.log.slice(-60).join('\n'));
  });
  return errors;
}

describe('the files panel', () => {
  it(
    "upload from the page (button and drop); the agent's file shows after its turn; view (escaped), download one and all, delete",
    async () => {
      const opened = await signedInPage({ acceptDownloads: true });
      ctx = opened.context;
      const { page, errors } = opened;
      const created = await admin.call<{ id: string }>('POST', '/api/sessions', {});
      const id = created.body.id;
      await page.goto(`${stack.url}/sessions/${id}`);
      await page.getByRole('log', { name: 'Conversation' }).waitFor();

      await page.locator('details.files-panel summary').click();
      await page.getByText('No files yet.').waitFor();
      await page.getByLabel('Upload into folder').fill('in');
      await page.getByLabel('Upload files').setInputFiles({
        name: 'from-the-page.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('uploaded from Chromium\n'),
      });
      const tree = page.getByRole('list', { name: 'Workspace files' });
      await tree.getByRole('link', { name: 'from-the-page.txt' }).waitFor();
      // Dropping a file on the panel uploads it too, into the folder typed beside it.
      const dropped = await page.evaluateHandle(() => {
        const dt = new DataTransfer();
        dt.items.add(new File(['dropped on the panel\n'], 'dropped.txt', { type: 'text/plain' }));
        return dt;
      });
      await page.locator('details.files-panel').dispatchEvent('drop', { dataTransfer: dropped });
      await tree.getByRole('link', { name: 'dropped.txt' }).waitFor();

      const script = { tool: 'write', path: 'out/page.html', content: '<b>bold?</b> <script>alert(1)</script>\n' };
      await page.getByLabel('Message').fill(`Read it and write a page.\n#offline ${JSON.stringify(script)}`);
      await page.getByLabel('Message').press('Enter');
      // After the turn the panel reloads and shows the agent's file.
      await tree.getByRole('link', { name: 'page.html' }).waitFor({ timeout: TURN_MS });
      await screenshot(page, 'files-panel');
      await page.getByRole('button', { name: 'View out/page.html' }).click();
      const shown = page.getByRole('region', { name: 'Viewing out/page.html' }).locator('pre');
      await expect.poll(() => shown.innerText()).toContain('<script>alert(1)</script>');
      // Shown as text: no element from the file's content exists in the page.
      expect(await page.locator('.file-view b').count()).toBe(0);
      await screenshot(page, 'files-view');
      await page.getByRole('button', { name: 'Back to files' }).click();

      const downloading = page.waitForEvent('download');
      await tree.getByRole('link', { name: 'page.html' }).click();
      const download = await downloading;
      expect(readFileSync(await download.path(), 'utf8')).toBe(script.content);

      // Delete asks first, as deleting a session or revoking a token does; Cancel keeps the file.
      const deleteButton = page.getByRole('button', { name: 'Delete in/from-the-page.txt' });
      await deleteButton.click();
      const question = page.getByRole('dialog', { name: 'Delete this file?' });
      await question.waitFor();
      expect(await question.innerText()).toContain('in/from-the-page.txt');
      await screenshot(page, 'files-delete-confirm');
      await question.getByRole('button', { name: 'Cancel' }).click();
      await question.waitFor({ state: 'detached' });
      const kept = await admin.call<{ files: Array<{ path: string }> }>('GET', `/api/sessions/${id}/files`);
      expect(kept.body.files.map((f) => f.path)).toContain('in/from-the-page.txt');
      expect(await tree.getByRole('link', { name: 'from-the-page.txt' }).count()).toBe(1);
      expect(await deleteButton.evaluate((el) => el === document.activeElement)).toBe(true);
      await deleteButton.click();
      await question.getByRole('button', { name: 'Delete file' }).click();
      await expect.poll(() => tree.getByRole('link', { name: 'from-the-page.txt' }).count()).toBe(0);
      const left = await admin.call<{ files: Array<{ path: string }> }>('GET', `/api/sessions/${id}/files`);
      expect(left.body.files.map((f) => f.path)).toEqual(['in/dropped.txt', 'out/page.html']);

      // Download all: the workspace as a .tar.gz, holding what is left.
      const archiving = page.waitForEvent('download');
      await page.getByRole('link', { name: 'Download all (.tar.gz)' }).click();
      const tar = gunzipSync(readFileSync(await (await archiving).path())).toString('utf8');
      expect(tar).toContain('in/dropped.txt');
      expect(tar).toContain('dropped on the panel');
      expect(tar).toContain('out/page.html');
      expect(tar).not.toContain('from-the-page.txt');
      expect(errors).toEqual([]);
    },
    TURN_MS * 3,
  );

  for (const [screen, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    it(`on a ${screen} screen, a viewed file shows at once, in place of a long tree, focused; Back returns`, async () => {
      const { context: own, page, errors } = await signedInPage({ viewport });
      try {
        const id = (await admin.call<{ id: string }>('POST', '/api/sessions', {})).body.id;
        // A tree longer than the panel: the first file (the viewer once opened below the tree, out of
        // sight) and the last (the panel scrolled down to reach it).
        const names = Array.from({ length: 40 }, (_, i) => `notes/note-${String(i + 1).padStart(2, '0')}.txt`);
        for (const name of names) await putFile(id, name, `this is ${name}\n`);
        await openFilesPanel(page, id);
        for (const name of [names[0] ?? '', names.at(-1) ?? '']) {
          const opener = page.getByRole('button', { name: `View ${name}` });
          await opener.click();
          const viewer = page.getByRole('region', { name: `Viewing ${name}` });
          await expect.poll(() => viewer.locator('pre').innerText()).toBe(`this is ${name}\n`);
          // In sight without scrolling anything: the whole viewer, its Back button and its text.
          expect(await onScreen(page, viewer, { whole: true })).toBe('on screen');
          const back = viewer.getByRole('button', { name: 'Back to files' });
          expect(await onScreen(page, back)).toBe('on screen');
          expect(await onScreen(page, viewer.locator('pre'))).toBe('on screen');
          // Focus moved to it, so a keyboard or screen reader user is taken there too.
          expect(await viewer.evaluate((el) => el.contains(document.activeElement))).toBe(true);
          // Styled as the app's other buttons, not the browser's default.
          expect(await back.getAttribute('class')).toBe('btn small');
          expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
          if (name === names[0]) await screenshot(page, `files-view-${screen}`);
          // Back to the tree, focus on the control that opened the viewer.
          await back.click();
          await viewer.waitFor({ state: 'detached' });
          expect(await onScreen(page, opener)).toBe('on screen');
          expect(await opener.evaluate((el) => el === document.activeElement)).toBe(true);
        }
        const opener = page.getByRole('button', { name: `View ${names.at(-1)}` });
        const viewer = page.getByRole('region', { name: `Viewing ${names.at(-1)}` });
        // Escape closes it too.
        await opener.press('Enter');
        // Escape is the viewer's own key: pressed once focus has moved into it, as a person's is.
        await expect.poll(() => viewer.evaluate((el) => el.contains(document.activeElement))).toBe(true);
        await page.keyboard.press('Escape');
        await viewer.waitFor({ state: 'detached' });
        expect(errors).toEqual([]);
      } finally {
        await own.close();
      }
    });

    it(`on a ${screen} screen, a long file name wraps: no sideways scrolling, its actions stay in sight (also in Changes and the delete question)`, async () => {
      const { context: own, page, errors } = await signedInPage({ viewport });
      try {
        const id = (await admin.call<{ id: string }>('POST', '/api/sessions', {})).body.id;
        const long = `report-${'x'.repeat(139)}.txt`;
        expect(long).toHaveLength(150);
        await putFile(id, long, 'long name\n');
        await putFile(id, 'short.txt', 'short\n');
        await openFilesPanel(page, id);
        await page.getByRole('button', { name: `View ${long}` }).waitFor();
        const panel = page.locator('details.files-panel');
        expect(await sideways(page, panel)).toEqual([]);
        expect(await onScreen(page, page.getByRole('button', { name: `View ${long}` }))).toBe('on screen');
        expect(await onScreen(page, page.getByRole('button', { name: `Delete ${long}` }))).toBe('on screen');
        expect(await onScreen(page, page.getByRole('button', { name: 'Delete short.txt' }))).toBe('on screen');
        await screenshot(page, `files-long-name-${screen}`);

        await page.getByRole('button', { name: `Delete ${long}` }).click();
        const question = page.getByRole('dialog', { name: 'Delete this file?' });
        await question.waitFor();
        expect(await question.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
        expect(await onScreen(page, question.getByRole('button', { name: 'Delete file' }))).toBe('on screen');
        await screenshot(page, `files-long-name-delete-${screen}`);
        await question.getByRole('button', { name: 'Cancel' }).click();

        await page.getByRole('tab', { name: 'Changes' }).click();
        const entry = page.getByRole('list', { name: 'Changed files' }).getByRole('listitem').filter({ hasText: long });
        await entry.waitFor();
        expect(await sideways(page, panel)).toEqual([]);
        expect(await onScreen(page, entry.getByRole('button', { name: long }))).toBe('on screen');
        expect(await onScreen(page, entry.locator('.diff-counts'))).toBe('on screen');
        await screenshot(page, `changes-long-name-${screen}`);
        expect(errors).toEqual([]);
      } finally {
        await own.close();
      }
    });
  }

  it('Upload is a button reached with Tab; Enter opens the file chooser and the chosen file uploads', async () => {
    const { context: own, page, errors } = await signedInPage();
    try {
      const id = (await admin.call<{ id: string }>('POST', '/api/sessions', {})).body.id;
      await openFilesPanel(page, id);
      await page.getByText('No files yet.').waitFor();
      await page.getByLabel('Upload into folder').fill('kbd');
      await page.keyboard.press('Tab');
      expect(
        await page.evaluate(
          () => `${document.activeElement?.tagName.toLowerCase()}: ${document.activeElement?.textContent}`,
        ),
      ).toBe('button: Upload');
      await screenshot(page, 'files-upload-focused');
      const choosing = page.waitForEvent('filechooser');
      await page.keyboard.press('Enter');
      const chooser = await choosing;
      expect(chooser.isMultiple()).toBe(true);
      await chooser.setFiles({ name: 'typed.txt', mimeType: 'text/plain', buffer: Buffer.from('from the keyboard\n') });
      await page.getByRole('list', { name: 'Workspace files' }).getByRole('link', { name: 'typed.txt' }).waitFor();
      const stored = await admin.call<{ files: Array<{ path: string }> }>('GET', `/api/sessions/${id}/files`);
      expect(stored.body.files.map((f) => f.path)).toEqual(['kbd/typed.txt']);
      expect(errors).toEqual([]);
    } finally {
      await own.close();
    }
  });

  it('the Changes view shows uploads as added with their lines, and follows a change and a deletion', async () => {
    const { context: own, page, errors } = await signedInPage();
    try {
      const id = (await admin.call<{ id: string }>('POST', '/api/sessions', {})).body.id;
      await page.goto(`${stack.url}/sessions/${id}`);
      await page.getByRole('log', { name: 'Conversation' }).waitFor();
      await page.locator('details.files-panel summary').click();
      await page.getByRole('tab', { name: 'Changes' }).click();
      await page.getByText('No changes yet.').waitFor();

      // Written behind the page's back: the view follows the stream's workspace.saved.
      const put = (path: string, body: string) =>
        page.evaluate(
          async ([url, text]) => (await fetch(url, { method: 'PUT', body: text, credentials: 'same-origin' })).status,
          [`/api/sessions/${id}/files/${path}`, body] as const,
        );
      expect(await put('notes/plan.md', '# Plan\n\n- read the code\n- write the fix\n')).toBe(201);
      expect(await put('keep.txt', 'stays\n')).toBe(201);
      const index = page.getByRole('list', { name: 'Changed files' });
      await index.getByRole('button', { name: 'notes/plan.md' }).waitFor();
      const plan = page.getByRole('region', { name: 'Changes to notes/plan.md' });
      await expect.poll(() => plan.locator('header').innerText()).toMatch(/added[\s\S]*\+4\s*−0/);
      expect(await plan.locator('tr.diff-add').allInnerTexts()).toEqual([
        '\t1\t+# Plan',
        '\t2\t+',
        '\t3\t+- read the code',
        '\t4\t+- write the fix',
      ]);
      await screenshot(page, 'changes-added');

      expect(await put('notes/plan.md', '# Plan\n\n- read the code\n- test the fix\n')).toBe(201);
      await expect.poll(() => plan.locator('tr.diff-add').last().innerText()).toContain('+- test the fix');
      const removed = await page.evaluate(
        async (url) => (await fetch(url, { method: 'DELETE', credentials: 'same-origin' })).status,
        `/api/sessions/${id}/files/keep.txt`,
      );
      expect(removed).toBe(204);
      await expect.poll(() => index.getByRole('button', { name: 'keep.txt' }).count()).toBe(0);
      await screenshot(page, 'changes-after-edit');
      expect(errors).toEqual([]);
    } finally {
      await own.close();
    }
  });

  it(
    'from a repository: the Changes view shows the agent’s edit and deletion against the clone',
    async () => {
      const { context: own, page, errors } = await signedInPage();
      try {
        await page.getByText('Start from repository…').click();
        await page.getByLabel('Repository URL').fill(git.url);
        await page.getByRole('button', { name: 'New session from repository' }).click();
        await page.waitForURL(/\/sessions\//);
        await page.getByRole('log', { name: 'Conversation' }).waitFor();
        const edit = {
          tool: 'shell',
          command: 'sed -i "s/hello from main/hello from the agent/" src/greeting.txt && rm README.md',
        };
        await page.getByLabel('Message').fill(`Edit the greeting, drop the readme.\n#offline ${JSON.stringify(edit)}`);
        await page.getByLabel('Message').press('Enter');
        await page.locator('details.files-panel summary').click();
        await page.getByRole('tab', { name: 'Changes' }).click();
        const index = page.getByRole('list', { name: 'Changed files' });
        await index.getByRole('button', { name: 'README.md' }).waitFor({ timeout: TURN_MS });
        const greeting = page.getByRole('region', { name: 'Changes to src/greeting.txt' });
        await expect.poll(() => greeting.locator('header').innerText()).toMatch(/modified[\s\S]*\+1\s*−1/);
        expect(await greeting.locator('tr.diff-del').allInnerTexts()).toEqual(['1\t\t−hello from main']);
        expect(await greeting.locator('tr.diff-add').allInnerTexts()).toEqual(['\t1\t+hello from the agent']);
        const readme = page.getByRole('region', { name: 'Changes to README.md' });
        expect(await readme.locator('.diff-kind').innerText()).toBe('deleted');
        // The clone's own repository is not part of the diff.
        expect(await index.getByRole('button', { name: /^\.git\// }).count()).toBe(0);
        await screenshot(page, 'changes-from-repository');
        expect(errors).toEqual([]);
      } finally {
        await own.close();
      }
    },
    TURN_MS * 2,
  );

  it("a file over the server's limit is left out before sending, named with its size and the limit; the rest upload", async () => {
    const limit = 4096;
    const before = await admin.call<{ workspaceMaxFileBytes: number }>('GET', '/api/admin/settings');
    const set = await admin.call('PUT', '/api/admin/settings', { workspaceMaxFileBytes: limit });
    expect(set.status, set.text).toBe(200);
    const { context: own, page, errors } = await signedInPage();
    try {
      const id = (await admin.call<{ id: string }>('POST', '/api/sessions', {})).body.id;
      const puts: string[] = [];
      page.on('request', (r) => {
        if (r.method() === 'PUT') puts.push(decodeURIComponent(new URL(r.url()).pathname));
      });
      await page.goto(`${stack.url}/sessions/${id}`);
      await page.locator('details.files-panel summary').click();
      await page.getByText('No files yet.').waitFor();
      await page.getByLabel('Upload files').setInputFiles([
        { name: 'small.txt', mimeType: 'text/plain', buffer: Buffer.from('fits\n') },
        { name: 'big.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(3 * 1024 * 1024) },
      ]);
      await page.getByRole('list', { name: 'Workspace files' }).getByRole('link', { name: 'small.txt' }).waitFor();
      await expect
        .poll(() => page.locator('details.files-panel [role=alert]').innerText())
        .toBe('Not uploaded: big.bin (3.0 MB) is over the 4.0 KB limit per file.');
      // Left out by the page, not refused by the server: it was never sent.
      expect(puts).toEqual([`/api/sessions/${id}/files/small.txt`]);
      const stored = await admin.call<{ files: Array<{ path: string }> }>('GET', `/api/sessions/${id}/files`);
      expect(stored.body.files.map((f) => f.path)).toEqual(['small.txt']);
      await screenshot(page, 'files-too-large');
      expect(errors).toEqual([]);
    } finally {
      await own.close();
      await admin.call('PUT', '/api/admin/settings', { workspaceMaxFileBytes: before.body.workspaceMaxFileBytes });
    }
  });

  it('a refused repository URL is shown beside the field', async () => {
    const { context: own, page, errors } = await signedInPage();
    try {
      await page.getByText('Start from repository…').click();
      const url = page.getByLabel('Repository URL');
      await url.fill('https://someone:hunter2@git.example.org/team/project.git');
      await page.getByLabel(/Branch, tag or commit/).fill('main');
      await page.getByRole('button', { name: 'New session from repository' }).click();
      const shown = page.locator('#repo-url-error');
      await expect.poll(() => shown.innerText()).toContain('must not carry credentials');
      expect(await url.getAttribute('aria-invalid')).toBe('true');
      // Still on the page with the form, nothing created from it.
      expect(new URL(page.url()).pathname).toBe('/');
      await screenshot(page, 'repository-field-error');
      expect(errors).toEqual([]);
    } finally {
      await own.close();
    }
  });
});

/** A fresh browser context with one page, signed in as the admin, its page errors collected. */
async function signedInPage(
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: DESKTOP, ...options });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${stack.url}/`);
  await page.getByLabel('Username').fill(stack.admin.username);
  await page.getByLabel('Password').fill(stack.admin.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return { context, page, errors };
}

/** Writes a workspace file through the Files API, as the admin (who owns the test's sessions). */
async function putFile(sessionId: string, path: string, body: string): Promise<void> {
  const r = await admin.call('PUT', `/api/sessions/${sessionId}/files/${path}`, undefined, { raw: body });
  expect(r.status, r.text).toBe(201);
}

/** Opens the session's page and its files panel. */
async function openFilesPanel(page: Page, sessionId: string): Promise<void> {
  await page.goto(`${stack.url}/sessions/${sessionId}`);
  await page.getByRole('log', { name: 'Conversation' }).waitFor();
  await page.locator('details.files-panel summary').click();
}

/**
 * 'on screen' when the element is where a person sees it: inside the viewport (wholly, with
 * `whole`; else its centre) and the topmost element at its centre, so not clipped away by a scroll
 * box nor covered; otherwise what is wrong.
 */
async function onScreen(page: Page, target: Locator, { whole = false } = {}): Promise<string> {
  const box = await target.boundingBox();
  const size = page.viewportSize();
  if (box === null || size === null) return 'not rendered';
  const inside = whole
    ? box.x >= 0 && box.y >= 0 && box.x + box.width <= size.width && box.y + box.height <= size.height
    : box.x + box.width / 2 <= size.width && box.y + box.height / 2 <= size.height && box.x >= 0 && box.y >= 0;
  const where = `${JSON.stringify(box)} in a ${size.width}x${size.height} viewport`;
  if (!inside) return `outside: ${where}`;
  const hit = await target.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const at = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
    return at !== null && el.contains(at);
  });
  return hit ? 'on screen' : `clipped or covered: ${where}`;
}

/** What scrolls sideways (the page, the content column, the panel): should be nothing. */
async function sideways(page: Page, panel: Locator): Promise<string[]> {
  const wide = await page.evaluate(() =>
    [document.documentElement, document.querySelector('.content')]
      .filter((el): el is Element => el !== null && el.scrollWidth > el.clientWidth)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}: ${el.scrollWidth} > ${el.clientWidth}`),
  );
  const box = await panel.evaluate((el) => ({
    scroll: el.scrollWidth,
    client: el.clientWidth,
    right: el.getBoundingClientRect().right,
    viewport: window.innerWidth,
  }));
  if (box.scroll > box.client || box.right > box.viewport) wide.push(`files panel: ${JSON.stringify(box)}`);
  return wide;
}
