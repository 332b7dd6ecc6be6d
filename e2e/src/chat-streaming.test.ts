import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIcs } from '@concierge/server/src/crawler/parse/parse-ics.ts';
import { startFakeOpenAI, type FakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';
import { launchBrowser, screenshot, signInAs, startProduct, VIEWPORTS, type Product } from './support.ts';

const input = (page: Page) => page.getByRole('textbox', { name: 'Your question' });
const finished = (page: Page) => page.locator('[data-role="assistant"][data-status="done"]');
const focusedOnBox = (page: Page) => input(page).evaluate((element) => element === document.activeElement);

async function open(browser: Browser, url: string, viewport: keyof typeof VIEWPORTS): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: VIEWPORTS[viewport], deviceScaleFactor: 1, acceptDownloads: true });
  const page = await context.newPage();
  await page.goto(`${url}/ui/chat`);
  await expect.poll(() => input(page).isEnabled()).toBe(true);
  return { context, page };
}

/** Two dozen numbered sentences: long enough to stream for a while, each word a delta of the fake's stream. */
const LONG_ANSWER = Array.from({ length: 24 }, (_, index) => `Sentence ${index + 1} of the **long** answer about the convention.`).join(' ') + ' The last line: see you at the closing ceremony.';

describe('streamed answers (OpenAI assistant, the fake streaming with a delay between deltas)', () => {
  let fake: FakeOpenAI;
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    product = await startProduct({ OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, PRODUCT_NAME: 'Starfall Concierge' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
    await fake?.close();
  });

  for (const viewport of ['phone', 'desktop'] as const) {
    it(`${viewport}: text appears as it streams, as Markdown, and the whole answer ends above the box`, async () => {
      fake.configure({ runDurationMs: 50, deltaDelayMs: 20, answer: () => LONG_ANSWER });
      const { context, page } = await open(browser, product.url, viewport);
      await input(page).fill('Tell me everything');
      await input(page).press('Enter');
      await page.getByText('Starfall Concierge is thinking...').waitFor();
      const streaming = page.locator('[data-role="assistant"][data-status="streaming"]');
      await streaming.getByText('Sentence 1 of the').waitFor();
      // Part of it is there before the answer is complete, already rendered as Markdown.
      const partial = (await streaming.textContent()) ?? '';
      expect(partial).not.toContain('closing ceremony');
      expect(await streaming.locator('strong').first().textContent()).toBe('long');
      expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(true);
      await screenshot(page, `chat-streaming-${viewport}`);

      await expect.poll(() => finished(page).count(), { timeout: 30_000 }).toBe(2);
      const answer = finished(page).last();
      expect(await answer.textContent()).toContain('see you at the closing ceremony.');
      const lastLine = answer.getByText('The last line', { exact: false });
      const [line, box] = await Promise.all([lastLine.boundingBox(), input(page).boundingBox()]);
      expect(line!.y + line!.height).toBeLessThanOrEqual(box!.y);
      expect(await focusedOnBox(page)).toBe(true);
      await context.close();
    });
  }

  it('Stop keeps the partial answer, marked stopped, puts the question back in the box, and the visitor can ask again at once', async () => {
    fake.configure({ runDurationMs: 50, deltaDelayMs: 150, answer: ({ question }) => (question.startsWith('Tell') ? LONG_ANSWER : 'Registration is in the lobby.') });
    const { context, page } = await open(browser, product.url, 'phone');
    await input(page).fill('Tell me everything');
    await input(page).press('Enter');
    const streaming = page.locator('[data-role="assistant"][data-status="streaming"]');
    await streaming.getByText('Sentence 2', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();

    const stopped = page.locator('[data-role="assistant"][data-status="stopped"]');
    await stopped.waitFor();
    expect(await stopped.textContent()).toContain('Sentence 1 of the');
    expect(await stopped.textContent()).not.toContain('closing ceremony');
    expect(await stopped.getByText('Stopped: the answer is cut short.').count()).toBe(1);
    await expect.poll(() => input(page).inputValue()).toBe('Tell me everything');
    await expect.poll(() => focusedOnBox(page)).toBe(true);
    await screenshot(page, 'chat-stopped-phone');

    // Asked again at once: answered, not refused as a request still in progress.
    await input(page).fill('Where is registration?');
    await input(page).press('Enter');
    await expect.poll(() => finished(page).count()).toBe(2);
    expect(await finished(page).last().textContent()).toContain('Registration is in the lobby.');
    expect(await page.getByText('Another request is already in progress').count()).toBe(0);
    await context.close();
  });

  it('a failure after the stream began ends the answer with the error and Retry, which asks again', async () => {
    fake.configure({ runDurationMs: 50, deltaDelayMs: 0, finalStatus: 'failed', answer: () => 'Registration is in the lobby.' });
    const { context, page } = await open(browser, product.url, 'desktop');
    await input(page).fill('Where is registration?');
    await input(page).press('Enter');
    const failed = page.locator('[data-role="assistant"][data-status="error"]');
    await failed.waitFor();
    expect(await failed.getByRole('alert').textContent()).toMatch(/^Error: /);
    await expect.poll(() => input(page).inputValue()).toBe('Where is registration?');
    await expect.poll(() => focusedOnBox(page)).toBe(true);
    fake.configure({ finalStatus: 'completed' });
    await failed.getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => finished(page).count()).toBe(2);
    expect(await finished(page).last().textContent()).toContain('Registration is in the lobby.');
    expect(await input(page).inputValue()).toBe('');
    await context.close();
  });
});

