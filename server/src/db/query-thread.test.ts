import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as chatQueries from '../chat/chat.queries.ts';
import '../cluster/cluster.queries.ts';
import { countInWindows } from '../limits/limits.queries.ts';
import { sqliteFileForEachTest } from '../test-support/sqlite-file.ts';
import { freshDatabase, testDatabaseKind } from '../test-support/test-context.ts';
import { openDatabase, type Database } from './database.ts';
import { migrateToLatest } from './migrate.ts';
import { batchCalls, queryThreadBatches, queryThreadOperations } from './query-thread.ts';

const logLines: { level: number; msg: string; [field: string]: unknown }[] = [];
const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line) as { level: number; msg: string }) });

const T0 = '2026-03-13T15:00:00.000Z';
const session = (id: string): chatQueries.NewSession => ({
  session_id: id,
  client_ip: '10.0.0.1',
  user_agent: 'test',
  referer: null,
  verified: true,
  now: T0,
  expires_at: '2026-03-14T15:00:00.000Z',
});
const window = (identifier: string) => ({
  identifier,
  client_ip: '10.0.0.1',
  window_start: '2026-03-13T15:00:00.000Z',
  window_end: '2026-03-13T15:01:00.000Z',
  max_requests: 5,
});

describe.runIf(testDatabaseKind() === 'sqlite')("the hot path's database work on a thread of its own", () => {
  const temp = sqliteFileForEachTest('query-thread');
  beforeEach(() => {
    logLines.length = 0;
  });

  const open = async () => {
    const database = (temp.database = await openDatabase(`sqlite:${temp.file}`, { logger, checkpointThread: true, queryThread: true }));
    await migrateToLatest(database);
    return database;
  };

  it('knows every operation the server declares, so none of them stays on the event loop', async () => {
    const db = await open();
    expect(db.queryThread).toBeDefined();
    const declared = [...queryThreadOperations().keys()];
    expect(declared).toEqual(expect.arrayContaining(['chat.insertQuestion', 'chat.storeOutcome', 'chat.findSession', 'limits.countInWindows', 'assistant.insertProviderLogBatch', 'cluster.takeRateSlots', 'cluster.sendNotifications']));
    for (const name of declared) expect(db.queryThread!.runs(name), name).toBe(true);
    expect(logLines.filter((line) => line.level >= 40)).toEqual([]);
  });

  it('runs the operations there, and what they wrote is committed, for the server’s connection to read, once they resolve', async () => {
    const db = await open();
    const call = vi.spyOn(db.queryThread!, 'call');
    const created = await chatQueries.createSession(db, session('s1'));
    expect(call).toHaveBeenCalledWith('chat.createSession', expect.objectContaining({ session_id: 's1' }), false);
    expect(created).toMatchObject({ session_id: 's1', verified: true, client_ip: '10.0.0.1' });
    // Read on the server's own connection, not the thread's.
    const row = await db.db.selectFrom('public_chat_sessions').selectAll().where('session_id', '=', 's1').executeTakeFirst();
    expect(row).toEqual(created);

    // Calls of one turn go together and each gets its own answer: 40 requests counted in one window, every count once.
    const counts = await Promise.all(Array.from({ length: 40 }, () => countInWindows(db, { windows: [window('session:s1')], now: T0 })));
    expect(counts.map(([count]) => count!.request_count).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(call.mock.calls.filter(([name]) => name === 'limits.countInWindows')).toHaveLength(40);

    // Sessions read in the same turn are read together (one statement), each call with its own row.
    await chatQueries.createSession(db, session('s2'));
    const found = await Promise.all(['s2', 'nobody', 's1', 's2'].map((id) => chatQueries.findSession(db, id)));
    expect(found.map((row) => row?.session_id)).toEqual(['s2', undefined, 's1', 's2']);
    expect(found[2]).toEqual(created);
    expect(await queryThreadBatches().get('chat.findSession')!.run(db, ['s1', 'nobody'] as never)).toEqual([created, undefined]);
  });

  it('hands a failed statement’s error back with SQLite’s code, and the operation’s transaction is rolled back', async () => {
    const db = await open();
    await chatQueries.createSession(db, session('s1'));
    const error = await chatQueries.createSession(db, session('s1')).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ code: 'ERR_SQLITE_ERROR', errcode: expect.any(Number), message: expect.stringContaining('UNIQUE constraint failed') });
    // The session counted once: the second transaction's counters went with its refused row.
    const counters = await chatQueries.readCounters(db.db);
    expect(counters.find((counter) => counter.name === 'session_count')).toMatchObject({ value: 1 });
  });

  it('when the thread stops, the calls waiting on it fail and the next ones run on the server’s connection', async () => {
    const db = await open();
    const thread = db.queryThread!;
    const waiting = countInWindows(db, { windows: [window('session:s1')], now: T0 });
    await thread.thread.terminate();
    await expect(waiting).rejects.toThrow(/query thread stopped/);
    expect(thread.runs('limits.countInWindows')).toBe(false);
    expect(logLines.some((line) => line.level >= 50 && /query thread stopped/.test(line.msg))).toBe(true);

    const call = vi.spyOn(thread, 'call');
    const [counted] = await countInWindows(db, { windows: [window('session:s2')], now: T0 });
    expect(counted).toMatchObject({ identifier: 'session:s2', request_count: 1 });
    expect(call).not.toHaveBeenCalled();
  });

  it('answers the calls made before the database closes, and keeps what they wrote', async () => {
    const db = await open();
    const writes = Array.from({ length: 25 }, (_, i) => chatQueries.createSession(db, session(`s${i}`)));
    await db.close();
    temp.database = undefined;
    expect(await Promise.all(writes)).toHaveLength(25);

    const reopened = (temp.database = await openDatabase(`sqlite:${temp.file}`));
    const { count } = await reopened.db.selectFrom('public_chat_sessions').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
    expect(Number(count)).toBe(25);
  });

  it('is not started for an in-memory database, whose rows live in its one connection', async () => {
    const database = (temp.database = await openDatabase('sqlite::memory:', { queryThread: true }));
    expect(database.queryThread).toBeUndefined();
    await migrateToLatest(database);
    expect(await chatQueries.createSession(database, session('s1'))).toMatchObject({ session_id: 's1' });
  });
});

