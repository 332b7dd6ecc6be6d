import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction } from '@concierge/server/src/test-support/fake-discord/fake-discord.ts';
import { axeViolations } from './axe.ts';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, VIEWPORTS, type Product } from './support.ts';

const toast = (page: Page, text: string | RegExp) => page.locator('#notistack-snackbar').filter({ hasText: text }).first();
const CLOSED_NOTICE = 'WebSocket connection closed. Please refresh the page to reconnect.';

/**
 * The console's Watch screen against the real product: answers from the
 * real Discord bot (discord.js on a fake Discord) and from the public chat
 * appear live, newest first, a whisper marked private.
 */
describe('the Watch screen', () => {
  let discord: FakeDiscord;
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    discord = await startFakeDiscord();
    product = await startProduct({
      DISCORD_TOKEN: discord.token,
      DISCORD_APPLICATION_ID: discord.applicationId,
      DISCORD_API_URL: discord.apiUrl,
      CONVENTION_TIMEZONE: 'America/Chicago',
    });
    await discord.waitForReady(15_000);
    // The bot registers its commands once connected.
    const deadline = Date.now() + 15_000;
    while (discord.commands.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
    await discord?.close();
  });

  /** Waits until Discord shows the interaction's answer. */
  const answered = (interaction: FakeInteraction) =>
    expect.poll(() => interaction.original !== null && !interaction.original.loading, { timeout: 20_000 }).toBe(true);

  /** A visitor asks on the public chat; returns the answer it got. */
  async function askPublicChat(question: string): Promise<string> {
    const { context, page } = await newPage(browser, 'desktop');
    await page.request.post(`${product.url}/public/chat/turnstile/verify`, { data: { token: '' } });
    const reply = await page.request.post(`${product.url}/public/chat/send`, { data: { message: question } });
    expect(reply.status()).toBe(200);
    const { response } = (await reply.json()) as { response: string };
    await context.close();
    return response;
  }

  it('shows Discord and public chat answers live, newest first, the whisper marked private; says when it closes and reconnects on focus', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/watch`);
    await toast(page, /^connected$/).waitFor();
    await expect.poll(() => page.getByTestId('watch-state').textContent()).toBe('Live');
    await expect.poll(() => page.getByText('Waiting for answers…').count()).toBe(1);

    const alice = discord.user('alice', { globalName: 'Alice Liddell' });
    const asked = discord.slashCommand({ command: 'ask', options: { question: 'When is the costume contest?' }, user: alice });
    await answered(asked);
    const cards = page.getByRole('listitem');
    await expect.poll(() => cards.count()).toBe(1);

    const visitorAnswer = await askPublicChat('Where is the lost and found?');
    await expect.poll(() => cards.count()).toBe(2);

    const bob = discord.user('bob', { globalName: 'Bob' });
    const whispered = discord.slashCommand({ command: 'whisper', options: { question: 'Is there a quiet room?' }, user: bob });
    await answered(whispered);
    await expect.poll(() => cards.count()).toBe(3);

    // Newest first: the whisper, the visitor, then Alice.
    const [whisper, visitor, ask] = [cards.nth(0), cards.nth(1), cards.nth(2)];
    expect(await whisper.getAttribute('aria-label')).toBe('Private answer to Bob');
    expect(await whisper.getByText('Private', { exact: true }).count()).toBe(1);
    expect(await whisper.getByTestId('watch-user-id').textContent()).toBe(bob.id);
    expect(await whisper.getByTestId('watch-prompt').textContent()).toBe('Is there a quiet room?');

    expect(await visitor.getAttribute('aria-label')).toMatch(/^Answer to Visitor [A-Za-z0-9_-]{8}$/);
    expect(await visitor.getByTestId('watch-user-id').textContent()).toMatch(/^public:[A-Za-z0-9_-]{8}$/);
    expect(await visitor.getByText('Public chat', { exact: true }).count()).toBe(1);
    expect(await visitor.getByText('Private', { exact: true }).count()).toBe(0);
    expect(await visitor.getByTestId('watch-response').textContent()).toBe(visitorAnswer);

    expect(await ask.getAttribute('aria-label')).toBe('Answer to Alice Liddell');
    expect(await ask.getByTestId('watch-user-id').textContent()).toBe(alice.id);
    expect(await ask.getByTestId('watch-prompt').textContent()).toBe('When is the costume contest?');
    expect(await ask.getByText('Private', { exact: true }).count()).toBe(0);
    expect((await ask.getByTestId('watch-response').textContent())!.length).toBeGreaterThan(10);
    // Times in the convention's zone, 24-hour, with its abbreviation (DESIGN §9).
    expect(await ask.locator('time').textContent()).toMatch(/^[A-Z][a-z]{2} \d{1,2} [A-Z][a-z]{2}, \d{2}:\d{2} C[DS]T$/);

    await screenshot(page, 'watch-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'watch-phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    // The server closes the feed: the page says so (SPEC §4)…
    for (const socket of product.server.deps.watch.sockets()) socket.close(1001, 'Server shutting down');
    await toast(page, CLOSED_NOTICE).waitFor();
    await expect.poll(() => page.getByTestId('watch-state').textContent()).toBe('Disconnected');
    // Besides the toast, the notice stays on the page with a way back.
    expect(await page.getByRole('alert').filter({ hasText: CLOSED_NOTICE }).filter({ has: page.getByRole('button', { name: 'Reconnect' }) }).count()).toBe(1);
    await screenshot(page, 'watch-closed-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'watch-closed-phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    // …and connects again with a fresh token when the page regains focus, keeping what it showed.
    await page.evaluate(() => window.dispatchEvent(new Event('focus')));
    await expect.poll(() => page.getByTestId('watch-state').textContent()).toBe('Live');
    await expect.poll(() => product.server.deps.watch.size).toBe(1);
    expect(await cards.count()).toBe(3);
    await askPublicChat('What is on tonight?');
    await expect.poll(() => cards.count()).toBe(4);
    await context.close();
  });

  it('has no axe violations at 390 and 1280 px, light and dark, and closes the feed when the admin signs out in another tab', async () => {
    for (const [viewport, scheme] of [['phone', 'dark'], ['desktop', 'light']] as const) {
      // axe is injected as an inline script, which the product's CSP refuses.
      const context = await browser.newContext({ viewport: VIEWPORTS[viewport], deviceScaleFactor: 1, colorScheme: scheme, bypassCSP: true });
      const page = await context.newPage();
      await signInAs(page, product.url);
      await page.goto(`${product.url}/ui/admin/watch`);
      await expect.poll(() => page.getByTestId('watch-state').textContent()).toBe('Live');
      const at = new Date().toISOString();
      const event = { source: 'discord', session_id: null, message_id: null, ask_command_id: 99, user_id: '42', username: 'carol', global_name: 'Carol', interaction_id: '4242', context: 'guild', prompt: 'Is the cafe open?', error: null, state: 'completed', step: 'list_message', run_id: null, run_status: 'completed', thread_id: null, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, processing_duration_ms: 10, created_at: at } as const;
      product.server.deps.events.publish('answer', { ...event, private: true, response: 'Until 18:00.' });
      product.server.deps.events.publish('answer', { ...event, source: 'public_chat', session_id: 'abcdefgh12345678', private: false, response: null, state: 'failed', error: 'No answer within 110 s' });
      await expect.poll(() => page.getByRole('listitem').count()).toBe(2);
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, `watch-${scheme}-${viewport}`);
      if (viewport === 'phone') {
        await page.request.post(`${product.url}/logout`);
        await expect.poll(() => page.getByTestId('watch-state').textContent()).toBe('Disconnected');
        await toast(page, CLOSED_NOTICE).waitFor();
      }
      await context.close();
    }
  });
});
