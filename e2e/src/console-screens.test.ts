import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';

const toast = (page: Page, text: string | RegExp) => page.locator('#notistack-snackbar').filter({ hasText: text }).first();

describe('Status, Control Panel and Bot Config', () => {
  let product: Product;
  let browser: Browser;
  let files: string;

  beforeAll(async () => {
    product = await startProduct();
    browser = await launchBrowser();
    files = mkdtempSync(path.join(tmpdir(), 'concierge-upload-'));
    writeFileSync(path.join(files, 'venue-guide.md'), '# Venue guide\n\nThe quiet room is Room 120, open all day.\n');
    writeFileSync(path.join(files, 'map.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
  });

  it('shows the status tables', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/status`);
    await page.getByRole('table', { name: 'General' }).waitFor();
    expect(await page.getByRole('table', { name: 'Crawler' }).getByText('Runs triggered').count()).toBe(1);
    expect(await page.getByRole('table', { name: 'Public chat' }).getByText('Average session duration (minutes)').count()).toBe(1);
    await screenshot(page, 'status-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'status-phone');
    await context.close();
  });

  it('pauses and resumes, follows a 409, and uploads to the vector store', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/commands`);
    const running = page.getByRole('switch');
    await expect.poll(() => running.isEnabled()).toBe(true);
    expect(await running.isChecked()).toBe(true);
    expect(await page.getByText('Running').count()).toBe(1);

    // Someone else paused the bot meanwhile: pausing answers 409 and the switch follows.
    await product.server.deps.status.pause();
    await running.click();
    await toast(page, 'bot already paused').waitFor();
    await expect.poll(() => running.isChecked()).toBe(false);
    await page.getByText('Paused', { exact: true }).waitFor();

    await running.click();
    await toast(page, 'Bot resumed').waitFor();
    expect(product.server.deps.config.get().paused).toBe(false);

    await page.getByRole('button', { name: 'Clear Threads' }).click();
    const confirm = page.getByRole('dialog', { name: 'Confirmation' });
    await confirm.waitFor();
    await screenshot(page, 'commands-confirm-desktop');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Clear Threads' }).click();
    await confirm.getByRole('button', { name: 'Confirm' }).click();
    await toast(page, 'Threads cleared').waitFor();

    await page.getByRole('button', { name: 'Register Discord Commands' }).click();
    await toast(page, 'Error registering commands: Discord is not configured').waitFor();

    const input = page.getByTestId('vector-store-upload-input');
    await input.setInputFiles(path.join(files, 'map.png'));
    await toast(page, /^File type must be/).waitFor();
    await input.setInputFiles(path.join(files, 'venue-guide.md'));
    await toast(page, /^File uploaded successfully: venue-guide\.md/).waitFor();
    await screenshot(page, 'commands-desktop');

    const stored = await product.server.deps.assistant.listFiles();
    expect(stored.map((file) => file.filename)).toContain('venue-guide.md');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'commands-phone');
    await context.close();
  });

  it('lists what the assistant knows, downloads a document and deletes one, at both widths', async () => {
    for (const viewport of ['desktop', 'phone'] as const) {
      const { context, page } = await newPage(browser, viewport);
      await signInAs(page, product.url);
      if (viewport === 'phone') await product.server.deps.knowledge.add({ kind: 'upload', filename: 'venue-guide.md', data: Buffer.from('# Venue guide\n\nThe quiet room is Room 120.\n') });
      await page.goto(`${product.url}/ui/admin/commands`);
      const documents = page.getByRole('list', { name: 'Knowledge documents' }).getByTestId('knowledge-document');
      await expect.poll(() => documents.count()).toBe(2);
      const schedule = documents.filter({ hasText: 'Convention schedule' });
      expect(await schedule.getByText('Ready').count()).toBe(1);
      expect(await schedule.textContent()).toMatch(/schedule-.*\.md · \d+(\.\d)? KB/);
      const guide = documents.filter({ hasText: 'Venue guide' });
      await guide.scrollIntoViewIfNeeded();
      await screenshot(page, `knowledge-${viewport}`);

      const download = page.waitForEvent('download');
      await guide.getByRole('link', { name: 'Download' }).click();
      const file = await download;
      expect(file.suggestedFilename()).toBe('venue-guide.md');

      await guide.getByRole('button', { name: 'Delete' }).click();
      const confirm = page.getByRole('dialog', { name: 'Confirmation' });
      await confirm.getByText('Venue guide').waitFor();
      await confirm.getByRole('button', { name: 'Confirm' }).click();
      await toast(page, 'Deleted Venue guide').waitFor();
      await expect.poll(() => documents.count()).toBe(1);
      expect((await product.server.deps.assistant.listFiles()).map((stored) => stored.filename)).not.toContain('venue-guide.md');
      await context.close();
    }
  });

  it('edits the config: orange borders, the confirm table, save, reload; cancel reverts', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/config`);
    await page.getByRole('heading', { name: 'Bot Config' }).waitFor();
    const save = page.getByRole('button', { name: /^Save Changes/ });
    expect(await save.isDisabled()).toBe(true);

    const perMinute = page.getByLabel('Requests per minute');
    await perMinute.fill('12');
    await expect.poll(() => save.isEnabled()).toBe(true);
    expect(await page.locator('[data-changed="true"]').count()).toBe(1);
    // Back to the original value: no longer a change.
    await perMinute.fill('10');
    await expect.poll(() => save.isDisabled()).toBe(true);

    // last_messages is only editable with that truncation type.
    expect(await page.getByLabel('Truncation last messages').isDisabled()).toBe(true);

    await perMinute.fill('12');
    await page.getByLabel('Custom status').fill('/ask me where the panels are!');
    await page.getByRole('status').filter({ hasText: '2 unsaved changes' }).waitFor();
    await save.click();
    const dialog = page.getByRole('dialog', { name: 'Confirm Changes' });
    await dialog.waitFor();
    const rows = await dialog.locator('tbody tr').allTextContents();
    expect(rows).toEqual(['discord_custom_status/ask me about the con!/ask me where the panels are!', 'public_chat_requests_per_minute1012']);
    await screenshot(page, 'config-confirm-desktop');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await toast(page, 'Updated config').waitFor();
    expect(product.server.deps.config.get().public_chat_requests_per_minute).toBe(12);

    await page.reload();
    await expect.poll(() => page.getByLabel('Requests per minute').inputValue()).toBe('12');

    await page.getByLabel('Requests per minute').fill('30');
    await page.getByRole('button', { name: /^Save Changes/ }).click();
    await page.getByRole('dialog', { name: 'Confirm Changes' }).getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.getByLabel('Requests per minute').inputValue()).toBe('12');
    expect(product.server.deps.config.get().public_chat_requests_per_minute).toBe(12);
    await screenshot(page, 'config-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'config-phone');
    await context.close();
  });
});
