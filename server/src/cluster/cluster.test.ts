import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { slotsInDatabase } from '../assistant/rate-gate.ts';
import { systemClock } from '../clock.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { EventBus, type AnswerEvent } from '../events.ts';
import { countedStatements } from '../test-support/counted-statements.ts';
import { createTestContext, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { until } from '../test-support/until.ts';
import { ClusterChannel } from './cluster-channel.ts';
import { takeRateSlot } from './cluster.queries.ts';
import { Leadership, type LeaderWork } from './leadership.ts';
import { MAX_NOTIFY_BYTES, PgNotifyTransport } from './pg-notify.ts';
import { lockKey } from './pg-session.ts';

const silent = pino({ level: 'silent' });
const onPostgres = testDatabaseKind() === 'postgres';

/** Leader work that records when it runs. */
class Recorded implements LeaderWork {
  running = false;
  starts = 0;
  readonly log: string[];
  readonly name: string;
  constructor(log: string[], name: string) {
    this.log = log;
    this.name = name;
  }
  start() {
    this.running = true;
    this.starts++;
    this.log.push(`start ${this.name}`);
  }
  async stop() {
    this.running = false;
    this.log.push(`stop ${this.name}`);
  }
}

describe('the cluster parts', () => {
  let contexts: TestContext[] = [];
  let extra: { close(): Promise<void> | void }[] = [];
  afterEach(async () => {
    for (const item of extra.reverse()) await item.close();
    // The first context owns the database (and drops it); close the others first.
    for (const ctx of contexts.reverse()) await ctx.close();
    contexts = [];
    extra = [];
  });

  /** A context, and another "process" on the same database. */
  async function twoProcesses(): Promise<[TestContext, TestContext]> {
    const first = await createTestContext();
    contexts.push(first);
    const second = await createTestContext({ database: first.database });
    contexts.push(second);
    return [first, second];
  }

  async function openAgain(ctx: TestContext): Promise<Database> {
    const database = await openDatabase(ctx.database.url, { schema: ctx.database.schema });
    extra.push(database);
    return database;
  }

  /**
   * Another process's connection on PostgreSQL. SQLite has one process, the
   * whole product: there the second "process" is the same connection (two
   * connections in one thread would each wait, blocking the thread, for the
   * other's write lock, held until the turn's shared commit).
   */
  async function anotherProcess(ctx: TestContext): Promise<Database> {
    return onPostgres ? openAgain(ctx) : ctx.deps.database;
  }

  describe('leadership', () => {
    it.runIf(!onPostgres)('makes the one SQLite process the leader at once, starting the work in order and stopping it in reverse', async () => {
      const ctx = await createTestContext();
      contexts.push(ctx);
      const log: string[] = [];
      const leadership = new Leadership({ database: ctx.deps.database, clock: systemClock, logger: silent });
      const changes: boolean[] = [];
      leadership.onChange((leader) => changes.push(leader));
      leadership.add('worker', new Recorded(log, 'worker'));
      leadership.add('crawler', new Recorded(log, 'crawler'));
      await leadership.start();
      expect(leadership.isLeader).toBe(true);
      await leadership.stop();
      expect(leadership.isLeader).toBe(false);
      expect(log).toEqual(['start worker', 'start crawler', 'stop crawler', 'stop worker']);
      expect(changes).toEqual([true, false]);
    });

    it.runIf(onPostgres)('lets one process of two lead; the other takes over within seconds when the leader stops or its connection dies', async () => {
      const [first, second] = await twoProcesses();
      const log: string[] = [];
      const make = (ctx: TestContext, name: string) => {
        const work = new Recorded(log, name);
        const leadership = new Leadership({ database: ctx.deps.database, clock: systemClock, logger: silent, retryMs: 200, checkMs: 200 });
        leadership.add('work', work);
        extra.push({ close: () => leadership.stop() });
        return { leadership, work };
      };
      const a = make(first, 'A');
      const b = make(second, 'B');
      await a.leadership.start();
      await b.leadership.start();
      expect([a.leadership.isLeader, b.leadership.isLeader]).toEqual([true, false]);
      await new Promise((resolve) => setTimeout(resolve, 600)); // B keeps trying, and keeps failing
      expect(b.work.starts).toBe(0);

      // The leader's connection dies (a crash, a network cut): PostgreSQL releases the lock; A steps down, B takes over.
      const key = lockKey(first.deps.database, 'leader');
      const holder = async () => {
        const { rows } = await sql<{ pid: number }>`select pid from pg_locks where locktype = 'advisory' and granted and ((classid::bigint << 32) | objid::bigint) = ${key}::bigint`.execute(first.deps.database.db);
        return rows[0]?.pid;
      };
      const aPid = await holder();
      expect(aPid).toBeDefined();
      await sql`select pg_terminate_backend(${aPid})`.execute(first.deps.database.db);
      const takeover = await until(() => b.work.running && !a.work.running);
      expect(takeover).toBeLessThan(5000);
      expect(await holder()).not.toBe(aPid);
      expect([a.leadership.isLeader, b.leadership.isLeader]).toEqual([false, true]);

      // A graceful stop hands it back: B's work stops before its lock goes, A takes over.
      await b.leadership.stop();
      expect(b.work.running).toBe(false);
      await until(() => a.work.running);
      expect(a.work.starts).toBe(2);
      // Never both at once.
      const running: string[] = [];
      for (const line of log) {
        const [verb, name] = line.split(' ') as [string, string];
        if (verb === 'start') running.push(name);
        else running.splice(running.indexOf(name), 1);
        expect(running.length).toBeLessThanOrEqual(1);
      }
    });
  });

  describe.runIf(onPostgres)('events between processes (LISTEN/NOTIFY)', () => {
    const answer = (response: string): AnswerEvent => ({
      source: 'public_chat',
      session_id: 's1',
      message_id: 1,
      ask_command_id: null,
      user_id: null,
      username: null,
      global_name: null,
      interaction_id: null,
      context: null,
      private: false,
      prompt: 'When is the costume contest?',
      response,
      error: null,
      state: 'completed',
      run_id: 'run_1',
      run_status: 'completed',
      thread_id: 'conv_1',
      prompt_tokens: 1,
      completion_tokens: 2,
      total_tokens: 3,
      processing_duration_ms: 10,
      created_at: new Date().toISOString(),
    });

    async function bus(database: Database) {
      const transport = new PgNotifyTransport({ database, clock: systemClock, logger: silent, checkMs: 200 });
      const events = new EventBus({ transport, logger: silent });
      await events.start();
      extra.push({ close: () => events.stop() });
      return events;
    }

    it('delivers an event to every process, big ones through the database, once, and never back to its sender', async () => {
      const ctx = await createTestContext();
      contexts.push(ctx);
      const a = await bus(await openAgain(ctx));
      const b = await bus(await openAgain(ctx));
      const heardByB: AnswerEvent[] = [];
      const heardByA: AnswerEvent[] = [];
      const onlyBsOwn: AnswerEvent[] = [];
      b.subscribe('answer', (event) => heardByB.push(event));
      b.subscribe('answer', (event) => onlyBsOwn.push(event), { thisProcess: true });
      a.subscribe('answer', (event) => heardByA.push(event));

      const long = 'The costume contest is on the Main Stage. '.repeat(500); // ~21 KB, far over NOTIFY's 8000 bytes
      expect(Buffer.byteLength(long)).toBeGreaterThan(MAX_NOTIFY_BYTES);
      a.publish('answer', answer('Saturday 19:00, Main Stage.'));
      a.publish('answer', answer(long));
      await until(() => heardByB.length === 2);
      expect(heardByB.map((event) => event.response)).toEqual(['Saturday 19:00, Main Stage.', long]);
      expect(heardByA).toHaveLength(2); // its own, delivered at once and not again through PostgreSQL
      expect(onlyBsOwn).toHaveLength(0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(heardByA).toHaveLength(2);
      expect(heardByB).toHaveLength(2);
      // Events that stay in their process (a provider call, for its metrics) never travel.
      const calls: string[] = [];
      b.subscribe('provider_call', (step) => calls.push(step));
      a.publish('provider_call', 'create_run', { duration_ms: 5, failed: false });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(calls).toHaveLength(0);
    });

    it('sends the events published in one turn in one statement, heard in the order they were published', async () => {
      const ctx = await createTestContext();
      contexts.push(ctx);
      const { database: counted, statements } = countedStatements(await openAgain(ctx));
      const a = await bus(counted);
      const b = await bus(await openAgain(ctx));
      const heardByB: string[] = [];
      b.subscribe('answer', (event) => heardByB.push(event.response!));
      const responses = Array.from({ length: 20 }, (_, n) => `Answer ${n + 1}: the costume contest is on Saturday.`);
      statements.length = 0;
      for (const response of responses) a.publish('answer', answer(response));
      // A statement is counted when its result reaches A, which B's notifications can beat.
      await until(() => heardByB.length === responses.length && statements.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 100)); // time for a second statement's result, were there one
      expect(heardByB).toEqual(responses);
      expect(statements).toHaveLength(1);
      // A later event goes in a statement of its own.
      a.publish('answer', answer('Sunday 11:00, Hall B.'));
      await until(() => heardByB.length === responses.length + 1 && statements.length > 1);
      expect(statements).toHaveLength(2);
    });

    it('carries the Watch feed\'s shared events (a channel of its own) on the same transport', async () => {
      const ctx = await createTestContext();
      contexts.push(ctx);
      const [first, second] = [await openAgain(ctx), await openAgain(ctx)];
      const transports = [first, second].map((database) => new PgNotifyTransport({ database, clock: systemClock, logger: silent }));
      type Shared = { watch_answer: { prompt: string }; admin_session_ended: { session_id: string } };
      const [a, b] = transports.map((transport) => new ClusterChannel<Shared>({ namespace: 'shared', transport, logger: silent }));
      const busOfB = new EventBus({ transport: transports[1], logger: silent });
      for (const transport of transports) {
        await transport.start();
        extra.push({ close: () => transport.stop() });
      }
      const heardByA: string[] = [];
      const heardByB: string[] = [];
      const answersOnB: unknown[] = [];
      a!.subscribe('watch_answer', ({ prompt }) => heardByA.push(prompt));
      b!.subscribe('watch_answer', ({ prompt }) => heardByB.push(prompt));
      b!.subscribe('admin_session_ended', ({ session_id }) => heardByB.push(`ended ${session_id}`));
      busOfB.subscribe('answer', (answer) => answersOnB.push(answer));
      a!.publish('watch_answer', { prompt: 'Where is Hall B?' });
      expect(heardByA).toEqual(['Where is Hall B?']); // its own subscribers at once
      a!.publish('admin_session_ended', { session_id: 'abc' });
      await until(() => heardByB.length === 2);
      expect(heardByB).toEqual(['Where is Hall B?', 'ended abc']);
      expect(answersOnB).toHaveLength(0); // the bus on the same transport hears none of it
      await a!.close();
      await b!.close();
    });

    it('announces inside a transaction: heard when it commits, never when it rolls back', async () => {
      const ctx = await createTestContext();
      contexts.push(ctx);
      const database = await openAgain(ctx);
      const a = await bus(database);
      const b = await bus(await openAgain(ctx));
      const heard: string[] = [];
      b.subscribe('config_changed', ({ hash }) => heard.push(hash));
      await expect(
        database.transaction(async (trx) => {
          await a.announce(trx, 'config_changed', { hash: 'rolled-back' });
          throw new Error('the write failed');
        }),
      ).rejects.toThrow('the write failed');
      await database.transaction((trx) => a.announce(trx, 'config_changed', { hash: 'committed' }));
      await until(() => heard.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(heard).toEqual(['committed']);
    });

    it('listens again after its connection is cut, asks for a resync, and hears what comes next', async () => {
      const ctx = await createTestContext();
      contexts.push(ctx);
      const a = await bus(await openAgain(ctx));
      const b = await bus(await openAgain(ctx));
      let resyncs = 0;
      b.onResync(() => resyncs++);
      const heard: string[] = [];
      b.subscribe('config_changed', ({ hash }) => heard.push(hash));
      const listeners = async () =>
        (
          await sql<{ pid: number }>`select pid from pg_stat_activity where application_name = ${`concierge events (${ctx.database.schema})`} and datname = current_database()`.execute(ctx.deps.database.db)
        ).rows.map((row) => row.pid);
      expect(await listeners()).toHaveLength(2);
      a.publish('config_changed', { hash: 'before' });
      await until(() => heard.length === 1);

      // Cut both listening sessions; they come back by themselves.
      for (const pid of await listeners()) await sql`select pg_terminate_backend(${pid})`.execute(ctx.deps.database.db);
      await until(() => resyncs === 1);
      await until(async () => (await listeners()).length === 2);
      a.publish('config_changed', { hash: 'after' });
      await until(() => heard.length === 2);
      expect(heard).toEqual(['before', 'after']);
    });

    it('applies a configuration change made in another process at once, pause included', async () => {
      const [first, second] = await twoProcesses();
      await first.deps.events.start();
      await second.deps.events.start();
      const changed: string[][] = [];
      second.deps.config.onChange(({ changed: fields }) => changed.push(fields));
      await first.deps.status.pause();
      await until(() => second.deps.config.get().paused, 2000);
      expect(second.deps.pipeline.isOpen()).toBe(false);
      await first.deps.config.update({ public_chat_requests_per_minute: 7 });
      await until(() => second.deps.config.get().public_chat_requests_per_minute === 7, 2000);
      expect(changed).toEqual([['paused'], ['public_chat_requests_per_minute']]);
    });
  });

  it('hands out the slots of a rate shared by every process in one statement each, never two in one interval', async () => {
    const ctx = await createTestContext();
    contexts.push(ctx);
    const other = await anotherProcess(ctx);
    const now = 1_800_000_000_000;
    // Twenty callers at the same instant, from two connections (processes) at once.
    const slots = await Promise.all(Array.from({ length: 20 }, (_, index) => takeRateSlot((index % 2 ? other : ctx.deps.database).db, 'provider_create_run', now, 250)));
    expect([...slots].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, index) => now + index * 250));
    // Idle for long: the next slot is now, not in the past (no burst is saved up).
    expect(await takeRateSlot(ctx.deps.database.db, 'provider_create_run', now + 60_000, 250)).toBe(now + 60_000);
    // Another budget is separate.
    expect(await takeRateSlot(ctx.deps.database.db, 'something_else', now, 250)).toBe(now);
    // Several at once: the first, and the next free time past the last.
    expect(await takeRateSlot(ctx.deps.database.db, 'something_else', now, 250, 4)).toBe(now + 250);
    expect(await takeRateSlot(other.db, 'something_else', now, 250)).toBe(now + 5 * 250);
  });

  it('takes the slots asked for in one turn in one statement, one interval apart, however many processes ask', async () => {
    const ctx = await createTestContext();
    contexts.push(ctx);
    const { database: counted, statements } = countedStatements(ctx.deps.database);
    const here = slotsInDatabase(counted, 'provider_create_run');
    const there = slotsInDatabase(await anotherProcess(ctx), 'provider_create_run');
    const now = 1_800_000_000_000;
    const slots = await Promise.all([...Array.from({ length: 10 }, () => here(now, 100)), ...Array.from({ length: 5 }, () => there(now, 100))]);
    expect(statements).toHaveLength(1);
    expect(slots.slice(0, 10)).toEqual([...slots.slice(0, 10)].sort((x, y) => x - y)); // in the order asked
    expect([...slots].sort((x, y) => x - y)).toEqual(Array.from({ length: 15 }, (_, index) => now + index * 100));
  });

  it('adds up the Status totals of every process', async () => {
    const [first, second] = await twoProcesses();
    first.deps.status.countRequest('GET /api/config');
    second.deps.status.countRequest('GET /api/config');
    second.deps.status.countRequest('GET /api/config');
    await first.deps.status.pause();
    await second.deps.counters.flush();
    const figures = await first.deps.status.status();
    expect(figures.api_requests['GET /api/config']).toBe(3);
    expect(figures.pause_count).toBe(1);
    expect((await second.deps.status.status()).pause_count).toBe(1);
  });

  describe('one crawler run at a time across processes', () => {
    let feed: Server | undefined;
    afterEach(async () => {
      await new Promise((resolve) => (feed ? feed.close(resolve) : resolve(undefined)));
      feed = undefined;
    });

    it.runIf(onPostgres)('refuses a refresh in one process while another is refreshing, then runs it; the other learns the new schedule\'s zone', async () => {
      let release: (() => void) | undefined;
      let version = 0;
      feed = createServer((_request, response) => {
        const body = JSON.stringify({ timezone: 'America/Chicago', events: [{ id: 'e1', title: `Costume Contest ${++version}`, start: '2026-03-14T19:00:00Z', location: 'Main Stage' }] });
        const answer = () => response.writeHead(200, { 'content-type': 'application/json' }).end(body);
        if (version === 1) release = answer;
        else answer();
      });
      await new Promise<void>((resolve) => feed!.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/schedule.json`;
      const first = await createTestContext({ env: { CRAWLER_URL: url } });
      contexts.push(first);
      const second = await createTestContext({ env: { CRAWLER_URL: url }, database: first.database });
      contexts.push(second);

      await first.deps.events.start();
      await second.deps.events.start();
      expect(second.deps.timeZone()).not.toBe('America/Chicago');

      const running = first.deps.crawler.refresh(true);
      await until(() => release !== undefined);
      await expect(second.deps.crawler.refresh(true)).rejects.toMatchObject({ status: 409, code: 'refresh_running' });
      await second.deps.crawler.runScheduled(); // the tick in another process: skipped, not failed
      release!();
      expect((await running).kind).toBe('stored');
      // The other process learns the new schedule's time zone at once.
      await until(() => second.deps.timeZone() === 'America/Chicago', 2000);
      expect((await second.deps.crawler.refresh(true)).kind).toBe('stored');
      expect(version).toBe(2); // the refused refresh and the skipped tick never read the feed
      await first.deps.counters.flush();
      const status = await second.deps.status.status();
      expect(status.crawler.runs_triggered).toBe(2);
    });
  });
});
