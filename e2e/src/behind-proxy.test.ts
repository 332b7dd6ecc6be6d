import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startForwardingProxy, type ForwardingProxy } from '@concierge/server/src/test-support/forwarding-proxy.ts';
import { launchBrowser, newPage, screenshot, startProduct, type Product } from './support.ts';

describe('the public chat and sign-in behind a reverse proxy on a non-default port', () => {
  let product: Product;
  let browser: Browser;
  const proxies: ForwardingProxy[] = [];

  beforeAll(async () => {
    product = await startProduct({ TRUST_PROXY: '1' });
    browser = await launchBrowser();
    // First-time setup straight to the product, so sign-in can be tried through the proxies.
    const setup = await fetch(`${product.url}/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'volunteer', password: 'correct horse battery', confirm_password: 'correct horse battery' }),
    });
    expect(setup.status).toBe(200);
  });
  afterAll(async () => {
    for (const proxy of proxies) await proxy.close();
    await browser?.close();
    await product?.close();
  });

  const proxy = async (hostHeader: 'http_host' | 'host') => {
    const started = await startForwardingProxy({ target: product.url, hostHeader });
    proxies.push(started);
    return started;
  };

  it('a proxy that drops the port from Host: the chat and the sign-in say which origin was refused', async () => {
    const dropsPort = await proxy('host');
    const { context, page } = await newPage(browser, 'phone');
    await page.goto(`${dropsPort.url}/ui/chat`);
    const refusal = page.getByRole('alert').filter({ hasText: `comes from ${dropsPort.url}` });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('proxy_set_header Host $http_host');
    expect(await page.getByText('Verification failed').count()).toBe(0);
    await screenshot(page, 'chat-proxy-refused-phone');

    await page.goto(`${dropsPort.url}/ui/admin/login`);
    await page.getByLabel('Username').fill('volunteer');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign In' }).click();
    await page.locator('#notistack-snackbar').filter({ hasText: `Error logging in: Request refused: it comes from ${dropsPort.url}` }).waitFor();
    await context.close();
  });

  it('a proxy that forwards Host with its port ($http_host): the chat answers and sign-in works', async () => {
    const keepsPort = await proxy('http_host');
    const { context, page } = await newPage(browser, 'desktop');
    await page.goto(`${keepsPort.url}/ui/chat`);
    const input = page.getByRole('textbox', { name: 'Your question' });
    await expect.poll(() => input.isEnabled()).toBe(true);
    await input.fill('When is the costume contest?');
    await input.press('Enter');
    // The answer itself, not the thinking indicator before it.
    await page.locator('[data-role="assistant"][data-status="done"]').nth(1).waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);

    await page.goto(`${keepsPort.url}/ui/admin/login`);
    await page.getByLabel('Username').fill('volunteer');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign In' }).click();
    await page.waitForURL(/\/ui\/admin\/status$/);
    await context.close();
  });
});