/** Each test's PostgreSQL database: a schema of its own, migrated, dropped after the test. */
function postgresForEachTest(): (options?: { queryThread?: boolean }) => Promise<Database> {
  let database: Database | undefined;
  let schema: string | undefined;
  afterEach(async () => {
    // The query thread's pool stops first: a DROP beside its last writes can deadlock (as freshDatabase's dispose does).
    await database?.queryThread?.stop();
    if (database && schema) await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(database.db);
    await database?.close();
    database = undefined;
  });
  return async (options = {}) => {
    const fresh = freshDatabase();
    schema = fresh.schema;
    database = await openDatabase(fresh.url, { logger, schema, queryThread: options.queryThread });
    await migrateToLatest(database);
    return database;
  };
}

describe.runIf(testDatabaseKind() === 'postgres')("the hot path's database work on a thread of its own, on PostgreSQL", () => {
  const open = postgresForEachTest();

  it("runs the operations on the thread's own pool, in the server's schema, and hands PostgreSQL's errors back with their code", async () => {
    const database = await open({ queryThread: true });
    const thread = database.queryThread!;
    expect(thread).toBeDefined();
    for (const name of queryThreadOperations().keys()) expect(thread.runs(name), name).toBe(true);

    const call = vi.spyOn(thread, 'call');
    const created = await chatQueries.createSession(database, session('s1'));
    expect(call).toHaveBeenCalledWith('chat.createSession', expect.objectContaining({ session_id: 's1' }), false);
    // Written in this schema (the thread's connections search it too), read back on the event loop's pool.
    expect(await database.db.selectFrom('public_chat_sessions').selectAll().where('session_id', '=', 's1').executeTakeFirst()).toEqual(created);

    const error = await chatQueries.createSession(database, session('s1')).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: '23505' });
  });

  it("logs through the server's logger what happens to the thread's pool, and goes on when PostgreSQL ends one of its connections", async () => {
    logLines.length = 0;
    const database = await open({ queryThread: true });
    await chatQueries.createSession(database, session('s1'));
    const { rows: thread } = await sql<{ pid: number }>`
      select pid from pg_stat_activity where application_name = ${`concierge query thread (${database.sharedAs!.schema})`}
    `.execute(database.db);
    expect(thread.length).toBeGreaterThan(0);
    for (const { pid } of thread) await sql`select pg_terminate_backend(${pid})`.execute(database.db);
    // One line a connection (an idle one is not also "in use"), the server's own (its time and pid), without pg's whole client.
    const warnings = () => logLines.filter((line) => line.level >= 40);
    await vi.waitFor(() => expect(warnings()).toHaveLength(thread.length));
    for (const line of warnings()) {
      expect(line).toMatchObject({ level: 50, thread: 'query', pid: process.pid, time: expect.any(Number), msg: 'idle PostgreSQL connection failed' });
      expect(line.err).toMatchObject({ message: expect.stringContaining('terminating connection') });
      expect(line.err).not.toHaveProperty('client');
    }
    // The pool opens another connection for the next call, still on the thread.
    const call = vi.spyOn(database.queryThread!, 'call');
    await chatQueries.createSession(database, session('s2'));
    expect(call).toHaveBeenCalledWith('chat.createSession', expect.objectContaining({ session_id: 's2' }), false);
    expect(await database.db.selectFrom('public_chat_sessions').select('session_id').orderBy('session_id').execute()).toEqual([{ session_id: 's1' }, { session_id: 's2' }]);
  });
});

