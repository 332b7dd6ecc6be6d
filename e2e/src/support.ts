import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Clock } from '@concierge/server/src/clock.ts';
import { startServer, type RunningServer } from '@concierge/server/src/server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SCREENSHOT_DIR = path.join(ROOT, 'e2e/screenshots');

export const VIEWPORTS = {
  phone: { width: 390, height: 844 },
  desktop: { width: 1280, height: 800 },
} as const;

export interface Product {
  server: RunningServer;
  url: string;
  close(): Promise<void>;
}

/** The whole product on a fresh SQLite database and a free port, serving the built web app. */
export async function startProduct(env: Record<string, string> = {}, options: { clock?: Clock } = {}): Promise<Product> {
  if (!existsSync(path.join(ROOT, 'web/dist/index.html'))) {
    throw new Error('web/dist is missing: build the web app first (`npm run build`; `npm test` does it for you)');
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'concierge-e2e-'));
  const server = await startServer({ DATABASE_URL: `sqlite:${path.join(dir, 'e2e.db')}`, PORT: '0', LOG_LEVEL: 'silent', ...env }, options);
  // The crawler reads the bundled sample schedule on start; wait until the assistant knows it and the run is over
  // (its row is good a little before the run ends, and a refresh meanwhile would be refused as already running).
  const deadline = Date.now() + 30_000;
  while ((!(await server.deps.crawler.lastRefresh()) || server.deps.crawler.isRunning) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  return {
    server,
    url: server.url,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
}

/**
 * A fresh browser context and page. `timezoneId` puts the browser in another
 * zone than the convention's (times shown must not follow the browser's).
 */
export async function newPage(
  browser: Browser,
  viewport: keyof typeof VIEWPORTS = 'desktop',
  options: { timezoneId?: string; locale?: string } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: VIEWPORTS[viewport], deviceScaleFactor: 1, ...options });
  const page = await context.newPage();
  return { context, page };
}

/** Saves a PNG under e2e/screenshots (not in git) for a person to look at. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // Transitions finished: a dialog caught fading in would look broken.
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: false, animations: 'disabled' });
}

/** Completes first-time setup and signs in through the API (for tests about other screens). */
export async function signInAs(page: Page, baseUrl: string, username = 'volunteer', password = 'correct horse battery'): Promise<void> {
  const setup = await page.request.post(`${baseUrl}/setup`, { data: { username, password, confirm_password: password } });
  if (![200, 409].includes(setup.status())) throw new Error(`setup failed: ${setup.status()}`);
  const login = await page.request.post(`${baseUrl}/login`, { data: { username, password } });
  if (login.status() !== 200) throw new Error(`login failed: ${login.status()}`);
}