describe('sources and conversations (offline assistant)', () => {
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    product = await startProduct({ PRODUCT_NAME: 'Starfall Concierge' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
  });

  it("Add to calendar downloads the event as iCalendar that the product's own parser reads back", async () => {
    const { context, page } = await open(browser, product.url, 'phone');
    await input(page).fill('When is the costume contest?');
    await input(page).press('Enter');
    await expect.poll(() => finished(page).count()).toBe(2);
    const source = finished(page).last().locator('.cc-source', { hasText: 'Costume Contest' }).first();
    const details = await source.textContent();
    expect(details).toMatch(/Costume Contest · \w{3} \d{1,2} \w{3}, \d{2}:\d{2} [A-Z]{2,5} · Main Stage/);
    const [download] = await Promise.all([page.waitForEvent('download'), source.getByRole('link', { name: 'Add to calendar: Costume Contest' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^costume-contest.*\.ics$/i);
    const ics = readFileSync((await download.path())!, 'utf8');
    const zone = product.server.deps.timeZone();
    const parsed = parseIcs(ics, { timeZone: zone });
    expect(parsed.events).toHaveLength(1);
    const [event] = parsed.events;
    expect(event!.title).toBe('Costume Contest');
    expect(event!.location).toBe('Main Stage');
    // The same time the chat shows, in the convention's zone.
    const shown = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(event!.start);
    expect(details).toContain(shown);
    await context.close();
  });

  for (const viewport of ['phone', 'desktop'] as const) {
    it(`${viewport}: New conversation starts again from the welcome, also after a reload`, async () => {
      const { context, page } = await open(browser, product.url, viewport);
      await input(page).fill('Where is the costume contest?');
      await input(page).press('Enter');
      await expect.poll(() => finished(page).count()).toBe(2);
      await page.getByRole('button', { name: 'New conversation' }).click();
      await expect.poll(() => page.locator('[data-role]').count()).toBe(1);
      await expect.poll(() => focusedOnBox(page)).toBe(true);
      await page.reload();
      await expect.poll(() => input(page).isEnabled()).toBe(true);
      expect(await page.locator('[data-role="user"]').count()).toBe(0);
      await input(page).fill('What is on tonight?');
      await input(page).press('Enter');
      await expect.poll(() => finished(page).count()).toBe(2);
      await page.reload();
      await expect.poll(() => page.locator('[data-role="user"]').count()).toBe(1);
      expect(await page.locator('[data-role="user"]').textContent()).toBe('What is on tonight?');
      await screenshot(page, `chat-new-conversation-${viewport}`);
      await context.close();
    });
  }

  it("a signed-in admin gets the console's menus on the chat, from the page itself (no /api/logged_in), and can sign out", async () => {
    for (const viewport of ['desktop', 'phone'] as const) {
      const context = await browser.newContext({ viewport: VIEWPORTS[viewport], deviceScaleFactor: 1 });
      const page = await context.newPage();
      await signInAs(page, product.url);
      const asked: string[] = [];
      page.on('request', (request) => {
        if (new URL(request.url()).pathname === '/api/logged_in') asked.push(request.url());
      });
      await page.goto(`${product.url}/ui/chat`);
      await expect.poll(() => input(page).isEnabled()).toBe(true);
      if (viewport === 'desktop') {
        await page.getByRole('button', { name: 'System' }).click();
        await page.getByRole('link', { name: 'Crawler Runs' }).waitFor();
        await screenshot(page, 'chat-admin-nav-desktop');
        expect(asked).toEqual([]);
        await page.getByRole('link', { name: 'Crawler Runs' }).click();
        await page.waitForURL('**/ui/admin/crawler_runs');
        await page.getByRole('heading', { name: 'Crawler Runs' }).waitFor();
      } else {
        await page.getByRole('button', { name: 'Open navigation' }).click();
        await page.getByRole('button', { name: 'Log out (volunteer)' }).waitFor();
        await screenshot(page, 'chat-admin-nav-phone');
        expect(asked).toEqual([]);
        await page.getByRole('button', { name: 'Log out (volunteer)' }).click();
        await page.waitForURL('**/ui/admin/login');
        await page.goto(`${product.url}/ui/chat`);
        await expect.poll(() => input(page).isEnabled()).toBe(true);
        expect(await page.getByRole('button', { name: 'Open navigation' }).count()).toBe(0);
      }
      await context.close();
    }
  });
});
