import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeTurnstile, type FakeTurnstile } from '@concierge/server/src/test-support/fake-turnstile.ts';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';
import { serveTurnstileStandIn } from './turnstile-stand-in.ts';

const NOTES = `# Practical information

The lost and found is at the registration desk in the lobby, open 8:00 to 20:00.

The cosplay repair station is in Room 112, with glue guns, safety pins and thread.`;

async function uploadNotes(page: Page, url: string): Promise<void> {
  await signInAs(page, url);
  const reply = await page.request.post(`${url}/api/openai/vector_store/upload`, {
    multipart: { file: { name: 'practical-info.md', mimeType: 'text/markdown', buffer: Buffer.from(NOTES) } },
  });
  expect(reply.status()).toBe(200);
  await page.request.post(`${url}/logout`);
}

const input = (page: Page) => page.getByRole('textbox', { name: 'Your question' });

describe('the public chat on a phone', () => {
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

  it('answers from the uploaded files, takes feedback and keeps the conversation across a reload', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await uploadNotes(page, product.url);
    await page.goto(`${product.url}/ui/chat`);
    await expect.poll(() => input(page).isEnabled()).toBe(true);

    await input(page).fill('Where is the lost and found?');
    await input(page).press('Enter');
    await expect.poll(() => input(page).inputValue()).toBe('');
    const answer = page.locator('[data-role="assistant"][data-status="done"]').filter({ hasText: 'registration desk in the lobby' });
    await answer.waitFor();
    // The source is shown by its title; no file name in the answer.
    expect(await answer.getByTitle('Source: Practical info').count()).toBe(1);
    expect(await answer.getByText('practical-info.md').count()).toBe(0);
    await screenshot(page, 'chat-answer-phone');

    // Shift+Enter adds a line instead of sending.
    await input(page).fill('first line');
    await input(page).press('Shift+Enter');
    await input(page).pressSequentially('second line');
    expect(await input(page).inputValue()).toBe('first line\nsecond line');
    await input(page).fill('');

    await answer.getByRole('button', { name: 'Provide feedback on this response' }).click();
    const dialog = page.getByRole('dialog', { name: 'Provide Feedback' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Submit Feedback' }).click();
    await expect.poll(() => dialog.getByText('Please select a feedback type').isVisible()).toBe(true);
    await dialog.getByText('Other', { exact: true }).click();
    await dialog.getByRole('button', { name: 'Submit Feedback' }).click();
    await expect.poll(() => dialog.getByText("Please provide details for 'Other' feedback").isVisible()).toBe(true);
    await dialog.getByRole('textbox').fill('The desk moved to Hall C this morning.');
    await expect.poll(() => dialog.getByText('38/2000').isVisible()).toBe(true);
    await screenshot(page, 'chat-feedback-phone');
    await dialog.getByRole('button', { name: 'Submit Feedback' }).click();
    await expect.poll(() => dialog.getByText('Thank you for your feedback! It helps us improve our responses.').isVisible()).toBe(true);
    await expect.poll(() => dialog.isVisible(), { timeout: 4000 }).toBe(false);
    await expect.poll(() => answer.getByRole('button', { name: 'Thank you for your feedback!' }).isDisabled()).toBe(true);

    await page.reload();
    await expect.poll(() => page.getByText('registration desk in the lobby').isVisible()).toBe(true);
    expect(await page.locator('[data-role="user"]').filter({ hasText: 'Where is the lost and found?' }).count()).toBe(1);
    await expect.poll(() => page.getByRole('button', { name: 'Thank you for your feedback!' }).isDisabled()).toBe(true);
    await context.close();
  });

  it('answers an example prompt from the bundled schedule', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await page.goto(`${product.url}/ui/`);
    await expect.poll(() => input(page).isEnabled()).toBe(true);
    await page.getByRole('button', { name: 'When is the costume contest?' }).click();
    await page.locator('[data-role="user"]').filter({ hasText: 'When is the costume contest?' }).waitFor();
    // The finished answer (its sources come with the end of the stream).
    const answer = page.locator('[data-role="assistant"][data-status="done"]').filter({ hasText: 'Main Stage' }).last();
    await answer.waitFor();
    expect(await answer.textContent()).toContain('Costume Contest');
    // Events are the sources, by title; the schedule's generated file name is shown nowhere.
    expect(await answer.getByTitle('Source: Costume Contest', { exact: true }).count()).toBe(1);
    expect(await answer.getByText('schedule-').count()).toBe(0);
    await screenshot(page, 'chat-desktop');
    await context.close();
  });

  it('shows SPEC\'s error, restores the text and focuses the box when the service is unavailable', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await page.goto(`${product.url}/ui/chat`);
    await expect.poll(() => input(page).isEnabled()).toBe(true);
    await product.server.deps.config.update({ paused: true });
    try {
      await input(page).fill('Is there a quidditch match?');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByText('The chat service is currently unavailable. Please try again later.').waitFor();
      expect(await input(page).inputValue()).toBe('Is there a quidditch match?');
      await expect.poll(() => input(page).evaluate((element) => element === document.activeElement)).toBe(true);
      await screenshot(page, 'chat-error-phone');
    } finally {
      await product.server.deps.config.update({ paused: false });
    }
    await context.close();
  });
});

describe('the public chat with human verification', () => {
  let product: Product;
  let siteverify: FakeTurnstile;
  let browser: Browser;

  beforeAll(async () => {
    siteverify = await startFakeTurnstile();
    product = await startProduct({
      TURNSTILE_SITE_KEY: '0x4AAAAAAAstand-in-site-key',
      TURNSTILE_SECRET_KEY: '0x4AAAAAAAstand-in-secret',
      TURNSTILE_VERIFY_URL: siteverify.url,
    });
    await product.server.deps.config.update({ public_chat_turnstile_validation_enabled: true });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
    await siteverify?.close();
  });

  it('keeps the chat closed until verification passes, and handles failure and expiry', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await serveTurnstileStandIn(context);
    await page.goto(`${product.url}/ui/chat`);
    const widget = page.getByTestId('turnstile-stand-in');
    await widget.waitFor();
    expect(await widget.textContent()).toContain('dark, retry never');
    expect(await input(page).isDisabled()).toBe(true);

    await widget.getByRole('button', { name: 'Fail verification' }).click();
    await page.getByText('Verification failed. Please try again.').waitFor();
    expect(await page.getByText('Please refresh the page to try again.').count()).toBeGreaterThan(0);
    expect(await input(page).isDisabled()).toBe(true);

    await widget.getByRole('button', { name: 'Pass verification' }).click();
    await expect.poll(() => input(page).isEnabled()).toBe(true);
    expect(siteverify.calls.at(-1)?.response).toMatch(/^stand-in-token-1-/);
    await screenshot(page, 'chat-verified-phone');

    await input(page).fill('hello there');
    await input(page).press('Enter');
    // The answer itself, not the thinking indicator before it.
    await page.locator('[data-role="assistant"][data-status="done"]').nth(1).waitFor();
    await context.close();
  });

  it('asks again when the verification expires', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await serveTurnstileStandIn(context);
    await page.goto(`${product.url}/ui/chat`);
    const widget = page.getByTestId('turnstile-stand-in');
    await widget.getByRole('button', { name: 'Pass verification' }).click();
    await expect.poll(() => input(page).isEnabled()).toBe(true);
    await widget.getByRole('button', { name: 'Expire verification' }).click();
    await page.getByText('Verification expired. Please verify again.').waitFor();
    expect(await input(page).isDisabled()).toBe(true);
    await screenshot(page, 'chat-expired-phone');
    await context.close();
  });
});
