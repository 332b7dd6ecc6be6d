import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { buildApp, type AppOptions } from '../app.ts';
import { realDeadline, realSleep, timeoutError, type Clock } from '../clock.ts';
import { loadEnv } from '../config/env.ts';
import { createDeps, type Deps } from '../deps.ts';

export interface TestContext {
  app: FastifyInstance;
  deps: Deps;
  /** Where the suite's database lives, for code that opens its own connection. */
  database: { url: string; schema?: string };
  close(): Promise<void>;
}

export interface TestContextOptions {
  env?: Record<string, string>;
  clock?: Clock;
  fetch?: typeof fetch;
  /** Another context's database (a restart with other settings); that context disposes of it. */
  database?: { url: string; schema?: string };
  app?: AppOptions;
}

/** Which engine this run of the suite uses (set per Vitest project). */
export const testDatabaseKind = (): 'sqlite' | 'postgres' => (process.env.TEST_DB === 'postgres' ? 'postgres' : 'sqlite');

/**
 * A fresh, migrated database for one suite: a temp SQLite file, or a new
 * schema in TEST_DATABASE_URL's PostgreSQL database. Never shared between suites.
 */
export interface FreshDatabase {
  url: string;
  schema?: string;
  /** Removes everything the suite created; `deps` must still be open. */
  dispose(deps: Deps): Promise<void>;
}

export function freshDatabase(): FreshDatabase {
  if (testDatabaseKind() === 'postgres') {
    const url = process.env.TEST_DATABASE_URL;
    if (!url) throw new Error('TEST_DB=postgres needs TEST_DATABASE_URL');
    const schema = `t_${randomBytes(6).toString('hex')}`;
    return {
      url,
      schema,
      async dispose(deps) {
        await deps.counters?.flush(); // what closing would write, while the schema is still there (some tests pass a bare database)
        // The query thread's pool may still be writing (a lease renewal, call logs): a DROP beside it can deadlock.
        await deps.database.queryThread?.stop();
        await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(deps.database.db);
        await deps.close();
      },
    };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'concierge-test-'));
  return {
    url: `sqlite:${path.join(dir, 'test.db')}`,
    async dispose(deps) {
      await deps.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The whole app on a fresh database, driven through `inject()`. */
export async function createTestContext(options: TestContextOptions = {}): Promise<TestContext> {
  const database: FreshDatabase = options.database ? { ...options.database, dispose: (deps) => deps.close() } : freshDatabase();
  const env = loadEnv({
    DATABASE_URL: database.url,
    LOG_LEVEL: 'silent',
    WEB_DIST_DIR: path.join(tmpdir(), 'concierge-no-web-build'),
    ...options.env,
  });
  const deps = await createDeps(env, { clock: options.clock, databaseSchema: database.schema, fetch: options.fetch });
  const app = await buildApp(deps, options.app);
  await app.ready();
  return {
    app,
    deps,
    database: { url: database.url, schema: database.schema },
    async close() {
      await app.close();
      await database.dispose(deps);
    },
  };
}

export const ADMIN = { username: 'volunteer', password: 'correct horse battery' };

/** Cookie header value from a reply's Set-Cookie. */
export function cookieFrom(response: LightMyRequestResponse): string {
  return response.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
}

/** Completes first-time setup and signs in; returns the session cookie header. */
export async function signIn(app: FastifyInstance, admin = ADMIN): Promise<string> {
  const setup = await app.inject({ method: 'POST', url: '/setup', payload: { ...admin, confirm_password: admin.password } });
  if (setup.statusCode !== 200 && setup.statusCode !== 409) throw new Error(`setup failed: ${setup.statusCode} ${setup.body}`);
  const login = await app.inject({ method: 'POST', url: '/login', payload: admin });
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.statusCode} ${login.body}`);
  return cookieFrom(login);
}

/**
 * A clock tests move by hand: it reads `start` until moved. With
 * `autoAdvance` (the default) a sleep moves the clock forward by its length
 * and resolves at once, so code that waits (poll intervals, back-off, rate
 * gates) runs without real waiting; without it, sleepers wait until
 * `advance()` or `set()` passes their time. Deadlines fire whenever the
 * clock passes them, however it was moved.
 */
export function manualClock(start = new Date('2026-03-13T15:00:00Z'), options: { autoAdvance?: boolean } = {}) {
  const autoAdvance = options.autoAdvance ?? true;
  let now = start.getTime();
  let waiters: { until: number; fire: () => void }[] = [];
  const wake = () => {
    const due = waiters.filter((waiter) => waiter.until <= now);
    waiters = waiters.filter((waiter) => waiter.until > now);
    for (const waiter of due) waiter.fire();
  };
  const moveTo = (time: number) => {
    now = time;
    wake();
  };
  const clock: Clock = {
    now: () => new Date(now),
    sleep(ms, signal) {
      signal?.throwIfAborted();
      if (autoAdvance) {
        moveTo(now + Math.max(0, ms));
        return new Promise((resolve) => setImmediate(resolve));
      }
      return new Promise((resolve, reject) => {
        const waiter = { until: now + Math.max(0, ms), fire: () => resolve() };
        waiters.push(waiter);
        signal?.addEventListener(
          'abort',
          () => {
            waiters = waiters.filter((other) => other !== waiter);
            reject(signal.reason);
          },
          { once: true },
        );
        wake();
      });
    },
    deadline(ms) {
      const controller = new AbortController();
      const waiter = { until: now + ms, fire: () => controller.abort(timeoutError()) };
      waiters.push(waiter);
      wake();
      return { signal: controller.signal, clear: () => (waiters = waiters.filter((other) => other !== waiter)) };
    },
  };
  return {
    clock,
    /** Moves the clock forward, waking the sleepers and firing the deadlines whose time has come. */
    advance(ms: number) {
      moveTo(now + ms);
    },
    set(date: Date) {
      moveTo(date.getTime());
    },
    /** How many sleeps and deadlines are waiting. */
    get waiting() {
      return waiters.length;
    },
  };
}

/**
 * Real time, shifted so that it reads the start of a clock minute when
 * called. Rate-limit windows are clock minutes: a test that counts requests
 * against a limit has a whole minute before its window rolls over.
 */
export function minuteStartClock(): Clock {
  const now = Date.now();
  const offset = 60_000 - (now % 60_000);
  return { now: () => new Date(Date.now() + offset), sleep: realSleep, deadline: realDeadline };
}

/** Uploads a file to the assistant's vector store through the admin API. */
export async function uploadKnowledge(app: FastifyInstance, cookie: string, filename: string, content: string | Buffer) {
  const form = new FormData();
  form.append('file', new Blob([typeof content === 'string' ? content : new Uint8Array(content)]), filename);
  return app.inject({ method: 'POST', url: '/api/openai/vector_store/upload', headers: { cookie }, payload: form });
}
