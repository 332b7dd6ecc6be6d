import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';

const toast = (page: Page, text: string | RegExp) => page.locator('#notistack-snackbar').filter({ hasText: text }).first();

describe('operator wording: edited on the Config screen, shown in the public chat', () => {
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

  it('shows the shipped fan-made wording until an operator changes it', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await page.goto(`${product.url}/ui/chat`);
    await page.getByText("Hi! I'm Starfall Concierge, your guide to the convention.").waitFor();
    expect(await page.getByRole('button', { name: 'When is the costume contest?' }).count()).toBe(1);
    await page.getByRole('button', { name: 'About this app' }).click();
    await page.getByRole('dialog', { name: 'About Starfall Concierge' }).getByText('Starfall Concierge is an independent, fan-made tool.').waitFor();
    await context.close();
  });

  it('welcome message, example prompts, about text and paused message', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/config`);
    await page.getByRole('heading', { name: 'Bot Config' }).waitFor();

    await page.getByLabel('Welcome message').fill('Welcome to **{product}**, the *official* concierge of Starfall Con.');
    await page.getByLabel('Example prompts').fill('Where is registration?\nWhen does the dealers hall open?');
    await page
      .getByLabel('About text')
      .fill('Run by the **Starfall Con** operations team. [Code of conduct](https://starfall.example.org/coc)\n\n<img src=x onerror="document.title=\'pwned\'">');
    await page.getByLabel('Paused message').fill('{product} is closed for the night. Ask at the **registration desk** in Hall A.');
    await page.getByRole('status').filter({ hasText: '4 unsaved changes' }).waitFor();
    await page.getByLabel('Welcome message').scrollIntoViewIfNeeded();
    await screenshot(page, 'config-wording-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByLabel('Welcome message').scrollIntoViewIfNeeded();
    await screenshot(page, 'config-wording-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: /^Save Changes/ }).click();
    await page.getByRole('dialog', { name: 'Confirm Changes' }).getByRole('button', { name: 'Confirm' }).click();
    await toast(page, 'Updated config').waitFor();

    for (const viewport of ['phone', 'desktop'] as const) {
      const visitor = await newPage(browser, viewport);
      const chat = visitor.page;
      await chat.goto(`${product.url}/ui/chat`);
      const welcome = chat.locator('[data-role="assistant"]').first();
      await welcome.getByText('the official concierge of Starfall Con.', { exact: false }).waitFor();
      expect(await welcome.locator('strong').textContent()).toBe('Starfall Concierge');
      expect(await welcome.locator('em').textContent()).toBe('official');
      expect(await chat.getByRole('button', { name: 'Where is registration?' }).count()).toBe(1);
      expect(await chat.getByRole('button', { name: 'When is the costume contest?' }).count()).toBe(0);
      await screenshot(chat, `chat-wording-${viewport}`);

      await chat.getByRole('button', { name: 'About this app' }).click();
      const about = chat.getByRole('dialog', { name: 'About Starfall Concierge' });
      await about.getByText('operations team.', { exact: false }).waitFor();
      expect(await about.getByRole('link', { name: 'Code of conduct' }).getAttribute('href')).toBe('https://starfall.example.org/coc');
      expect(await about.getByText('fan-made', { exact: false }).count()).toBe(0);
      // Raw HTML in the markdown is dropped, never run.
      expect(await about.locator('img').count()).toBe(0);
      expect(await chat.title()).not.toBe('pwned');
      await screenshot(chat, `chat-about-${viewport}`);
      await about.getByRole('button', { name: 'Got it' }).click();
      await visitor.context.close();
    }

    // Paused: the example prompt is answered with the operator's paused message.
    await page.getByLabel('Paused', { exact: true }).check();
    await page.getByRole('button', { name: /^Save Changes/ }).click();
    await page.getByRole('dialog', { name: 'Confirm Changes' }).getByRole('button', { name: 'Confirm' }).click();
    await toast(page, 'Updated config').waitFor();
    expect(product.server.deps.config.get().paused).toBe(true);

    const visitor = await newPage(browser, 'phone');
    await visitor.page.goto(`${product.url}/ui/chat`);
    const input = visitor.page.getByRole('textbox', { name: 'Your question' });
    await expect.poll(() => input.isEnabled()).toBe(true);
    await visitor.page.getByRole('button', { name: 'Where is registration?' }).click();
    const notice = visitor.page.getByRole('alert').filter({ hasText: 'Starfall Concierge is closed for the night.' });
    await notice.waitFor();
    expect(await notice.locator('strong').textContent()).toBe('registration desk');
    await screenshot(visitor.page, 'chat-paused-phone');
    await visitor.context.close();
    await context.close();
  });
});
