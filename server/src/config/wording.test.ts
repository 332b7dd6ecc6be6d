import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { migrationsFor } from '../db/migrations/index.ts';
import type { Deps } from '../deps.ts';
import { cookieFrom, createTestContext, freshDatabase, signIn, type TestContext } from '../test-support/test-context.ts';
import { DEFAULT_WORDING, defaultConfig } from './defaults.ts';

const INDEX = '<!doctype html><html><head><title>x</title><!--app-config--></head><body></body></html>';
const appConfigOf = (html: string) => JSON.parse(/<script type="application\/json" id="app-config">(.*?)<\/script>/.exec(html)![1]!);

describe('operator wording (DESIGN §9)', () => {
  let ctx: TestContext;
  let dist: string;
  afterEach(async () => {
    await ctx.close();
    rmSync(dist, { recursive: true, force: true });
  });

  async function start() {
    dist = mkdtempSync(path.join(tmpdir(), 'concierge-dist-'));
    mkdirSync(path.join(dist, 'assets'));
    writeFileSync(path.join(dist, 'index.html'), INDEX);
    ctx = await createTestContext({ env: { WEB_DIST_DIR: dist, PRODUCT_NAME: 'Starfall Concierge' } });
    return signIn(ctx.app);
  }

  it('ships the fan-made notice and names the product, and instructions that claim no affiliation', async () => {
    await start();
    const page = appConfigOf((await ctx.app.inject({ url: '/ui/chat' })).body);
    expect(page.chat).toEqual({
      welcomeMessage: "Hi! I'm Starfall Concierge, your guide to the convention. Ask me about panels, guests, rooms and times — for example:",
      welcomeHtml: "<p>Hi! I'm Starfall Concierge, your guide to the convention. Ask me about panels, guests, rooms and times — for example:</p>",
      examplePrompts: ["What's on in Hall B tonight?", 'When is the costume contest?', 'Where are the autograph sessions?', "What's happening right now?"],
      aboutText: expect.stringContaining('Starfall Concierge is an independent, fan-made tool.'),
    });
    const instructions = ctx.deps.config.get().assistant_instructions;
    expect(instructions).toContain('You are Starfall Concierge');
    expect(instructions).not.toMatch(/fan-made|not endorsed|independent/i);
  });

  it('serves edited wording on the next page load and the paused message in the paused 503', async () => {
    const cookie = await start();
    const edit = await ctx.app.inject({
      method: 'PATCH',
      url: '/api/config',
      headers: { cookie },
      payload: {
        public_chat_welcome_message: 'Welcome to **{product}**, the official guide of Starfall Con!',
        public_chat_example_prompts: 'Where is registration?\n\n  When does the dealers hall open?  \n',
        public_chat_about_text: 'Run by the Starfall Con team. See [our site](https://starfall.example.org).',
        public_chat_paused_message: '{product} is closed for the night. Registration desk: **Hall A**.',
        paused: true,
      },
    });
    expect(edit.statusCode).toBe(200);

    const page = appConfigOf((await ctx.app.inject({ url: '/ui/' })).body);
    expect(page.chat).toEqual({
      welcomeMessage: 'Welcome to **Starfall Concierge**, the official guide of Starfall Con!',
      welcomeHtml: '<p>Welcome to <strong>Starfall Concierge</strong>, the official guide of Starfall Con!</p>',
      examplePrompts: ['Where is registration?', 'When does the dealers hall open?'],
      aboutText: 'Run by the Starfall Con team. See [our site](https://starfall.example.org).',
    });

    const visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } }));
    const paused = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie: visitor }, payload: { message: 'Where is registration?' } });
    expect(paused.statusCode).toBe(503);
    expect(paused.json()).toEqual({
      success: false,
      code: 'paused',
      error: 'Starfall Concierge is closed for the night. Registration desk: **Hall A**.',
    });
  });
});

describe('the wording migration', () => {
  it('gives a configuration row from before it the texts the chat showed until then', async () => {
    const fresh = freshDatabase();
    const database = await openDatabase(fresh.url, { schema: fresh.schema });
    try {
      const migrations = migrationsFor(database.dialect);
      const schema = database.dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(database.db)).rows[0]!.s : undefined;
      const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema });
      const before = Object.keys(migrations).sort().filter((name) => name < '20261125T090000-public-chat-wording').at(-1)!;
      expect((await migrator.migrateTo(before)).error).toBeUndefined();
      // The row as the product wrote it then: the columns that existed at that migration.
      const existing = database.dialect === 'sqlite'
        ? (await sql<{ name: string }>`select name from pragma_table_info('runtime_config')`.execute(database.db)).rows
        : (await sql<{ name: string }>`select column_name as name from information_schema.columns where table_schema = current_schema() and table_name = 'runtime_config'`.execute(database.db)).rows;
      const columns = new Set(existing.map((column) => column.name));
      const now = new Date().toISOString();
      const older: Record<string, unknown> = { id: 1, created_at: now, updated_at: now };
      for (const [field, value] of Object.entries(defaultConfig('Con Concierge'))) if (columns.has(field)) older[field] = value;
      expect(Object.keys(DEFAULT_WORDING).filter((field) => columns.has(field))).toEqual([]);
      await database.db.insertInto('runtime_config').values(older as never).execute();

      await migrateToLatest(database);
      const row = await database.db.selectFrom('runtime_config').selectAll().executeTakeFirstOrThrow();
      expect({
        public_chat_welcome_message: row.public_chat_welcome_message,
        public_chat_example_prompts: row.public_chat_example_prompts,
        public_chat_about_text: row.public_chat_about_text,
        public_chat_paused_message: row.public_chat_paused_message,
      }).toEqual(DEFAULT_WORDING);
    } finally {
      await fresh.dispose({ database, close: () => database.close() } as unknown as Deps);
    }
  });
});
