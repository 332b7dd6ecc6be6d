import { request as playwrightRequest, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minuteStartClock } from '@concierge/server/src/test-support/test-context.ts';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';

const rows = (page: Page) => page.locator('tbody tr');

describe('public chat monitoring screens', () => {
  let product: Product;
  let browser: Browser;
  let failedId: number;

  beforeAll(async () => {
    // A whole rate-limit window (a clock minute) for the visitor's 16 requests.
    product = await startProduct({}, { clock: minuteStartClock() });
    await product.server.deps.config.update({ public_chat_requests_per_minute: 15, assistant_poll_interval: '100ms' });
    // A visitor asks 15 questions (30 message rows), gives feedback on one and hits the limit once.
    const visitor = await playwrightRequest.newContext({ baseURL: product.url });
    await visitor.post('/public/chat/turnstile/verify', { data: { token: '' } });
    const questions = ['When is the costume contest?', 'Where is the lost and found?', "What's on in Hall B tonight?"];
    let firstId = 0;
    for (let i = 0; i < 15; i++) {
      const reply = await visitor.post('/public/chat/send', { data: { message: `${questions[i % 3]} (${i + 1})` } });
      if (i === 0) firstId = (await reply.json()).feedback_id;
    }
    expect((await visitor.post('/public/chat/send', { data: { message: 'one too many' } })).status()).toBe(429);
    await visitor.post('/public/chat/feedback', { data: { feedback_id: firstId, type: 'outdated', description: 'The contest moved to 20:00' } });
    await visitor.dispose();
    // One failed exchange, as a provider outage leaves it.
    const db = product.server.deps.database.db;
    const failed = await db.selectFrom('public_chat_messages').select('id').where('role', '=', 'user').orderBy('id', 'desc').executeTakeFirstOrThrow();
    failedId = failed.id;
    await db.updateTable('public_chat_messages').set({ state: 'failed', error: 'OpenAI 500 error: The server had an error' }).where('id', '=', failedId).execute();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
  });

  it('lists messages with role and state chips, feedback and details, and loads more', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/public_chat_messages`);
    await expect.poll(() => rows(page).count()).toBe(25);
    await page.getByRole('button', { name: 'Load More' }).click();
    await expect.poll(() => rows(page).count()).toBe(30);
    expect(await page.getByRole('button', { name: 'Load More' }).count()).toBe(0);
    expect(await page.getByText('No feedback').count()).toBeGreaterThan(0);

    await rows(page).filter({ has: page.getByRole('button', { name: '1', exact: true }) }).getByRole('button', { name: '1', exact: true }).click();
    const feedback = page.getByRole('dialog', { name: /^Feedback for Message #\d+$/ });
    await feedback.waitFor();
    await feedback.getByText('Outdated Information').waitFor();
    expect(await feedback.getByText('The contest moved to 20:00', { exact: false }).count()).toBe(1);
    await screenshot(page, 'messages-feedback-desktop');
    await feedback.getByRole('button', { name: 'Close' }).click();

    await page.getByLabel('Role').click();
    await page.getByRole('option', { name: 'User' }).click();
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await page.waitForURL(/role=user/);
    await expect.poll(() => rows(page).count()).toBe(15);
    await screenshot(page, 'messages-desktop');

    await rows(page).filter({ hasText: 'failed' }).getByRole('button', { name: 'View Details' }).click();
    const details = page.getByRole('dialog', { name: 'Public Chat Message Details' });
    await details.waitFor();
    const error = details.getByText('OpenAI 500 error: The server had an error');
    expect(await error.evaluate((element) => getComputedStyle(element).color)).toBe('rgb(211, 47, 47)');
    await screenshot(page, 'message-details-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'message-details-phone');
    await context.close();
  });

  it('lists sessions and rate limits with their chips; Clear Filters goes back to newest first', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/public_chat_sessions?order=asc`);
    await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
    expect(await rows(page).first().getByText('Active').count()).toBe(1);
    await screenshot(page, 'sessions-phone');
    await page.getByRole('button', { name: /^Filters/ }).click();
    await page.getByRole('button', { name: 'Clear Filters' }).click();
    await expect.poll(() => page.url()).not.toContain('order=asc');

    await page.goto(`${product.url}/ui/admin/public_chat_rate_limits?identifier=session:`);
    await expect.poll(() => rows(page).count()).toBe(1);
    const row = rows(page).first();
    expect(await row.getByText('16 / 15').count()).toBe(1);
    expect(await row.getByText('107%').count()).toBe(1);
    expect(await row.getByText('Limited').count()).toBe(1);
    await screenshot(page, 'rate-limits-phone');
    await row.getByRole('button', { name: 'View Details' }).click();
    await page.getByRole('dialog', { name: 'Rate Limit Details' }).waitFor();
    await page.setViewportSize({ width: 1280, height: 800 });
    await screenshot(page, 'rate-limit-details-desktop');
    await context.close();
  });

  it('shows each of the five AI call logs with pretty-printed bodies', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    const titles = {
      create_thread: 'OpenAI Create Thread Logs',
      create_message: 'OpenAI Create Message Logs',
      create_run: 'OpenAI Create Run Logs',
      retrieve_run: 'OpenAI Retrieve Run Logs',
      list_messages: 'OpenAI List Messages Logs',
    };
    for (const [kind, title] of Object.entries(titles)) {
      await page.goto(`${product.url}/ui/admin/public_chat_openai_${kind}`);
      await page.getByRole('heading', { name: title }).waitFor();
      await expect.poll(() => rows(page).count()).toBeGreaterThan(0);
    }
    // The logs show the public chat's calls; the Origin filter shows a Discord ask command's.
    const asked = await product.server.deps.askCommands.submit({ user: { id: '123456789012345678', username: 'attendee', global_name: 'Attendee' }, prompt: 'Where is Hall B?', whisper: false, type: 'ask' });
    await product.server.deps.askWorker.drain();
    await page.goto(`${product.url}/ui/admin/public_chat_openai_create_run`);
    await expect.poll(() => rows(page).count()).toBe(15);
    expect(await page.getByText(`Ask #${asked.command.id}`).count()).toBe(0);
    await page.getByLabel('Origin').click();
    await page.getByRole('option', { name: 'Discord (Ask Commands)' }).click();
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await expect.poll(() => rows(page).count()).toBe(1);
    await page.getByText(`Ask #${asked.command.id}`).waitFor();
    expect(page.url()).toContain('origin=ask_command');
    await screenshot(page, 'log-origin-filter-desktop');

    await page.goto(`${product.url}/ui/admin/public_chat_openai_create_message?message_id=${failedId}`);
    await expect.poll(() => rows(page).count()).toBe(1);
    await rows(page).first().getByRole('button', { name: 'View Details' }).click();
    const details = page.getByRole('dialog', { name: 'OpenAI Log Details' });
    await details.waitFor();
    // The request body is shown as indented JSON.
    expect(await details.getByText(/"role": "user",\s+"content": "[^"]+\(15\)"/).count()).toBe(1);
    await screenshot(page, 'log-details-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'log-details-phone');
    await context.close();
  });

  it('pages, filters and details on Sessions, Rate Limits and a call log, at desktop and phone width', async () => {
    // Enough rows for a second page: 30 past sessions (3 with an error), 30 rate-limit windows, 30 call logs.
    const db = product.server.deps.database.db;
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
    for (let i = 1; i <= 30; i++) {
      await db
        .insertInto('public_chat_sessions')
        .values({
          session_id: `past-visitor-${String(i).padStart(2, '0')}`,
          client_ip: `203.0.113.${i}`,
          thread_id: `conv_past_${i}`,
          message_count: 2,
          total_tokens: 120,
          first_seen_at: at(600 + i),
          last_seen_at: at(590 + i),
          expires_at: at(560 + i),
          error: i % 10 === 0 ? 'OpenAI 500 error: The server had an error' : null,
          created_at: at(600 + i),
          updated_at: at(590 + i),
        })
        .execute();
      await db
        .insertInto('public_chat_rate_limits')
        .values({
          identifier: `ip:203.0.113.${i}`,
          client_ip: `203.0.113.${i}`,
          window_start: at(600 + i),
          window_end: at(599 + i),
          request_count: i % 10 === 0 ? 151 : 12,
          max_requests: 150,
          limited: i % 10 === 0,
          limited_at: i % 10 === 0 ? at(599 + i) : null,
          created_at: at(600 + i),
          updated_at: at(600 + i),
        })
        .execute();
      await db
        .insertInto('openai_retrieve_run_logs')
        .values({
          session_id: `past-visitor-${String(i).padStart(2, '0')}`,
          client_ip: `203.0.113.${i}`,
          operation: 'responses.retrieve',
          request_started: at(600 + i),
          request_ended: new Date(Date.parse(at(600 + i)) + 180).toISOString(),
          response_body: JSON.stringify({ id: `resp_${i}`, status: 'completed' }),
          response_headers: JSON.stringify({ 'x-request-id': `req_${i}` }),
          error: null,
          created_at: at(600 + i),
          updated_at: at(600 + i),
        })
        .execute();
    }

    for (const viewport of ['desktop', 'phone'] as const) {
      const { context, page } = await newPage(browser, viewport);
      await signInAs(page, product.url);
      const openFilters = async () => {
        if (viewport === 'phone') await page.getByRole('button', { name: /^Filters/ }).click();
      };

      await page.goto(`${product.url}/ui/admin/public_chat_sessions`);
      await expect.poll(() => rows(page).count()).toBe(25);
      await screenshot(page, `sessions-${viewport}`);
      await page.getByRole('button', { name: 'Load More' }).click();
      await expect.poll(() => rows(page).count()).toBe(31);
      await openFilters();
      await page.getByLabel('Has Error').click();
      await page.getByRole('option', { name: 'Yes' }).click();
      await page.getByRole('button', { name: 'Apply Filters' }).click();
      await expect.poll(() => rows(page).count()).toBe(3);
      expect(await rows(page).getByText('Error', { exact: true }).count()).toBe(3);
      await rows(page).first().getByRole('button', { name: 'View Details' }).click();
      const session = page.getByRole('dialog', { name: 'Public Chat Session Details' });
      await session.getByText('past-visitor-10').waitFor();
      await screenshot(page, `session-details-${viewport}`);
      await session.getByRole('button', { name: 'Close' }).click();

      await page.goto(`${product.url}/ui/admin/public_chat_rate_limits`);
      await expect.poll(() => rows(page).count()).toBe(25);
      await page.getByRole('button', { name: 'Load More' }).click();
      await expect.poll(() => rows(page).count()).toBeGreaterThan(25);
      await openFilters();
      await page.getByLabel('Limited').click();
      await page.getByRole('option', { name: 'Yes' }).click();
      await page.getByRole('button', { name: 'Apply Filters' }).click();
      await page.waitForURL(/limited=true/);
      await expect.poll(() => rows(page).count()).toBe(4); // three busy addresses and the visitor who went over
      await screenshot(page, `rate-limits-${viewport}`);

      await page.goto(`${product.url}/ui/admin/public_chat_openai_retrieve_run?client_ip=203.0.113.`);
      await expect.poll(() => rows(page).count()).toBe(25);
      await screenshot(page, `logs-${viewport}`);
      await page.getByRole('button', { name: 'Load More' }).click();
      await expect.poll(() => rows(page).count()).toBe(30);
      expect(await page.getByRole('button', { name: 'Load More' }).count()).toBe(0);
      await rows(page).first().getByRole('button', { name: 'View Details' }).click();
      const log = page.getByRole('dialog', { name: 'OpenAI Log Details' });
      await log.getByText(/"x-request-id": "req_\d+"/).waitFor();
      await log.getByText('180 ms').first().waitFor(); // the duration is drawn with the rest of the details, not always in the same frame
      await context.close();
    }
  });
});
