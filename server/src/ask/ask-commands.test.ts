import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_LOG_TABLE } from '../db/schema/assistant.ts';
import { createTestContext, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';
import type { AskCommandRow } from './ask-commands.queries.ts';
import type { AskCommandRequest } from './ask-commands.service.ts';
import { AskWorker, type AskCommandFront, type Delivery } from './ask-worker.ts';

const NOTES = `# Practical information

The lost and found is at the registration desk in the lobby, open 8:00 to 20:00.

Cosplay repair station: Room 112, with glue guns, safety pins and thread.`;

/** A front standing in for Discord: records what the worker tells each asker. */
class TestFront implements AskCommandFront {
  readonly delivered: { command: AskCommandRow; delivery: Delivery }[] = [];
  async deliver(command: AskCommandRow, delivery: Delivery): Promise<void> {
    this.delivered.push({ command, delivery });
  }
  kinds() {
    return this.delivered.map(({ command, delivery }) => `${command.prompt}:${delivery.kind}`);
  }
}

const HOUR = 3_600_000;
const NOW = new Date('2026-03-14T18:00:00Z');

describe('ask commands through the pipeline (a test front, no Discord)', () => {
  let ctx: TestContext;
  let front: TestFront;
  const time = manualClock(NOW);

  beforeEach(async () => {
    time.set(NOW);
    ctx = await createTestContext({ clock: time.clock });
    const admin = await signIn(ctx.app);
    expect((await uploadKnowledge(ctx.app, admin, 'notes.md', NOTES)).statusCode).toBe(200);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', user_ask_command_limit_6h: 3 });
    front = new TestFront();
    ctx.deps.askWorker.setFront(front);
  });
  afterEach(() => ctx.close());

  const db = () => ctx.deps.database.db;
  let interactions = 0;
  const request = (userId: string, prompt: string, extra: Partial<AskCommandRequest> = {}): AskCommandRequest => ({
    user: { id: userId, username: `user${userId}`, global_name: `User ${userId}` },
    prompt,
    whisper: false,
    type: 'ask',
    interaction: {
      id: `9000000000000${++interactions}`,
      token: `token-${interactions}`,
      expiresAt: new Date(time.clock.now().getTime() + 15 * 60_000).toISOString(),
      applicationId: '1000000000000000001',
      guildId: '1000000000000000002',
      channelId: '1000000000000000003',
      context: 'guild',
    },
    ...extra,
  });
  const submit = (userId: string, prompt: string, extra: Partial<AskCommandRequest> = {}) => ctx.deps.askCommands.submit(request(userId, prompt, extra));
  const command = (id: number) => db().selectFrom('ask_commands').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  /** Stores a finished command `hoursAgo` before now, as the quotas see it. */
  async function pastCommand(userId: string, msAgo: number, outcome: { state: string; total_tokens?: number; run_status?: string | null }) {
    await ctx.deps.users.seen({ id: userId, username: `user${userId}`, global_name: null });
    const at = new Date(time.clock.now().getTime() - msAgo).toISOString();
    await db()
      .insertInto('ask_commands')
      .values({ user_id: userId, prompt: 'earlier', type: 'ask', step: 'list_message', state: outcome.state, total_tokens: outcome.total_tokens ?? 0, run_status: outcome.run_status ?? null, created_at: at, updated_at: at })
      .execute();
  }

  it('answers a command, storing every step, the tokens and the five call logs', async () => {
    const submitted = await submit('111', 'Where is the lost and found?');
    expect(submitted.status).toBe('queued');
    await ctx.deps.askWorker.drain();

    const row = await command(submitted.command.id);
    expect(row).toMatchObject({ state: 'completed', step: 'list_message', attempts: 1, owner: null, run_status: 'completed', error: null });
    expect(row.response).toContain('registration desk in the lobby');
    expect(row.total_tokens).toBeGreaterThan(0);
    expect(row.thread_id).toMatch(/^thread_/);
    expect(row.run_id).toMatch(/^run_/);
    expect(row.started_at).not.toBeNull();
    expect(row.finished_at).not.toBeNull();
    expect(front.kinds()).toEqual(['Where is the lost and found?:answered']);
    const delivered = front.delivered[0]!.delivery;
    expect(delivered.kind === 'answered' && delivered.quota.available).toBe(2);

    for (const step of ['create_thread', 'create_message', 'create_run', 'retrieve_run', 'list_messages'] as const) {
      const logs = await db().selectFrom(PROVIDER_LOG_TABLE[step]).selectAll().where('ask_command_id', '=', row.id).execute();
      expect(logs.length, step).toBeGreaterThan(0);
      expect(logs[0]!.public_chat_message_id, step).toBeNull();
    }
    // The user keeps the conversation for the next question.
    const user = await ctx.deps.users.get('111');
    expect(user.thread_id).toBe(row.thread_id);
    const second = await submit('111', 'Is there a cosplay repair station?');
    await ctx.deps.askWorker.drain();
    expect((await command(second.command.id)).thread_id).toBe(row.thread_id);
  });

  it('takes priority users first, then the oldest', async () => {
    const worker = new AskWorker({
      database: ctx.deps.database,
      clock: ctx.deps.clock,
      config: ctx.deps.config,
      logger: ctx.deps.loggers.get('assistant'),
      pipeline: ctx.deps.pipeline,
      users: ctx.deps.users,
      maxConcurrent: 1,
    });
    worker.setFront(front);
    await ctx.deps.users.seen({ id: '300', username: 'vip', global_name: null });
    await ctx.app.inject({ method: 'PATCH', url: '/api/user/300', payload: { priority: true }, headers: { cookie: await signIn(ctx.app) } });
    await submit('100', 'first normal');
    await submit('200', 'second normal');
    await submit('300', 'priority');
    await worker.drain();
    expect(front.kinds()).toEqual(['priority:answered', 'first normal:answered', 'second normal:answered']);
  });

  it('keeps one command in flight per user: a second is refused, and the queue never runs two at once', async () => {
    const first = await submit('111', 'Where is the lost and found?');
    const second = await submit('111', 'Is there a cosplay repair station?');
    expect(second.status).toBe('in_flight');
    expect(second.status === 'in_flight' && second.message).toBe(ctx.deps.config.get().discord_rate_limit_message);
    expect((await command(second.command.id)).state).toBe('rate_limited');

    // Two queued for the same user (as after a restart) and one for another: one pass starts only two.
    await ctx.deps.users.seen({ id: '222', username: 'other', global_name: null });
    const now = time.clock.now().toISOString();
    await db().insertInto('ask_commands').values({ user_id: '111', prompt: 'again', type: 'ask', step: 'enqueue', state: 'queued', created_at: now, updated_at: now }).execute();
    await db().insertInto('ask_commands').values({ user_id: '222', prompt: 'other user', type: 'ask', step: 'enqueue', state: 'queued', created_at: now, updated_at: now }).execute();
    expect(await ctx.deps.askWorker.pass()).toBe(2);
    await ctx.deps.askWorker.drain();
    const states = await db().selectFrom('ask_commands').select(['prompt', 'state']).where('state', '!=', 'rate_limited').orderBy('id').execute();
    expect(states).toEqual([
      { prompt: 'Where is the lost and found?', state: 'completed' },
      { prompt: 'again', state: 'completed' },
      { prompt: 'other user', state: 'completed' },
    ]);
    expect(first.status).toBe('queued');
  });

  it('counts the 6 h limit right at the window edge, billable and pending only', async () => {
    // Limit 3 in 6 h. Exactly 6 h ago is out of the window; a millisecond later is in.
    await pastCommand('111', 6 * HOUR, { state: 'completed', total_tokens: 50, run_status: 'completed' });
    await pastCommand('111', 6 * HOUR - 1, { state: 'completed', total_tokens: 50, run_status: 'completed' });
    await pastCommand('111', 2 * HOUR, { state: 'completed', total_tokens: 0, run_status: 'completed' });
    // Not billable: failed before using tokens, refused, ignored.
    await pastCommand('111', HOUR, { state: 'failed', total_tokens: 0 });
    await pastCommand('111', HOUR, { state: 'rate_limited' });

    const third = await submit('111', 'Where is the lost and found?');
    expect(third.status).toBe('queued');
    await ctx.deps.askWorker.drain();
    const fourth = await submit('111', 'Where is the lost and found?');
    expect(fourth.status).toBe('limited');
    if (fourth.status !== 'limited') return;
    expect(fourth.quota).toMatchObject({ limit6h: 3, used6h: 3, available: 0 });
    // The oldest counted command (6 h − 1 ms ago) frees a place 1 ms from now.
    expect(fourth.quota.availableAt).toBe(new Date(NOW.getTime() + 1).toISOString());
    expect(fourth.message).toContain('3 questions in the last 6 hours');
    expect((await command(fourth.command.id)).state).toBe('rate_limited');

    time.advance(2);
    expect((await submit('111', 'Where is the lost and found?')).status).toBe('queued');
  });

  it('counts the 24 h limit at its edge, with a per-user override', async () => {
    await ctx.deps.users.seen({ id: '111', username: 'user111', global_name: null });
    const cookie = await signIn(ctx.app);
    const patched = await ctx.app.inject({ method: 'PATCH', url: '/api/user/111', payload: { request_limit_6h: 10, request_limit_24h: 10 }, headers: { cookie } });
    expect(patched.statusCode).toBe(200);
    for (let i = 0; i < 9; i++) await pastCommand('111', 23 * HOUR, { state: 'completed', total_tokens: 10 });
    await pastCommand('111', 24 * HOUR, { state: 'completed', total_tokens: 10 });
    expect((await submit('111', 'Where is the lost and found?')).status).toBe('queued');
    await ctx.deps.askWorker.drain();
    const refused = await submit('111', 'Where is the lost and found?');
    expect(refused.status).toBe('limited');
    expect(refused.status === 'limited' && refused.message).toContain('10 questions in the last 24 hours');
    expect(refused.status === 'limited' && refused.quota.availableAt).toBe(new Date(NOW.getTime() + HOUR).toISOString());
  });

  it('gives ignored users nothing, and while paused answers priority users only', async () => {
    const cookie = await signIn(ctx.app);
    await ctx.deps.users.seen({ id: '111', username: 'troll', global_name: null });
    await ctx.deps.users.seen({ id: '300', username: 'vip', global_name: null });
    await ctx.app.inject({ method: 'PATCH', url: '/api/user/111', payload: { ignored: true }, headers: { cookie } });
    await ctx.app.inject({ method: 'PATCH', url: '/api/user/300', payload: { priority: true }, headers: { cookie } });

    const ignored = await submit('111', 'Where is the lost and found?');
    expect(ignored.status).toBe('ignored');
    await ctx.deps.askWorker.drain();
    expect((await command(ignored.command.id)).state).toBe('ignored');
    expect(front.delivered).toEqual([]);

    const waiting = await submit('222', 'queued before the pause');
    await ctx.deps.config.update({ paused: true });
    const normal = await submit('444', 'Where is the lost and found?');
    expect(normal.status).toBe('paused');
    expect((await command(normal.command.id)).state).toBe('aborted');
    const vip = await submit('300', 'Where is the lost and found?');
    expect(vip.status).toBe('queued');
    await ctx.deps.askWorker.drain();
    expect(front.kinds()).toEqual(['Where is the lost and found?:answered']);
    expect((await command(vip.command.id)).state).toBe('completed');
    expect((await command(waiting.command.id)).state).toBe('queued');

    await ctx.deps.config.update({ paused: false });
    await ctx.deps.askWorker.drain();
    expect((await command(waiting.command.id)).state).toBe('completed');
    const runs = await db().selectFrom('openai_create_run_logs').select('ask_command_id').where('ask_command_id', 'is not', null).execute();
    expect(runs.map((run) => run.ask_command_id).sort()).toEqual([vip.command.id, waiting.command.id].sort());
  });

  it('bounds attempts by ask_command_max_attempts', async () => {
    await ctx.deps.config.update({ ask_command_max_attempts: 2 });
    const submitted = await submit('111', 'Where is the lost and found?');
    await db().updateTable('ask_commands').set({ attempts: 2 }).where('id', '=', submitted.command.id).execute();
    await ctx.deps.askWorker.drain();
    const row = await command(submitted.command.id);
    expect(row).toMatchObject({ state: 'failed', attempts: 3, error: 'Gave up after 2 attempts' });
    expect(front.delivered[0]!.delivery).toEqual({ kind: 'failed', message: ctx.deps.config.get().discord_error_message });
    const runs = await db().selectFrom('openai_create_run_logs').selectAll().where('ask_command_id', '=', row.id).execute();
    expect(runs).toEqual([]);
  });

  it('never starts a run within 2 minutes of the token\'s end', async () => {
    const soon = await submit('111', 'Where is the lost and found?', {
      interaction: { ...request('111', '').interaction!, expiresAt: new Date(NOW.getTime() + 90_000).toISOString() },
    });
    await ctx.deps.askWorker.drain();
    expect((await command(soon.command.id)).state).toBe('expired');
    expect(front.kinds()).toEqual(['Where is the lost and found?:expired']);
    const runs = await db().selectFrom('openai_create_run_logs').selectAll().where('ask_command_id', '=', soon.command.id).execute();
    expect(runs).toEqual([]);
  });

  describe('after a process stops', () => {
    /** A command left in flight by another process: its thread, question and run exist at the provider. */
    async function leftInFlight(owner: string, leaseFromNow: number) {
      const submitted = await submit('111', 'Where is the lost and found?');
      const started = await ctx.deps.assistant.start({ askCommandId: submitted.command.id }, 'Where is the lost and found?', { threadId: null, messageId: null, runId: null }, { settings: ctx.deps.pipeline.runSettings() });
      await db()
        .updateTable('ask_commands')
        .set({
          state: 'in_progress',
          step: 'polling_run',
          attempts: 1,
          owner,
          lease_expires_at: new Date(time.clock.now().getTime() + leaseFromNow).toISOString(),
          thread_id: started.threadId,
          message_id: started.messageId,
          run_id: started.run.id,
        })
        .where('id', '=', submitted.command.id)
        .execute();
      return submitted.command.id;
    }

    it('resumes a command whose owner\'s lease expired from its stored run, and leaves a live owner\'s alone', async () => {
      const dead = await leftInFlight('proc_dead', -1);
      await ctx.deps.users.seen({ id: '222', username: 'other', global_name: null });
      const alive = await (async () => {
        const submitted = await submit('222', 'Is there a cosplay repair station?');
        await db().updateTable('ask_commands').set({ state: 'in_progress', owner: 'proc_alive', lease_expires_at: new Date(time.clock.now().getTime() + 10_000).toISOString() }).where('id', '=', submitted.command.id).execute();
        return submitted.command.id;
      })();

      const { recovered } = await ctx.deps.leases.tick();
      expect(recovered).toBe(1);
      await ctx.deps.askWorker.drain();

      const resumed = await command(dead);
      expect(resumed).toMatchObject({ state: 'completed', attempts: 2, run_status: 'completed' });
      expect(resumed.response).toContain('registration desk');
      // The stored run was waited for, not asked again.
      expect(await db().selectFrom('openai_create_run_logs').selectAll().where('ask_command_id', '=', dead).execute()).toHaveLength(1);
      expect(await db().selectFrom('openai_create_message_logs').selectAll().where('ask_command_id', '=', dead).execute()).toHaveLength(1);
      expect(front.kinds()).toEqual(['Where is the lost and found?:answered']);

      const untouched = await command(alive);
      expect(untouched).toMatchObject({ state: 'in_progress', owner: 'proc_alive' });

      // Once the live owner stops renewing, its command is taken over too.
      time.advance(10_001);
      await ctx.deps.leases.tick();
      await ctx.deps.askWorker.drain();
      expect((await command(alive)).state).toBe('completed');
    });

    it('renews its own leases every pass', async () => {
      const submitted = await submit('111', 'Where is the lost and found?');
      await db()
        .updateTable('ask_commands')
        .set({ state: 'in_progress', owner: ctx.deps.pipeline.owner, lease_expires_at: new Date(time.clock.now().getTime() + 1000).toISOString() })
        .where('id', '=', submitted.command.id)
        .execute();
      time.advance(5000);
      const { renewed, recovered } = await ctx.deps.leases.tick();
      expect(renewed).toBe(1);
      expect(recovered).toBe(0);
      expect((await command(submitted.command.id)).lease_expires_at).toBe(new Date(time.clock.now().getTime() + 15_000).toISOString());
    });
  });
});
