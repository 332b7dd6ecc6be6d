import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cookieFrom, createTestContext, minuteStartClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

describe('status and control panel endpoints', () => {
  let ctx: TestContext;
  let admin: string;
  beforeEach(async () => {
    ctx = await createTestContext({ env: { METRICS_TOKEN: 'a-long-metrics-token-for-tests', CONVENTION_TIMEZONE: 'America/Chicago' } });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
  });
  afterEach(() => ctx.close());

  const post = (url: string) => ctx.app.inject({ method: 'POST', url, headers: { cookie: admin } });
  const status = async () => (await ctx.app.inject({ method: 'GET', url: '/api/status', headers: { cookie: admin } })).json();

  it('pauses and resumes, answering 409 when already in that state', async () => {
    expect((await post('/api/resume')).statusCode).toBe(409);
    expect((await post('/api/resume')).json()).toMatchObject({ error: 'bot already running' });
    expect((await post('/api/pause')).statusCode).toBe(200);
    expect((await post('/api/pause')).json()).toMatchObject({ error: 'bot already paused' });
    expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).json().paused).toBe(true);
    expect((await post('/api/resume')).statusCode).toBe(200);
    expect(await status()).toMatchObject({ paused: false, pause_count: 1, resume_count: 1 });
  });

  it('reports true public chat figures, provider counts and requests per route pattern', async () => {
    await uploadKnowledge(ctx.app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.');
    const visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: '198.51.100.4' }));
    const ask = () =>
      ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'Where is the lost and found?' }, headers: { cookie: visitor }, remoteAddress: '198.51.100.4' });
    const first = await ask();
    await ask();
    await ctx.app.inject({ method: 'POST', url: '/public/chat/feedback', payload: { feedback_id: first.json().feedback_id, type: 'good' }, headers: { cookie: visitor } });
    await ctx.app.inject({ method: 'GET', url: '/api/crawler_events?limit=5', headers: { cookie: admin } });
    await ctx.app.inject({ method: 'GET', url: '/api/crawler_events?limit=7', headers: { cookie: admin } });

    const figures = await status();
    expect(figures.public_chat).toMatchObject({
      session_count: 1,
      active_session_count: 1,
      unique_thread_count: 1,
      unique_client_ip_count: 1,
      message_count: 4,
      message_error_count: 0,
      message_state_counts: { completed: 4 },
      run_status_counts: { completed: 2 },
      feedback_count: 1,
      feedback_type_counts: { good: 1 },
      messages_today: 4,
      sessions_today: 1,
      new_sessions_today: 1,
      rate_limit_exceeded_count: 0,
    });
    expect(figures.public_chat.total_tokens).toBeGreaterThan(0);
    expect(figures.public_chat.average_processing_time_ms).toBeGreaterThanOrEqual(0);
    expect(figures.openai).toMatchObject({ create_thread: 1, create_message: 2, create_run: 2, list_message: 2, run_status: { completed: 2 } });
    expect(figures.openai.total_tokens).toBe(figures.public_chat.total_tokens);
    expect(figures.api_requests['GET /api/crawler_events']).toBe(2);
    expect(figures.api_requests['POST /public/chat/send']).toBe(2);
    expect(figures.uptime).toMatch(/\d+s$/);
    expect(figures.crawler).toMatchObject({ enabled: true, runs_triggered: 0 });

    const cleared = await post('/api/clear_threads');
    expect(cleared.json()).toEqual({ success: true, cleared: 1 });
    expect((await status()).public_chat.unique_thread_count).toBe(0);
  });

  it('answers 503 for Discord actions until the bot is configured, and reloads an empty user list', async () => {
    for (const action of ['register_commands', 'connect', 'disconnect']) {
      const reply = await post(`/api/discord/${action}`);
      expect(reply.statusCode).toBe(503);
      expect(reply.json()).toEqual({ error: 'Discord is not configured', code: 'discord_not_configured' });
    }
    expect((await post('/api/users/reload')).json()).toEqual([]);
  });

  it('shuts down gracefully on Kill', async () => {
    let asked = 0;
    ctx.deps.requestShutdown = () => asked++;
    const reply = await post('/api/quit');
    expect(reply.json()).toEqual({ success: true, message: 'Shutting down' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(asked).toBe(1);
  });

  it('serves Prometheus metrics to a signed-in admin or the metrics token only', async () => {
    expect((await ctx.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401);
    const byToken = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer a-long-metrics-token-for-tests' } });
    expect(byToken.statusCode).toBe(200);
    expect(byToken.headers['content-type']).toContain('text/plain');
    expect(byToken.body).toContain('# TYPE concierge_public_chat_sessions gauge');
    expect(byToken.body).toMatch(/concierge_paused 0/);
    const byAdmin = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { cookie: admin } });
    expect(byAdmin.statusCode).toBe(200);
  });
});

describe('status counters', () => {
  let ctx: TestContext;
  afterEach(() => ctx.close());

  it('match a full recount of the tables after chats, feedback, limits and clearing threads', async () => {
    ctx = await createTestContext({ clock: minuteStartClock() });
    const admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', public_chat_requests_per_minute: 2 });
    await uploadKnowledge(ctx.app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.');
    for (const ip of ['198.51.100.1', '198.51.100.2', '198.51.100.2']) {
      const cookie = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: ip }));
      const send = () => ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'lost and found?' }, headers: { cookie }, remoteAddress: ip });
      const first = await send();
      await send();
      await send(); // over the limit
      await ctx.app.inject({ method: 'POST', url: '/public/chat/feedback', payload: { feedback_id: first.json().feedback_id, type: 'good' }, headers: { cookie } });
    }
    await ctx.app.inject({ method: 'POST', url: '/api/clear_threads', headers: { cookie: admin } });

    const figures = (await ctx.app.inject({ method: 'GET', url: '/api/status', headers: { cookie: admin } })).json().public_chat;
    const { db } = ctx.deps.database;
    const count = async (query: Promise<{ count: number | string | bigint } | undefined>) => Number((await query)?.count ?? 0);
    expect(figures.session_count).toBe(await count(db.selectFrom('public_chat_sessions').select((eb) => eb.fn.countAll().as('count')).executeTakeFirst()));
    expect(figures.message_count).toBe(await count(db.selectFrom('public_chat_messages').select((eb) => eb.fn.countAll().as('count')).executeTakeFirst()));
    expect(figures.message_count).toBe(12);
    expect(figures.message_state_counts).toEqual({ completed: 12 });
    expect(figures.unique_thread_count).toBe(0);
    expect(figures.unique_client_ip_count).toBe(2);
    expect(figures.rate_limit_exceeded_count).toBe(3);
    expect(figures.feedback_type_counts).toEqual({ good: 3 });
    const tokens = await db.selectFrom('public_chat_messages').select((eb) => eb.fn.sum<number>('total_tokens').as('sum')).where('role', '=', 'user').executeTakeFirstOrThrow();
    expect(figures.total_tokens).toBe(Number(tokens.sum));
  });
});
