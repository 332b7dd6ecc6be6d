import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANSWER_MAX_LENGTH } from '@concierge/contract';
import { insertMessage } from '@concierge/server/src/chat/chat.queries.ts';
import { startFakeOpenAI, type FakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';
import { axeViolations } from './axe.ts';
import { launchBrowser, screenshot, startProduct, VIEWPORTS, type Product } from './support.ts';

const input = (page: Page) => page.getByRole('textbox', { name: 'Your question' });
const rows = (page: Page) => page.locator('[data-role]');
const finished = (page: Page) => page.locator('[data-role="assistant"][data-status="done"]');
const showEarlier = (page: Page) => page.getByRole('button', { name: /^Show earlier messages \(\d+\)$/ });
const MARK = 'Answer truncated: it was longer than 64 KB.';

/** A 2.1 MB answer in Markdown: a list of long items (a few deltas each, as the fake streams one word a delta). */
const HUGE_ANSWER = Array.from({ length: 6500 }, (_, n) => `- **Item ${n}**: ${'lorem-ipsum-'.repeat(26)}\n`).join('');

/** Long tasks (main thread held over 50 ms) from the start of the page, for the report. */
async function watchLongTasks(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const seen: number[] = [];
    (window as unknown as { longTasks: number[] }).longTasks = seen;
    new PerformanceObserver((list) => list.getEntries().forEach((entry) => seen.push(entry.duration))).observe({ type: 'longtask', buffered: true });
  });
}

describe('a long conversation with a 64 KB answer', () => {
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

  it('streams a 2.1 MB answer cut at 64 KB with its mark, and a reload of 200 messages draws the newest first', async () => {
    // axe is injected as an inline script, which the product's CSP refuses.
    const context = await browser.newContext({ viewport: VIEWPORTS.phone, deviceScaleFactor: 1, bypassCSP: true });
    await watchLongTasks(context);
    const page = await context.newPage();
    await page.goto(`${product.url}/ui/chat`);
    await expect.poll(() => input(page).isEnabled()).toBe(true);

    // 99 exchanges asked before (stored as the server stores them), then the huge answer, asked on the page.
    const { db } = product.server.deps.database;
    const session = await db.selectFrom('public_chat_sessions').select('session_id').orderBy('id', 'desc').executeTakeFirstOrThrow();
    const start = Date.now() - 3_600_000;
    for (let n = 0; n < 99; n++) {
      await insertMessage(db, {
        session_id: session.session_id,
        role: 'user',
        content: `Question ${n}: what is on in Hall ${n % 5}?`,
        response: `**Answer ${n}.** The panel in Hall ${n % 5} starts at ${10 + (n % 9)}:00.\n\n- one\n- two`,
        state: 'completed',
        client_ip: '127.0.0.1',
        user_agent: 'e2e',
        now: new Date(start + n * 30_000).toISOString(),
      });
    }
    fake.configure({ answer: () => HUGE_ANSWER });
    await input(page).fill('Tell me everything');
    await input(page).press('Enter');
    await expect.poll(() => finished(page).count(), { timeout: 60_000 }).toBe(2);
    const streamed = (await finished(page).last().locator('.cc-markdown').textContent()) ?? '';
    expect(streamed).toContain(MARK);

    // Reload: 201 messages (the welcome, 100 questions, 100 answers), the newest 20 drawn.
    await page.reload();
    await expect.poll(() => input(page).isEnabled()).toBe(true);
    await expect.poll(() => rows(page).count()).toBe(20);
    expect(await showEarlier(page).textContent()).toBe('Show earlier messages (181)');
    const newest = finished(page).last();
    expect(await newest.locator('.cc-markdown').textContent()).toContain(MARK);
    expect(((await newest.locator('.cc-markdown').textContent()) ?? '').length).toBeLessThanOrEqual(ANSWER_MAX_LENGTH);
    expect(await newest.getByText('Item 0', { exact: true }).count()).toBe(1);
    // The box takes typing at once.
    await input(page).fill('Still here?');
    expect(await input(page).inputValue()).toBe('Still here?');
    await screenshot(page, 'chat-long-history-end-phone');

    // Earlier messages come above, and what was on screen stays where it was.
    const conversation = page.getByRole('region', { name: 'Conversation' });
    await conversation.evaluate((element) => element.scrollTo({ top: 0 }));
    const firstShown = rows(page).first();
    const firstText = await firstShown.textContent();
    const before = (await firstShown.boundingBox())!.y;
    await showEarlier(page).click();
    await expect.poll(() => rows(page).count()).toBe(40);
    const same = rows(page).filter({ hasText: firstText! }).first();
    await expect.poll(async () => Math.abs((await same.boundingBox())!.y - before)).toBeLessThan(2);
    expect(await showEarlier(page).textContent()).toBe('Show earlier messages (161)');
    await screenshot(page, 'chat-long-history-earlier-phone');
    expect(await axeViolations(page)).toEqual([]);

    const longTasks = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks);
    console.log(`long tasks since the reload: ${longTasks.length}, longest ${Math.round(Math.max(0, ...longTasks))} ms, total ${Math.round(longTasks.reduce((a, b) => a + b, 0))} ms`);

    // The same conversation on a desktop.
    const desktop = await browser.newContext({ viewport: VIEWPORTS.desktop, deviceScaleFactor: 1 });
    await desktop.addCookies(await context.cookies());
    const wide = await desktop.newPage();
    await wide.goto(`${product.url}/ui/chat`);
    await expect.poll(() => rows(wide).count()).toBe(20);
    await expect.poll(async () => (await finished(wide).last().locator('.cc-markdown').textContent())?.includes(MARK)).toBe(true);
    // Drawn as Markdown (its renderer arrives after first paint): the list of items, the mark in italics.
    await finished(wide).last().locator('li').first().waitFor();
    expect(await finished(wide).last().locator('em', { hasText: MARK }).count()).toBe(1);
    await screenshot(wide, 'chat-long-history-end-desktop');
    await rows(wide).first().scrollIntoViewIfNeeded();
    await wide.getByRole('region', { name: 'Conversation' }).evaluate((element) => element.scrollTo({ top: 0 }));
    await screenshot(wide, 'chat-long-history-top-desktop');
    await desktop.close();
    await context.close();
  });
});
