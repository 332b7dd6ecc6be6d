import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '@concierge/server/src/app.ts';
import { loadEnv } from '@concierge/server/src/config/env.ts';
import { createDeps, type Deps } from '@concierge/server/src/deps.ts';
import { startServer, type RunningServer } from '@concierge/server/src/server.ts';
import { createScratchDatabase } from '@concierge/server/src/test-support/server-process.ts';

/** The product on a fresh database of one engine, driven through `inject()`. */
export interface OpenProduct {
  deps: Deps;
  app: FastifyInstance;
  /** Where the database is, for a second, hand-written client. */
  location: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; schema: string };
  cleanup(): Promise<void>;
}

/** The whole product listening on a free port (as `npm start` runs it), on a fresh database of one engine. */
export interface ServedProduct {
  server: RunningServer;
  /** Stops the server and removes its database. */
  cleanup(): Promise<void>;
}

export interface Engine {
  name: 'SQLite' | 'PostgreSQL';
  /** A new, empty database for a server process of its own (DATABASE_URL), and how to remove it. */
  scratchDatabase(): Promise<{ url: string; drop(): Promise<void> }>;
  /** The product on a fresh database; `env` adds to the bench's environment (e.g. CRAWLER_URL). */
  open(env?: Record<string, string>): Promise<OpenProduct>;
  /** `startServer` with these environment variables added (DATABASE_URL, PORT and LOG_LEVEL are set here). */
  serve(env: Record<string, string>): Promise<ServedProduct>;
}

const ENV = { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent', CONVENTION_TIMEZONE: 'UTC' };

export function sqliteEngine(): Engine {
  return {
    name: 'SQLite',
    async scratchDatabase() {
      const dir = mkdtempSync(path.join(tmpdir(), 'concierge-bench-'));
      return { url: `sqlite:${path.join(dir, 'bench.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
    async open(env = {}) {
      const dir = mkdtempSync(path.join(tmpdir(), 'concierge-bench-'));
      const file = path.join(dir, 'bench.db');
      const deps = await createDeps(loadEnv({ ...ENV, ...env, DATABASE_URL: `sqlite:${file}` }));
      const app = await buildApp(deps);
      return {
        deps,
        app,
        location: { kind: 'sqlite', file },
        async cleanup() {
          await app.close();
          await deps.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
    async serve(env) {
      const dir = mkdtempSync(path.join(tmpdir(), 'concierge-bench-'));
      const server = await startServer({ ...ENV, ...env, PORT: '0', DATABASE_URL: `sqlite:${path.join(dir, 'bench.db')}` });
      return {
        server,
        async cleanup() {
          await server.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

/** PostgreSQL at `url` in a schema of its own, dropped afterwards. */
export function postgresEngine(url: string): Engine {
  return {
    name: 'PostgreSQL',
    scratchDatabase: () => createScratchDatabase(url),
    async open(env = {}) {
      const schema = `bench_${randomBytes(4).toString('hex')}`;
      const deps = await createDeps(loadEnv({ ...ENV, ...env, DATABASE_URL: url }), { databaseSchema: schema });
      const app = await buildApp(deps);
      return {
        deps,
        app,
        location: { kind: 'postgres', url, schema },
        async cleanup() {
          await app.close();
          await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(deps.database.db);
          await deps.close();
        },
      };
    },
    async serve(env) {
      const schema = `bench_${randomBytes(4).toString('hex')}`;
      const server = await startServer({ ...ENV, ...env, PORT: '0', DATABASE_URL: url }, { databaseSchema: schema });
      return {
        server,
        async cleanup() {
          await server.close();
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            await client.query(`drop schema if exists "${schema}" cascade`);
          } finally {
            await client.end();
          }
        },
      };
    },
  };
}

/** A PostgreSQL URL to bench against: BENCH_DATABASE_URL, TEST_DATABASE_URL, or a local server. */
export async function findPostgres(): Promise<string | null> {
  const candidates = [process.env.BENCH_DATABASE_URL, process.env.TEST_DATABASE_URL, 'postgres://postgres@127.0.0.1:5432/postgres'].filter(Boolean) as string[];
  for (const url of candidates) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.end();
      return url;
    } catch {
      await client.end().catch(() => {});
    }
  }
  return null;
}

/** Every engine reachable here: SQLite always, PostgreSQL when a server answers (else a line saying so); BENCH_ENGINE=sqlite or postgres keeps one. */
export async function availableEngines(what: string): Promise<Engine[]> {
  const only = process.env.BENCH_ENGINE?.toLowerCase();
  if (only === 'sqlite') return [sqliteEngine()];
  const postgres = await findPostgres();
  if (only === 'postgres') {
    if (!postgres) throw new Error(`BENCH_ENGINE=postgres but no PostgreSQL is reachable for ${what}`);
    return [postgresEngine(postgres)];
  }
  if (!postgres) console.log(`PostgreSQL not reachable (BENCH_DATABASE_URL, TEST_DATABASE_URL or 127.0.0.1:5432): ${what} measured on SQLite only`);
  return postgres ? [sqliteEngine(), postgresEngine(postgres)] : [sqliteEngine()];
}

/** Median wall time of `run` in milliseconds, after warm-up calls (so the JIT has compiled the path being measured). */
export async function median(run: () => Promise<void>, iterations: number, warmUp = Math.max(5, iterations)): Promise<number> {
  for (let i = 0; i < warmUp; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = process.hrtime.bigint();
    await run();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/**
 * Median wall time (ms) of each of several calls, measured in rounds that
 * take one sample of each in turn, so a slow spell of the machine weighs on
 * all of them alike instead of on whichever was being measured then.
 */
export async function interleavedMedians<K extends string>(runs: Record<K, () => Promise<void>>, rounds: number, warmUpRounds = rounds): Promise<Record<K, number>> {
  const names = Object.keys(runs) as K[];
  const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < warmUpRounds + rounds; round++) {
    for (const name of names) {
      const start = process.hrtime.bigint();
      await runs[name]();
      if (round >= warmUpRounds) samples[name].push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
  return Object.fromEntries(
    names.map((name) => {
      const sorted = samples[name].sort((a, b) => a - b);
      return [name, sorted[Math.floor(sorted.length / 2)]!];
    }),
  ) as Record<K, number>;
}

const ADMIN = { username: 'bench', password: 'bench-password-123' };

/** Completes set-up and signs in; returns the cookie header. */
export async function signIn(app: FastifyInstance): Promise<string> {
  await app.inject({ method: 'POST', url: '/setup', payload: { ...ADMIN, confirm_password: ADMIN.password } });
  const login = await app.inject({ method: 'POST', url: '/login', payload: ADMIN });
  if (login.statusCode !== 200) throw new Error(`sign-in failed: ${login.statusCode} ${login.body}`);
  return login.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
}

export const count = (n: number) => n.toLocaleString('en-US');
