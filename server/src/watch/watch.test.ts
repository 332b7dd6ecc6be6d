import type { Socket } from 'node:net';
import { WATCH_CLOSE, WATCH_CONNECTED_TEXT, WatchMessageSchema, type WatchMessage } from '@concierge/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { AnswerEvent } from '../events.ts';
import { offsetClock, startDiscordHarness, type DiscordHarness } from '../test-support/discord-harness.ts';
import { cookieFrom, createTestContext, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';
import { WATCH_POLICY } from './watch-hub.ts';
import { toWatchMessage } from './watch-message.ts';

/** A Watch client on a real socket, as the console's browser is: every text it got, and how it ended. */
interface WatchClient {
  socket: WebSocket;
  texts: string[];
  /** The Watch messages so far (every text after the greeting, parsed). */
  messages(): WatchMessage[];
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens /ws with the token: the client once upgraded, or the HTTP status it was refused with. */
function connect(base: string, token: string | null, options: WebSocket.ClientOptions = {}): Promise<WatchClient | { refused: number; body: string }> {
  const url = `${base.replace(/^http/, 'ws')}/ws${token === null ? '' : `?token=${encodeURIComponent(token)}`}`;
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options);
    const texts: string[] = [];
    const closed = new Promise<{ code: number; reason: string }>((done) => socket.on('close', (code, reason) => done({ code, reason: reason.toString() })));
    socket.on('message', (data) => texts.push(data.toString()));
    socket.on('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ refused: response.statusCode ?? 0, body }));
    });
    socket.on('open', () =>
      resolve({
        socket,
        texts,
        closed,
        messages: () => texts.slice(1).map((text) => WatchMessageSchema.parse(JSON.parse(text))),
      }),
    );
    socket.on('error', (error) => {
      if (!/Unexpected server response/.test(error.message)) reject(error);
    });
  });
}

async function opened(base: string, token: string, options?: WebSocket.ClientOptions): Promise<WatchClient> {
  const client = await connect(base, token, options);
  if (!('socket' in client)) throw new Error(`refused with ${client.refused}: ${client.body}`);
  await expect.poll(() => client.texts[0]).toBe(WATCH_CONNECTED_TEXT);
  return client;
}

