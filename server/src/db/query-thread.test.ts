import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as chatQueries from '../chat/chat.queries.ts';
import { countInWindows } from '../limits/limits.queries.ts';
import { sqliteFileForEachTest } from '../test-support/sqlite-file.ts';
import { freshDatabase, testDatabaseKind } from '../test-support/test-context.ts';
import { openDatabase, type Database } from './database.ts';
import { migrateToLatest } from './migrate.ts';
import { queryThreadOperations } from './query-thread.ts';

const logLines: { level: number; msg: string }[] = [];
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
    expect(declared).toEqual(expect.arrayContaining(['chat.insertQuestion', 'chat.storeOutcome', 'chat.findSession', 'limits.countInWindows', 'assistant.insertProviderLogBatch']));
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

describe.runIf(testDatabaseKind() === 'postgres')("the hot path's database work on a thread of its own, on PostgreSQL", () => {
  let database: Database | undefined;
  let schema: string | undefined;
  afterEach(async () => {
    if (database && schema) await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(database.db);
    await database?.close();
    database = undefined;
  });

  it("runs the operations on the thread's own pool, in the server's schema, and hands PostgreSQL's errors back with their code", async () => {
    const fresh = freshDatabase();
    schema = fresh.schema;
    database = await openDatabase(fresh.url, { logger, schema, queryThread: true });
    await migrateToLatest(database);
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
});
