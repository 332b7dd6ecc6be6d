import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ASK_ERRORS } from '../ask/ask-pipeline.ts';
import { bumpCounters, readCounters } from './chat.queries.ts';
import { cookieFrom, createTestContext, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

const NOTES = '# Practical information\n\nThe lost and found is at the registration desk in the lobby, open 8:00 to 20:00.\n';
const NOW = new Date('2026-03-14T18:00:00Z');

/**
 * Questions a stopped process was answering (DESIGN §9 "Ask pipeline
 * ownership"): taken over once their owner's lease ran out, resumed from
 * what they reached, and their sessions freed.
 */
describe('public chat questions after a process stops', () => {
  let ctx: TestContext;
  let cookie: string;
  let sessionId: string;
  const time = manualClock(NOW);

  beforeEach(async () => {
    time.set(NOW);
    ctx = await createTestContext({ clock: time.clock });
    const admin = await signIn(ctx.app);
    expect((await uploadKnowledge(ctx.app, admin, 'notes.md', NOTES)).statusCode).toBe(200);
    cookie = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } }));
    sessionId = (await db().selectFrom('public_chat_sessions').select('session_id').executeTakeFirstOrThrow()).session_id;
  });
  afterEach(() => ctx.close());

  const db = () => ctx.deps.database.db;
  const send = (payload: object) => ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload, headers: { cookie } });
  const question = (id: number) => db().selectFrom('public_chat_messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const runs = async (messageId: number) => (await db().selectFrom('openai_create_run_logs').select('id').where('public_chat_message_id', '=', messageId).execute()).length;

  /**
   * What a process leaves behind when it dies mid-answer: the question row in
   * processing under its owner, the session's in-flight slot held, and
   * whatever the provider got before the end (`reached`).
   */
  async function leftBehind(owner: string, options: { leaseFromNow: number; reached: 'nothing' | 'message' | 'run'; attempts?: number; clientMessageId?: string }) {
    const now = time.clock.now().toISOString();
    const text = 'Where is the lost and found?';
    const row = await db()
      .insertInto('public_chat_messages')
      .values({
        session_id: sessionId,
        role: 'user',
        content: text,
        state: 'processing',
        step: 'enqueue',
        attempts: options.attempts ?? 1,
        owner,
        lease_expires_at: new Date(time.clock.now().getTime() + options.leaseFromNow).toISOString(),
        client_message_id: options.clientMessageId ?? null,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await bumpCounters(db(), { message_count: 1, 'state:processing': 1 });
    await db().updateTable('public_chat_sessions').set({ in_flight_since: now }).where('session_id', '=', sessionId).execute();
    if (options.reached !== 'nothing') {
      const log = { sessionId, messageId: row.id };
      const thread = await ctx.deps.assistant.provider.createThread({ request() {}, response() {} });
      const message = await ctx.deps.assistant.provider.createMessage({ request() {}, response() {} }, thread, text);
      let runId: string | null = null;
      if (options.reached === 'run') {
        const started = await ctx.deps.assistant.start(log, text, { threadId: thread, messageId: message, runId: null }, { settings: ctx.deps.pipeline.runSettings() });
        runId = started.run.id;
      }
      await db().updateTable('public_chat_messages').set({ thread_id: thread, provider_message_id: message, run_id: runId }).where('id', '=', row.id).execute();
    }
    return row.id;
  }

  /** Lets taken-over questions finish (they run in the background, nobody waits on them). */
  async function settled(id: number) {
    await expect.poll(async () => (await question(id)).state, { timeout: 5000 }).not.toBe('processing');
    return question(id);
  }

  it('waits for the stored run of a question whose owner\'s lease ran out, and frees the session', async () => {
    const id = await leftBehind('proc_dead', { leaseFromNow: -1, reached: 'run' });
    expect((await send({ message: 'Another question?' })).statusCode).toBe(409);

    expect((await ctx.deps.leases.tick()).recovered).toBe(1);
    const row = await settled(id);
    expect(row).toMatchObject({ state: 'completed', attempts: 2, owner: null, run_status: 'completed' });
    expect(row.response).toContain('registration desk in the lobby');
    expect(await runs(id)).toBe(1);

    const history = (await ctx.app.inject({ method: 'GET', url: '/public/chat/history', headers: { cookie } })).json();
    expect(history.exchanges.map((exchange: { answer: string }) => exchange.answer)).toEqual([row.response]);
    await expect.poll(async () => (await send({ message: 'Where is the lost and found?' })).statusCode, { timeout: 10_000 }).toBe(200);
  });

  it('asks once more a question that never reached a run, without repeating the stored question', async () => {
    const id = await leftBehind('proc_dead', { leaseFromNow: -1, reached: 'message' });
    await ctx.deps.leases.tick();
    const row = await settled(id);
    expect(row.state).toBe('completed');
    expect(row.response).toContain('registration desk');
    expect(await runs(id)).toBe(1);
    const messages = await db().selectFrom('openai_create_message_logs').select('id').where('public_chat_message_id', '=', id).execute();
    expect(messages).toHaveLength(0);
  });

  it('fails with a clear error a question already asked again once, and lets the session ask again', async () => {
    const id = await leftBehind('proc_dead', { leaseFromNow: -1, reached: 'nothing', attempts: 2 });
    await ctx.deps.leases.tick();
    const row = await settled(id);
    expect(row).toMatchObject({ state: 'failed', error: ASK_ERRORS.interrupted, owner: null });
    expect(await runs(id)).toBe(0);
    // The first answer of this context loads the offline index: more than the poll's default second on a busy machine.
    await expect.poll(async () => (await send({ message: 'Where is the lost and found?' })).statusCode, { timeout: 10_000 }).toBe(200);
    const counters = Object.fromEntries((await readCounters(db())).map((counter) => [counter.name, Number(counter.value)]));
    expect(counters['state:processing']).toBe(0);
    expect(counters['state:failed']).toBe(1);
  });

  it('leaves alone a question whose owner still renews its lease', async () => {
    const id = await leftBehind('proc_alive', { leaseFromNow: 10_000, reached: 'run' });
    expect((await ctx.deps.leases.tick()).recovered).toBe(0);
    expect(await question(id)).toMatchObject({ state: 'processing', owner: 'proc_alive' });
    time.advance(10_001);
    expect((await ctx.deps.leases.tick()).recovered).toBe(1);
    expect((await settled(id)).state).toBe('completed');
  });

  it('answers a retry of an abandoned question at once, taking it over', async () => {
    const id = await leftBehind('proc_dead', { leaseFromNow: -1, reached: 'run', clientMessageId: 'q-1' });
    const retry = await send({ message: 'Where is the lost and found?', client_message_id: 'q-1' });
    expect(retry.statusCode).toBe(200);
    expect(retry.json()).toMatchObject({ success: true, feedback_id: id });
    expect(retry.json().response).toContain('registration desk');
  });

  it('takes over every unfinished question at once when asked to (a SQLite start)', async () => {
    const id = await leftBehind('proc_before_restart', { leaseFromNow: 10_000, reached: 'run' });
    expect((await ctx.deps.leases.tick({ everyone: true })).recovered).toBe(1);
    expect((await settled(id)).state).toBe('completed');
  });
});