/** An answer event as the ask pipeline publishes it. */
function answer(overrides: Partial<AnswerEvent> = {}): AnswerEvent {
  return {
    source: 'discord',
    session_id: null,
    message_id: null,
    ask_command_id: 7,
    user_id: '1001',
    username: 'alice',
    global_name: 'Alice',
    interaction_id: '9001',
    context: 'guild',
    private: false,
    prompt: 'When is the costume contest?',
    response: 'Saturday 19:00 on the Main Stage.',
    error: null,
    state: 'completed',
    step: 'list_message',
    run_id: 'resp_1',
    run_status: 'completed',
    thread_id: 'conv_1',
    prompt_tokens: 10,
    completion_tokens: 5,
    total_tokens: 15,
    processing_duration_ms: 800,
    created_at: '2026-03-13T15:00:00.000Z',
    ...overrides,
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('the Watch feed over a real websocket', () => {
  let ctx: TestContext;
  let time: ReturnType<typeof offsetClock>;
  let base: string;
  let admin: string;
  const clients: WatchClient[] = [];

  const newToken = async (cookie = admin) => {
    const reply = await ctx.app.inject({ method: 'POST', url: '/api/ws/token', headers: { cookie } });
    expect(reply.statusCode, reply.body).toBe(200);
    return reply.json() as { token: string; expires: string; username: string };
  };
  const watch = async (options?: WebSocket.ClientOptions) => {
    const client = await opened(base, (await newToken()).token, options);
    clients.push(client);
    return client;
  };

  beforeEach(async () => {
    time = offsetClock();
    ctx = await createTestContext({ clock: time.clock });
    admin = await signIn(ctx.app);
    base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) client.socket.terminate();
    await ctx.close();
  });

  it('gives a signed-in admin a token for 60 s, and refuses one without a session', async () => {
    const issued = await newToken();
    expect(issued.username).toBe('volunteer');
    expect(Date.parse(issued.expires) - time.now()).toBeGreaterThan(59_000);
    expect(Date.parse(issued.expires) - time.now()).toBeLessThanOrEqual(60_000);
    const anonymous = await ctx.app.inject({ method: 'POST', url: '/api/ws/token' });
    expect(anonymous.statusCode).toBe(401);
  });

  it('upgrades only with a valid token, once: 401 before the upgrade without one, with a made-up one, and with a used one', async () => {
    const noToken = await connect(base, null);
    expect(noToken).toMatchObject({ refused: 401 });
    expect(JSON.parse((noToken as { body: string }).body)).toMatchObject({ code: 'invalid_watch_token' });
    expect(await connect(base, '')).toMatchObject({ refused: 401 });
    expect(await connect(base, 'not-a-token')).toMatchObject({ refused: 401 });

    const { token } = await newToken();
    const client = await opened(base, token);
    clients.push(client);
    expect(client.texts).toEqual([WATCH_CONNECTED_TEXT]);
    // Single use: the same token again is refused, while the first connection stays open.
    expect(await connect(base, token)).toMatchObject({ refused: 401 });
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    expect(ctx.deps.watch.size).toBe(1);
  });

  it('refuses a token after its 60 s', async () => {
    const early = await newToken();
    const late = await newToken();
    time.advance(59_000);
    clients.push(await opened(base, early.token));
    time.advance(1_500);
    expect(await connect(base, late.token)).toMatchObject({ refused: 401 });
  });

  it("refuses the token of a session that signed out, and closes that session's open connections (another session's stay)", async () => {
    const other = await signIn(ctx.app);
    const mine = await watch();
    const theirs = await opened(base, (await newToken(other)).token);
    clients.push(theirs);
    const unused = await newToken();

    const logout = await ctx.app.inject({ method: 'POST', url: '/logout', headers: { cookie: admin } });
    expect(logout.statusCode).toBe(200);
    expect(await mine.closed).toEqual({ code: WATCH_CLOSE.sessionEnded, reason: 'Session ended' });
    expect(await connect(base, unused.token)).toMatchObject({ refused: 401 });
    expect(theirs.socket.readyState).toBe(WebSocket.OPEN);

    // A session ended elsewhere (another process signing it out, a password reset from the shell) is found on the periodic check.
    await ctx.deps.database.db.deleteFrom('admin_sessions').execute();
    const closedAt = Date.now();
    expect(await theirs.closed).toMatchObject({ code: WATCH_CLOSE.sessionEnded });
    expect(Date.now() - closedAt).toBeLessThan(WATCH_POLICY.sessionCheckEveryMs + 2000);
    expect(ctx.deps.watch.size).toBe(0);
  });

  it('sends every answer as one SPEC §3 Watch message: whispers private, public chat answers as DESIGN §9', async () => {
    const client = await watch();
    ctx.deps.events.publish('answer', answer({ private: true, prompt: 'A secret question' }));
    ctx.deps.events.publish('answer', answer({ source: 'discord', ask_command_id: 8, global_name: null, state: 'failed', step: 'polling_run', response: null, error: 'No answer within 110 s' }));
    ctx.deps.events.publish('answer', answer({ source: 'public_chat', session_id: 'abcdef0123456789', ask_command_id: null, user_id: null, username: null, global_name: null, interaction_id: null, context: null }));
    await expect.poll(() => client.messages().length).toBe(3);
    const [whisper, failed, visitor] = client.messages();
    expect(whisper).toEqual({
      user_id: '1001',
      username: 'alice',
      global_name: 'Alice',
      prompt: 'A secret question',
      response: 'Saturday 19:00 on the Main Stage.',
      error: '',
      created_at: '2026-03-13T15:00:00.000Z',
      run_id: 'resp_1',
      thread_id: 'conv_1',
      run_status: 'completed',
      state: 'completed',
      step: 'list_message',
      ask_command_id: 7,
      interaction_id: '9001',
      context: 'guild',
      private: true,
    });
    expect(failed).toMatchObject({ ask_command_id: 8, global_name: '', state: 'failed', step: 'polling_run', response: '', error: 'No answer within 110 s', private: false });
    expect(visitor).toMatchObject({
      user_id: 'public:abcdef01',
      username: 'public chat',
      global_name: 'Visitor abcdef01',
      context: 'public_chat',
      ask_command_id: 0,
      interaction_id: '',
      private: false,
    });
  });

  it('shows a real public chat answer live', async () => {
    expect((await uploadKnowledge(ctx.app, admin, 'notes.md', 'The lost and found is at the registration desk in the lobby.')).statusCode).toBe(200);
    const client = await watch();
    const verify = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
    const visitor = cookieFrom(verify);
    const sent = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie: visitor }, payload: { message: 'Where is the lost and found?' } });
    expect(sent.statusCode, sent.body).toBe(200);
    await expect.poll(() => client.messages().length).toBe(1);
    const [message] = client.messages();
    const session = await ctx.deps.database.db.selectFrom('public_chat_messages').select('session_id').where('role', '=', 'user').executeTakeFirstOrThrow();
    expect(message).toMatchObject({
      user_id: `public:${session.session_id.slice(0, 8)}`,
      global_name: `Visitor ${session.session_id.slice(0, 8)}`,
      username: 'public chat',
      prompt: 'Where is the lost and found?',
      state: 'completed',
      context: 'public_chat',
      ask_command_id: 0,
    });
    expect(message!.response).toContain('registration desk');
  });

  it('delivers a burst of 1,000 answers to two clients, in order, none lost', async () => {
    const first = await watch();
    const second = await watch();
    const started = Date.now();
    for (let index = 0; index < 1000; index++) {
      ctx.deps.events.publish('answer', answer({ ask_command_id: index + 1, prompt: `Question ${index + 1}`, response: `Answer ${index + 1}: ${'x'.repeat(400)}` }));
    }
    await expect.poll(() => [first.texts.length, second.texts.length], { timeout: 15_000 }).toEqual([1001, 1001]);
    const expected = Array.from({ length: 1000 }, (_, index) => index + 1);
    expect(first.messages().map((message) => message.ask_command_id)).toEqual(expected);
    expect(second.messages().map((message) => message.ask_command_id)).toEqual(expected);
    expect(ctx.deps.watch.droppedSlow).toBe(0);
    console.log(`watch (${process.env.TEST_DB ?? 'sqlite'}): 1,000 answers reached two clients in ${Date.now() - started} ms`);
  });

  it('drops a client that stops reading with 1013, without buffering for it beyond the bound, while a reading client gets everything', async () => {
    const reader = await watch();
    const stalled = await watch();
    const [, stalledOnServer] = ctx.deps.watch.sockets();
    // The stalled client stops reading its socket: what the server sends piles up in the kernel, then in the server.
    (stalled.socket as unknown as { _socket: Socket })._socket.pause();

    const big = 'y'.repeat(100 * 1024);
    const count = 400; // 40 MB per client: ten times the bound
    let largestBuffer = 0;
    for (let index = 0; index < count; index++) {
      // Straight to the hub: with PostgreSQL the event bus would also queue each 100 KB event for the other processes.
      ctx.deps.watch.broadcast(toWatchMessage(answer({ ask_command_id: index + 1, response: big })));
      largestBuffer = Math.max(largestBuffer, stalledOnServer!.bufferedAmount);
      if (index % 8 === 7) await tick(); // the reader reads as a browser would
    }
    expect(ctx.deps.watch.droppedSlow).toBe(1);
    expect(ctx.deps.watch.size).toBe(1);
    // What the server holds for a connection is what it has not written yet: never more than the bound (without it,
    // about 35 MiB here), though ten times as much was sent to the feed.
    expect(largestBuffer).toBeLessThanOrEqual(WATCH_POLICY.maxBufferedBytes + 1024); // + the close frame
    await expect.poll(() => reader.texts.length, { timeout: 15_000 }).toBe(count + 1);
    expect(reader.messages().map((message) => message.ask_command_id)).toEqual(Array.from({ length: count }, (_, index) => index + 1));
    console.log(`watch (${process.env.TEST_DB ?? 'sqlite'}): stalled client dropped; its server-side buffer peaked at ${(largestBuffer / 1048576).toFixed(1)} MiB of ${((count * big.length) / 1048576).toFixed(0)} MiB sent`);

    // Reading again, the stalled client finds the close: 1013, try again later.
    (stalled.socket as unknown as { _socket: Socket })._socket.resume();
    expect(await stalled.closed).toEqual({ code: WATCH_CLOSE.tooSlow, reason: 'Client too slow' });
    expect(stalled.texts.length).toBeLessThan(count);
  });

  it('pings, and drops a peer that stops answering pings', async () => {
    const hub = ctx.deps.watch;
    // Two rounds of the 30 s ping, run at once: the first pings everyone, the second drops who did not answer.
    const quiet = await watch({ autoPong: false });
    const lively = await watch();
    let pings = 0;
    lively.socket.on('ping', () => pings++);
    hub.pingNow();
    await expect.poll(() => pings).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 200)); // its pong travels back
    hub.pingNow();
    expect(await quiet.closed).toMatchObject({ code: 1006 });
    await expect.poll(() => pings).toBe(2);
    expect(lively.socket.readyState).toBe(WebSocket.OPEN);
    expect(hub.size).toBe(1);
  });
});

