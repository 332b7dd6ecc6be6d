import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ANSWER_MAX_LENGTH, ANSWER_TRUNCATED_MARK } from '@concierge/contract';
import { ASK_ERRORS } from '../ask/ask-pipeline.ts';
import type { AppOptions } from '../app.ts';
import type { Clock } from '../clock.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { eventNames, postForEvents, type StreamedReply } from '../test-support/event-stream-client.ts';
import { cookieFrom, createTestContext, manualClock, minuteStartClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';
import { until } from '../test-support/until.ts';
import { CHAT_ERRORS } from './chat.service.ts';

const NOTES = `# Practical information

The lost and found is at the registration desk in the lobby, open 8:00 to 20:00, and it keeps phones, badges, scarves and umbrellas for the whole weekend.

Cosplay repair station: Room 112, with glue guns, safety pins and thread.`;

/**
 * Closes the app. Node's fetch may leave a spare connection that never sent
 * a request (after a request it aborted); the server's close would wait for
 * it, so connections are ended first (every stream of the test has ended).
 */
async function closeListening(ctx: TestContext): Promise<void> {
  ctx.app.server.closeAllConnections();
  await ctx.close();
}

/** The app on a real port, a visitor's session, and a way to ask for a streamed answer. */
async function listening(ctx: TestContext) {
  const base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const verify = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
  const cookie = cookieFrom(verify);
  const ask = (body: object, headers: Record<string, string> = {}) => postForEvents(`${base}/public/chat/send`, body, { cookie, ...headers });
  return { base, cookie, ask };
}

const db = (ctx: TestContext) => ctx.deps.database.db;
const questions = (ctx: TestContext) => db(ctx).selectFrom('public_chat_messages').selectAll().where('role', '=', 'user').orderBy('id').execute();

describe('streamed answers with the offline assistant', () => {
  let ctx: TestContext;
  let admin: string;

  beforeEach(async () => {
    ctx = await createTestContext({ clock: minuteStartClock() });
    admin = await signIn(ctx.app);
    expect((await uploadKnowledge(ctx.app, admin, 'notes.md', NOTES)).statusCode).toBe(200);
  });
  afterEach(() => closeListening(ctx));

  it('streams the answer in pieces, then one done with the usual reply, uncompressed and unbuffered', async () => {
    const { ask } = await listening(ctx);
    const reply = await ask({ message: 'Where is the lost and found?' }, { 'accept-encoding': 'br, gzip' });
    await reply.ended;
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(reply.headers.get('x-accel-buffering')).toBe('no');
    expect(reply.headers.get('content-encoding')).toBeNull();
    expect(reply.entries[0]).toMatchObject({ kind: 'comment', text: 'keep-alive' });

    const names = eventNames(reply);
    expect(names.filter((name) => name === 'delta').length).toBeGreaterThan(2);
    expect(names.at(-1)).toBe('done');
    expect(names.filter((name) => name === 'done')).toHaveLength(1);
    const done = reply.done()!;
    expect(done).toMatchObject({ success: true, error: null, feedback_id: expect.any(Number), sources: [expect.objectContaining({ kind: 'file', filename: 'notes.md' })] });
    expect(reply.deltas().join('')).toBe(done.response);
    expect(done.response).toContain('registration desk in the lobby');

    // Stored exactly as a JSON reply would be.
    const [question] = await questions(ctx);
    expect(question).toMatchObject({ id: done.feedback_id, state: 'completed', response: done.response, run_status: 'completed' });
    const answers = await db(ctx).selectFrom('public_chat_messages').selectAll().where('role', '=', 'assistant').execute();
    expect(answers).toHaveLength(1);
    expect(await db(ctx).selectFrom('openai_retrieve_run_logs').selectAll().execute()).toHaveLength(1);
  });

  it('cuts an offline answer past 64 KB (a file with one huge line) at the cap, the stream too', async () => {
    const { ask } = await listening(ctx);
    const line = `Badge pickup is at the desk ${'in the lobby near the cloakroom and the stairs '.repeat(5000)}`;
    expect((await uploadKnowledge(ctx.app, admin, 'badges.md', `# Badge pickup\n\n${line}\n`)).statusCode).toBe(200);
    const reply = await ask({ message: 'Where is badge pickup?' });
    await reply.ended;
    const response = String(reply.done()!.response);
    expect(response.length).toBeLessThanOrEqual(ANSWER_MAX_LENGTH);
    expect(response.endsWith(ANSWER_TRUNCATED_MARK)).toBe(true);
    expect(reply.deltas().join('')).toBe(response);
    const [question] = await questions(ctx);
    expect(question!.response).toBe(response);
  });

  it('keeps the JSON reply without the Accept header', async () => {
    const { cookie } = await listening(ctx);
    const reply = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message: 'Where is the lost and found?' } });
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.json()).toMatchObject({ success: true, error: null, response: expect.stringContaining('registration desk') });
  });

  it('refuses before the stream with the status and JSON body of the JSON reply', async () => {
    const { base, ask } = await listening(ctx);
    const anonymous = await postForEvents(`${base}/public/chat/send`, { message: 'hello' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json).toMatchObject({ success: false, error: CHAT_ERRORS.noSession, code: 'session_required' });

    const blank = await ask({ message: '   ' });
    expect(blank.status).toBe(400);
    expect(blank.json).toMatchObject({ success: false, field: 'message' });

    const crossSite = await ask({ message: 'hello' }, { origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);

    await ctx.deps.config.update({ paused: true });
    const paused = await ask({ message: 'hello' });
    expect(paused.status).toBe(503);
    expect(paused.json).toMatchObject({ success: false, code: 'paused' });
    await ctx.deps.config.update({ paused: false, public_chat_requests_per_minute: 1 });

    const answered = await ask({ message: 'Where is the lost and found?' });
    expect(answered.status).toBe(200);
    await answered.ended; // while it is answered, a second question is refused 409 before it is counted
    const limited = await ask({ message: 'And the repair station?' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(limited.json).toMatchObject({ success: false, error: CHAT_ERRORS.rateLimited });
  });

  it('replays a stored answer to a retry as one delta and done', async () => {
    const { ask } = await listening(ctx);
    const first = await ask({ message: 'Where is the lost and found?', client_message_id: 'q-1' });
    await first.ended;
    const retry = await ask({ message: 'Where is the lost and found?', client_message_id: 'q-1' });
    await retry.ended;
    expect(eventNames(retry)).toEqual(['delta', 'done']);
    expect(retry.deltas()).toEqual([first.done()!.response]);
    expect(retry.done()).toEqual(first.done());
    expect(await questions(ctx)).toHaveLength(1);
  });

  it('streams an operator test question on /api/chat/send', async () => {
    const base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const reply = await postForEvents(`${base}/api/chat/send`, { message: 'Where is the cosplay repair station?' }, { cookie: admin });
    await reply.ended;
    expect(reply.status).toBe(200);
    expect(reply.done()).toMatchObject({ success: true });
    expect(reply.deltas().join('')).toContain('Room 112');
    const anonymous = await postForEvents(`${base}/api/chat/send`, { message: 'hello' });
    expect(anonymous.status).toBe(401);
  });

  it('starts a new conversation: a new thread, and history only from then on', async () => {
    const { cookie } = await listening(ctx);
    const send = (message: string) => ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message } });
    await send('Where is the lost and found?');
    await send('Where is the cosplay repair station?');
    const fresh = await ctx.app.inject({ method: 'POST', url: '/public/chat/new_conversation', headers: { cookie } });
    expect(fresh.statusCode).toBe(200);
    expect(fresh.json()).toEqual({ success: true, error: null });
    const history = () => ctx.app.inject({ method: 'GET', url: '/public/chat/history', headers: { cookie } }).then((reply) => reply.json().exchanges as { question: string }[]);
    expect(await history()).toEqual([]);

    await send('Is there a cosplay repair station?');
    expect((await history()).map((exchange) => exchange.question)).toEqual(['Is there a cosplay repair station?']);
    const threads = await db(ctx).selectFrom('local_threads').select('id').execute();
    expect(threads).toHaveLength(2);
    const session = await db(ctx).selectFrom('public_chat_sessions').selectAll().executeTakeFirstOrThrow();
    expect(session.thread_id).toBe((await questions(ctx)).at(-1)!.thread_id);

    const anonymous = await ctx.app.inject({ method: 'POST', url: '/public/chat/new_conversation' });
    expect(anonymous.statusCode).toBe(401);
    const crossSite = await ctx.app.inject({ method: 'POST', url: '/public/chat/new_conversation', headers: { cookie, origin: 'https://evil.example' } });
    expect(crossSite.statusCode).toBe(403);
  });
});

