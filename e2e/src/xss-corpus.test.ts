import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';
import { startFixtureServer, type FixtureServer } from '@concierge/server/src/test-support/fixture-server.ts';
import { launchBrowser, newPage, screenshot, signInAs, startProduct, type Product } from './support.ts';

/**
 * Hostile text everywhere the product shows stored or run-time values
 * (issue 18): answers, questions, feedback, user agents, Discord names,
 * file names, schedule events, configuration and the run-time values in
 * index.html carry a corpus of markup and script payloads. Every screen
 * shows them as text: no dialog opens, no element has an `on*` attribute,
 * no link or source is a live `javascript:` URL, no script but the app's own.
 */
const PAYLOADS = [
  `<script>alert('xss-script')</script>`,
  `<img src=x onerror=alert('xss-img')>`,
  `<svg onload=alert('xss-svg')></svg>`,
  `<a href="javascript:alert('xss-a')">a link</a>`,
  `[markdown link](javascript:alert('xss-md'))`,
  `![markdown image](javascript:alert('xss-mdimg'))`,
  `[data link](data:text/html,<script>alert('xss-data')</script>)`,
  `"><img src=x onerror=alert('xss-break')>`,
  `' onmouseover='alert("xss-attr")' x='`,
  `<iframe src="javascript:alert('xss-iframe')"></iframe>`,
  `<details open ontoggle=alert('xss-details')>`,
  `<style>*{display:none}</style>`,
  `javascript:alert('xss-bare')`,
  `\u202egnp.exe\u202c <b>bold?</b> مرحبا`,
  `{{constructor.constructor('alert(1)')()}}`,
];
/** All of them in one text (one field of a record). */
const CORPUS = PAYLOADS.join('\n\n');
/** A fragment every rendering of the corpus shows as text when it is escaped (not in the product name, which every screen shows). */
const SHOWN_AS_TEXT = /onerror=alert\('xss-/;

/** The console screens that show stored values, table-driven: a screen another engineer adds is one line here. */
interface Screen {
  path: string;
  /** A button on the first row that opens its details or history dialog (accessible name). */
  open?: RegExp;
  /** A button that shows more on the page itself (no dialog). */
  reveal?: RegExp;
  /** Where the corpus must be visible as text: the list, the dialog, or the form's fields; absent: nowhere in particular. */
  shows?: 'list' | 'dialog' | 'fields';
}
const SCREENS: Screen[] = [
  { path: 'status' },
  { path: 'commands', reveal: /^Vector Stores$/, shows: 'list' }, // the Knowledge section lists file names
  { path: 'config', shows: 'fields' },
  { path: 'users', open: /^History of /, shows: 'list' },
  { path: 'ask_commands', open: /^View Details$/, shows: 'dialog' },
  { path: 'discord_messages', open: /^View Details$/, shows: 'dialog' },
  { path: 'watch' },
  { path: 'public_chat_messages', open: /^View Details$/, shows: 'dialog' },
  { path: 'public_chat_sessions', open: /^View Details$/, shows: 'dialog' },
  { path: 'public_chat_rate_limits', open: /^View Details$/ },
  { path: 'public_chat_openai_create_thread', open: /^View Details$/ },
  { path: 'public_chat_openai_create_message', open: /^View Details$/, shows: 'dialog' },
  { path: 'public_chat_openai_create_run', open: /^View Details$/ },
  { path: 'public_chat_openai_retrieve_run', open: /^View Details$/ },
  { path: 'public_chat_openai_list_messages', open: /^View Details$/, shows: 'dialog' },
  { path: 'crawler_runs', open: /^Details$/ },
  { path: 'crawler_events', open: /^Details$/, shows: 'dialog' },
];

/** What a payload would leave in the DOM had it been parsed as markup. */
function liveMarkup(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    for (const element of document.querySelectorAll('*')) {
      for (const attribute of element.attributes) {
        if (/^on/i.test(attribute.name)) problems.push(`<${element.tagName.toLowerCase()} ${attribute.name}="${attribute.value.slice(0, 60)}">`);
        if (/^(href|src|action|formaction|xlink:href|data|srcdoc)$/i.test(attribute.name) && /^\s*(javascript|vbscript|data:text\/html)/i.test(attribute.value)) {
          problems.push(`<${element.tagName.toLowerCase()} ${attribute.name}="${attribute.value.slice(0, 60)}">`);
        }
      }
      if (element instanceof HTMLScriptElement && element.type !== 'application/json' && !(element.src && new URL(element.src).origin === location.origin)) {
        problems.push(`<script> ${element.textContent?.slice(0, 60)}`);
      }
      if (element instanceof HTMLImageElement && element.getAttribute('src') === 'x') problems.push('<img src=x>');
      if (element.tagName === 'IFRAME' || element.tagName === 'DETAILS') problems.push(`<${element.tagName.toLowerCase()}>`);
    }
    return problems;
  });
}

