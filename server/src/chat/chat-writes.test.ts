import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openDatabase } from '../db/database.ts';
import { countedStatements } from '../test-support/counted-statements.ts';
import { createTestContext, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import * as queries from './chat.queries.ts';

const T0 = '2026-03-14T18:00:00.000Z';
const T1 = '2026-03-14T18:00:05.000Z';
const STALE_BEFORE = '2026-03-14T17:57:50.000Z';

/**
 * The hot path's two writes (a question stored, an outcome stored), which
 * are one statement each on PostgreSQL and a transaction on SQLite: all of
 * each is written, or none of it.
 */
describe('storing a question and its outcome', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
    await queries.insertSession(ctx.deps.database.db, { session_id: 's1', client_ip: '10.0.0.1', user_agent: 'phone', referer: null, verified: true, now: T0, expires_at: '2026-03-15T18:00:00.000Z' });
  });
  afterEach(() => ctx.close());

  const db = () => ctx.deps.database.db;
  const counters = async () => Object.fromEntries((await queries.readCounters(db())).map((row) => [row.name, Number(row.value)]));
  const messages = () => db().selectFrom('public_chat_messages').selectAll().orderBy('id').execute();
  const session = () => db().selectFrom('public_chat_sessions').selectAll().where('session_id', '=', 's1').executeTakeFirstOrThrow();
  const question = (content: string) => ({
    message: { session_id: 's1', role: 'user' as const, content, state: 'processing', step: 'enqueue', attempts: 1, owner: 'process-a', lease_expires_at: T1, client_ip: '10.0.0.1', user_agent: 'tablet', client_message_id: `c-${content}`, now: T1 },
    session: { session_id: 's1', client_ip: '10.0.0.1', user_agent: 'tablet', now: T1, expires_at: '2026-03-15T18:00:05.000Z' },
    claimStaleBefore: STALE_BEFORE,
    newClientIp: false,
    counters: { message_count: 1, 'state:processing': 1, session_duration_ms_sum: 5000 },
  });

  it('stores a question with its session claimed and counted, and refuses a second while the first holds the session', async () => {
    const id = await queries.insertQuestion(ctx.deps.database, question('When is the masquerade?'));
    expect(id).toEqual(expect.any(Number));
    const [row] = await messages();
    expect(row).toMatchObject({ id, session_id: 's1', role: 'user', content: 'When is the masquerade?', state: 'processing', owner: 'process-a', client_message_id: 'c-When is the masquerade?', attempts: 1 });
    expect(await session()).toMatchObject({ in_flight_since: T1, last_seen_at: T1, user_agent: 'tablet' });
    expect(await counters()).toMatchObject({ message_count: 1, 'state:processing': 1, session_duration_ms_sum: 5000 });

    // The session's hold is taken: nothing of the second question is written.
    expect(await queries.insertQuestion(ctx.deps.database, question('Where is Hall B?'))).toBeNull();
    expect(await messages()).toHaveLength(1);
    expect(await counters()).toMatchObject({ message_count: 1, 'state:processing': 1, session_duration_ms_sum: 5000 });
  });

  it('notes a new address of the session with the question', async () => {
    const id = await queries.insertQuestion(ctx.deps.database, { ...question('Is there a cloakroom?'), newClientIp: true, session: { ...question('').session, client_ip: '10.0.0.2' } });
    expect(id).toEqual(expect.any(Number));
    expect(await db().selectFrom('public_chat_client_ips').select('client_ip').execute()).toEqual([{ client_ip: '10.0.0.2' }]);
    expect(await counters()).toMatchObject({ client_ip_count: 1, message_count: 1 });
  });

  it('stores the conversation a first question opened on the session, on the question while its owner holds it, and counts it', async () => {
    const id = (await queries.insertQuestion(ctx.deps.database, question('When is the masquerade?')))!;
    const { database, statements } = countedStatements(ctx.deps.database);
    await queries.storeThread(database, { sessionId: 's1', messageId: id, owner: 'process-a', threadId: 'conv_1', now: T1 });
    if (testDatabaseKind() === 'postgres') expect(statements).toHaveLength(1);
    expect(await session()).toMatchObject({ thread_id: 'conv_1', updated_at: T1 });
    expect((await messages())[0]).toMatchObject({ thread_id: 'conv_1', step: 'creating_message' });
    expect(await counters()).toMatchObject({ thread_count: 1 });

    // Taken over by another process: the question is left to its new owner.
    await queries.storeThread(ctx.deps.database, { sessionId: 's1', messageId: id, owner: 'process-b', threadId: 'conv_2', now: T1 });
    expect((await messages())[0]).toMatchObject({ thread_id: 'conv_1' });
    expect(await counters()).toMatchObject({ thread_count: 2 });
  });

  it("stores an answer only while the process still owns the question, and releases the session's hold with it", async () => {
    const id = (await queries.insertQuestion(ctx.deps.database, question('When is the masquerade?')))!;
    const outcome = (owner: string) => ({
      messageId: id,
      owner,
      changes: { response: 'Saturday at 19:00 in Hall A.', state: 'completed', owner: null, lease_expires_at: null, prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, updated_at: T1 },
      answer: { session_id: 's1', role: 'assistant' as const, content: 'Saturday at 19:00 in Hall A.', state: 'completed', client_ip: '10.0.0.1', user_agent: 'tablet', sources: '[]', total_tokens: 150, now: T1 },
      sessionId: 's1',
      exchange: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, error: null },
      now: T1,
      counters: { message_count: 1, 'state:processing': -1, 'state:completed': 2, total_tokens: 150 },
    });

    // Another process took it over: nothing is written.
    expect(await queries.storeOutcome(ctx.deps.database, outcome('process-b'))).toBe(false);
    expect(await messages()).toHaveLength(1);
    expect(await session()).toMatchObject({ in_flight_since: T1, message_count: 0, total_tokens: 0 });
    expect(await counters()).toMatchObject({ message_count: 1, 'state:processing': 1 });
    expect((await counters())['state:completed']).toBeUndefined();

    expect(await queries.storeOutcome(ctx.deps.database, outcome('process-a'))).toBe(true);
    const [asked, answered] = await messages();
    expect(asked).toMatchObject({ state: 'completed', response: 'Saturday at 19:00 in Hall A.', owner: null, total_tokens: 150 });
    expect(answered).toMatchObject({ session_id: 's1', role: 'assistant', content: 'Saturday at 19:00 in Hall A.', state: 'completed', sources: '[]', total_tokens: 150, created_at: T1 });
    expect(await session()).toMatchObject({ in_flight_since: null, message_count: 1, prompt_tokens: 120, total_tokens: 150 });
    expect(await counters()).toMatchObject({ message_count: 2, 'state:processing': 0, 'state:completed': 2, total_tokens: 150 });

    // Stored once: a second attempt finds the question no longer owned.
    expect(await queries.storeOutcome(ctx.deps.database, outcome('process-a'))).toBe(false);
    expect(await messages()).toHaveLength(2);
  });

  it("stores the progress marks of several questions at once, each only while its owner still owns it", async () => {
    await queries.insertSession(db(), { session_id: 's2', client_ip: '10.0.0.2', user_agent: 'phone', referer: null, verified: true, now: T0, expires_at: '2026-03-15T18:00:00.000Z' });
    await queries.insertSession(db(), { session_id: 's3', client_ip: '10.0.0.3', user_agent: 'phone', referer: null, verified: true, now: T0, expires_at: '2026-03-15T18:00:00.000Z' });
    const ask = async (sessionId: string, owner: string) => {
      const asked = question(`Question of ${sessionId}`);
      return (await queries.insertQuestion(ctx.deps.database, { ...asked, message: { ...asked.message, session_id: sessionId, owner }, session: { ...asked.session, session_id: sessionId } }))!;
    };
    const [first, second, taken] = [await ask('s1', 'process-a'), await ask('s2', 'process-a'), await ask('s3', 'process-b')];
    await queries.storeProgressMarks(ctx.deps.database, [
      { messageId: first, owner: 'process-a', changes: { provider_message_id: 'msg_1', step: 'creating_run', updated_at: T1 } },
      { messageId: second, owner: 'process-a', changes: { run_id: 'run_2', run_status: 'queued', step: 'polling_run', updated_at: T1 } },
      { messageId: taken, owner: 'process-a', changes: { run_id: 'run_3', run_status: 'queued', step: 'polling_run', updated_at: T1 } },
    ]);
    const byId = new Map((await messages()).map((row) => [row.id, row]));
    expect(byId.get(first)).toMatchObject({ provider_message_id: 'msg_1', run_id: null, step: 'creating_run', updated_at: T1 });
    expect(byId.get(second)).toMatchObject({ provider_message_id: null, run_id: 'run_2', run_status: 'queued', step: 'polling_run' });
    expect(byId.get(taken)).toMatchObject({ run_id: null, step: 'enqueue' });

    // The next mark keeps what the first stored.
    await queries.storeProgressMarks(ctx.deps.database, [
      { messageId: first, owner: 'process-a', changes: { run_id: 'run_1', run_status: 'in_progress', step: 'polling_run', updated_at: T1 } },
      { messageId: second, owner: 'process-a', changes: { run_id: 'run_2', run_status: 'in_progress', step: 'polling_run', updated_at: T1 } },
    ]);
    expect(await db().selectFrom('public_chat_messages').select(['provider_message_id', 'run_id', 'run_status']).where('id', '=', first).executeTakeFirstOrThrow()).toEqual({ provider_message_id: 'msg_1', run_id: 'run_1', run_status: 'in_progress' });
  });

  /** A question in each of s1 (made before each test), s2 and s3, owned by process-a: their ids, in that order. */
  const questionsOfThreeSessions = async () => {
    const ids: number[] = [];
    for (const sessionId of ['s1', 's2', 's3']) {
      if (sessionId !== 's1') await queries.insertSession(db(), { session_id: sessionId, client_ip: '10.0.0.9', user_agent: 'phone', referer: null, verified: true, now: T0, expires_at: '2026-03-15T18:00:00.000Z' });
      const asked = question(`Question of ${sessionId}`);
      ids.push((await queries.insertQuestion(ctx.deps.database, { ...asked, message: { ...asked.message, session_id: sessionId }, session: { ...asked.session, session_id: sessionId } }))!);
    }
    return ids;
  };

  it.runIf(testDatabaseKind() === 'postgres')('locks the questions it marks in id order, as renewing the leases does, so the two never deadlock', async () => {
    const others = await Promise.all([1, 2].map(() => openDatabase(ctx.database.url, { schema: ctx.database.schema })));
    let release = () => {};
    try {
      const ids = await questionsOfThreeSessions();
      const [low, middle, high] = ids as [number, number, number];
      // A table of some size, so that PostgreSQL finds the marked rows through the primary key, in the order given.
      await sql`insert into public_chat_messages (session_id, role, content, state, created_at, updated_at)
        select 's1', 'user', 'Earlier question', 'completed', ${T0}, ${T0} from generate_series(1, 5000)`.execute(db());
      await sql`analyze public_chat_messages`.execute(db());
      const lockedElsewhere = async (id: number) =>
        others[1]!
          .transaction((trx) => sql`select id from public_chat_messages where id = ${id} for update nowait`.execute(trx))
          .then(() => false, () => true);

      // Another statement holds the highest; the marks, given highest first, take the others meanwhile and wait for it.
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding!: () => void;
      const isHeld = new Promise<void>((resolve) => (holding = resolve));
      const holder = others[0]!.transaction(async (trx) => {
        await sql`select id from public_chat_messages where id = ${high} for update`.execute(trx);
        holding();
        await held;
      });
      await isHeld;
      const mark = (id: number) => ({ messageId: id, owner: 'process-a', changes: { run_id: `run_${id}`, run_status: 'queued', step: 'polling_run', updated_at: T1 } });
      const marking = queries.storeProgressMarks(ctx.deps.database, [mark(high), mark(middle), mark(low)]);
      const deadline = Date.now() + 5000;
      while (!((await lockedElsewhere(low)) && (await lockedElsewhere(middle)))) {
        if (Date.now() > deadline) throw new Error('the marks did not lock the lower ids while waiting for the highest');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      release();
      await holder;
      await marking;
      expect(await queries.renewLeases(ctx.deps.database, { owner: 'process-a', until: T1 })).toBe(3);
      const rows = await db().selectFrom('public_chat_messages').select(['id', 'run_id']).where('id', 'in', ids).orderBy('id').execute();
      expect(rows.map((row) => row.run_id)).toEqual(ids.map((id) => `run_${id}`));
    } finally {
      release();
      for (const other of others) await other.close();
    }
  });

  /**
   * A new convention's database: the hot path's statements are prepared, and run often enough for PostgreSQL to
   * settle on a plan for each, while the questions' table holds three rows; then it grows by 20,000 answered
   * questions, and nothing analyzes it (autovacuum off, as on the test server). Runs `work` on a pool of one
   * connection opened as the server's event loop opens its own, or (`keyedStatements`) as the query thread does,
   * twelve times before the table grows and five after; returns the rows PostgreSQL read from the table in those
   * five, and the statements that connection prepared with how often each was planned anew.
   */
  const afterGrowth = async (keyedStatements: boolean, work: (database: Awaited<ReturnType<typeof openDatabase>>, n: number) => Promise<unknown>) => {
    const connection = await openDatabase(ctx.database.url, { schema: ctx.database.schema, poolSize: 1, keyedStatements });
    try {
      /** Rows read from the questions' table so far, by sequential scans and through indexes, this connection's included. */
      const read = async () => {
        await sql`select pg_stat_force_next_flush()`.execute(connection.db);
        const { rows } = await sql<{ read: number }>`select seq_tup_read + coalesce(idx_tup_fetch, 0) as read from pg_stat_user_tables where relid = 'public_chat_messages'::regclass`.execute(connection.db);
        return rows[0]!.read;
      };
      for (let n = 0; n < 12; n++) await work(connection, n);
      await sql`insert into public_chat_messages (session_id, role, content, state, created_at, updated_at)
        select 's1', 'user', 'Earlier question', 'completed', ${T0}, ${T0} from generate_series(1, 20000)`.execute(db());
      const before = await read();
      for (let n = 12; n < 17; n++) await work(connection, n);
      const rowsRead = (await read()) - before;
      const { rows: prepared } = await sql<{ statement: string; generic_plans: number; custom_plans: number }>`
        select statement, generic_plans, custom_plans from pg_prepared_statements`.execute(connection.db);
      return { rowsRead, prepared: prepared.map((row) => ({ statement: row.statement, generic: row.generic_plans, custom: row.custom_plans })) };
    } finally {
      await connection.close();
    }
  };

  for (const [pool, keyedStatements] of [
    ["the event loop's pool", false],
    ["the query thread's pool", true],
  ] as const) {
    it.runIf(testDatabaseKind() === 'postgres')(`finds the questions it marks through their keys after the table has grown and nothing analyzed it (${pool})`, async () => {
      const ids = await questionsOfThreeSessions();
      const markAll = (database: Awaited<ReturnType<typeof openDatabase>>, n: number) =>
        queries.storeProgressMarks(
          database,
          ids.map((id) => ({ messageId: id, owner: 'process-a', changes: { run_id: `run_${n}`, run_status: 'queued', step: 'polling_run', updated_at: T1 } })),
        );
      const { rowsRead, prepared } = await afterGrowth(keyedStatements, markAll);
      expect(await db().selectFrom('public_chat_messages').select('run_id').where('id', 'in', ids).execute()).toEqual(ids.map(() => ({ run_id: 'run_16' })));
      // Five batches of marks find their three rows through the primary key, rather than read the 20,000 rows each time.
      expect(rowsRead).toBeLessThan(1000);
      const marks = prepared.find((statement) => statement.statement.includes('coalesce(v.provider_message_id'));
      if (keyedStatements) {
        // The query thread's connection plans the statement for its first five runs as prepared, then keeps one plan,
        // made while the table was small, for every later run.
        expect(marks).toMatchObject({ custom: 5, generic: expect.any(Number) });
        expect(marks!.generic).toBeGreaterThan(0);
      } else {
        expect(marks).toMatchObject({ generic: 0 });
      }
    });
  }

  it.runIf(testDatabaseKind() === 'postgres')("renews the leases through the in-flight questions' own index after the table has grown, on the query thread's pool", async () => {
    const ids = await questionsOfThreeSessions();
    const { rowsRead, prepared } = await afterGrowth(true, (database, n) => queries.renewLeases(database, { owner: 'process-a', until: `2026-03-14T18:01:${String(n).padStart(2, '0')}.000Z` }));
    expect(await db().selectFrom('public_chat_messages').select('lease_expires_at').where('id', 'in', ids).execute()).toEqual(ids.map(() => ({ lease_expires_at: '2026-03-14T18:01:16.000Z' })));
    // Its condition (state = 'processing') is a parameter: a kept plan could not use the partial index on it, so each
    // run is planned for its values, and reads the three questions in flight rather than the 20,000 answered.
    expect(rowsRead).toBeLessThan(1000);
    const held = prepared.filter((statement) => statement.statement.includes('"state" = $'));
    expect(held.length).toBeGreaterThan(0);
    for (const statement of held) expect(statement.generic).toBe(0);
  });
});

