import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';

const toast = (page: Page, text: string | RegExp) => page.locator('#notistack-snackbar').filter({ hasText: text }).first();

describe('running it: retention and crawler health on Status, Kill under a supervisor', () => {
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    product = await startProduct();
    browser = await launchBrowser();
    // The product's first clean-up pass runs at start; wait for its record.
    const deadline = Date.now() + 10_000;
    while (!(await product.server.deps.housekeeping.retentionStatus()).last_pass && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
  });

  it('shows the retention and the crawler health; a retention edited on Config shows there', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/status`);
    const retention = page.getByRole('table', { name: 'Retention' });
    await retention.waitFor();
    expect(await retention.getByRole('row', { name: /Chat messages/ }).textContent()).toContain('90 days');
    expect(await retention.getByRole('row', { name: /Client addresses/ }).textContent()).toContain('30 days');
    expect(await retention.getByRole('row', { name: /AI call bodies/ }).textContent()).toContain('30 days');
    expect(await retention.getByRole('row', { name: /Crawler events/ }).textContent()).toContain('last 10 runs');
    expect(await retention.getByRole('row', { name: /It removed/ }).textContent()).toContain('messages');
    const crawler = page.getByRole('table', { name: 'Crawler' });
    expect(await crawler.getByRole('row', { name: /Last success/ }).textContent()).not.toContain('N/A');
    expect(await crawler.getByRole('row', { name: /Failures in a row/ }).textContent()).toContain('0');
    await retention.scrollIntoViewIfNeeded();
    await screenshot(page, 'status-retention-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await retention.scrollIntoViewIfNeeded();
    await screenshot(page, 'status-retention-phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.goto(`${product.url}/ui/admin/config`);
    await page.getByLabel('Keep chat messages (days)').fill('0');
    await page.getByRole('button', { name: /^Save Changes/ }).click();
    await page.getByRole('dialog', { name: 'Confirm Changes' }).getByRole('button', { name: 'Confirm' }).click();
    await toast(page, 'Updated config').waitFor();
    await page.goto(`${product.url}/ui/admin/status`);
    await expect.poll(async () => page.getByRole('table', { name: 'Retention' }).getByRole('row', { name: /Chat messages/ }).textContent()).toContain('kept for ever');
    await context.close();
  });

  it("Kill's confirmation says it restarts under a supervisor", async () => {
    for (const viewport of ['phone', 'desktop'] as const) {
      const { context, page } = await newPage(browser, viewport);
      await signInAs(page, product.url);
      await page.goto(`${product.url}/ui/admin/commands`);
      await page.getByRole('button', { name: 'Kill' }).click();
      const confirm = page.getByRole('dialog', { name: 'Confirmation' });
      await confirm.waitFor();
      const text = await confirm.textContent();
      expect(text).toContain('under a supervisor');
      expect(text).toContain('starts again');
      await screenshot(page, `commands-kill-${viewport}`);
      await confirm.getByRole('button', { name: 'Cancel' }).click();
      await context.close();
    }
  });
});
