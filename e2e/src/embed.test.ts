import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot, startProduct, type Product } from './support.ts';

/** The convention's own site: a page with the one-line embed snippet, on its own port. */
async function conventionSite(productUrl: () => string): Promise<{ server: Server; port: number }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Starfall Con 2026</title></head>
<body style="font-family: sans-serif; margin: 2rem; background: #fafafa">
  <h1>Starfall Con 2026</h1>
  <p>Three days of panels, workshops and parties. Questions? Ask the concierge.</p>
  <script src="${productUrl()}/ui/embed.js" async></script>
</body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const close = (server: Server | undefined) => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));

describe('the chat embedded on the convention\'s site', () => {
  let product: Product;
  let browser: Browser;
  let listed: { server: Server; port: number };
  let unlisted: { server: Server; port: number };

  beforeAll(async () => {
    // The convention's pages are on localhost, the product on 127.0.0.1: another site.
    listed = await conventionSite(() => product.url);
    unlisted = await conventionSite(() => product.url);
    product = await startProduct({ PRODUCT_NAME: 'Starfall Concierge', EMBED_ORIGINS: `http://localhost:${listed.port}` });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
    await close(listed?.server);
    await close(unlisted?.server);
  });

  const openChat = async (page: Page) => {
    await page.getByRole('button', { name: 'Chat with Starfall Concierge' }).click();
    // Open, the button closes the panel.
    await expect.poll(() => page.getByRole('button', { name: 'Close Starfall Concierge' }).getAttribute('aria-expanded')).toBe('true');
    return page.frameLocator('iframe[title="Starfall Concierge"]');
  };

  for (const viewport of ['phone', 'desktop'] as const) {
    it(`asks and answers inside the frame on a listed site (${viewport})`, async () => {
      const { context, page } = await newPage(browser, viewport);
      await page.goto(`http://localhost:${listed.port}/`);
      const chat = await openChat(page);
      const box = chat.getByRole('textbox', { name: 'Your question' });
      await expect.poll(() => box.isEnabled(), { timeout: 20_000 }).toBe(true);
      await box.fill('When is the costume contest?');
      await box.press('Enter');
      const answer = chat.locator('[data-role="assistant"]').filter({ hasText: 'Main Stage' }).last();
      await answer.waitFor({ timeout: 20_000 });
      expect(await answer.textContent()).toContain('Costume Contest');
      await screenshot(page, `embed-open-${viewport}`);

      // The chat's session lives in the frame (a partitioned cookie): the conversation is there after a reload.
      await page.reload();
      const again = await openChat(page);
      await expect.poll(() => again.getByText('When is the costume contest?').count(), { timeout: 20_000 }).toBeGreaterThan(0);

      // Closed from its button, focus goes back to the button.
      await page.getByRole('button', { name: 'Close Starfall Concierge' }).click();
      await expect.poll(() => page.getByRole('button', { name: 'Chat with Starfall Concierge' }).evaluate((element) => element === document.activeElement)).toBe(true);
      await screenshot(page, `embed-closed-${viewport}`);
      await context.close();
    });
  }

  it('is refused in a frame on a site that is not listed', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    const refusals: string[] = [];
    page.on('console', (message) => {
      if (/frame-ancestors|Refused to frame/i.test(message.text())) refusals.push(message.text());
    });
    await page.goto(`http://localhost:${unlisted.port}/`);
    await page.getByRole('button', { name: 'Chat with Starfall Concierge' }).click();
    const frame = await (await page.waitForSelector('iframe[title="Starfall Concierge"]')).contentFrame();
    await expect.poll(() => refusals.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(refusals[0]).toContain(`frame-ancestors 'self' http://localhost:${listed.port}`);
    expect(await frame?.locator('textarea').count()).toBe(0);
    await context.close();
  });
});
