import { DatabaseSync } from 'node:sqlite';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertSession, releaseOrphanedInFlight, renewLeases } from '../chat/chat.queries.ts';
import { countedStatements } from '../test-support/counted-statements.ts';
import { createTestContext, manualClock, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { AskWorker } from './ask-worker.ts';

const NOW = new Date('2026-03-14T18:00:00Z');

/**
 * The looks each process makes every second or five (the ask queue, its
 * leases, a stopped process's commands, sessions left holding their slot)
 * find nothing nearly always. They must not write then: on SQLite a write
 * takes the file's lock, waiting (the event loop blocked) for the query
 * thread's answers, which then wait for it in turn.
 */
describe('the periodic looks at the queue and the leases', () => {
  let ctx: TestContext;
  const time = manualClock(NOW);

  beforeEach(async () => {
    time.set(NOW);
    ctx = await createTestContext({ clock: time.clock });
  });
  afterEach(() => ctx.close());

  /** An ask worker like the process's own, whose statements are noted. */
  function countedWorker() {
    const counted = countedStatements(ctx.deps.database);
    const worker = new AskWorker({
      database: counted.database,
      clock: time.clock,
      config: ctx.deps.config,
      logger: pino({ level: 'silent' }),
      pipeline: ctx.deps.pipeline,
      users: ctx.deps.users,
    });
    return { worker, statements: counted.statements, database: counted.database, db: counted.database.db };
  }

  async function sessionHoldingItsSlot(since: Date): Promise<string> {
    const now = since.toISOString();
    const sessionId = `session-${Math.random().toString(36).slice(2)}`;
    const db = ctx.deps.database.db;
    await insertSession(db, { session_id: sessionId, client_ip: null, user_agent: null, referer: null, verified: true, now, expires_at: new Date(since.getTime() + 3_600_000).toISOString() });
    await db.updateTable('public_chat_sessions').set({ in_flight_since: now }).where('session_id', '=', sessionId).execute();
    return sessionId;
  }

  it('only read when there is nothing to take, renew, requeue or release', async () => {
    const { worker, statements, database, db } = countedWorker();
    const owner = ctx.deps.pipeline.owner;
    const until = new Date(NOW.getTime() + 15_000).toISOString();
    expect(await worker.pass()).toBe(0);
    expect(await worker.renew(owner, until)).toBe(0);
    expect(await renewLeases(database, { owner, until })).toBe(0);
    expect(await worker.recover({ owner, now: NOW, everyone: false })).toBe(0);
    expect(await worker.recover({ owner, now: NOW, everyone: true })).toBe(0);
    expect(await releaseOrphanedInFlight(db, NOW.toISOString())).toBe(0);
    expect(statements.length).toBeGreaterThan(0);
    expect(new Set(statements)).toEqual(new Set(['SelectQueryNode']));
  });

  it('still release a session left holding its slot, and not one whose question is being answered', async () => {
    const db = ctx.deps.database.db;
    const orphan = await sessionHoldingItsSlot(new Date(NOW.getTime() - 60_000));
    const answering = await sessionHoldingItsSlot(new Date(NOW.getTime() - 60_000));
    const now = NOW.toISOString();
    await db
      .insertInto('public_chat_messages')
      .values({ session_id: answering, role: 'user', content: 'Where is Hall B?', state: 'processing', step: 'enqueue', attempts: 1, created_at: now, updated_at: now })
      .execute();
    expect(await releaseOrphanedInFlight(db, now)).toBe(1);
    const held = await db.selectFrom('public_chat_sessions').select(['session_id', 'in_flight_since']).orderBy('session_id').execute();
    expect(Object.fromEntries(held.map((row) => [row.session_id, row.in_flight_since !== null]))).toEqual({ [orphan]: false, [answering]: true });
  });

  it.runIf(testDatabaseKind() === 'sqlite')('do not wait for another connection writing to the SQLite file', async () => {
    const file = ctx.database.url.replace(/^sqlite:/, '');
    const other = new DatabaseSync(file);
    other.exec('begin immediate');
    try {
      const owner = ctx.deps.pipeline.owner;
      const started = performance.now();
      await ctx.deps.askWorker.pass();
      await ctx.deps.askWorker.renew(owner, new Date(NOW.getTime() + 15_000).toISOString());
      await ctx.deps.leases.tick();
      // A write would have waited out the busy timeout (5 s) and failed.
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      other.exec('rollback');
      other.close();
    }
  });
});
