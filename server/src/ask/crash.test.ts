import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../config/env.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { testDatabaseKind } from '../test-support/test-context.ts';

/** The whole crash scenario's budget: PostgreSQL waits for the dead owner's leases to run out (≤ 20 s). */
const BUDGET_MS = 90_000;

interface Server {
  child: ChildProcess;
  url: string;
}

/** Starts the real server (server/src/main.ts) in its own process and waits until it listens. */
async function startServer(env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, ['server/src/main.ts'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', LOG_LEVEL: 'info', WEB_DIST_DIR: path.join(tmpdir(), 'concierge-no-web-build'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${stderr}`)), 30_000);
    child.once('exit', (code) => reject(new Error(`the server exited (${code}): ${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { url?: string; msg?: string };
        if (entry.url && entry.msg?.endsWith('is ready')) {
          clearTimeout(timer);
          resolve(entry.url.replace(/\/ui\/$/, ''));
        }
      } catch {
        // Not a log line.
      }
    });
  });
  return { child, url };
}

function kill9(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.child.once('exit', () => resolve());
    server.child.kill('SIGKILL');
  });
}

/**
 * kill -9 while a public chat question and an ask command are being
 * answered, then a restart on the same database: both finish from their
 * stored runs, nothing stays in flight (DESIGN §9, issue "one ask pipeline").
 */
describe('a server killed mid-answer', () => {
  let fake: FakeOpenAI;
  let databaseUrl: string;
  let database: Database;
  let cleanup: () => Promise<void>;
  const servers: Server[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI({ knobs: { runDurationMs: 3000 } });
    if (testDatabaseKind() === 'postgres') {
      // The server process opens its own connections, so it gets a database of its own.
      const base = process.env.TEST_DATABASE_URL!;
      const name = `crash_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: base });
      await admin.connect();
      await admin.query(`create database ${name}`);
      await admin.end();
      const url = new URL(base);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
      cleanup = async () => {
        const client = new pg.Client({ connectionString: base });
        await client.connect();
        await client.query(`drop database if exists ${name} with (force)`);
        await client.end();
      };
    } else {
      const dir = mkdtempSync(path.join(tmpdir(), 'concierge-crash-'));
      databaseUrl = `sqlite:${path.join(dir, 'crash.db')}`;
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
  });

  afterAll(async () => {
    for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
    await database?.close();
    await cleanup?.();
    await fake?.close();
  });

  it(
    'finishes the interrupted answers after a restart and leaves nothing in flight',
    async () => {
      const env = { DATABASE_URL: databaseUrl, OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url };
      const first = await startServer(env);
      servers.push(first);
      database = await openDatabase(databaseUrl);
      const db = database.db;

      // An operator sets a short poll interval; a visitor gets a session.
      const admin = { username: 'volunteer', password: 'correct horse battery' };
      await fetch(`${first.url}/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...admin, confirm_password: admin.password }) });
      const login = await fetch(`${first.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(admin) });
      const adminCookie = login.headers.getSetCookie().map((cookie) => cookie.split(';')[0]).join('; ');
      const configured = await fetch(`${first.url}/api/config`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', cookie: adminCookie },
        body: JSON.stringify({ assistant_poll_interval: '200ms', assistant_max_poll_interval: '500ms' }),
      });
      expect(configured.status).toBe(200);
      const verify = await fetch(`${first.url}/public/chat/turnstile/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"token":""}' });
      const visitor = verify.headers.getSetCookie().map((cookie) => cookie.split(';')[0]).join('; ');

      // A question from the public chat (its request dies with the process) and an ask command from the queue.
      const question = { message: 'Where do I pick up my badge?', client_message_id: 'crash-1' };
      void fetch(`${first.url}/public/chat/send`, { method: 'POST', headers: { 'content-type': 'application/json', cookie: visitor }, body: JSON.stringify(question) }).catch(() => {});
      const now = new Date().toISOString();
      await db.insertInto('users').values({ id: '123456789012345678', username: 'attendee', global_name: 'Attendee', created_at: now, updated_at: now }).execute();
      const command = await db
        .insertInto('ask_commands')
        .values({ user_id: '123456789012345678', prompt: 'When does registration open?', type: 'ask', step: 'enqueue', state: 'queued', created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();

      // Both reach a run at the provider, then the process is killed.
      await expect
        .poll(async () => (await db.selectFrom('public_chat_messages').select('run_id').where('role', '=', 'user').executeTakeFirst())?.run_id ?? null, { timeout: 15_000 })
        .toMatch(/^resp_/);
      await expect.poll(async () => (await db.selectFrom('ask_commands').select('run_id').where('id', '=', command.id).executeTakeFirstOrThrow()).run_id, { timeout: 15_000 }).toMatch(/^resp_/);
      await kill9(first);
      const interrupted = await db.selectFrom('public_chat_messages').select(['state', 'owner']).where('role', '=', 'user').executeTakeFirstOrThrow();
      expect(interrupted.state).toBe('processing');

      const restartedAt = Date.now();
      const second = await startServer(env);
      servers.push(second);
      // SQLite recovers at start; PostgreSQL once the dead owner's leases have run out (≤ 15 s + one 5 s pass).
      const within = testDatabaseKind() === 'postgres' ? 30_000 : 10_000;
      await expect.poll(async () => (await db.selectFrom('public_chat_messages').select('state').where('role', '=', 'user').executeTakeFirstOrThrow()).state, { timeout: within, interval: 200 }).toBe('completed');
      await expect.poll(async () => (await db.selectFrom('ask_commands').select('state').where('id', '=', command.id).executeTakeFirstOrThrow()).state, { timeout: within, interval: 200 }).toBe('completed');
      const recoveredInMs = Date.now() - restartedAt;
      console.log(`crash recovery (${testDatabaseKind()}): both answers finished ${(recoveredInMs / 1000).toFixed(1)} s after the restart`);

      const answered = await db.selectFrom('public_chat_messages').selectAll().where('role', '=', 'user').executeTakeFirstOrThrow();
      expect(answered.response).toBeTruthy();
      expect(answered.owner).toBeNull();
      const answeredCommand = await db.selectFrom('ask_commands').selectAll().where('id', '=', command.id).executeTakeFirstOrThrow();
      expect(answeredCommand.response).toBeTruthy();
      expect(answeredCommand.attempts).toBe(2);
      // Resumed from their stored runs: one run each at the provider.
      const runs = fake.journal.filter((entry) => entry.method === 'POST' && entry.path === '/v1/responses');
      expect(runs).toHaveLength(2);

      // Nothing in flight, the session free, the retry answered at once.
      const stuck = await db.selectFrom('public_chat_messages').select('id').where('state', '=', 'processing').execute();
      const stuckCommands = await db.selectFrom('ask_commands').select('id').where('state', 'in', ['queued', 'in_progress']).execute();
      expect([...stuck, ...stuckCommands]).toEqual([]);
      const session = await db.selectFrom('public_chat_sessions').select('in_flight_since').executeTakeFirstOrThrow();
      expect(session.in_flight_since).toBeNull();
      const retry = await fetch(`${second.url}/public/chat/send`, { method: 'POST', headers: { 'content-type': 'application/json', cookie: visitor }, body: JSON.stringify(question) });
      expect(retry.status).toBe(200);
      expect(((await retry.json()) as { response: string }).response).toBe(answered.response);

      if (database.dialect === 'sqlite') {
        const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db);
        expect(check.rows).toEqual([{ integrity_check: 'ok' }]);
      }
    },
    BUDGET_MS,
  );
});