describe('the Watch feed with the Discord bot', () => {
  let h: DiscordHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('shows /ask and /whisper answers from Discord as they are answered, the whisper marked private', async () => {
    h = await startDiscordHarness();
    const base = await h.ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const token = (await h.api('POST', '/api/ws/token')).json().token as string;
    const client = await opened(base, token);
    try {
      const alice = h.discord.user('alice');
      await h.answerOf(h.ask(alice, 'Where is the lost and found?'));
      await h.answerOf(h.ask(alice, 'Where is cosplay repair?', { whisper: true }));
      await expect.poll(() => client.messages().length).toBe(2);
      const [asked, whispered] = client.messages();
      const commands = await h.ctx.deps.database.db.selectFrom('ask_commands').select(['id', 'interaction_id']).orderBy('id').execute();
      expect(asked).toMatchObject({ user_id: alice.id, username: 'alice', global_name: 'Alice', prompt: 'Where is the lost and found?', state: 'completed', private: false, context: 'guild', ask_command_id: commands[0]!.id, interaction_id: commands[0]!.interaction_id });
      expect(asked!.response).toContain('registration desk');
      expect(whispered).toMatchObject({ prompt: 'Where is cosplay repair?', private: true, ask_command_id: commands[1]!.id });
    } finally {
      client.socket.terminate();
    }
  });
});
