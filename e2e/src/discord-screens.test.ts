import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord, type FakeUser } from '@concierge/server/src/test-support/fake-discord/fake-discord.ts';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, VIEWPORTS, type Product } from './support.ts';

const rows = (page: Page) => page.locator('tbody tr');
const toast = (page: Page, text: string | RegExp) => page.locator('#notistack-snackbar').filter({ hasText: text }).first();
/** DESIGN §9 "Times shown to people" in the convention's zone (America/Chicago): "Sat 14 Mar, 13:05 CDT". */
const PEOPLE_TIME = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2}, \d\d:\d\d C[SD]T$/;

/**
 * The console's Discord side (SPEC §2 Users, Ask Commands, Discord Messages)
 * against the real server and bot, with a fake Discord playing the attendees.
 * The browser runs in Tokyo: every time must still show in the convention's zone.
 */
describe('the Discord side of the console', () => {
  let discord: FakeDiscord;
  let product: Product;
  let browser: Browser;
  let alice: FakeUser;
  let bob: FakeUser;
  let carol: FakeUser;

  const db = () => product.server.deps.database.db;

  /** Waits (outside a test, where expect.poll cannot) until `read` gives `wanted`. */
  async function until<T>(read: () => Promise<T>, wanted: T, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: T | undefined;
    while (Date.now() < deadline) {
      last = await read();
      if (last === wanted) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`waited ${timeoutMs} ms for ${String(wanted)}, last saw ${String(last)}`);
  }

  const count = async (table: 'ask_commands' | 'discord_messages') =>
    Number((await db().selectFrom(table).select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()).count);

  /** A slash command from the fake Discord, waited on until the bot has answered it. */
  async function ask(user: FakeUser, question: string, command = 'ask') {
    const before = await count('ask_commands');
    discord.slashCommand({ command, options: { question }, user });
    await until(async () => {
      if ((await count('ask_commands')) <= before) return 'not yet';
      return (await db().selectFrom('ask_commands').select('state').orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow()).state;
    }, 'completed');
  }

  beforeAll(async () => {
    discord = await startFakeDiscord();
    product = await startProduct({
      DISCORD_TOKEN: discord.token,
      DISCORD_APPLICATION_ID: discord.applicationId,
      DISCORD_API_URL: discord.apiUrl,
      CONVENTION_TIMEZONE: 'America/Chicago',
    });
    await discord.waitForReady(15_000);
    await product.server.deps.config.update({ assistant_poll_interval: '100ms', user_ask_command_limit_6h: 50 });
    alice = discord.user('alice', { globalName: 'Alice Aardvark' });
    bob = discord.user('bob', { globalName: 'Bob Badger' });
    carol = discord.user('carol', { globalName: null });

    // Real questions through the bot: two /ask and a /whisper from alice, one from bob.
    await ask(alice, 'When is the costume contest?');
    await ask(alice, 'Where is lost and found? I left my badge somewhere near the main stage yesterday evening', 'whisper');
    await ask(bob, 'Is there a cosplay repair station?');
    await ask(alice, 'What is on in Hall B tonight?');
    // Older commands of alice's, 7 hours ago and before (in her 24 h window, out of the 6 h one), for the history's
    // second page and the list's Load More; the newest of them failed without an answer.
    const base = Date.now() - 7 * 3_600_000;
    for (let i = 0; i < 24; i++) {
      const at = new Date(base - i * 60_000).toISOString();
      await db()
        .insertInto('ask_commands')
        .values({
          user_id: alice.id,
          prompt: `Earlier question number ${i + 1}`,
          type: 'ask',
          step: 'list_message',
          state: i === 0 ? 'failed' : 'completed',
          error: i === 0 ? 'OpenAI 500 error: The server had an error' : null,
          response: i === 0 ? null : `Earlier answer ${i + 1}`,
          run_status: i === 0 ? 'failed' : 'completed',
          total_tokens: i === 0 ? 0 : 10,
          created_at: at,
          updated_at: at,
        })
        .execute();
    }
    // Messages to the bot: carol mentions it 26 times, bob once.
    for (let i = 0; i < 26; i++) discord.post({ user: carol, content: `hey bot, message ${i + 1} — is the dealers' room open late on Saturday night?`, mentionBot: true });
    discord.post({ user: bob, content: 'are you a robot?', mentionBot: true });
    await until(() => count('discord_messages'), 27);
    // Many more users, seen by the bot (the Users page's paging).
    for (let i = 1; i <= 60; i++) {
      await product.server.deps.users.seen({ id: String(300000000000000000n + BigInt(i)), username: `user${String(i).padStart(2, '0')}`, global_name: `User ${i}` });
    }
    browser = await launchBrowser();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await product?.close();
    await discord?.close();
  });

  /** A signed-in page whose browser sits in Tokyo, far from the convention. */
  async function consolePage(viewport: keyof typeof VIEWPORTS): Promise<{ context: BrowserContext; page: Page }> {
    const opened = await newPage(browser, viewport, { timezoneId: 'Asia/Tokyo', locale: 'en-US' });
    await signInAs(opened.page, product.url);
    return opened;
  }

  it('Users: sorted by username both ways, 25/50/100 a page with the true total, stats and flags', async () => {
    const { context, page } = await consolePage('desktop');
    await page.goto(`${product.url}/ui/admin/users`);
    await page.getByRole('heading', { name: 'Users List' }).waitFor();
    await expect.poll(() => rows(page).count()).toBe(25);
    expect(await rows(page).first().getByRole('cell').first().textContent()).toBe('alice');
    await page.getByText('1–25 of 63').waitFor();

    const aliceRow = rows(page).filter({ hasText: 'Alice Aardvark' });
    const cells = await aliceRow.getByRole('cell').allTextContents();
    // Username, Global Name, User ID, Priority, Donated, Ignored, Billable 6h / Limit, Attempted 6h, Limit 6h, Billable 24h / Limit, Attempted 24h, Limit 24h, Edit
    expect(cells.slice(0, 12)).toEqual(['alice', 'Alice Aardvark', alice.id, 'No', 'No', 'No', '3 / 50', '3', '50', '26 / 200', '27', '200']);
    await screenshot(page, 'users-desktop');

    await page.getByRole('button', { name: 'Username' }).click();
    await page.waitForURL(/order=desc/);
    await expect.poll(() => rows(page).first().getByRole('cell').first().textContent()).toBe('user60');

    await page.getByRole('combobox', { name: /Rows per page/ }).click();
    await page.getByRole('option', { name: '50' }).click();
    await expect.poll(() => rows(page).count()).toBe(50);
    await page.getByText('1–50 of 63').waitFor();
    await page.getByRole('button', { name: 'Go to next page' }).click();
    await expect.poll(() => rows(page).count()).toBe(13);
    await page.getByText('51–63 of 63').waitFor();
    expect(await rows(page).last().getByRole('cell').first().textContent()).toBe('alice');
    // The URL keeps the page: a reload shows the same one.
    await page.reload();
    await expect.poll(() => rows(page).count()).toBe(13);

    await page.setViewportSize(VIEWPORTS.phone);
    await page.goto(`${product.url}/ui/admin/users`);
    await expect.poll(() => rows(page).count()).toBe(25);
    await screenshot(page, 'users-phone');
    // The table's head folds away on a phone; the sort is a button above the list.
    await page.getByRole('button', { name: /Sort by username/ }).click();
    await expect.poll(() => rows(page).first().getByRole('cell').first().textContent()).toBe('user60');
    await page.getByText('1–25 of 63').scrollIntoViewIfNeeded();
    await screenshot(page, 'users-phone-pages');
    await context.close();
  });

  it('Users: the history dialog, 20 a page, with every field and times in the convention zone', async () => {
    const { context, page } = await consolePage('desktop');
    await page.goto(`${product.url}/ui/admin/users`);
    await page.getByRole('button', { name: 'History of alice' }).click();
    const dialog = page.getByRole('dialog', { name: /History of alice/ });
    await dialog.waitFor();
    const items = dialog.getByRole('article');
    await expect.poll(() => items.count()).toBe(20);
    const newest = items.first();
    for (const label of ['Prompt', 'Response', 'Error', 'Created', 'State', 'Step', 'Run Status', 'Run ID', 'Thread ID', 'Interaction ID', 'Context', 'Whisper', 'Feedback']) {
      expect(await newest.getByText(label, { exact: true }).count(), label).toBe(1);
    }
    expect(await newest.textContent()).toContain('What is on in Hall B tonight?');
    const whisper = items.filter({ hasText: 'Where is lost and found?' });
    expect(await whisper.locator('dt:text-is("Whisper") + dd').textContent()).toBe('yes');
    expect(await newest.locator('dt:text-is("Whisper") + dd').textContent()).toBe('no');
    expect(await newest.locator('dt:text-is("Context") + dd').textContent()).toBe('guild');
    const created = await newest.locator('dt:text-is("Created") + dd').textContent();
    expect(created).toMatch(PEOPLE_TIME);
    const failed = items.filter({ has: page.getByText('Earlier question number 1', { exact: true }) });
    expect(await failed.locator('dt:text-is("Response") + dd').textContent()).toBe('N/A');
    expect(await failed.locator('dt:text-is("State") + dd').textContent()).toBe('failed');
    const error = failed.getByText('OpenAI 500 error: The server had an error');
    expect(await error.evaluate((element) => getComputedStyle(element).color)).toBe('rgb(211, 47, 47)');
    await screenshot(page, 'users-history-desktop');

    await dialog.getByRole('button', { name: 'Older' }).click();
    await expect.poll(() => items.count()).toBe(7);
    expect(await items.last().textContent()).toContain('Earlier question number 24');
    expect(await dialog.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await page.setViewportSize(VIEWPORTS.phone);
    await screenshot(page, 'users-history-phone');
    await context.close();
  });

  it('Users: the edit dialog validates, marks changes orange, sends only them and updates the row', async () => {
    const { context, page } = await consolePage('desktop');
    await page.goto(`${product.url}/ui/admin/users`);
    await page.getByRole('button', { name: 'Edit bob' }).click();
    const dialog = page.getByRole('dialog', { name: `Edit user ${bob.id}` });
    await dialog.waitFor();
    expect(await dialog.getByLabel('Username').getAttribute('readonly')).not.toBeNull();
    expect(await dialog.getByLabel('Global Name').inputValue()).toBe('Bob Badger');
    expect(await dialog.getByLabel('Global Name').getAttribute('readonly')).not.toBeNull();
    const save = dialog.getByRole('button', { name: 'Save' });
    expect(await save.isDisabled()).toBe(true);

    const limit6h = dialog.getByLabel('Request limit 6h');
    await limit6h.fill('0');
    await dialog.getByText('Must be at least 1').waitFor();
    expect(await save.isDisabled()).toBe(true);
    await limit6h.fill('2.5');
    await dialog.getByText('Must be a whole number').waitFor();
    await limit6h.fill('3');
    await dialog.getByLabel('Request limit 24h').fill('2');
    await dialog.getByText('Must not be below the 6h limit').waitFor();
    await dialog.getByLabel('Request limit 24h').fill('');
    await dialog.getByLabel('Truncation strategy').click();
    await page.getByRole('option', { name: 'auto', exact: true }).click();
    expect(await dialog.getByLabel('Truncation last messages').isDisabled()).toBe(true);
    await dialog.getByLabel('Priority').check();
    // Changed fields are orange; unchanged ones are not.
    const border = (label: string) => dialog.getByLabel(label).locator('xpath=following-sibling::fieldset').evaluate((element) => getComputedStyle(element).borderColor);
    expect(await border('Request limit 6h')).toBe('rgb(237, 108, 2)');
    expect(await border('Max completion tokens')).not.toBe('rgb(237, 108, 2)');
    await screenshot(page, 'users-edit-desktop');

    const patches: Request[] = [];
    page.on('request', (request) => {
      if (request.method() === 'PATCH') patches.push(request);
    });
    await save.click();
    await toast(page, `Updated user ${bob.id}`).waitFor();
    expect(patches.map((request) => request.postDataJSON())).toEqual([{ priority: true, request_limit_6h: 3, openai_truncation_strategy_type: 'auto' }]);
    await dialog.waitFor({ state: 'detached' });
    const cells = await rows(page).filter({ hasText: 'Bob Badger' }).getByRole('cell').allTextContents();
    expect(cells.slice(3, 12)).toEqual(['Yes', 'No', 'No', '1 / 3', '1', '3', '1 / 12', '1', '12']);
    expect(await product.server.deps.users.get(bob.id)).toMatchObject({ priority: true, request_limit_6h: 3, request_limit_24h: null, openai_truncation_strategy_type: 'auto' });

    // The server's refusal comes back as its error (a poll interval it cannot read).
    await page.getByRole('button', { name: 'Edit bob' }).click();
    await dialog.getByLabel('Poll interval', { exact: true }).fill('soon');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await toast(page, /assistant_poll_interval/).waitFor();
    await page.setViewportSize(VIEWPORTS.phone);
    await screenshot(page, 'users-edit-phone');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await product.server.deps.users.get(bob.id)).assistant_poll_interval).toBeNull();

    await page.setViewportSize(VIEWPORTS.desktop);
    await page.getByRole('button', { name: 'Reload Users' }).click();
    await toast(page, 'Reloaded users').waitFor();
    await context.close();
  });

  it('Ask Commands: 50-character cuts with the whole text on hover, filters, Load More and details', async () => {
    const { context, page } = await consolePage('desktop');
    await page.goto(`${product.url}/ui/admin/ask_commands`);
    await expect.poll(() => rows(page).count()).toBe(25);
    await page.getByRole('button', { name: 'Load More' }).click();
    await expect.poll(() => rows(page).count()).toBe(28);
    expect(await page.getByRole('button', { name: 'Load More' }).count()).toBe(0);

    const whisperRow = rows(page).filter({ hasText: 'Where is lost and found?' });
    const cut = whisperRow.getByText('Where is lost and found? I left my badge somewhere…', { exact: true });
    await cut.hover();
    await page.getByRole('tooltip').filter({ hasText: 'near the main stage yesterday evening' }).waitFor();
    expect(await rows(page).filter({ hasText: 'Earlier question number 1' }).filter({ hasText: 'failed' }).getByText('N/A').count()).toBe(1);
    await screenshot(page, 'ask-commands-desktop');

    // Filters: whisper only, then one user's failed commands.
    await page.getByLabel('Whisper').click();
    await page.getByRole('option', { name: 'Yes' }).click();
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await page.waitForURL(/whisper=true/);
    await expect.poll(() => rows(page).count()).toBe(1);
    await page.getByRole('button', { name: 'Clear Filters' }).click();
    await expect.poll(() => rows(page).count()).toBe(25);
    await page.getByLabel('User ID').fill(bob.id);
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(await rows(page).first().textContent()).toContain('Is there a cosplay repair station?');
    await page.getByRole('button', { name: 'Clear Filters' }).click();
    await page.getByLabel('State').click();
    await page.getByRole('option', { name: 'failed' }).click();
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await expect.poll(() => rows(page).count()).toBe(1);
    // Dates are read in the convention's zone: everything from an hour ago on is the four real questions.
    const hourAgo = new Intl.DateTimeFormat('sv-SE', { timeZone: 'America/Chicago', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' })
      .format(new Date(Date.now() - 3_600_000))
      .replace(' ', 'T');
    // Typed the moment Clear Filters is pressed, before the router has moved to the cleared URL (as on a busy
    // phone): the date typed stays and is what Apply sends.
    const clearButton = await page.getByRole('button', { name: 'Clear Filters' }).elementHandle();
    const dateFrom = await page.getByLabel('Date From').elementHandle();
    await page.evaluate(
      ([button, input, value]) => {
        (button as HTMLButtonElement).click();
        Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, value);
        (input as HTMLInputElement).dispatchEvent(new Event('input', { bubbles: true }));
      },
      [clearButton, dateFrom, hourAgo] as const,
    );
    await expect.poll(() => rows(page).count()).toBe(25);
    expect(await page.getByLabel('Date From').inputValue()).toBe(hourAgo);
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await expect.poll(() => rows(page).count()).toBe(4);
    // Back and Forward bring each URL's filters back into the form along with its list.
    await page.goBack();
    await expect.poll(() => rows(page).count()).toBe(25);
    await expect.poll(() => page.getByLabel('Date From').inputValue()).toBe('');
    await page.goForward();
    await expect.poll(() => rows(page).count()).toBe(4);
    await expect.poll(() => page.getByLabel('Date From').inputValue()).toBe(hourAgo);
    await page.getByLabel('Order').click();
    await page.getByRole('option', { name: 'Oldest First' }).click();
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await expect.poll(() => rows(page).first().textContent()).toContain('When is the costume contest?');

    await rows(page).first().getByRole('button', { name: 'View Details' }).click();
    const details = page.getByRole('dialog', { name: 'Ask Command Details' });
    await details.waitFor();
    const value = (label: string) => details.locator(`dt:text-is("${label}") + dd`).textContent();
    expect(await value('State')).toBe('completed');
    expect(await value('Whisper')).toBe('no');
    expect(await value('User')).toBe('alice (Alice Aardvark)');
    expect(await value('Prompt')).toBe('When is the costume contest?');
    for (const label of ['Started', 'Finished', 'Created', 'Updated', 'Token Expires']) expect(await value(label), label).toMatch(PEOPLE_TIME);
    // The same instant reads the same in the history dialog's Created and here.
    const createdIso = await details.locator('dt:text-is("Created") + dd time').getAttribute('datetime');
    expect(createdIso).toMatch(/^\d{4}-\d\d-\d\dT/);
    await screenshot(page, 'ask-command-details-desktop');
    await page.setViewportSize(VIEWPORTS.phone);
    await screenshot(page, 'ask-command-details-phone');
    await details.getByRole('button', { name: 'Close' }).click();
    await screenshot(page, 'ask-commands-phone');
    await context.close();
  });

  it('Discord Messages: Load More, a user filter and the message details', async () => {
    const { context, page } = await consolePage('phone');
    await page.goto(`${product.url}/ui/admin/discord_messages`);
    await expect.poll(() => rows(page).count()).toBe(25);
    await page.getByRole('button', { name: 'Load More' }).click();
    await expect.poll(() => rows(page).count()).toBe(27);
    expect(await page.getByRole('button', { name: 'Load More' }).count()).toBe(0);
    await screenshot(page, 'discord-messages-phone');

    await page.getByRole('button', { name: 'Filters' }).click();
    await page.getByLabel('User ID').fill(bob.id);
    await page.getByRole('button', { name: 'Apply Filters' }).click();
    await expect.poll(() => rows(page).count()).toBe(1);
    await rows(page).first().getByRole('button', { name: 'View Details' }).click();
    const details = page.getByRole('dialog', { name: 'Message Details' });
    await details.waitFor();
    const value = (label: string) => details.locator(`dt:text-is("${label}") + dd`).textContent();
    expect(await value('Username')).toBe('bob');
    expect(await value('User ID')).toBe(bob.id);
    expect(await value('Content')).toContain('are you a robot?');
    expect(await value('Created')).toMatch(PEOPLE_TIME);
    await screenshot(page, 'discord-message-details-phone');
    await page.setViewportSize(VIEWPORTS.desktop);
    await screenshot(page, 'discord-message-details-desktop');
    await details.getByRole('button', { name: 'Close' }).click();
    await page.getByRole('button', { name: 'Clear Filters' }).click();
    await expect.poll(() => rows(page).count()).toBe(25);
    await screenshot(page, 'discord-messages-desktop');
    await context.close();
  });

  it('Control panel: Reload Users reaches the server; Status shows the users seen and the Discord figures', async () => {
    const { context, page } = await consolePage('desktop');
    const reloads: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/api/users/reload')) reloads.push(request.url());
    });
    await page.goto(`${product.url}/ui/admin/commands`);
    await page.getByRole('button', { name: 'Reload Users' }).click();
    await toast(page, 'Reloaded users').waitFor();
    expect(reloads).toHaveLength(1);

    await page.goto(`${product.url}/ui/admin/status`);
    const general = page.getByRole('table', { name: 'General' });
    await general.waitFor();
    expect(await general.getByRole('row', { name: /Users seen/ }).getByRole('cell').last().textContent()).toBe('63');
    const discordTable = page.getByRole('table', { name: 'Discord' });
    // Four slash commands and 27 messages to the bot.
    expect(Number(await discordTable.getByRole('row', { name: /Messages handled/ }).getByRole('cell').last().textContent())).toBeGreaterThanOrEqual(31);
    expect(await discordTable.getByRole('row', { name: /Connected since/ }).getByRole('cell').last().textContent()).toMatch(PEOPLE_TIME);
    await context.close();
  });
});
