// Real Chromium for page tests: Debian's `chromium` (scripts/setup-system.sh installs it)
// driven by playwright-core, whose own browser downloads cannot run here.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

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