describe('streamed answers with OpenAI', () => {
  let fake: FakeOpenAI;
  let ctx: TestContext;
  const openai = () => ({ OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_MODEL: 'gpt-5-mini' });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  async function start(options: { clock?: Clock; env?: Record<string, string>; app?: AppOptions } = {}) {
    fake.reset();
    fake.configure({ runDurationMs: 20 });
    ctx = await createTestContext({ clock: options.clock ?? minuteStartClock(), env: { ...openai(), ...options.env }, app: options.app });
    const admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', assistant_max_poll_interval: '200ms' });
    expect((await uploadKnowledge(ctx.app, admin, 'notes.md', NOTES)).statusCode).toBe(200);
    return listening(ctx);
  }
  afterEach(() => closeListening(ctx));

  const logs = (table: 'openai_create_run_logs' | 'openai_retrieve_run_logs' | 'openai_list_messages_logs') => db(ctx).selectFrom(table).selectAll().orderBy('id').execute();

  it('hands on the deltas as the model writes them, logging one row per step', async () => {
    const { ask } = await start();
    fake.configure({ deltaDelayMs: 40 });
    const reply = await ask({ message: 'Where is the lost and found?' });
    const first = await reply.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    await reply.ended;
    const done = reply.entries.find((entry) => entry.kind === 'event' && entry.event === 'done')!;
    // The first words arrived well before the answer was complete.
    expect(done.at - first.at).toBeGreaterThanOrEqual(200);
    const deltas = reply.deltas();
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe(reply.done()!.response);
    expect(reply.done()).toMatchObject({ success: true, sources: [{ kind: 'file', title: 'Notes', filename: 'notes.md' }] });

    const [createRun] = await logs('openai_create_run_logs');
    expect(JSON.parse(createRun!.request_body!)).toMatchObject({ background: true, stream: true, store: true });
    expect(JSON.parse(createRun!.response_body!)).toMatchObject({ type: 'response.created', sequence_number: 0 });
    const retrieve = await logs('openai_retrieve_run_logs');
    expect(retrieve).toHaveLength(1);
    expect(JSON.parse(retrieve[0]!.response_body!)).toMatchObject({ type: 'response.completed', response: { status: 'completed' } });
    expect(await logs('openai_list_messages_logs')).toHaveLength(1);
    expect(fake.journal.filter((entry) => entry.method === 'GET' && entry.path.startsWith('/v1/responses/'))).toHaveLength(0);
  });

  it('goes on streaming long past the time a request has to arrive in', async () => {
    // The request timeout bounds how long the question takes to arrive, not how long its answer streams.
    const { ask } = await start({ app: { requestTimeoutMs: 300, requestTimeoutCheckMs: 50 } });
    fake.configure({ deltaDelayMs: 60 });
    const reply = await ask({ message: 'Where is the lost and found?' });
    await reply.ended;
    const first = reply.entries[0]!;
    const done = reply.entries.find((entry) => entry.kind === 'event' && entry.event === 'done')!;
    expect(done.at - first.at).toBeGreaterThanOrEqual(1_200);
    expect(reply.done()).toMatchObject({ success: true });
    expect(reply.deltas().join('')).toBe(reply.done()!.response);
  });

  it('resumes a dropped stream after the last event it saw', async () => {
    const { ask } = await start();
    fake.configure({ deltaDelayMs: 5, dropStream: { afterEvents: 12 } });
    const reply = await ask({ message: 'Where is the lost and found?' });
    await reply.ended;
    expect(reply.done()).toMatchObject({ success: true });
    expect(reply.deltas().join('')).toBe(reply.done()!.response);
    const resume = fake.journal.find((entry) => entry.method === 'GET' && entry.query.stream === 'true');
    expect(resume?.query.starting_after).toBe('11');
    const [retrieve] = await logs('openai_retrieve_run_logs');
    expect(JSON.parse(retrieve!.request_body!)).toMatchObject({ stream: true, resumed_after: [11] });
    expect(await logs('openai_retrieve_run_logs')).toHaveLength(1);
  });

  it('polls the run when its stream cannot be opened again', async () => {
    const { ask } = await start();
    fake.configure({ deltaDelayMs: 5, dropStream: { afterEvents: 10 } });
    fake.failNext({ method: 'GET', path: '/v1/responses/', status: 400, stream: true, count: 10 });
    const reply = await ask({ message: 'Where is the lost and found?' });
    await reply.ended;
    expect(reply.done()).toMatchObject({ success: true });
    // What the stream gave, then the rest once the polled run completed: together, the answer.
    expect(reply.deltas().join('')).toBe(reply.done()!.response);
    const polls = fake.journal.filter((entry) => entry.method === 'GET' && entry.path.startsWith('/v1/responses/') && entry.query.stream !== 'true');
    expect(polls.length).toBeGreaterThan(0);
    const retrieve = await logs('openai_retrieve_run_logs');
    expect(retrieve[0]!.error).toContain('stream');
    expect(JSON.parse(retrieve.at(-1)!.response_body!)).toMatchObject({ status: 'completed' });
  });

  it('ends with done success:false and the error text when the run fails after the stream began', async () => {
    const { ask } = await start();
    fake.configure({ finalStatus: 'failed' });
    const reply = await ask({ message: 'Where is the lost and found?' });
    await reply.ended;
    expect(reply.status).toBe(200);
    expect(eventNames(reply).filter((name) => name === 'done')).toHaveLength(1);
    expect(reply.done()).toEqual({ success: false, response: '', feedback_id: null, error: ASK_ERRORS.providerError, sources: [], code: 'provider_error' });
    const [question] = await questions(ctx);
    expect(question).toMatchObject({ state: 'failed', run_status: 'failed', content: 'Where is the lost and found?' });
    expect(question!.error).toContain('The model failed to generate a response');
  });

  it('follows an answer in flight for a retry with the same client_message_id', async () => {
    const { ask } = await start();
    fake.configure({ deltaDelayMs: 30 });
    const first = await ask({ message: 'Where is the lost and found?', client_message_id: 'wifi-1' });
    await first.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    first.abort(); // The phone lost the Wi-Fi mid-answer.
    const retry = await ask({ message: 'Where is the lost and found?', client_message_id: 'wifi-1' });
    await retry.ended;
    const done = retry.done()!;
    expect(done).toMatchObject({ success: true });
    expect(retry.deltas().length).toBeGreaterThan(1);
    expect(retry.deltas().join('')).toBe(done.response);
    expect(await questions(ctx)).toHaveLength(1);
    expect(fake.journal.filter((entry) => entry.method === 'POST' && entry.path === '/v1/responses')).toHaveLength(1);
  });

  it('refuses a second question while one is in flight (409), with its JSON body', async () => {
    const { ask } = await start();
    fake.configure({ deltaDelayMs: 30 });
    const first = await ask({ message: 'Where is the lost and found?' });
    await first.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    const second = await ask({ message: 'And the repair station?' });
    expect(second.status).toBe(409);
    expect(second.json).toMatchObject({ success: false, error: CHAT_ERRORS.inFlight });
    await first.ended;
  });

  it('cuts a 2.1 MB answer at 64 KB with its mark: streamed, stored, replayed and restored alike', async () => {
    const { ask, cookie } = await start();
    // 2.1 MB in words of 1,000 characters (the fake streams one word a delta).
    const huge = Array.from({ length: 2100 }, (_, n) => `${String(n).padStart(4, '0')}${'x'.repeat(995)} `).join('');
    fake.configure({ answer: () => huge });
    const reply = await ask({ message: 'Tell me everything', client_message_id: 'huge-1' });
    await reply.ended;
    const done = reply.done()!;
    expect(done).toMatchObject({ success: true });
    const response = String(done.response);
    expect(response.length).toBeLessThanOrEqual(ANSWER_MAX_LENGTH);
    expect(response.endsWith(ANSWER_TRUNCATED_MARK)).toBe(true);
    expect(huge.startsWith(response.slice(0, 60_000))).toBe(true);
    // The deltas put together the capped answer: none was handed on past the cut.
    expect(reply.deltas().join('')).toBe(response);

    const [question] = await questions(ctx);
    expect(question!.response).toBe(response);
    const answerRow = await db(ctx).selectFrom('public_chat_messages').selectAll().where('role', '=', 'assistant').executeTakeFirstOrThrow();
    expect(answerRow.content.length).toBeLessThanOrEqual(ANSWER_MAX_LENGTH);

    const retry = await ask({ message: 'Tell me everything', client_message_id: 'huge-1' });
    await retry.ended;
    expect(retry.deltas().join('')).toBe(response);
    const history = await ctx.app.inject({ method: 'GET', url: '/public/chat/history', headers: { cookie } });
    expect(history.json().exchanges[0].answer).toBe(response);

    // The JSON reply too.
    const json = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message: 'Again, everything' } });
    expect(json.json().response).toBe(response);
  });

  it('keeps an answer of exactly 64 KB whole, and serves an answer stored before the cap cut', async () => {
    const { ask, cookie } = await start();
    const exactly = `${'y'.repeat(999)} `.repeat(ANSWER_MAX_LENGTH / 1000).padEnd(ANSWER_MAX_LENGTH, 'z');
    fake.configure({ answer: () => exactly });
    const reply = await ask({ message: 'Tell me a lot' });
    await reply.ended;
    expect(reply.done()!.response).toBe(exactly);
    expect(reply.deltas().join('')).toBe(exactly);

    const [question] = await questions(ctx);
    await db(ctx).updateTable('public_chat_messages').set({ response: 'old '.repeat(500_000) }).where('id', '=', question!.id).execute();
    const history = await ctx.app.inject({ method: 'GET', url: '/public/chat/history', headers: { cookie } });
    const restored: string = history.json().exchanges[0].answer;
    expect(restored.length).toBeLessThanOrEqual(ANSWER_MAX_LENGTH);
    expect(restored.endsWith(ANSWER_TRUNCATED_MARK)).toBe(true);
  });

  const windowCount = async (identifier: string) =>
    (await db(ctx).selectFrom('public_chat_rate_limits').select('request_count').where('identifier', '=', identifier).executeTakeFirst())?.request_count ?? 0;

  it('leaves the session and address budgets intact after 50 sends refused with 409', async () => {
    const { ask, cookie } = await start();
    await ctx.deps.config.update({ public_chat_requests_per_minute: 5 }); // 50 a minute for the address
    fake.configure({ deltaDelayMs: 30 });
    const first = await ask({ message: 'Where is the lost and found?' });
    await first.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    const refused = await Promise.all(
      Array.from({ length: 50 }, (_, n) => ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message: `Again ${n}?` }, remoteAddress: '127.0.0.1' })),
    );
    expect(refused.map((reply) => reply.statusCode)).toEqual(Array(50).fill(409));
    await first.ended;

    const sessionId = (await db(ctx).selectFrom('public_chat_sessions').select('session_id').executeTakeFirstOrThrow()).session_id;
    expect(await windowCount(`session:${sessionId}`)).toBe(1);
    expect(await windowCount('ip:127.0.0.1')).toBe(1);
    // The session still has the other four questions of its minute.
    fake.configure({ deltaDelayMs: 0 });
    for (let n = 0; n < 4; n++) {
      const next = await ask({ message: `Question ${n}: where is the repair station?` });
      expect(next.status, JSON.stringify(next.json)).toBe(200);
      await next.ended;
    }
    expect((await ask({ message: 'One too many?' })).status).toBe(429);
  });

  it('does not count sends refused busy (503) against the sessions or the address', async () => {
    const time = manualClock(minuteStartClock().now(), { autoAdvance: false });
    const { base, ask } = await start({ clock: time.clock, env: { MAX_CONCURRENT_RUNS: '1' } });
    fake.configure({ deltaDelayMs: 50 });
    const first = await ask({ message: 'Where is the lost and found?' });
    await first.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    const others = await Promise.all(Array.from({ length: 10 }, () => ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } })));
    const before = time.waiting;
    let replied = 0;
    const waiting = Promise.all(
      others.map((verify) =>
        postForEvents(`${base}/public/chat/send`, { message: 'Where is the repair station?' }, { cookie: cookieFrom(verify) }).finally(() => replied++),
      ),
    );
    // One waits for the place (the wait queue holds as many as there are places); the other nine are refused at once.
    await until(() => replied === 9 && ctx.deps.pipeline.waiting === 1 && time.waiting >= before + 1);
    time.advance(5_000);
    const refused: StreamedReply[] = await waiting;
    expect(refused.map((reply) => reply.status)).toEqual(Array(10).fill(503));
    await first.ended;

    expect(await windowCount('ip:127.0.0.1')).toBe(1);
    const sessionWindows = await db(ctx).selectFrom('public_chat_rate_limits').select('request_count').where('identifier', 'like', 'session:%').execute();
    // Only the first question counts: the one that waited was counted and taken back, those refused at once never counted.
    expect(sessionWindows.map((window) => window.request_count).filter((n) => n !== 0)).toEqual([1]);
    // Nothing of them was stored, and their sessions may ask.
    expect(await questions(ctx)).toHaveLength(1);
    const again = await postForEvents(`${base}/public/chat/send`, { message: 'Where is the repair station?' }, { cookie: cookieFrom(others[0]!) });
    await again.ended;
    expect(again.done()).toMatchObject({ success: true });
  });

  it('stops an answer: the run is cancelled, the partial answer kept, and the session may ask again at once', async () => {
    const { ask, cookie } = await start();
    fake.configure({ deltaDelayMs: 40 });
    const reply = await ask({ message: 'Where is the lost and found?', client_message_id: 'stop-me' });
    await reply.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta' && reply.deltas().length >= 2);
    const cancel = await ctx.app.inject({ method: 'POST', url: '/public/chat/cancel', headers: { cookie }, payload: { client_message_id: 'stop-me' } });
    expect(cancel.statusCode).toBe(200);
    await reply.ended;
    const done = reply.done()!;
    expect(done).toMatchObject({ success: false, stopped: true, error: 'The answer was stopped.', code: 'stopped' });
    expect(done.response).toBe(reply.deltas().join(''));
    expect(String(done.response).length).toBeGreaterThan(0);
    expect(cancel.json()).toEqual({ success: true, error: null, feedback_id: done.feedback_id, state: 'aborted', response: done.response });

    const [question] = await questions(ctx);
    expect(question).toMatchObject({ state: 'aborted', response: done.response, run_status: 'cancelled', error: null });
    expect(fake.journal.some((entry) => entry.method === 'POST' && entry.path.endsWith('/cancel'))).toBe(true);
    expect([...fake.state.responses.values()][0]!.body.status).toBe('cancelled');
    const history = await ctx.app.inject({ method: 'GET', url: '/public/chat/history', headers: { cookie } });
    expect(history.json().exchanges[0]).toMatchObject({ state: 'aborted', answer: done.response });

    fake.configure({ deltaDelayMs: 0 });
    const next = await ask({ message: 'Where is the cosplay repair station?' });
    expect(next.status).toBe(200);
    await next.ended;
    expect(next.done()).toMatchObject({ success: true });

    // A retry of the stopped question replays what was kept.
    const retry = await ask({ message: 'Where is the lost and found?', client_message_id: 'stop-me' });
    await retry.ended;
    expect(retry.done()).toMatchObject({ success: false, stopped: true, response: done.response });
  });

  it('refuses cancels it cannot honour with a clear 4xx', async () => {
    const { cookie } = await start();
    const cancel = (payload: object, headers: Record<string, string> = { cookie }) => ctx.app.inject({ method: 'POST', url: '/public/chat/cancel', headers, payload });
    expect((await cancel({ client_message_id: 'never-asked' })).statusCode).toBe(404);
    expect((await cancel({ client_message_id: 'never-asked' }, {})).statusCode).toBe(401);
    const bad = await cancel({ client_message_id: 'has spaces' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ success: false, field: 'client_message_id' });
    expect((await cancel({ client_message_id: 'x' }, { cookie, origin: 'https://evil.example' })).statusCode).toBe(403);
  });

  it('stops an answer another process is streaming, through its run', async () => {
    const { ask, cookie } = await start();
    fake.configure({ deltaDelayMs: 40 });
    const other = await createTestContext({ database: ctx.database, clock: minuteStartClock(), env: openai() });
    try {
      const reply = await ask({ message: 'Where is the lost and found?', client_message_id: 'elsewhere' });
      await reply.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta' && reply.deltas().length >= 2);
      const cancel = await other.app.inject({ method: 'POST', url: '/public/chat/cancel', headers: { cookie }, payload: { client_message_id: 'elsewhere' } });
      expect(cancel.statusCode).toBe(200);
      expect(cancel.json()).toMatchObject({ state: 'aborted' });
      await reply.ended;
      expect(reply.done()).toMatchObject({ success: false, stopped: true });
      expect(reply.done()!.response).toBe(reply.deltas().join(''));
      const [question] = await questions(ctx);
      expect(question).toMatchObject({ state: 'aborted', run_status: 'cancelled' });
    } finally {
      await other.close();
    }
  });

  it('sends a keep-alive comment every 15 s of the clock while the answer is slow', async () => {
    const time = manualClock(new Date(), { autoAdvance: false });
    const { ask } = await start({ clock: time.clock });
    fake.configure({ deltaDelayMs: 60 });
    const reply = await ask({ message: 'Where is the lost and found?' });
    await reply.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    const comments = () => reply.entries.filter((entry) => entry.kind === 'comment').length;
    expect(comments()).toBe(1);
    time.advance(14_999);
    time.advance(1);
    await reply.waitFor((entry) => entry.kind === 'comment' && reply.entries.indexOf(entry) > 0);
    expect(comments()).toBe(2);
    await reply.ended;
    expect(reply.done()).toMatchObject({ success: true });
  });

  it('ends with the timeout error when the answer passes the 110 s ceiling', async () => {
    const time = manualClock(new Date(), { autoAdvance: false });
    const { ask } = await start({ clock: time.clock });
    fake.configure({ deltaDelayMs: 100 });
    const reply = await ask({ message: 'Where is the lost and found?' });
    await reply.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    time.advance(110_000);
    await reply.ended;
    expect(reply.done()).toMatchObject({ success: false, error: ASK_ERRORS.timeout, code: 'answer_timeout' });
    const [question] = await questions(ctx);
    expect(question).toMatchObject({ state: 'failed', error: 'No answer within 110 s' });
  });

  it('answers busy (503, Retry-After) once every place stays taken past the bounded wait', async () => {
    const time = manualClock(new Date(), { autoAdvance: false });
    const { base, ask } = await start({ clock: time.clock, env: { MAX_CONCURRENT_RUNS: '1' } });
    fake.configure({ deltaDelayMs: 50 });
    const first = await ask({ message: 'Where is the lost and found?' });
    await first.waitFor((entry) => entry.kind === 'event' && entry.event === 'delta');
    const second = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
    const before = time.waiting;
    const waiting = postForEvents(`${base}/public/chat/send`, { message: 'Where is the cosplay repair station?' }, { cookie: cookieFrom(second) });
    await until(() => time.waiting > before);
    time.advance(5_000);
    const busy: StreamedReply = await waiting;
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('5');
    expect(busy.json).toMatchObject({ success: false, code: 'busy', error: 'The chat service is currently unavailable. Please try again later.' });
    await first.ended;
  });
});
