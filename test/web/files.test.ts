// The files panel in the browser (DESIGN "Workspaces", "Web app"): real Chromium against the
// stack `npm start` runs, real claude behind it. A file uploads from the page; the agent's file
// shows in the tree once its turn's save is announced, is viewed as text (escaped) and
// downloaded; delete removes it. (The agent reading uploads: test/e2e/workspace.test.ts.)
import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { Stack } from '../../scripts/start.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { Api } from '../helpers/sse-client.ts';
import { STACK_READY_MS, startTestStack, type TestStack } from '../helpers/test-stack.ts';

const TURN_MS = 120_000;

let running: TestStack;
let stack: Stack;
let browser: Browser;
let admin: Api;
let ctx: BrowserContext;

beforeAll(async () => {
  running = await startTestStack('web-files');
  stack = running.stack;
  admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  browser = await launchBrowser();
}, STACK_READY_MS + 60_000);

afterAll(async () => {
  await ctx?.close().catch(() => undefined);
  await browser?.close();
  await running?.stop();
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
    "upload from the page; the agent's file shows after its turn; view (escaped), download, delete",
    async () => {
      ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
      ctx.setDefaultTimeout(30_000);
      const page = await ctx.newPage();
      const errors = watchErrors(page);
      await page.goto(`${stack.url}/`);
      await page.getByLabel('Username').fill(stack.admin.username);
      await page.getByLabel('Password').fill(stack.admin.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
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

      const script = { tool: 'write', path: 'out/page.html', content: '<b>bold?</b> <script>alert(1)</script>\n' };
      await page.getByLabel('Message').fill(`Read it and write a page.\n#offline ${JSON.stringify(script)}`);
      await page.getByLabel('Message').press('Enter');
      // After the turn the panel reloads and shows the agent's file.
      await tree.getByRole('link', { name: 'page.html' }).waitFor({ timeout: TURN_MS });
      await page.getByRole('button', { name: 'View out/page.html' }).click();
      const shown = page.locator('figure.file-view pre');
      await expect.poll(() => shown.innerText()).toContain('<script>alert(1)</script>');
      // Shown as text: no element from the file's content exists in the page.
      expect(await page.locator('figure.file-view b').count()).toBe(0);
      await screenshot(page, 'files-panel');

      const downloading = page.waitForEvent('download');
      await tree.getByRole('link', { name: 'page.html' }).click();
      const download = await downloading;
      expect(readFileSync(await download.path(), 'utf8')).toBe(script.content);

      await page.getByRole('button', { name: 'Delete in/from-the-page.txt' }).click();
      await expect.poll(() => tree.getByRole('link', { name: 'from-the-page.txt' }).count()).toBe(0);
      const left = await admin.call<{ files: Array<{ path: string }> }>('GET', `/api/sessions/${id}/files`);
      expect(left.body.files.map((f) => f.path)).toEqual(['out/page.html']);
      expect(errors).toEqual([]);
    },
    TURN_MS * 3,
  );
});
