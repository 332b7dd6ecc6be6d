import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot, startProduct, type Product } from './support.ts';

describe('first-time setup, sign in and the console shell', () => {
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    product = await startProduct({ PRODUCT_NAME: 'Starfall Concierge', COMMUNITY_URL: 'https://chat.example.org/starfall' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
  });

  it('walks a new operator through setup and sign-in to the console', async () => {
    const { context, page } = await newPage(browser, 'desktop');
    await page.goto(`${product.url}/ui/admin`);
    await page.waitForURL('**/ui/admin/setup');
    await expect.poll(() => page.getByRole('heading', { name: 'First-Time Setup' }).isVisible()).toBe(true);
    await expect.poll(() => page.getByText('Create your admin account to get started.').isVisible()).toBe(true);
    await screenshot(page, 'setup-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'setup-phone');
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.getByLabel('Username').fill('volunteer');
    await page.getByLabel(/^Password/).fill('correct horse battery');
    await page.getByLabel('Confirm Password').fill('correct horse staple');
    await page.getByRole('button', { name: 'Create Admin User' }).click();
    await expect.poll(() => page.getByText("Passwords don't match").isVisible()).toBe(true);

    await page.getByLabel('Confirm Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Create Admin User' }).click();
    await expect.poll(() => page.getByText('Admin user created successfully! You can now log in.').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Go to sign in' }).click();
    await page.waitForURL('**/ui/admin/login');
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
    await screenshot(page, 'login-desktop');

    await page.getByLabel('Username').fill('volunteer');
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign In' }).click();
    await expect.poll(() => page.getByText('Error logging in: Invalid username or password').isVisible()).toBe(true);

    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign In' }).click();
    await page.waitForURL('**/ui/admin/status');
    await expect.poll(() => page.getByRole('button', { name: 'Log out (volunteer)' }).isVisible()).toBe(true);
    for (const group of ['App', 'Public Chat', 'Discord', 'System']) {
      await expect.poll(() => page.getByRole('button', { name: group, exact: true }).isVisible()).toBe(true);
    }
    await expect.poll(() => page.getByRole('heading', { name: 'System Status' }).isVisible()).toBe(true);
    await page.getByRole('button', { name: 'System', exact: true }).click();
    await page.getByRole('menuitem', { name: 'Crawler Events' }).waitFor();
    await page.waitForTimeout(400); // let the menu finish fading in
    await screenshot(page, 'console-menu-desktop');
    await page.getByRole('menuitem', { name: 'Crawler Runs' }).click();
    await page.waitForURL('**/ui/admin/crawler_runs');
    await expect.poll(() => page.getByRole('heading', { name: 'Crawler Runs' }).isVisible()).toBe(true);

    // A reload on a deep link serves the app, not a 404.
    await page.goto(`${product.url}/ui/admin/users`);
    await expect.poll(() => page.getByRole('heading', { name: 'Users List' }).isVisible()).toBe(true);
    // Setup exists only while it is required.
    await page.goto(`${product.url}/ui/admin/setup`);
    await page.waitForURL('**/ui/admin/status');

    await page.getByRole('button', { name: 'Log out (volunteer)' }).click();
    await page.waitForURL('**/ui/admin/login');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'login-phone');
    await page.goto(`${product.url}/ui/admin/status`);
    await page.waitForURL('**/ui/admin/login');
    await context.close();
  });

  it('shows one navigation menu at phone width, and the info dialog', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await page.request.post(`${product.url}/login`, { data: { username: 'volunteer', password: 'correct horse battery' } });
    await page.goto(`${product.url}/ui/admin/status`);
    await expect.poll(() => page.getByRole('button', { name: 'Open navigation' }).isVisible()).toBe(true);
    await page.getByRole('heading', { name: 'System Status' }).waitFor();
    await screenshot(page, 'console-phone');
    expect(await page.getByRole('button', { name: 'System', exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Open navigation' }).click();
    await expect.poll(() => page.getByRole('menuitem', { name: 'Crawler Events' }).isVisible()).toBe(true);
    expect(await page.getByRole('menuitem', { name: 'Log out (volunteer)' }).isVisible()).toBe(true);
    await page.waitForTimeout(400);
    await screenshot(page, 'console-menu-phone');
    await page.getByRole('menuitem', { name: 'Config' }).click();
    await page.waitForURL('**/ui/admin/config');
    await expect.poll(() => page.getByRole('heading', { name: 'Bot Config' }).isVisible()).toBe(true);

    await page.getByRole('button', { name: 'About this app' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.getByText('not endorsed by or affiliated with the convention').isVisible()).toBe(true);
    expect(await dialog.getByRole('link', { name: 'Join the community chat' }).getAttribute('href')).toBe('https://chat.example.org/starfall');
    expect(await dialog.getByRole('link', { name: 'Official convention site' }).count()).toBe(0);
    await page.waitForTimeout(300);
    await screenshot(page, 'info-dialog-phone');
    await dialog.getByRole('button', { name: 'Got it' }).click();
    await expect.poll(() => dialog.isVisible()).toBe(false);
    await context.close();
  });

  it('keeps the navigation off the public chat for visitors, with the product name from the server', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await page.goto(`${product.url}/`);
    await page.waitForURL('**/ui/chat');
    await expect.poll(() => page.getByText('Starfall Concierge').first().isVisible()).toBe(true);
    expect(await page.title()).toBe('Starfall Concierge');
    expect(await page.getByRole('button', { name: 'Open navigation' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /Log out/ }).count()).toBe(0);
    await page.getByText("What's on in Hall B tonight?").waitFor();
    await screenshot(page, 'chat-home-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await screenshot(page, 'chat-home-desktop');
    await context.close();
  });
});
