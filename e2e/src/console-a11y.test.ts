import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './axe.ts';
import { launchBrowser, screenshot, signInAs, startProduct, VIEWPORTS, type Product } from './support.ts';

describe("the console's Config screen, light and dark", () => {
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    product = await startProduct();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
  });

  for (const scheme of ['light', 'dark'] as const) {
    it(`follows the device's ${scheme} scheme and has no axe violations at 390 and 1280 px`, async () => {
      for (const viewport of ['phone', 'desktop'] as const) {
        // axe is injected as an inline script, which the product's CSP refuses.
        const context = await browser.newContext({ viewport: VIEWPORTS[viewport], deviceScaleFactor: 1, colorScheme: scheme, bypassCSP: true });
        const page = await context.newPage();
        await signInAs(page, product.url);
        await page.goto(`${product.url}/ui/admin/config`);
        await page.getByRole('heading', { name: 'Bot Config' }).waitFor();
        await page.getByLabel('Welcome message').waitFor();
        const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        const channels = background.match(/\d+/g)!.slice(0, 3).map(Number);
        const luminance = channels.reduce((sum, channel) => sum + channel, 0) / 3;
        if (scheme === 'dark') expect(luminance).toBeLessThan(60);
        else expect(luminance).toBeGreaterThan(200);
        expect(await axeViolations(page)).toEqual([]);
        await screenshot(page, `config-${scheme}-${viewport}`);
        await context.close();
      }
    });
  }
});
