import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';

const rowCount = (page: Page) => page.locator('tbody tr').count();

describe('Crawler Runs and Crawler Events screens', () => {
  let product: Product;
  let browser: Browser;

  beforeAll(async () => {
    product = await startProduct();
    // A second, forced run, so the runs list has more than one row.
    await product.server.deps.crawler.refresh(true);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await product?.close();
  });

  it('lists runs, shows a run\'s details and its events, filters and loads more', async () => {
    const { context, page } = await newPage(browser, 'desktop', { timezoneId: 'Asia/Tokyo', locale: 'en-US' });
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/crawler_runs`);
    await page.getByRole('heading', { name: 'Crawler Runs' }).waitFor();
    await expect.poll(() => rowCount(page)).toBe(2);
    expect(await page.locator('tbody tr').first().getByText('Success').count()).toBe(1);
    await screenshot(page, 'crawler-runs-desktop');

    await page.locator('tbody tr').last().getByRole('button', { name: 'Details' }).click();
    const dialog = page.getByRole('dialog', { name: 'Crawler Run Details' });
    await dialog.waitFor();
    await expect.poll(() => dialog.getByText('Starfall Con', { exact: false }).count()).toBe(0);
    expect(await dialog.getByText('America/Chicago').count()).toBe(1);
    await screenshot(page, 'crawler-run-details-desktop');
    await dialog.getByRole('button', { name: 'View Events' }).click();
    await page.waitForURL(/crawler_events\?crawler_run_id=1$/);
    await page.getByRole('heading', { name: 'Crawler Events — Run #1' }).waitFor();

    await expect.poll(() => rowCount(page)).toBe(25);
    await page.getByRole('button', { name: 'Load More' }).click();
    await expect.poll(() => rowCount(page)).toBe(50);
    await screenshot(page, 'crawler-events-desktop');

    await page.getByLabel('Title').fill('costume');
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await page.waitForURL(/title=costume/);
    expect(page.url()).toContain('crawler_run_id=1');
    await expect.poll(() => page.locator('tbody tr').first().textContent()).toMatch(/costume/i);
    const filtered = await rowCount(page);
    expect(filtered).toBeGreaterThanOrEqual(2);
    expect(filtered).toBeLessThan(25);
    for (const text of await page.locator('tbody tr').allTextContents()) expect(text).toMatch(/costume/i);
    expect(await page.getByRole('button', { name: 'Load More' }).count()).toBe(0);
    await page.locator('tbody tr').filter({ hasText: 'Costume Contest Prejudging' }).getByRole('button', { name: 'Details' }).click();
    const event = page.getByRole('dialog', { name: 'Event Details' });
    await event.waitFor();
    expect(await event.getByText('Room 110').count()).toBe(1);
    // The feed's own "When" and the Start time agree, in the convention's zone on a 24-hour clock, though the
    // browser sits in Tokyo (DESIGN §9 "Times shown to people").
    const when = (await event.locator('dt:text-is("When") + dd').textContent()) ?? '';
    const start = (await event.locator('dt:text-is("Start") + dd').textContent()) ?? '';
    expect(start).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2}, \d\d:\d\d [A-Z]{2,5}$/);
    expect(when).toContain(/\d\d:\d\d/.exec(start)![0]);
    await event.getByRole('button', { name: 'Close' }).click();

    // A reload keeps the filters; Clear Filters keeps the run.
    await page.reload();
    await expect.poll(() => rowCount(page)).toBe(filtered);
    await page.getByRole('button', { name: 'Clear Filters' }).click();
    await expect.poll(() => rowCount(page)).toBe(25);
    expect(page.url()).toMatch(/crawler_events\?crawler_run_id=1$/);

    await page.getByRole('link', { name: 'Back to Crawler Runs' }).click();
    await page.waitForURL(/crawler_runs$/);
    await page.getByLabel('Has Error').click();
    await page.getByRole('option', { name: 'Yes' }).click();
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await page.getByText('Nothing to show').waitFor();
    await context.close();
  });

  it('reads well on a phone', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/crawler_events?track=cosplay`);
    await expect.poll(() => rowCount(page)).toBeGreaterThan(5);
    await screenshot(page, 'crawler-events-phone');
    await page.goto(`${product.url}/ui/admin/crawler_runs`);
    await expect.poll(() => rowCount(page)).toBe(2);
    await screenshot(page, 'crawler-runs-phone');
    await page.locator('tbody tr').first().getByRole('button', { name: 'Details' }).click();
    await page.getByRole('dialog', { name: 'Crawler Run Details' }).waitFor();
    await screenshot(page, 'crawler-run-details-phone');
    await context.close();
  });
});
