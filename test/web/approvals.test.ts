// Tool approvals in the browser (DESIGN "Tool approvals", "Web app"): real Chromium against the
// stack `npm start` runs, real claude behind it. The pending card appears in every tab, Allow in
// one tab runs the tool, and the other tab shows the decision and who made it.
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
  running = await startTestStack('web-approvals');
  stack = running.stack;
  admin = await Api.login(stack.url, stack.admin.username, stack.admin.password);
  browser = await launchBrowser();
}, STACK_READY_MS + 60_000);

afterAll(async () => {
  await ctx?.close().catch(() => undefined);
  await browser?.close();
  await running?.stop();
}, 120_000);

function watchErrors(page: Page, name: string): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  onTestFailed(async () => {
    await screenshot(page, `failed-approvals-${name}`).catch(() => undefined);
    console.error(running.log.slice(-60).join('\n'));
  });
  return errors;
}

async function openSession(page: Page, id: string): Promise<void> {
  await page.goto(`${stack.url}/sessions/${id}`);
  await page.getByRole('log', { name: 'Conversation' }).waitFor();
}

describe('tool approvals in the web app', () => {
  it(
    'the card appears in both tabs; Allow in one runs the tool and the other tab shows who allowed it',
    async () => {
      ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      ctx.setDefaultTimeout(30_000);
      const one = await ctx.newPage();
      const errorsOne = watchErrors(one, 'one');
      await one.goto(`${stack.url}/`);
      await one.getByLabel('Username').fill(stack.admin.username);
      await one.getByLabel('Password').fill(stack.admin.password);
      await one.getByRole('button', { name: 'Sign in' }).click();
      await one.getByRole('button', { name: 'Sign out' }).waitFor();
      const created = await admin.call<{ id: string }>('POST', '/api/sessions', { approvals: 'ask' });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id;
      await openSession(one, id);
      const two = await ctx.newPage();
      const errorsTwo = watchErrors(two, 'two');
      await openSession(two, id);

      const script = { tool: 'write', path: 'from-the-page.txt', content: 'written after a click' };
      await one.getByLabel('Message').fill(`Write the file.\n#offline ${JSON.stringify(script)}`);
      await one.getByLabel('Message').press('Enter');

      const cardOne = one.locator('section.approval-card');
      const cardTwo = two.locator('section.approval-card');
      await cardOne.getByRole('button', { name: 'Allow' }).waitFor({ timeout: TURN_MS });
      await cardTwo.getByRole('button', { name: 'Allow' }).waitFor({ timeout: TURN_MS });
      expect(await cardOne.locator('.tool-name').innerText()).toBe('Write');
      expect(await cardOne.locator('.tool-io').innerText()).toContain('from-the-page.txt');
      await expect.poll(() => cardOne.getByRole('timer').innerText()).toMatch(/left$/);
      await screenshot(one, 'chat-approval-pending');

      await cardOne.getByRole('button', { name: 'Allow' }).click();
      const verdict = `Allowed by ${stack.admin.username}`;
      await expect.poll(() => cardTwo.getByRole('status').innerText(), { timeout: TURN_MS }).toBe(verdict);
      await expect.poll(() => cardOne.getByRole('status').innerText(), { timeout: TURN_MS }).toBe(verdict);
      expect(await cardTwo.getByRole('button', { name: 'Allow' }).count()).toBe(0);
      // The tool ran: its card shows done.
      await two.locator('article.turn[data-state="done"]').first().waitFor({ timeout: TURN_MS });
      expect(await two.locator('details.tool-card .tool-state').first().innerText()).toBe('done');
      await screenshot(two, 'chat-approval-allowed-other-tab');

      // A second request; the other tab reloads mid-wait (the card comes back by replay) and denies it.
      const deny = { tool: 'write', path: 'not-this.txt', content: 'no' };
      await one.getByLabel('Message').fill(`Another file.\n#offline ${JSON.stringify(deny)}`);
      await one.getByLabel('Message').press('Enter');
      await cardOne.nth(1).getByRole('button', { name: 'Deny' }).waitFor({ timeout: TURN_MS });
      await two.reload();
      const second = two.locator('section.approval-card').nth(1);
      await second.getByLabel('Reason for denying (optional)').fill('keep the workspace tidy');
      await second.getByRole('button', { name: 'Deny' }).click();
      await expect
        .poll(() => cardOne.nth(1).getByRole('status').innerText(), { timeout: TURN_MS })
        .toBe(`Denied by ${stack.admin.username}`);
      expect(await cardOne.nth(1).locator('.approval-message').innerText()).toBe('keep the workspace tidy');
      await screenshot(one, 'chat-approval-denied');
      expect(errorsOne).toEqual([]);
      expect(errorsTwo).toEqual([]);
    },
    TURN_MS * 2,
  );

  it(
    'an admin sets the approval defaults in the console; a new session from the page then asks',
    async () => {
      const page = await ctx.newPage();
      const errors = watchErrors(page, 'admin');
      await page.goto(`${stack.url}/admin/limits`);
      const form = page.getByRole('form', { name: 'Tool approvals' });
      await form.getByLabel('New sessions').selectOption('ask');
      await form.getByLabel('Shell commands').selectOption('deny');
      await form.getByLabel('Approval timeout (seconds)').fill('120');
      await form.getByRole('button', { name: 'Save approvals' }).click();
      await form.getByText('Saved.').waitFor();
      await screenshot(page, 'admin-approvals');
      const settings = await admin.call<Record<string, unknown>>('GET', '/api/admin/settings');
      expect(settings.body).toMatchObject({
        defaultApprovals: 'ask',
        approvalTimeoutSeconds: 120,
        approvalPolicy: { autoAllow: ['read'], autoDeny: ['shell'] },
      });
      await page.goto(`${stack.url}/`);
      await page.getByRole('button', { name: 'New session' }).click();
      await page.waitForURL(/\/sessions\/[0-9A-Z]{26}$/);
      const id = page.url().split('/').pop() ?? '';
      expect((await admin.call<{ approvals: string }>('GET', `/api/sessions/${id}`)).body.approvals).toBe('ask');
      expect(errors).toEqual([]);
    },
    TURN_MS,
  );
});
