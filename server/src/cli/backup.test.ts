import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../app.ts';
import { loadEnv } from '../config/env.ts';
import type { Database } from '../db/database.ts';
import { createDeps, type Deps } from '../deps.ts';
import { ADMIN, cookieFrom, createTestContext, signIn, testDatabaseKind, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';
import { runAdmin } from './admin.ts';

function io(env: Record<string, string>, extra: { targetSchema?: string; databaseSchema?: string } = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk) => (out += chunk));
  stderr.on('data', (chunk) => (err += chunk));
  return { io: { env, stdin: Readable.from([]), stdout, stderr, ...extra }, output: () => ({ out, err }) };
}

/** The product on a database of our choosing (not the suite's engine): for the source and the restored copy. */
async function productOn(databaseUrl: string, databaseSchema?: string): Promise<{ app: FastifyInstance; deps: Deps; close(): Promise<void> }> {
  const env = loadEnv({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', WEB_DIST_DIR: path.join(tmpdir(), 'concierge-no-web-build') });
  const deps = await createDeps(env, { databaseSchema });
  const app = await buildApp(deps);
  await app.ready();
  return {
    app,
    deps,
    async close() {
      await app.close();
      await deps.close();
    },
  };
}

/** Puts something in most tables: an admin, config, knowledge, a crawl, chats, feedback, rate-limit windows. */
async function fillWithData(app: FastifyInstance, deps: Deps): Promise<{ visitor: string }> {
  const admin = await signIn(app);
  await deps.config.update({ assistant_poll_interval: '100ms', public_chat_welcome_message: "Welcome to Starfall Con's concierge!" });
  expect((await uploadKnowledge(app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.')).statusCode).toBe(200);
  expect((await deps.crawler.refresh(false)).kind).toBe('stored');
  const visitor = cookieFrom(await app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: '198.51.100.7' }));
  const ask = (message: string) => app.inject({ method: 'POST', url: '/public/chat/send', payload: { message }, headers: { cookie: visitor }, remoteAddress: '198.51.100.7' });
  const first = await ask('Where is the lost and found?');
  expect(first.statusCode).toBe(200);
  expect((await ask('When is the costume contest?')).statusCode).toBe(200);
  await app.inject({ method: 'POST', url: '/public/chat/feedback', payload: { feedback_id: first.json().feedback_id, type: 'good' }, headers: { cookie: visitor } });
  return { visitor };
}

/** Every application table's rows, read from the database itself, in a stable order. */
async function everyRow(database: Database): Promise<Record<string, unknown[]>> {
  const db = database.db as unknown as Kysely<unknown>;
  const tables =
    database.dialect === 'sqlite'
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db)).rows
      : (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db)).rows;
  const dump: Record<string, unknown[]> = {};
  for (const { name } of tables.filter((table) => !table.name.startsWith('kysely_')).sort((a, b) => a.name.localeCompare(b.name))) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.id(name)}`.execute(db);
    // Binary columns come back as a Uint8Array from SQLite and a Buffer from PostgreSQL: compare their bytes.
    const comparable = (row: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(row).map(([key, value]) => [key, value instanceof Uint8Array ? `bytes:${Buffer.from(value).toString('hex')}` : value]));
    dump[name] = rows.map((row) => JSON.stringify(comparable(row), Object.keys(row).sort())).sort();
  }
  return dump;
}

const tablesWithRows = (dump: Record<string, unknown[]>) => Object.entries(dump).filter(([, rows]) => rows.length > 0).length;

describe('npm run admin -- backup', () => {
  let ctx: TestContext | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await ctx?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    ctx = dir = undefined;
  });

  it.runIf(testDatabaseKind() === 'sqlite')('backup → restore gives the same rows, and the product starts on the restored file', async () => {
    ctx = await createTestContext();
    const { visitor } = await fillWithData(ctx.app, ctx.deps);
    await ctx.deps.counters.flush(); // the Status totals counted in memory are written, as on any backup a second later
    const atBackup = await everyRow(ctx.deps.database);
    expect(tablesWithRows(atBackup)).toBeGreaterThanOrEqual(15);

    dir = mkdtempSync(path.join(tmpdir(), 'concierge-backup-'));
    const file = path.join(dir, 'concierge-backup.db');
    const run = io({ DATABASE_URL: ctx.database.url });
    expect(await runAdmin(['backup', file], run.io)).toBe(0);
    expect(run.output().out).toContain(`Backed up`);
    // A second backup never overwrites the first.
    const again = io({ DATABASE_URL: ctx.database.url });
    expect(await runAdmin(['backup', file], again.io)).toBe(1);
    expect(again.output().err).toContain('already exists');

    // The live database moves on after the backup.
    await ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'Is there a quiet room?' }, headers: { cookie: visitor } });
    expect(await everyRow(ctx.deps.database)).not.toEqual(atBackup);

    // Restore (README): with the server stopped, the backup file becomes the database file.
    const restoredFile = path.join(dir, 'restored', 'concierge.db');
    const restored = await productOn(`sqlite:${restoredFile}`).catch(() => undefined); // creates the folder
    await restored?.close();
    copyFileSync(file, restoredFile);
    rmSync(`${restoredFile}-wal`, { force: true });
    rmSync(`${restoredFile}-shm`, { force: true });
    const product = await productOn(`sqlite:${restoredFile}`);
    try {
      expect(await everyRow(product.deps.database)).toEqual(atBackup);
      expect((await product.app.inject({ method: 'POST', url: '/login', payload: ADMIN })).statusCode).toBe(200);
      const history = await product.app.inject({ url: '/public/chat/history', headers: { cookie: visitor } });
      expect(history.json().exchanges.map((exchange: { question: string }) => exchange.question)).toEqual(['Where is the lost and found?', 'When is the costume contest?']);
    } finally {
      await product.close();
    }
  });

  it.runIf(testDatabaseKind() === 'postgres')('on PostgreSQL, explains pg_dump instead', async () => {
    ctx = await createTestContext();
    const run = io({ DATABASE_URL: ctx.database.url }, { databaseSchema: ctx.database.schema });
    expect(await runAdmin(['backup', path.join(tmpdir(), 'never-written.db')], run.io)).toBe(1);
    expect(run.output().err).toContain('pg_dump --format=custom');
  });
});

describe('npm run admin -- copy-to', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('refuses a target that is not PostgreSQL, naming what it needs', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'concierge-copy-'));
    const run = io({ DATABASE_URL: `sqlite:${path.join(dir, 'source.db')}` });
    expect(await runAdmin(['copy-to', 'mysql://db/concierge'], run.io)).toBe(2);
    expect(run.output().err).toContain('postgres://user:password@host:5432/database');
  });

  // PostgreSQL is the target, so this runs with the PostgreSQL suite; the source is a SQLite file of its own.
  it.runIf(testDatabaseKind() === 'postgres')('SQLite → PostgreSQL: same rows in every table, and the product starts on it and keeps going', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'concierge-copy-'));
    const sourceUrl = `sqlite:${path.join(dir, 'source.db')}`;
    const targetUrl = process.env.TEST_DATABASE_URL!;
    const targetSchema = `copy_${randomBytes(6).toString('hex')}`;

    const source = await productOn(sourceUrl);
    let visitor: string;
    let sourceRows: Record<string, unknown[]>;
    try {
      ({ visitor } = await fillWithData(source.app, source.deps));
      await source.deps.counters.flush(); // what closing the product writes anyway
      sourceRows = await everyRow(source.deps.database);
    } finally {
      await source.close();
    }
    expect(tablesWithRows(sourceRows)).toBeGreaterThanOrEqual(15);

    const run = io({ DATABASE_URL: sourceUrl }, { targetSchema });
    const code = await runAdmin(['copy-to', targetUrl], run.io);
    expect(run.output().err).toBe('');
    expect(code).toBe(0);
    expect(run.output().out).toContain("every table's row count matches");
    expect(run.output().out).toContain('public_chat_messages: 4 rows');

    const copy = await productOn(targetUrl, targetSchema);
    try {
      expect(await everyRow(copy.deps.database)).toEqual(sourceRows);

      // Copying again into the same database is refused: it is no longer new.
      const twice = io({ DATABASE_URL: sourceUrl }, { targetSchema });
      expect(await runAdmin(['copy-to', targetUrl], twice.io)).toBe(1);
      expect(twice.output().err).toMatch(/the target already has tables \(admin_sessions, admin_users, /);

      // The product runs on the copy: the admin signs in, the visitor's conversation is there, and new rows get new ids.
      const admin = cookieFrom(await copy.app.inject({ method: 'POST', url: '/login', payload: ADMIN }));
      expect(admin).toContain('concierge_admin=');
      expect((await copy.app.inject({ url: '/api/status', headers: { cookie: admin } })).json().public_chat).toMatchObject({ message_count: 4, feedback_count: 1 });
      const history = await copy.app.inject({ url: '/public/chat/history', headers: { cookie: visitor } });
      expect(history.json().exchanges).toHaveLength(2);
      const next = await copy.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'Is there a quiet room?' }, headers: { cookie: visitor } });
      expect(next.statusCode).toBe(200);
      expect(next.json().feedback_id).toBeGreaterThan(Math.max(...history.json().exchanges.map((exchange: { feedback_id: number }) => exchange.feedback_id)));
      expect(copy.deps.config.get().public_chat_welcome_message).toBe("Welcome to Starfall Con's concierge!");
    } finally {
      await sql`drop schema if exists ${sql.id(targetSchema)} cascade`.execute(copy.deps.database.db);
      await copy.close();
    }
  });
});