describe('creating a session', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  const counters = async () => Object.fromEntries((await queries.readCounters(ctx.deps.database.db)).map((row) => [row.name, Number(row.value)]));
  const values = (sessionId: string, clientIp: string | null, verified = false) => ({
    session_id: sessionId,
    client_ip: clientIp,
    user_agent: 'phone',
    referer: null,
    verified,
    now: T0,
    expires_at: '2026-03-15T18:00:00.000Z',
  });

  it('returns the row as it is read back, and counts the session and its address only when the address is new', async () => {
    const created = await queries.createSession(ctx.deps.database, values('s1', '10.0.0.1', true));
    expect(created).toEqual(await queries.findSession(ctx.deps.database, 's1'));
    expect(created).toMatchObject({ session_id: 's1', client_ip: '10.0.0.1', verified: true, verified_at: T0, active: true, first_seen_at: T0, expires_at: '2026-03-15T18:00:00.000Z' });
    expect(await counters()).toMatchObject({ session_count: 1, client_ip_count: 1 });

    expect(await queries.createSession(ctx.deps.database, values('s2', '10.0.0.1'))).toMatchObject({ session_id: 's2', verified: false, verified_at: null });
    expect(await queries.createSession(ctx.deps.database, values('s3', null))).toMatchObject({ session_id: 's3', client_ip: null });
    expect(await counters()).toMatchObject({ session_count: 3, client_ip_count: 1 });
    expect(await ctx.deps.database.db.selectFrom('public_chat_client_ips').select('client_ip').execute()).toEqual([{ client_ip: '10.0.0.1' }]);
  });

  it.runIf(testDatabaseKind() === 'postgres')('is one statement on PostgreSQL', async () => {
    const { database, statements } = countedStatements(ctx.deps.database);
    await queries.createSession(database, values('s1', '10.0.0.1'));
    expect(statements).toHaveLength(1);
  });
});

