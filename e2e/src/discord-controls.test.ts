import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '@concierge/server/src/test-support/fake-discord/fake-discord.ts';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';

const toast = (page: Page, text: string | RegExp) => page.locator('#notistack-snackbar').filter({ hasText: text }).first();

/** The console's Discord controls against the real bot, connected to a fake Discord. */
describe('Discord from the console', () => {
  let discord: FakeDiscord;
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    discord = await startFakeDiscord();
    product = await startProduct({ DISCORD_TOKEN: discord.token, DISCORD_APPLICATION_ID: discord.applicationId, DISCORD_API_URL: discord.apiUrl });
    await discord.waitForReady(15_000);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
    await discord?.close();
  });

  it('registers the commands, disconnects and connects the bot, and Status shows the gateway and why it is down', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/commands`);

    discord.commands = [];
    await page.getByRole('button', { name: 'Register Discord Commands' }).click();
    await toast(page, 'Commands registered').waitFor();
    expect(discord.commands.map((command) => command.name)).toEqual(['ask', 'whisper', 'forget']);

    await page.getByRole('button', { name: 'Disconnect Discord' }).click();
    const confirm = page.getByRole('dialog', { name: 'Confirmation' });
    await confirm.getByRole('button', { name: 'Confirm' }).click();
    await toast(page, 'Discord disconnected').waitFor();
    expect(discord.connected).toBe(0);
    await screenshot(page, 'commands-discord-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'commands-discord-phone');

    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${product.url}/ui/admin/status`);
    const table = page.getByRole('table', { name: 'Discord' });
    await table.waitFor();
    expect(await table.getByTestId('discord-gateway').textContent()).toBe('Not connected');
    expect(await table.getByText('Disconnected from the console: press Connect on the Commands screen to connect again.').count()).toBe(1);
    await screenshot(page, 'status-discord-off-desktop');

    await page.goto(`${product.url}/ui/admin/commands`);
    await page.getByRole('button', { name: 'Connect Discord', exact: true }).click();
    await toast(page, 'Discord connected').waitFor();
    expect(discord.connected).toBe(1);
    await page.goto(`${product.url}/ui/admin/status`);
    await expect.poll(() => table.getByTestId('discord-gateway').textContent()).toBe('Connected');
    expect(await table.getByRole('row', { name: /Connects/ }).textContent()).toContain('2');
    await screenshot(page, 'status-discord-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await table.scrollIntoViewIfNeeded();
    await screenshot(page, 'status-discord-phone');
    await context.close();
  });

  it('edits the channels the bot answers in on the Config screen, under Discord', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/config`);
    const field = page.getByLabel('Allowed channel IDs');
    await field.waitFor();
    await field.fill(`${discord.channels.lounge.id}\n${discord.channels.general.id}`);
    await page.getByRole('button', { name: /^Save Changes/ }).click();
    await page.getByRole('dialog', { name: 'Confirm Changes' }).getByRole('button', { name: 'Confirm' }).click();
    await toast(page, 'Updated config').waitFor();
    expect(product.server.deps.config.get().discord_allowed_channel_ids).toBe(`${discord.channels.lounge.id}, ${discord.channels.general.id}`);
    await expect.poll(() => field.inputValue()).toBe(`${discord.channels.lounge.id}, ${discord.channels.general.id}`);
    await field.scrollIntoViewIfNeeded();
    await screenshot(page, 'config-discord-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await field.scrollIntoViewIfNeeded();
    await screenshot(page, 'config-discord-phone');
    await context.close();
  });
});
