import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';
import { axeViolations } from './axe.ts';
import { launchBrowser, screenshot, startProduct, VIEWPORTS, type Product } from './support.ts';

const input = (page: Page) => page.getByRole('textbox', { name: 'Your question' });
const answers = (page: Page) => page.locator('[data-role="assistant"]');
const finished = (page: Page) => page.locator('[data-role="assistant"][data-status="done"]');
const focusedOnBox = (page: Page) => input(page).evaluate((element) => element === document.activeElement);

type Viewport = keyof typeof VIEWPORTS;

async function open(browser: Browser, url: string, viewport: Viewport, options: { dark?: boolean } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: VIEWPORTS[viewport],
    deviceScaleFactor: 1,
    colorScheme: options.dark ? 'dark' : 'light',
    // axe is injected as an inline script, which the product's CSP refuses.
    bypassCSP: true,
  });
  const page = await context.newPage();
  await page.goto(`${url}/ui/chat`);
  await expect.poll(() => input(page).isEnabled()).toBe(true);
  return { context, page };
}

/** Whether the element is wholly on screen between the top of the conversation and the top of the question box. */
async function wholeAboveTheBox(page: Page, element: Locator): Promise<boolean> {
  const [box, conversation, question] = await Promise.all([
    element.boundingBox(),
    page.getByRole('region', { name: 'Conversation' }).boundingBox(),
    input(page).boundingBox(),
  ]);
  if (!box || !conversation || !question) return false;
  return box.y >= conversation.y - 0.5 && box.y + box.height <= question.y + 0.5 && box.height > 0;
}

/**
 * The end of an answer in view above the box: its sources (when it has
 * some; else its last line of text) and its feedback icon.
 */
async function answerEndInView(page: Page, answer: Locator): Promise<boolean> {
  const feedback = answer.getByRole('button', { name: /Provide feedback on this response|Thank you for your feedback!/ });
  const sources = answer.locator('.cc-source');
  const lastLine = (await sources.count()) > 0 ? sources.last() : answer.locator('.cc-markdown > *').last();
  return (await wholeAboveTheBox(page, lastLine)) && (await wholeAboveTheBox(page, feedback));
}