describe.runIf(testDatabaseKind() === 'sqlite')('the calls of one operation that reach the thread together', () => {
  const call = (id: number, args: { shape?: string; keys: string[] }) => ({ id, args });
  const batch = { shape: (args: { shape?: string }) => args.shape, keys: (args: { keys: string[] }) => args.keys } as never;

  it('go in batches of one shape in which no key repeats; a call with no shape, or alone in its batch, runs alone', () => {
    const calls = [
      call(1, { shape: 'a', keys: ['s1'] }),
      call(2, { shape: 'a', keys: ['s2'] }),
      call(3, { shape: 'a', keys: ['s1'] }),
      call(4, { shape: 'b', keys: ['s3'] }),
      call(5, { keys: ['s4'] }),
      call(6, { shape: 'a', keys: ['s2', 's6'] }),
      call(7, { shape: 'a', keys: ['s5'] }),
    ];
    const { batches, alone } = batchCalls(calls, batch);
    expect(batches.map((group) => group.map((c) => c.id))).toEqual([
      [1, 2, 7],
      [3, 6],
    ]);
    expect(alone.map((c) => c.id).sort()).toEqual([4, 5]);
  });
});

describe.runIf(testDatabaseKind() === 'postgres')('questions and outcomes that reach the thread together, on PostgreSQL', () => {
  const open = postgresForEachTest();

  const NOW = '2026-03-13T15:00:05.000Z';
  const question = (sessionId: string, content: string, claimStaleBefore: string | null = '2026-03-13T14:59:00.000Z'): chatQueries.NewQuestion => ({
    message: {
      session_id: sessionId,
      role: 'user',
      content,
      state: 'processing',
      step: 'enqueue',
      attempts: 1,
      thread_id: null,
      owner: 'process-a',
      lease_expires_at: '2026-03-13T15:01:00.000Z',
      client_ip: '10.0.0.1',
      user_agent: 'test',
      client_message_id: null,
      now: NOW,
    },
    session: { session_id: sessionId, client_ip: '10.0.0.1', user_agent: 'test', now: NOW, expires_at: '2026-03-14T15:00:05.000Z' },
    claimStaleBefore,
    newClientIp: false,
    counters: { message_count: 1, 'state:processing': 1 },
  });
  const outcome = (messageId: number, sessionId: string, owner = 'process-a', response: string | null = `Answer to ${messageId}`): chatQueries.Outcome => ({
    messageId,
    owner,
    sessionId,
    changes: { response, state: 'completed', run_status: 'completed', prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, owner: null, lease_expires_at: null, updated_at: NOW },
    answer: { session_id: sessionId, role: 'assistant', content: response as string, state: 'completed', client_ip: '10.0.0.1', user_agent: 'test', now: NOW },
    exchange: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, error: null },
    now: NOW,
    counters: { message_count: 1, 'state:processing': -1, 'state:completed': 2, total_tokens: 15 },
  });
  const counter = async (database: Database, name: string) => Number((await chatQueries.readCounters(database.db)).find((row) => row.name === name)?.value ?? 0);

  it('stores each in one statement with every call’s own result, as the calls one by one would', async () => {
    const database = await open();
    const ids = Array.from({ length: 6 }, (_, i) => `s${i}`);
    for (const id of ids) await chatQueries.createSession(database, session(id));
    // s5's hold is taken by a request in flight: its question is refused, and nothing of it written.
    await chatQueries.claimInFlight(database.db, 's5', NOW, '2026-03-13T14:59:00.000Z');

    const insertMany = queryThreadBatches().get('chat.insertQuestion')!;
    const questionIds = (await insertMany.run(database, ids.map((id) => question(id, `Where is Hall ${id}?`)) as never)) as (number | null)[];
    expect(questionIds.slice(0, 5)).toEqual([expect.any(Number), expect.any(Number), expect.any(Number), expect.any(Number), expect.any(Number)]);
    expect(questionIds[5]).toBeNull();
    const stored = await database.db.selectFrom('public_chat_messages').select(['id', 'session_id', 'content', 'owner']).orderBy('id').execute();
    expect(stored).toEqual(ids.slice(0, 5).map((id, i) => ({ id: questionIds[i], session_id: id, content: `Where is Hall ${id}?`, owner: 'process-a' })));
    const held = await database.db.selectFrom('public_chat_sessions').select(['session_id', 'in_flight_since']).orderBy('session_id').execute();
    expect(held.every((row) => row.in_flight_since !== null)).toBe(true);
    expect(await counter(database, 'message_count')).toBe(5);
    expect(await counter(database, 'state:processing')).toBe(5);

    // The outcomes: s3's question was taken over by another process, whose outcome it is to store.
    await database.db.updateTable('public_chat_messages').set({ owner: 'process-b' }).where('id', '=', questionIds[3]!).execute();
    const storeMany = queryThreadBatches().get('chat.storeOutcome')!;
    const owned = await storeMany.run(database, ids.slice(0, 5).map((id, i) => outcome(questionIds[i]!, id)) as never);
    expect(owned).toEqual([true, true, true, false, true]);
    const answers = await database.db.selectFrom('public_chat_messages').select(['session_id', 'content']).where('role', '=', 'assistant').orderBy('session_id').execute();
    expect(answers).toEqual(['s0', 's1', 's2', 's4'].map((id) => ({ session_id: id, content: `Answer to ${questionIds[ids.indexOf(id)]}` })));
    const sessions = await database.db.selectFrom('public_chat_sessions').select(['session_id', 'message_count', 'total_tokens', 'in_flight_since']).orderBy('session_id').execute();
    expect(sessions.map((row) => [row.session_id, row.message_count, row.total_tokens, row.in_flight_since === null])).toEqual([
      ['s0', 1, 15, true],
      ['s1', 1, 15, true],
      ['s2', 1, 15, true],
      ['s3', 0, 0, false],
      ['s4', 1, 15, true],
      ['s5', 0, 0, false],
    ]);
    expect(await counter(database, 'message_count')).toBe(9);
    expect(await counter(database, 'state:processing')).toBe(1);
    expect(await counter(database, 'state:completed')).toBe(8);
    expect(await counter(database, 'total_tokens')).toBe(60);
  });

  it('counts requests that come in together in one upsert; a window several of them count gives each its own count, in order', async () => {
    const database = await open();
    const countMany = queryThreadBatches().get('limits.countInWindows')!;
    const address = { ...window('ip:10.0.0.1'), max_requests: 2 };
    // Three visitors behind one address (a venue's Wi-Fi): their sessions' windows and the address's, which allows 2.
    const calls = ['s1', 's2', 's3'].map((id) => ({ windows: [window(`session:${id}`), address], now: T0 }));
    await countInWindows(database, { windows: [window('session:s1')], now: T0 });
    const counted = (await countMany.run(database, calls as never)) as { identifier: string; request_count: number }[][];
    expect(counted.map((rows) => Object.fromEntries(rows.map((row) => [row.identifier, row.request_count])))).toEqual([
      { 'session:s1': 2, 'ip:10.0.0.1': 1 },
      { 'session:s2': 1, 'ip:10.0.0.1': 2 },
      { 'session:s3': 1, 'ip:10.0.0.1': 3 },
    ]);
    // Another batch later in the same window goes on from there.
    const next = (await countMany.run(database, [calls[0]!, { windows: [address], now: T0 }] as never)) as { identifier: string; request_count: number }[][];
    expect(next.map((rows) => rows.find((row) => row.identifier === 'ip:10.0.0.1')!.request_count)).toEqual([4, 5]);
    const rows = await database.db.selectFrom('public_chat_rate_limits').select(['identifier', 'request_count', 'limited']).orderBy('identifier').execute();
    expect(rows).toEqual([
      { identifier: 'ip:10.0.0.1', request_count: 5, limited: true },
      { identifier: 'session:s1', request_count: 3, limited: false },
      { identifier: 'session:s2', request_count: 1, limited: false },
      { identifier: 'session:s3', request_count: 1, limited: false },
    ]);
  });

  it('through the thread: calls of one turn get their own results, and a call that fails fails alone', async () => {
    const database = await open({ queryThread: true });
    const ids = Array.from({ length: 8 }, (_, i) => `s${i}`);
    await Promise.all(ids.map((id) => chatQueries.createSession(database, session(id))));
    const found = await Promise.all([...ids, 'nobody', 's0'].map((id) => chatQueries.findSession(database, id)));
    expect(found.map((row) => row?.session_id)).toEqual([...ids, undefined, 's0']);

    const questionIds = await Promise.all(ids.map((id) => chatQueries.insertQuestion(database, question(id, `Question ${id}`))));
    expect(new Set(questionIds).size).toBe(8);
    // One outcome is refused by the database (an answer without its text): the batch writes nothing, and the calls go again one by one.
    const results = await Promise.allSettled(ids.map((id, i) => chatQueries.storeOutcome(database, outcome(questionIds[i]!, id, 'process-a', i === 2 ? null : `Answer ${id}`))));
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: '23502' });
    expect(await database.db.selectFrom('public_chat_messages').select('session_id').where('role', '=', 'assistant').orderBy('session_id').execute()).toHaveLength(7);
    expect(await counter(database, 'state:completed')).toBe(14);
    expect(await counter(database, 'state:processing')).toBe(1);
  });
});
