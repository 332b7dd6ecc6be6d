import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHAT_ERRORS } from './chat.service.ts';
import { countInWindow } from '../limits/limits.queries.ts';
import { cookieFrom, createTestContext, minuteStartClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

const NOTES = `# Practical information

The lost and found is at the registration desk in the lobby, open 8:00 to 20:00.

Cosplay repair station: Room 112, with glue guns, safety pins and thread.`;

describe('public chat', () => {
  let ctx: TestContext;
  let admin: string;

  beforeEach(async () => {
    ctx = await createTestContext({ clock: minuteStartClock() });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
    const upload = await uploadKnowledge(ctx.app, admin, 'notes.md', NOTES);
    expect(upload.statusCode).toBe(200);
  });
  afterEach(() => ctx.close());

  /** A visitor's session, readied the way the page does it with verification off. */
  async function visitor(remoteAddress = '198.51.100.7'): Promise<string> {
    const verify = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress });
    expect(verify.statusCode).toBe(200);
    return cookieFrom(verify);
  }

  const send = (cookie: string | undefined, payload: object, remoteAddress = '198.51.100.7') =>
    ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload, headers: cookie ? { cookie } : {}, remoteAddress });

  it('answers a question from the uploaded files and stores the exchange', async () => {
    const enabled = await ctx.app.inject({ method: 'GET', url: '/public/chat/turnstile/enabled' });
    expect(enabled.json()).toEqual({ enabled: false, success: true });
    const cookie = await visitor();

    const reply = await send(cookie, { message: '  Where is the lost and found?  ', token: '' });
    expect(reply.statusCode).toBe(200);
    const body = reply.json();
    expect(body).toMatchObject({ success: true, error: null, sources: [{ filename: 'notes.md' }] });
    expect(body.response).toContain('registration desk in the lobby');
    expect(body.feedback_id).toEqual(expect.any(Number));

    const rows = await ctx.deps.database.db.selectFrom('public_chat_messages').selectAll().orderBy('id').execute();
    expect(rows.map((row) => [row.role, row.state])).toEqual([
      ['user', 'completed'],
      ['assistant', 'completed'],
    ]);
    const [question, answer] = rows;
    expect(question).toMatchObject({ id: body.feedback_id, content: 'Where is the lost and found?', response: body.response, client_ip: '198.51.100.7', run_status: 'completed' });
    expect(question!.total_tokens).toBeGreaterThan(0);
    expect(question!.processing_duration_ms).toEqual(expect.any(Number));
    expect(question!.response_latency_ms).toEqual(expect.any(Number));
    expect(answer!.openai_message_id).toMatch(/^msg_/);

    const session = await ctx.deps.database.db.selectFrom('public_chat_sessions').selectAll().executeTakeFirstOrThrow();
    expect(session).toMatchObject({ message_count: 1, client_ip: '198.51.100.7', active: true, error: null });
    expect(session.thread_id).toMatch(/^thread_/);
    expect(session.total_tokens).toBe(question!.total_tokens);
  });

  it('keeps one conversation per session and restores it after a reload', async () => {
    const cookie = await visitor();
    await send(cookie, { message: 'Where is the lost and found?' });
    await send(cookie, { message: 'Is there a cosplay repair station?' });
    const history = await ctx.app.inject({ method: 'GET', url: '/public/chat/history', headers: { cookie } });
    const { exchanges } = history.json();
    expect(exchanges.map((exchange: { question: string }) => exchange.question)).toEqual(['Where is the lost and found?', 'Is there a cosplay repair station?']);
    expect(exchanges[1].answer).toContain('Room 112');
    expect(exchanges[1].sources).toEqual([expect.objectContaining({ filename: 'notes.md' })]);
    const threads = await ctx.deps.database.db.selectFrom('local_threads').selectAll().execute();
    expect(threads).toHaveLength(1);

    const stranger = await ctx.app.inject({ method: 'GET', url: '/public/chat/history' });
    expect(stranger.json()).toEqual({ success: true, exchanges: [], has_more: false, earlier_count: 0 });
  });

  it('answers a retried question once', async () => {
    const cookie = await visitor();
    const first = await send(cookie, { message: 'Where is the lost and found?', client_message_id: 'q-1' });
    const retry = await send(cookie, { message: 'Where is the lost and found?', client_message_id: 'q-1' });
    expect(retry.statusCode).toBe(200);
    expect(retry.json().feedback_id).toBe(first.json().feedback_id);
    expect(retry.json().response).toBe(first.json().response);
    const questions = await ctx.deps.database.db.selectFrom('public_chat_messages').select('id').where('role', '=', 'user').execute();
    expect(questions).toHaveLength(1);
  });

  it('refuses bad messages with a 400 that names the field', async () => {
    const cookie = await visitor();
    const blank = await send(cookie, { message: '   ' });
    expect(blank.statusCode).toBe(400);
    expect(blank.json()).toMatchObject({ success: false, code: 'validation_error', field: 'message' });
    const long = await send(cookie, { message: 'x'.repeat(2501) });
    expect(long.statusCode).toBe(400);
    expect(long.json().error).toContain('message');
    const exactly = await send(cookie, { message: `${'x'.repeat(2499)}?` });
    expect(exactly.statusCode).toBe(200);
    const noBody = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie, 'content-type': 'application/json' }, payload: '{oops' });
    expect(noBody.statusCode).toBe(400);
  });

  it('needs a session (401) and refuses while paused or disabled (503)', async () => {
    const none = await send(undefined, { message: 'hello' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ success: false, error: CHAT_ERRORS.noSession });

    const cookie = await visitor();
    await ctx.deps.config.update({ paused: true });
    const paused = await send(cookie, { message: 'hello' });
    expect(paused.statusCode).toBe(503);
    expect(paused.json().code).toBe('paused');

    await ctx.deps.config.update({ paused: false, public_chat_enabled: false });
    const disabled = await send(cookie, { message: 'hello' });
    expect(disabled.statusCode).toBe(503);
    expect(disabled.json().error).toBe('Public chat is currently disabled');
    const enabled = await ctx.app.inject({ method: 'GET', url: '/public/chat/turnstile/enabled' });
    expect(enabled.statusCode).toBe(503);
    expect(enabled.json()).toMatchObject({ success: false, error: 'Public chat is currently disabled' });
  });

  it('refuses a second question while one is in flight (409)', async () => {
    const cookie = await visitor();
    const sessionId = (await ctx.deps.database.db.selectFrom('public_chat_sessions').select('session_id').executeTakeFirstOrThrow()).session_id;
    await ctx.deps.database.db
      .updateTable('public_chat_sessions')
      .set({ in_flight_since: new Date().toISOString() })
      .where('session_id', '=', sessionId)
      .execute();
    const busy = await send(cookie, { message: 'hello' });
    expect(busy.statusCode).toBe(409);
    expect(busy.json().error).toBe(CHAT_ERRORS.inFlight);
    const stored = await ctx.deps.database.db.selectFrom('public_chat_messages').select('id').execute();
    expect(stored).toEqual([]);
  });

  it('limits each session to public_chat_requests_per_minute (429)', async () => {
    await ctx.deps.config.update({ public_chat_requests_per_minute: 2 });
    const cookie = await visitor();
    expect((await send(cookie, { message: 'lost and found?' })).statusCode).toBe(200);
    expect((await send(cookie, { message: 'lost and found?' })).statusCode).toBe(200);
    const limited = await send(cookie, { message: 'lost and found?' });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error).toBe(CHAT_ERRORS.rateLimited);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);

    const window = await ctx.deps.database.db.selectFrom('public_chat_rate_limits').selectAll().where('identifier', 'like', 'session:%').executeTakeFirstOrThrow();
    expect(window).toMatchObject({ request_count: 3, max_requests: 2, limited: true, client_ip: '198.51.100.7' });
    expect(window.limited_at).not.toBeNull();
  });

  it('lets exactly N requests from one address through a concurrent burst', async () => {
    await ctx.deps.config.update({ public_chat_requests_per_minute: 1 });
    // Per IP the limit is 10 × the per-session limit: 10 here.
    const cookies = await Promise.all(Array.from({ length: 14 }, () => visitor('203.0.113.50')));
    const replies = await Promise.all(cookies.map((cookie) => send(cookie, { message: 'lost and found?' }, '203.0.113.50')));
    const statuses = replies.map((reply) => reply.statusCode).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(4);
    // The address refused them: their sessions' minutes keep no trace of questions that never ran.
    const sessionWindows = await ctx.deps.database.db.selectFrom('public_chat_rate_limits').select('request_count').where('identifier', 'like', 'session:%').execute();
    expect(sessionWindows.map((window) => window.request_count).sort()).toEqual([...Array(4).fill(0), ...Array(10).fill(1)]);
  });

  it('counts a window atomically under concurrency', async () => {
    const now = new Date().toISOString();
    const window = { identifier: 'session:burst', client_ip: null, window_start: now, window_end: now, max_requests: 7, now };
    const counts = await Promise.all(Array.from({ length: 40 }, () => countInWindow(ctx.deps.database, window)));
    expect(counts.filter((count) => count.request_count <= 7)).toHaveLength(7);
    expect(Math.max(...counts.map((count) => count.request_count))).toBe(40);
  });

  describe('feedback', () => {
    async function answered() {
      const cookie = await visitor();
      const reply = await send(cookie, { message: 'Where is the lost and found?' });
      return { cookie, feedbackId: reply.json().feedback_id as number };
    }
    const feedback = (cookie: string | undefined, payload: object) =>
      ctx.app.inject({ method: 'POST', url: '/public/chat/feedback', payload, headers: { ...(cookie ? { cookie } : {}), 'user-agent': 'Phone/1.0' } });

    it('stores feedback on the caller\'s own answer', async () => {
      const { cookie, feedbackId } = await answered();
      const reply = await feedback(cookie, { feedback_id: feedbackId, type: 'outdated', description: '  The desk moved to Hall C  ', detail: 'seen at 10:00' });
      expect(reply.statusCode).toBe(200);
      expect(reply.json()).toEqual({ success: true, error: null });
      const stored = await ctx.deps.database.db.selectFrom('public_chat_feedback').selectAll().executeTakeFirstOrThrow();
      expect(stored).toMatchObject({ public_chat_message_id: feedbackId, type: 'outdated', description: 'The desk moved to Hall C', detail: 'seen at 10:00', user_agent: 'Phone/1.0' });
      const history = await ctx.app.inject({ method: 'GET', url: '/public/chat/history', headers: { cookie } });
      expect(history.json().exchanges[0].feedback_submitted).toBe(true);
    });

    it('needs a session (401) and the caller\'s own message (404)', async () => {
      const { feedbackId } = await answered();
      const anonymous = await feedback(undefined, { feedback_id: feedbackId, type: 'good' });
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json().error).toBe(CHAT_ERRORS.feedbackSession);
      const other = await visitor('198.51.100.99');
      const foreign = await feedback(other, { feedback_id: feedbackId, type: 'good' });
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json().error).toBe(CHAT_ERRORS.feedbackNotFound);
      const missing = await feedback(other, { feedback_id: 999999, type: 'good' });
      expect(missing.statusCode).toBe(404);
    });

    it('validates type and description (400)', async () => {
      const { cookie, feedbackId } = await answered();
      const cases: [object, string][] = [
        [{ feedback_id: feedbackId, type: 'meh' }, 'type'],
        [{ feedback_id: feedbackId, type: 'other' }, "Please provide details for 'Other' feedback"],
        [{ feedback_id: feedbackId, type: 'other', description: '   ' }, "Please provide details for 'Other' feedback"],
        [{ feedback_id: feedbackId, type: 'good', description: 'x'.repeat(501) }, 'at most 500'],
        [{ feedback_id: feedbackId, type: 'other', description: 'x'.repeat(2001) }, 'at most 2000'],
        [{ type: 'good' }, 'feedback_id'],
      ];
      for (const [payload, text] of cases) {
        const reply = await feedback(cookie, payload);
        expect(reply.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
        expect(reply.json().error).toContain(text);
      }
      expect((await feedback(cookie, { feedback_id: feedbackId, type: 'other', description: 'x'.repeat(2000) })).statusCode).toBe(200);
      expect((await feedback(cookie, { feedback_id: feedbackId, type: 'good', description: 'x'.repeat(500) })).statusCode).toBe(200);
    });

    const feedbackRows = () => ctx.deps.database.db.selectFrom('public_chat_feedback').selectAll().orderBy('type').execute();
    const status = async () => (await ctx.app.inject({ method: 'GET', url: '/api/status', headers: { cookie: admin } })).json().public_chat;

    it('keeps one feedback per type per message: a new one replaces the old', async () => {
      const { cookie, feedbackId } = await answered();
      for (const description of ['first', 'second', 'third']) {
        expect((await feedback(cookie, { feedback_id: feedbackId, type: 'outdated', description })).statusCode).toBe(200);
      }
      expect((await feedback(cookie, { feedback_id: feedbackId, type: 'other', description: 'the room is wrong' })).statusCode).toBe(200);
      const rows = await feedbackRows();
      expect(rows.map((row) => [row.type, row.description])).toEqual([
        ['other', 'the room is wrong'],
        ['outdated', 'third'],
      ]);
      expect(await status()).toMatchObject({ feedback_count: 2, feedback_type_counts: { outdated: 1, other: 1 } });

      // Twins sent at once (a double tap) end as one row, without an error.
      const twins = await Promise.all([1, 2, 3].map((n) => feedback(cookie, { feedback_id: feedbackId, type: 'good', description: `tap ${n}` })));
      expect(twins.map((reply) => reply.statusCode)).toEqual([200, 200, 200]);
      expect((await feedbackRows()).filter((row) => row.type === 'good')).toHaveLength(1);
      expect(await status()).toMatchObject({ feedback_count: 3 });
    });

    it("counts feedback against the session's own minute (feedback:<session>), apart from its questions", async () => {
      await ctx.deps.config.update({ public_chat_requests_per_minute: 5 });
      const { cookie, feedbackId } = await answered();
      const replies = [];
      for (let n = 0; n < 12; n++) replies.push(await feedback(cookie, { feedback_id: feedbackId, type: 'good', description: `post ${n}` }));
      expect(replies.map((reply) => reply.statusCode)).toEqual([...Array(5).fill(200), ...Array(7).fill(429)]);
      const refused = replies[5]!;
      expect(refused.json()).toMatchObject({ success: false, code: 'rate_limited', error: CHAT_ERRORS.feedbackRateLimited });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(await feedbackRows()).toEqual([expect.objectContaining({ type: 'good', description: 'post 4' })]);

      const sessionId = (await ctx.deps.database.db.selectFrom('public_chat_sessions').select('session_id').executeTakeFirstOrThrow()).session_id;
      const windows = await ctx.deps.database.db.selectFrom('public_chat_rate_limits').select(['identifier', 'request_count']).execute();
      expect(windows).toContainEqual({ identifier: `feedback:${sessionId}`, request_count: 12 });
      expect(windows).toContainEqual({ identifier: `session:${sessionId}`, request_count: 1 });
      // The session's questions have their own budget still.
      expect((await send(cookie, { message: 'Is there a cosplay repair station?' })).statusCode).toBe(200);
    });
  });

  it('lets an operator ask a test question through the same pipeline', async () => {
    const reply = await ctx.app.inject({ method: 'POST', url: '/api/chat/send', payload: { message: 'Where is the lost and found?' }, headers: { cookie: admin } });
    expect(reply.statusCode).toBe(200);
    expect(reply.json().response).toContain('registration desk');
    const anonymous = await ctx.app.inject({ method: 'POST', url: '/api/chat/send', payload: { message: 'hi' } });
    expect(anonymous.statusCode).toBe(401);
  });

  it('publishes every answer on the event bus', async () => {
    const seen: string[] = [];
    ctx.deps.events.subscribe('answer', (event) => seen.push(`${event.state}:${event.prompt}`));
    const cookie = await visitor();
    await send(cookie, { message: 'Where is the lost and found?' });
    expect(seen).toEqual(['completed:Where is the lost and found?']);
  });
});