describe('the chat on a phone and on a desktop (offline assistant)', () => {
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

  for (const viewport of ['phone', 'desktop'] as const) {
    it(`${viewport}: a long answer ends above the box with its sources and feedback icon, after it arrives and after a reload; focus stays in the box; Copy; scroll to latest`, async () => {
      const { context, page } = await open(browser, product.url, viewport);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: product.url });
      // The page asks nobody who is signed in: no /api/logged_in (and its 401 in the console) for a visitor.
      const apiCalls: string[] = [];
      page.on('request', (request) => {
        if (new URL(request.url()).pathname.startsWith('/api/')) apiCalls.push(request.url());
      });

      await input(page).fill("What's on Saturday?");
      await page.getByRole('button', { name: 'Send' }).click();
      // The box keeps the focus (a phone keeps its keyboard) and is empty for the next question.
      await expect.poll(() => focusedOnBox(page)).toBe(true);
      expect(await input(page).inputValue()).toBe('');
      await expect.poll(() => answers(page).count()).toBe(2);
      await expect.poll(() => finished(page).count()).toBe(2);
      const answer = finished(page).last();
      // Three sources at first, the rest a tap away.
      expect(await answer.locator('.cc-source').count()).toBe(3);
      await expect.poll(() => answerEndInView(page, answer)).toBe(true);
      expect(await focusedOnBox(page)).toBe(true);
      await answer.getByRole('button', { name: /^Show all \d+ sources$/ }).click();
      expect(await answer.locator('.cc-source').count()).toBeGreaterThan(3);
      await expect.poll(() => answerEndInView(page, answer)).toBe(true);
      await screenshot(page, `chat-long-answer-${viewport}`);

      // Copy puts the answer on the clipboard as plain text.
      await answer.getByRole('button', { name: 'Copy answer' }).click();
      await answer.getByRole('button', { name: 'Copied' }).waitFor();
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      expect(copied).toContain('Sat ');
      expect(copied).not.toContain('**');
      expect(copied.length).toBeGreaterThan(100);

      // Scrolled up, the visitor gets a way back to the latest.
      const conversation = page.getByRole('region', { name: 'Conversation' });
      await conversation.evaluate((element) => element.scrollTo({ top: 0 }));
      const toLatest = page.getByRole('button', { name: 'Scroll to latest' });
      await toLatest.waitFor();
      await toLatest.click();
      await expect.poll(() => answerEndInView(page, answer)).toBe(true);
      await expect.poll(() => toLatest.count()).toBe(0);

      await page.reload();
      await expect.poll(() => finished(page).count()).toBe(2);
      await expect.poll(() => answerEndInView(page, finished(page).last())).toBe(true);
      expect(apiCalls).toEqual([]);
      await context.close();
    });
  }

  it('has one heading of the first level and no axe violations, light and dark, at both widths', async () => {
    for (const viewport of ['phone', 'desktop'] as const) {
      for (const dark of [false, true]) {
        const { context, page } = await open(browser, product.url, viewport, { dark });
        await input(page).fill('When is the costume contest?');
        await input(page).press('Enter');
        await finished(page).nth(1).waitFor();
        expect(await page.locator('h1').count()).toBe(1);
        expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Starfall Concierge');
        expect(await axeViolations(page)).toEqual([]);
        // The info dialog too.
        await page.getByRole('button', { name: 'About this app' }).click();
        await page.getByRole('dialog', { name: 'About Starfall Concierge' }).getByText('Last refreshed').waitFor();
        expect(await axeViolations(page)).toEqual([]);
        await screenshot(page, `chat-about-${dark ? 'dark' : 'light'}-${viewport}`);
        await page.getByRole('button', { name: 'Got it' }).click();
        await expect.poll(() => focusedOnBox(page)).toBe(true);
        await screenshot(page, `chat-${dark ? 'dark' : 'light'}-${viewport}`);
        await context.close();
      }
    }
  });

  it("the info dialog's last refresh is in the convention's zone on a 24-hour clock, whatever the phone's zone", async () => {
    const context = await browser.newContext({ viewport: VIEWPORTS.phone, timezoneId: 'Asia/Tokyo', locale: 'en-US' });
    const page = await context.newPage();
    await page.goto(`${product.url}/ui/chat`);
    await page.getByRole('button', { name: 'About this app' }).click();
    const refreshed = page.getByRole('dialog').locator('time');
    await refreshed.waitFor();
    const iso = (await refreshed.getAttribute('datetime'))!;
    const zone = product.server.deps.timeZone();
    const expected = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(iso));
    expect(await refreshed.textContent()).toContain(expected);
    expect(await refreshed.textContent()).not.toMatch(/AM|PM/);
    await context.close();
  });

  it('a failure says so with Retry, which asks again under a new client_message_id and keeps the focus in the box', async () => {
    const { context, page } = await open(browser, product.url, 'phone');
    const sent: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/public/chat/send')) sent.push((request.postDataJSON() as { client_message_id: string }).client_message_id);
    });
    await product.server.deps.config.update({ paused: true });
    try {
      await input(page).fill('Where is Hall B?');
      await input(page).press('Enter');
      const failed = page.locator('[data-role="assistant"][data-status="error"]');
      await failed.waitFor();
      expect(await failed.getByRole('alert').textContent()).toBe('The chat service is currently unavailable. Please try again later.');
      // The question is back in the box, ready to edit, with the focus.
      expect(await input(page).inputValue()).toBe('Where is Hall B?');
      await expect.poll(() => focusedOnBox(page)).toBe(true);
      await screenshot(page, 'chat-retry-phone');
    } finally {
      await product.server.deps.config.update({ paused: false });
    }
    await page.locator('[data-role="assistant"][data-status="error"]').getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => finished(page).count()).toBe(2);
    expect(await input(page).inputValue()).toBe('');
    expect(await page.locator('[data-role="user"]').count()).toBe(1);
    expect(sent).toHaveLength(2);
    expect(sent[1]).not.toBe(sent[0]);
    await expect.poll(() => focusedOnBox(page)).toBe(true);
    await context.close();
  });
});

describe('the chat with the OpenAI assistant', () => {
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

  it('shows "{product} is thinking..." until the answer comes, then the answer as Markdown', async () => {
    fake.configure({ runDurationMs: 1500, answer: () => 'The **Costume Contest** is on Saturday at 19:00 on the Main Stage.' });
    const { context, page } = await open(browser, product.url, 'phone');
    await input(page).fill('When is the costume contest?');
    await input(page).press('Enter');
    await page.getByText('Starfall Concierge is thinking...').waitFor();
    expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(true);
    await expect.poll(() => finished(page).count()).toBe(2);
    const answer = finished(page).last();
    expect(await answer.locator('strong').textContent()).toBe('Costume Contest');
    expect(await page.getByText('Starfall Concierge is thinking...').count()).toBe(0);
    // Screen readers hear the finished answer once, from the live region.
    expect(await page.locator('[aria-live="polite"]').last().textContent()).toContain('Costume Contest is on Saturday');
    await context.close();
  });
});