describe('a corpus of XSS payloads in every screen', () => {
  let fake: FakeOpenAI;
  let feed: FixtureServer;
  let product: Product;
  let browser: Browser;
  const dialogs: string[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI({ knobs: { runDurationMs: 20, answer: () => `Here you go:\n\n${CORPUS}` } });
    feed = await startFixtureServer();
    const event = (id: string, start: string) => ({ id, title: `${PAYLOADS[1]} ${PAYLOADS[0]}`, start, end: start.replace('T10', 'T11'), location: PAYLOADS[7], track: PAYLOADS[2], speakers: [PAYLOADS[3], PAYLOADS[13]], description: CORPUS });
    feed.route('/feed', { body: JSON.stringify({ name: PAYLOADS[0], timezone: 'UTC', events: [event('x1', '2026-03-13T10:00'), event('x2', '2026-03-14T10:00')] }), contentType: 'application/json' });
    product = await startProduct({
      OPENAI_API_KEY: fake.apiKey,
      OPENAI_BASE_URL: fake.url,
      CRAWLER_URL: `${feed.url}/feed`,
      CONVENTION_TIMEZONE: 'UTC',
      PRODUCT_NAME: `</title><script>alert('xss-name')</script>`,
      COMMUNITY_URL: `https://chat.example.org/"><svg/onload=alert('xss-url')>`,
    });
    browser = await launchBrowser();

    // A file whose name is a payload, stored as one uploaded before upload names were cleaned would be.
    await product.server.deps.knowledge.add({ kind: 'upload', filename: `${PAYLOADS[1]}.md`, data: Buffer.from('Badges are at the desk.') }, { clientIp: null });
    const { page, context } = await newPage(browser);
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await signInAs(page, product.url);

    // Wording an operator typed, shown on the chat page.
    const patched = await page.request.patch(`${product.url}/api/config`, { data: { public_chat_welcome_message: `Welcome! ${CORPUS}`, public_chat_about_text: CORPUS, public_chat_example_prompts: PAYLOADS.slice(0, 4).join('\n') } });
    expect(patched.status(), await patched.text()).toBe(200);

    // A Discord user with a hostile name asks a hostile question; the bot's record of a message carries it too.
    const user = { id: '123456789012345678', username: PAYLOADS[1]!.slice(0, 32), global_name: PAYLOADS[7]! };
    await product.server.deps.askCommands.submit({ user, prompt: CORPUS, whisper: false, type: 'ask' });
    const now = new Date().toISOString();
    await product.server.deps.database.db
      .insertInto('discord_messages')
      .values({ message_id: '998877665544332211', content: CORPUS, channel_id: '1', guild_id: '2', user_id: user.id, username: user.username, global_name: user.global_name, payload: JSON.stringify({ content: CORPUS }), created_at: now, updated_at: now })
      .execute();
    await context.close();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await product?.close();
    await feed?.close();
    await fake?.close();
  });

  it('has a check that sees live markup when there is some', async () => {
    const { context, page } = await newPage(browser);
    await page.setContent(`<p>ok</p><img src="x" onerror="void 0"><a href=" javascript:void 0">a</a><script>void 0</script>`);
    expect(await liveMarkup(page)).toHaveLength(4);
    await context.close();
  });

  it('escapes the run-time values injected into index.html', async () => {
    const html = await (await fetch(`${product.url}/ui/`)).text();
    expect(html).not.toContain(`<script>alert('xss-name')</script>`);
    expect(html).not.toContain(`<svg/onload`);
    expect(html).toContain('<title>&lt;/title&gt;&lt;script&gt;');
    const config = /<script type="application\/json" id="app-config">(.*?)<\/script>/s.exec(html)?.[1];
    expect(config, 'the run-time values block ends where it should').toBeTruthy();
    expect(JSON.parse(config!)).toMatchObject({ productName: `</title><script>alert('xss-name')</script>`, communityUrl: `https://chat.example.org/"><svg/onload=alert('xss-url')>` });
  });

  it('shows a visitor the hostile question, answer, welcome and examples as text in the chat', async () => {
    const { context, page } = await newPage(browser, 'phone');
    await context.setExtraHTTPHeaders({ 'user-agent': `Mozilla/5.0 ${PAYLOADS[1]} ${PAYLOADS[7]}` });
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${product.url}/ui/chat`);
    const box = page.getByRole('textbox').first();
    await box.fill(PAYLOADS.slice(0, 4).join(' '));
    await box.press('Enter');
    await page.getByText('Here you go:').first().waitFor({ timeout: 30_000 });
    await expect.poll(() => page.evaluate(() => document.body.innerText)).toMatch(SHOWN_AS_TEXT);
    // Feedback with the corpus, from the visitor's own session.
    const history = (await (await page.request.get(`${product.url}/public/chat/history`)).json()) as { exchanges: { feedback_id: number }[] };
    const feedbackId = history.exchanges.at(-1)?.feedback_id;
    const feedback = await page.request.post(`${product.url}/public/chat/feedback`, { data: { feedback_id: feedbackId, type: 'other', description: CORPUS.slice(0, 900), detail: CORPUS.slice(0, 900) } });
    expect(feedback.status(), await feedback.text()).toBe(200);
    await page.reload();
    await page.getByText('Here you go:').first().waitFor();
    await screenshot(page, 'xss-chat-phone');
    expect(await liveMarkup(page)).toEqual([]);
    expect(dialogs).toEqual([]);
    await context.close();
  }, 120_000);

  it.each(SCREENS)('shows stored payloads as text on /ui/admin/$path and its dialog', async (screen) => {
    const { context, page } = await newPage(browser, 'desktop');
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await signInAs(page, product.url);
    await page.goto(`${product.url}/ui/admin/${screen.path}`);
    await page.getByRole('heading', { level: 1 }).or(page.getByRole('heading', { level: 4 })).first().waitFor();
    if (screen.reveal) await page.getByRole('button', { name: screen.reveal }).first().click();
    if (screen.shows === 'list') await expect.poll(() => page.evaluate(() => document.body.innerText), { timeout: 15_000 }).toMatch(SHOWN_AS_TEXT);
    if (screen.shows === 'fields') {
      const values = () => page.evaluate(() => [...document.querySelectorAll('input, textarea')].map((field) => (field as HTMLInputElement).value).join('\n'));
      await expect.poll(values, { timeout: 15_000 }).toMatch(SHOWN_AS_TEXT);
    }
    expect(await liveMarkup(page), screen.path).toEqual([]);
    if (screen.open) {
      const opener = page.getByRole('button', { name: screen.open }).or(page.getByRole('link', { name: screen.open })).first();
      await opener.waitFor({ timeout: 15_000 });
      await opener.click();
      const dialog = page.getByRole('dialog').first();
      await dialog.waitFor();
      await expect.poll(() => dialog.innerText()).not.toBe('');
      if (screen.shows === 'dialog') await expect.poll(() => dialog.innerText(), { timeout: 15_000 }).toMatch(SHOWN_AS_TEXT);
      expect(await liveMarkup(page), `${screen.path} dialog`).toEqual([]);
      await screenshot(page, `xss-${screen.path}-dialog`);
    } else {
      await screenshot(page, `xss-${screen.path}`);
    }
    expect(dialogs).toEqual([]);
    await context.close();
  });
});
