import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieFrom, createTestContext, minuteStartClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

describe('public chat monitoring lists', () => {
  let ctx: TestContext;
  let admin: string;
  let alice: string;
  let aliceSession: string;
  let firstQuestion: number;

  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: { cookie: admin } });

  beforeAll(async () => {
    ctx = await createTestContext({ env: { CONVENTION_TIMEZONE: 'America/Chicago' }, clock: minuteStartClock() });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', public_chat_requests_per_minute: 2 });
    await uploadKnowledge(ctx.app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.');
    const visitor = async (ip: string) =>
      cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: ip }));
    alice = await visitor('198.51.100.1');
    const bob = await visitor('198.51.100.2');
    const ask = (cookie: string, message: string, ip: string) =>
      ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message }, headers: { cookie }, remoteAddress: ip });
    firstQuestion = (await ask(alice, 'Where is the lost and found?', '198.51.100.1')).json().feedback_id;
    await ask(alice, 'Is there a quidditch match?', '198.51.100.1');
    expect((await ask(alice, 'third question', '198.51.100.1')).statusCode).toBe(429);
    await ask(bob, 'Where is the lost and found?', '198.51.100.2');
    await ctx.app.inject({ method: 'POST', url: '/public/chat/feedback', payload: { feedback_id: firstQuestion, type: 'good' }, headers: { cookie: alice } });
    aliceSession = (await ctx.deps.database.db.selectFrom('public_chat_messages').select('session_id').where('id', '=', firstQuestion).executeTakeFirstOrThrow()).session_id;
  });
  afterAll(() => ctx.close());

  it('lists messages newest first with feedback, filtered by session, role and date', async () => {
    const all = (await get('/api/public_chat_messages')).json();
    expect(all.returned_count).toBe(6);
    expect(all.messages[0].id).toBeGreaterThan(all.messages[5].id);
    const question = all.messages.find((message: { id: number }) => message.id === firstQuestion);
    expect(question).toMatchObject({ role: 'user', state: 'completed', feedback_count: 1, feedback: [{ type: 'good' }] });

    const mine = (await get(`/api/public_chat_messages?session_id=${aliceSession.slice(2, 12).toUpperCase()}&role=user&order=asc`)).json();
    expect(mine.messages.map((message: { content: string }) => message.content)).toEqual(['Where is the lost and found?', 'Is there a quidditch match?']);

    const paged = (await get('/api/public_chat_messages?limit=2&offset=2')).json();
    expect(paged.returned_count).toBe(2);
    expect(paged.messages[0].id).toBe(all.messages[2].id);

    const future = (await get('/api/public_chat_messages?date_from=2999-01-01')).json();
    expect(future.returned_count).toBe(0);
    const today = new Date().toISOString().slice(0, 10);
    const byOtherSpelling = (await get(`/api/public_chat_messages?start_date=2000-01-01&end_date=${today}T23:59`)).json();
    expect(byOtherSpelling.returned_count).toBeGreaterThan(0);
  });

  it('refuses bad filter values with a 400 naming the parameter', async () => {
    for (const [url, field] of [
      ['/api/public_chat_messages?limit=0', 'limit'],
      ['/api/public_chat_messages?limit=500', 'limit'],
      ['/api/public_chat_messages?offset=-1', 'offset'],
      ['/api/public_chat_messages?order=sideways', 'order'],
      ['/api/public_chat_messages?role=robot', 'role'],
      ['/api/public_chat_messages?date_from=yesterday', 'date_from'],
      ['/api/public_chat_messages?date_from=2026-02-31', 'date_from'],
      ['/api/public_chat_sessions?active=maybe', 'active'],
      ['/api/public_chat_openai_create_run?message_id=abc', 'message_id'],
      ['/api/public/chat/feedback?type=meh', 'type'],
      ['/api/public_chat_rate_limits?date_from=2026-03-14&date_to=2026-03-13', 'date_to'],
    ]) {
      const reply = await get(url!);
      expect(reply.statusCode, url).toBe(400);
      expect(reply.json().error, url).toContain(field);
    }
  });

  it('lists feedback by message and type', async () => {
    const byMessage = (await get(`/api/public/chat/feedback?message_id=${firstQuestion}`)).json();
    expect(byMessage).toMatchObject({ returned_count: 1, feedback: [{ public_chat_message_id: firstQuestion, type: 'good' }] });
    expect((await get('/api/public/chat/feedback?type=other')).json().returned_count).toBe(0);
  });

  it('lists sessions with their activity, filtered by address, thread, activity and errors', async () => {
    const all = (await get('/api/public_chat_sessions')).json();
    expect(all.returned_count).toBe(2);
    const alicesRow = all.sessions.find((session: { session_id: string }) => session.session_id === aliceSession);
    expect(alicesRow).toMatchObject({ client_ip: '198.51.100.1', message_count: 2, active: true });
    expect((await get('/api/public_chat_sessions?client_ip=198.51.100.2')).json().returned_count).toBe(1);
    expect((await get(`/api/public_chat_sessions?thread_id=${alicesRow.thread_id}`)).json().sessions[0].session_id).toBe(aliceSession);
    expect((await get('/api/public_chat_sessions?active=false')).json().returned_count).toBe(0);
    expect((await get('/api/public_chat_sessions?has_error=yes')).json().returned_count).toBe(0);
    expect((await get('/api/public_chat_sessions?has_error=0')).json().returned_count).toBe(2);
  });

  it('lists rate-limit windows, filtered by identifier and limited', async () => {
    const limited = (await get('/api/public_chat_rate_limits?limited=true')).json();
    expect(limited.returned_count).toBe(1);
    expect(limited.rate_limits[0]).toMatchObject({ identifier: `session:${aliceSession}`, request_count: 3, max_requests: 2, limited: true });
    expect((await get('/api/public_chat_rate_limits?identifier=ip:198.51.100.2')).json().rate_limits[0]).toMatchObject({ max_requests: 20 });
  });

  it('lists each of the five AI call logs with message and error filters', async () => {
    for (const kind of ['create_thread', 'create_message', 'create_run', 'retrieve_run', 'list_messages']) {
      const reply = await get(`/api/public_chat_openai_${kind}`);
      expect(reply.statusCode, kind).toBe(200);
      expect(reply.json().returned_count, kind).toBeGreaterThan(0);
    }
    const forMessage = (await get(`/api/public_chat_openai_create_message?public_chat_message_id=${firstQuestion}`)).json();
    expect(forMessage.returned_count).toBe(1);
    expect(JSON.parse(forMessage.logs[0].request_body)).toMatchObject({ content: 'Where is the lost and found?' });
    expect((await get(`/api/public_chat_openai_create_message?message_id=${firstQuestion}`)).json().returned_count).toBe(1);
    expect((await get('/api/public_chat_openai_create_run?has_error=true')).json().returned_count).toBe(0);
  });
});
