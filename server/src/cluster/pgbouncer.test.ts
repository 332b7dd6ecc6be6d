import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { EventBus } from '../events.ts';
import { havePgbouncer, PGBOUNCER_PATH, startPgbouncer, type Pgbouncer, type PgbouncerOptions } from '../test-support/pgbouncer.ts';
import { createTestContext, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { until } from '../test-support/until.ts';
import { Leadership } from './leadership.ts';
import { PgNotifyTransport } from './pg-notify.ts';
import { tryWithLock } from './pg-session.ts';

const silent = pino({ level: 'silent' });
const inCi = process.env.CI === 'true' || process.env.CI === '1';

/**
 * Processes whose DATABASE_URL is a real PgBouncer (Debian's package) in
 * front of the test's PostgreSQL. Debian 12's PgBouncer is 1.18, which does
 * not carry named prepared statements in transaction mode (the README asks
 * for 1.21 or later), so these tests stop short of the hot path: they cover
 * what a pooler changes for the connections' settings and for what must
 * live in a session. Without PgBouncer they are skipped here, and fail in CI
 * (.ci/run installs it).
 */
describe.runIf(testDatabaseKind() === 'postgres')(`behind PgBouncer (${PGBOUNCER_PATH})`, () => {
  const runs = it.skipIf(!havePgbouncer() && !inCi);
  let cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.reverse()) await step();
    cleanup = [];
  });

  async function context(): Promise<TestContext> {
    const ctx = await createTestContext();
    cleanup.push(() => ctx.close());
    return ctx;
  }

  async function bouncer(options: PgbouncerOptions): Promise<Pgbouncer> {
    const started = await startPgbouncer(process.env.TEST_DATABASE_URL!, options);
    cleanup.push(() => started.stop());
    return started;
  }

  async function open(url: string, options: Parameters<typeof openDatabase>[1]): Promise<Database> {
    const database = await openDatabase(url, options);
    cleanup.push(() => database.close());
    return database;
  }

  runs('stops with what to do when the pooler refuses the connections\' settings', async () => {
    const ctx = await context();
    const pooler = await bouncer({ poolMode: 'transaction', poolSize: 2 });
    await expect(openDatabase(pooler.url, { schema: ctx.database.schema, logger: silent })).rejects.toThrow(
      /refused the connections' settings \(unsupported startup parameter: options\).*ignore_startup_parameters/,
    );
  });

  runs('warns when the pooler drops the plan settings, and not once they reach PostgreSQL another way', async () => {
    const ctx = await context();
    const lines: { level: number; msg: string; applied?: Record<string, string>; pool?: string; thread?: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const dropping = await bouncer({ poolMode: 'transaction', poolSize: 2, ignore: ['options'] });
    await open(dropping.url, { schema: ctx.database.schema, logger });
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, pool: 'concierge', applied: { plan_cache_mode: 'auto', enable_seqscan: 'on' }, msg: expect.stringContaining('Set plan_cache_mode = force_custom_plan on the database role') }),
    ]);
    // A server's query thread has a pool of its own, and says so of it too.
    lines.length = 0;
    await open(dropping.url, { schema: ctx.database.schema, logger, queryThread: true });
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, pool: 'concierge', msg: expect.stringContaining('did not apply') }),
      expect.objectContaining({ level: 40, pool: 'concierge query thread', thread: 'query', applied: { plan_cache_mode: 'auto', enable_seqscan: 'on' }, msg: expect.stringContaining('did not apply') }),
    ]);

    // The pooler setting it on its own connections (as a role's setting would): nothing to say.
    lines.length = 0;
    const setting = await bouncer({ poolMode: 'transaction', poolSize: 2, ignore: ['options'], connectQuery: 'set plan_cache_mode = force_custom_plan' });
    await open(setting.url, { schema: ctx.database.schema, logger });
    // Connected directly, every setting applies.
    await open(ctx.database.url, { schema: ctx.database.schema, logger });
    await open(ctx.database.url, { schema: ctx.database.schema, logger, keyedStatements: true });
    expect(lines).toEqual([]);
  });

  runs('keeps one leader, one crawler run and every event across processes that share one pooled connection, their sessions on PostgreSQL itself', async () => {
    const ctx = await context();
    // One server connection for every client: whatever two processes send through the pooler runs in one PostgreSQL session.
    const pooler = await bouncer({ poolMode: 'transaction', poolSize: 1, ignore: ['options'] });
    const processes = [0, 1].map(() => open(pooler.url, { schema: ctx.database.schema, sessionUrl: ctx.database.url, logger: silent }));
    const [a, b] = (await Promise.all(processes)) as [Database, Database];
    const backend = async (database: Database) => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db)).rows[0]!.pid;
    const pooled = await backend(a);
    expect(await backend(b)).toBe(pooled);

    // Leadership: one of the two, and its lock held by a session of its own, not by the pooled connection.
    const leaderships = [a, b].map((database) => new Leadership({ database, clock: systemClock, logger: silent, retryMs: 100, checkMs: 200 }));
    for (const leadership of leaderships) {
      cleanup.push(() => leadership.stop());
      await leadership.start();
    }
    await new Promise((resolve) => setTimeout(resolve, 400)); // the follower tries a few times
    expect(leaderships.map((leadership) => leadership.isLeader).sort()).toEqual([false, true]);
    const holders = async () =>
      (await sql<{ pid: number }>`select pid from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())`.execute(ctx.deps.database.db)).rows.map((row) => row.pid);
    const leaderPid = await holders();
    expect(leaderPid).toHaveLength(1);
    expect(leaderPid).not.toContain(pooled);

    // The crawler's run lock: a run in one process refuses a run in the other until it ends.
    let release!: () => void;
    const first = tryWithLock(a, 'crawler', () => new Promise<string>((resolve) => (release = () => resolve('first'))));
    await until(async () => (await holders()).length === 2, 5000);
    expect(await tryWithLock(b, 'crawler', async () => 'second')).toEqual({ ran: false });
    release();
    expect(await first).toEqual({ ran: true, result: 'first' });
    expect(await tryWithLock(b, 'crawler', async () => 'second')).toEqual({ ran: true, result: 'second' });

    // Events: B listens on its session and hears what A announces through the pooler.
    const buses = [a, b].map((database) => new EventBus({ transport: new PgNotifyTransport({ database, clock: systemClock, logger: silent, checkMs: 200 }), logger: silent }));
    for (const bus of buses) {
      await bus.start();
      cleanup.push(() => bus.stop());
    }
    const heard: string[] = [];
    buses[1]!.subscribe('config_changed', (event) => heard.push(event.hash));
    buses[0]!.publish('config_changed', { hash: 'paused' });
    await until(() => heard.length === 1, 5000);
    expect(heard).toEqual(['paused']);
  });
});