describe('the Status counters', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  const counters = async () => Object.fromEntries((await queries.readCounters(ctx.deps.database.db)).map((row) => [row.name, Number(row.value)]));
  const otherConnection = () => openDatabase(ctx.database.url, { schema: ctx.database.schema });

  it('reads what several connections added as one total per counter, and a counter set replaces what they added', async () => {
    const others = await Promise.all([1, 2, 3].map(otherConnection));
    try {
      // One after another: SQLite's connections would wait on its one write lock anyway.
      for (const [n, other] of others.entries()) await other.transaction((trx) => queries.bumpCounters(trx, { message_count: 1, total_tokens: 10 * (n + 1), thread_count: 1 }));
      await queries.bumpCounters(ctx.deps.database.db, { message_count: 1, 'state:processing': -1 });
      expect(await counters()).toMatchObject({ message_count: 4, total_tokens: 60, thread_count: 3, 'state:processing': -1 });

      await ctx.deps.database.transaction((trx) => queries.setCounter(trx, 'thread_count', 0));
      expect(await counters()).toMatchObject({ message_count: 4, thread_count: 0 });
      await others[0]!.transaction((trx) => queries.bumpCounters(trx, { thread_count: 1 }));
      expect((await counters()).thread_count).toBe(1);
    } finally {
      for (const other of others) await other.close();
    }
  });

  it.runIf(testDatabaseKind() === 'postgres')("adds to them without waiting for another connection's answer to commit", async () => {
    const shardOf = async (database: Awaited<ReturnType<typeof otherConnection>>) =>
      Number((await sql<{ shard: number }>`select pg_backend_pid() % ${sql.lit(queries.COUNTER_SHARDS)} as shard`.execute(database.db)).rows[0]!.shard);
    const holder = await otherConnection();
    const opened = [holder];
    let release = () => {};
    try {
      // Each pool here has made one connection (a backend of its own) and keeps using it.
      const heldShard = await shardOf(holder);
      let adder = await otherConnection();
      opened.push(adder);
      while ((await shardOf(adder)) === heldShard) opened.push((adder = await otherConnection()));

      // An answer's transaction has added to the counters and not committed yet.
      const held = new Promise<void>((resolve) => (release = resolve));
      let adding!: () => void;
      const added = new Promise<void>((resolve) => (adding = resolve));
      const holding = holder.transaction(async (trx) => {
        await queries.bumpCounters(trx, { message_count: 1, 'state:completed': 2 });
        adding();
        await held;
      });
      await added;
      // Another answer adds to the same counters at once; on one row per counter it would wait for the first to commit.
      await adder.transaction(async (trx) => {
        await sql`set local lock_timeout = '2s'`.execute(trx);
        await queries.bumpCounters(trx, { message_count: 1, 'state:completed': 2 });
      });
      expect(await counters()).toMatchObject({ message_count: 1, 'state:completed': 2 });
      release();
      await holding;
      expect(await counters()).toMatchObject({ message_count: 2, 'state:completed': 4 });
    } finally {
      release();
      for (const database of opened) await database.close();
    }
  });
});
