import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
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

/** An answer of about 6 KB as stored before: the history of 100 of them is what a reload used to download at once. */
const olderAnswer = (n: number) =>
  `**Answer ${n}.** The panel in Hall ${n % 5} starts at ${10 + (n % 9)}:00.\n\n` +
  Array.from({ length: 40 }, (_, item) => `- Room ${item}: ${words(n * 40 + item, 20)}\n`).join('');

const WORDS = 'panel guest badge hall stage queue signing photo cosplay repair lounge opens closes late early floor level ticket'.split(' ');
/** Varied text (compressed about as much as prose is), the same every run. */
function words(seed: number, count: number): string {
  let state = seed * 2654435761 + 1;
  return Array.from({ length: count }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return `${WORDS[state % WORDS.length]}${state % 97}`;
  }).join(' ');
}

/** The history replies a page receives: their query and their size, decoded and as sent. */
function watchHistory(page: Page) {
  const seen: { query: URLSearchParams; exchanges: number; firstId: number; bytes: number; sent: number }[] = [];
  const pending: Promise<void>[] = [];
  page.on('response', (response: Response) => {
    const url = new URL(response.url());
    if (url.pathname !== '/public/chat/history') return;
    pending.push(
      (async () => {
        const body = await response.body();
        const sizes = await response.request().sizes();
        const { exchanges } = JSON.parse(body.toString()) as { exchanges: { feedback_id: number }[] };
        const sent = sizes.responseBodySize + sizes.responseHeadersSize;
        seen.push({ query: url.searchParams, exchanges: exchanges.length, firstId: exchanges[0]?.feedback_id ?? 0, bytes: body.length, sent });
      })(),
    );
  });
  return {
    async replies() {
      await Promise.all(pending);
      return seen;
    },
    clear() {
      seen.length = 0;
      pending.length = 0;
    },
  };
}

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

  it('streams a 2.1 MB answer cut at 64 KB with its mark, and a reload of 200 messages fetches and draws the newest page first', async () => {
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
        response: olderAnswer(n),
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

    // Reload: 201 messages (the welcome, 100 questions, 100 answers); only the newest 20 are fetched and drawn.
    const history = watchHistory(page);
    await page.reload();
    await expect.poll(() => input(page).isEnabled()).toBe(true);
    await expect.poll(() => rows(page).count()).toBe(20);
    expect(await showEarlier(page).textContent()).toBe('Show earlier messages (181)');
    const [firstPage, ...others] = await history.replies();
    expect(others).toEqual([]);
    expect(Object.fromEntries(firstPage!.query)).toEqual({ limit: '10' });
    expect(firstPage!.exchanges).toBe(10);
    // What the reload used to download: the whole conversation in one reply (the request without paging, as before).
    history.clear();
    await page.evaluate(() => fetch('/public/chat/history').then((response) => response.text()));
    const [whole] = await history.replies();
    expect(whole!.exchanges).toBe(100);
    expect(firstPage!.bytes).toBeLessThan(whole!.bytes / 4);
    expect(firstPage!.sent).toBeLessThan(whole!.sent / 2);
    console.log(
      `history on reload: the newest 10 exchanges, ${firstPage!.bytes} bytes (${firstPage!.sent} sent, compressed, headers included); ` +
        `the whole conversation in one reply: ${whole!.bytes} bytes (${whole!.sent} sent)`,
    );
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
    await screenshot(page, 'chat-long-history-top-phone');
    const firstShown = rows(page).first();
    const firstText = await firstShown.textContent();
    const before = (await firstShown.boundingBox())!.y;
    history.clear();
    await showEarlier(page).click();
    await expect.poll(() => rows(page).count()).toBe(40);
    const same = rows(page).filter({ hasText: firstText! }).first();
    await expect.poll(async () => Math.abs((await same.boundingBox())!.y - before)).toBeLessThan(2);
    expect(await showEarlier(page).textContent()).toBe('Show earlier messages (161)');
    // The next page, and only it, came from the server: the 10 exchanges before the oldest one drawn.
    const [secondPage, ...more] = await history.replies();
    expect(more).toEqual([]);
    expect(secondPage!.query.get('limit')).toBe('10');
    expect(Number(secondPage!.query.get('before'))).toBe(firstPage!.firstId);
    expect(secondPage!.exchanges).toBe(10);
    expect(await rows(page).first().textContent()).toContain('Question 80:');
    await screenshot(page, 'chat-long-history-earlier-phone');
    expect(await axeViolations(page)).toEqual([]);

    const longTasks = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks);
    console.log(`long tasks since the reload (to the first Show earlier): ${longTasks.length}, longest ${Math.round(Math.max(0, ...longTasks))} ms, total ${Math.round(longTasks.reduce((a, b) => a + b, 0))} ms`);

    // From the keyboard to the start: the button keeps the focus page after page, then the conversation takes it.
    await showEarlier(page).focus();
    for (let left = 161; left > 1; left -= 20) {
      await page.keyboard.press('Enter');
      const remaining = left - 20;
      // The last page brings the welcome too.
      await expect.poll(() => rows(page).count()).toBe(remaining > 1 ? 201 - remaining : 201);
      if (remaining > 1) {
        expect(await showEarlier(page).textContent()).toBe(`Show earlier messages (${remaining})`);
        expect(await showEarlier(page).evaluate((element) => element === document.activeElement)).toBe(true);
      }
    }
    expect(await page.getByRole('button', { name: /Show earlier messages/ }).count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Conversation');
    expect(await rows(page).count()).toBe(201);
    expect(await rows(page).nth(1).textContent()).toContain('Question 0:');
    await screenshot(page, 'chat-long-history-start-phone');

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

    // A page that cannot be had says so, and can be asked for again; one on its way says that.
    const earlierPage = /\/public\/chat\/history\?.*before=/;
    await wide.route(earlierPage, (route) => route.abort());
    await showEarlier(wide).click();
    const failed = wide.getByRole('alert').filter({ hasText: 'Could not load earlier messages. Please try again.' });
    await failed.waitFor();
    expect(await rows(wide).count()).toBe(20);
    await screenshot(wide, 'chat-long-history-failed-desktop');
    await wide.unroute(earlierPage);
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await wide.route(earlierPage, async (route) => {
      await held;
      await route.continue();
    });
    await showEarlier(wide).click();
    const loading = wide.getByRole('button', { name: 'Loading earlier messages…' });
    await loading.waitFor();
    expect(await failed.count()).toBe(0);
    expect(await loading.getAttribute('aria-disabled')).toBe('true');
    await screenshot(wide, 'chat-long-history-loading-desktop');
    release();
    await expect.poll(() => rows(wide).count()).toBe(40);
    expect(await showEarlier(wide).textContent()).toBe('Show earlier messages (161)');
    await desktop.close();
    await context.close();
  });

  it('follows an answer still on its way after a reload, fetching that one exchange and nothing older', async () => {
    const context = await browser.newContext({ viewport: VIEWPORTS.phone, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.goto(`${product.url}/ui/chat`);
    await expect.poll(() => input(page).isEnabled()).toBe(true);
    const { db } = product.server.deps.database;
    const session = await db.selectFrom('public_chat_sessions').select('session_id').orderBy('id', 'desc').executeTakeFirstOrThrow();
    for (let n = 0; n < 30; n++) {
      const now = new Date(Date.now() - 3_600_000 + n * 30_000).toISOString();
      await insertMessage(db, { session_id: session.session_id, role: 'user', content: `Earlier ${n}`, response: olderAnswer(n), state: 'completed', client_ip: null, user_agent: 'e2e', now });
    }
    const answer = `The ribbon desk is by the east stairs. ${words(7, 40)}`;
    fake.configure({ answer: () => answer, deltaDelayMs: 100 });
    await input(page).fill('Where is the ribbon desk?');
    await input(page).press('Enter');
    await page.locator('[data-role="assistant"][data-status="streaming"]').waitFor();

    const history = watchHistory(page);
    await page.reload();
    await expect.poll(() => rows(page).count()).toBe(20);
    expect(await showEarlier(page).textContent()).toBe('Show earlier messages (43)');
    await expect.poll(() => finished(page).last().textContent(), { timeout: 30_000 }).toContain('The ribbon desk is by the east stairs.');
    expect(await page.locator('[data-role="assistant"][data-status="waiting"]').count()).toBe(0);
    const [newest, ...follows] = await history.replies();
    expect(Object.fromEntries(newest!.query)).toEqual({ limit: '10' });
    const asked = (await db.selectFrom('public_chat_messages').select('id').where('content', '=', 'Where is the ribbon desk?').executeTakeFirstOrThrow()).id;
    expect(follows.length).toBeGreaterThan(0);
    for (const follow of follows) expect(Object.fromEntries(follow.query)).toEqual({ limit: '1', before: String(asked + 1) });
    // What was drawn stays: the same 20 messages, the answer in its place.
    expect(await rows(page).count()).toBe(20);
    expect(await rows(page).nth(18).textContent()).toBe('Where is the ribbon desk?');
    expect(await showEarlier(page).textContent()).toBe('Show earlier messages (43)');
    fake.configure({ deltaDelayMs: 0 });
    await context.close();
  });
});
