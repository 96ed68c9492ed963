// Real Chromium for page tests: Debian's `chromium` (scripts/setup-system.sh installs it)
// driven by playwright-core, whose own browser downloads cannot run here.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { onTestFailed } from 'vitest';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function chromiumPath(): string {
  const found = process.env.CHROMIUM_PATH ?? CANDIDATES.find((p) => existsSync(p));
  if (found === undefined)
    throw new Error('no Chromium found: run scripts/setup-system.sh (installs Debian chromium) or set CHROMIUM_PATH');
  return found;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** Where page tests save screenshots (look at them: an ugly page is a bug). */
export const SCREENSHOT_DIR = path.join(import.meta.dirname, '..', '..', 'test-output', 'web');

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

/**
 * Closes a test's browser contexts from `afterEach`. vitest runs `afterEach` before `onTestFailed`,
 * so a failed test's open pages are saved here (`<prefix>-<test name>`), while they still exist.
 */
export async function closeContexts(
  contexts: BrowserContext[],
  task: { name: string; result?: { state?: string } | undefined },
  prefix: string,
): Promise<void> {
  const name = `${prefix}-${task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`;
  for (const [i, context] of contexts.splice(0).entries()) {
    if (task.result?.state === 'fail') {
      for (const [j, page] of context.pages().entries())
        await screenshot(page, i + j === 0 ? name : `${name}-${i}-${j}`).catch(() => undefined);
    }
    await context.close().catch(() => undefined);
  }
}

export interface SignedInPage {
  page: Page;
  /** The page's uncaught errors, for the test to check. */
  errors: string[];
}

/**
 * A fresh context (kept in `contexts`, for `closeContexts`) with one page, signed in through the
 * form at `url`; resolved once the page shows "Sign out". A failing test prints the page's URL and
 * the stack's last log lines. `beforeSignIn` runs before the first navigation (routes, init
 * scripts, the clock).
 */
export async function openSignedIn(o: {
  browser: Browser;
  contexts: BrowserContext[];
  options: BrowserContextOptions;
  url: string;
  user: { username: string; password: string };
  stackLog: () => readonly string[];
  beforeSignIn?: (page: Page) => Promise<unknown>;
}): Promise<SignedInPage> {
  const context = await o.browser.newContext(o.options);
  context.setDefaultTimeout(30_000);
  o.contexts.push(context);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // The page itself is saved by closeContexts, which runs first.
  onTestFailed(({ task }) => {
    console.error(`${task.name}: ${page.url()}\n${o.stackLog().slice(-60).join('\n')}`);
  });
  await o.beforeSignIn?.(page);
  await page.goto(o.url);
  await page.getByLabel('Username').fill(o.user.username);
  await page.getByLabel('Password').fill(o.user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return { page, errors };
}
