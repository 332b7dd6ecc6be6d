import { WATCH_CLOSE, WATCH_CONNECTED_TEXT, WatchMessageSchema } from '@concierge/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { cookiesOf, createScratchDatabase, ServerProcess } from '../test-support/server-process.ts';
import { ADMIN, testDatabaseKind } from '../test-support/test-context.ts';

/**
 * The Watch feed with two real server processes on one PostgreSQL (the
 * two-process set-up of cluster/two-processes.test.ts): a token issued by
 * one is accepted by the other, an answer produced on one reaches a Watch
 * client connected to the other, and signing out on one closes the
 * session's connection on the other.
 */
describe.runIf(testDatabaseKind() === 'postgres')('the Watch feed across two processes', () => {
  let scratch: { url: string; drop(): Promise<void> };
  let processes: ServerProcess[] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
  }, 30_000);
  afterAll(async () => {
    await Promise.all(processes.map((server) => server.stop()));
    await scratch?.drop();
  }, 60_000);

  it("shows on B an answer produced on A, with A's token, and closes it when the session signs out on A", async () => {
    const env = { DATABASE_URL: scratch.url, CONVENTION_TIMEZONE: 'UTC', TRUST_PROXY: 'true' };
    const a = new ServerProcess('A', env);
    const b = new ServerProcess('B', env);
    processes = [a, b];
    await Promise.all([a.ready(), b.ready()]);
    const post = (server: ServerProcess, url: string, body: unknown = {}, headers: Record<string, string> = {}) =>
      server.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

    expect((await post(a, '/setup', { ...ADMIN, confirm_password: ADMIN.password })).status).toBe(200);
    const admin = cookiesOf(await post(a, '/login', ADMIN));
    const issued = await post(a, '/api/ws/token', {}, { cookie: admin });
    expect(issued.status).toBe(200);
    const { token } = (await issued.json()) as { token: string };

    // The token from A opens the feed on B.
    const texts: string[] = [];
    const socket = new WebSocket(`${b.origin.replace(/^http/, 'ws')}/ws?token=${encodeURIComponent(token)}`);
    socket.on('message', (data) => texts.push(data.toString()));
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    try {
      await expect.poll(() => texts[0], { timeout: 10_000 }).toBe(WATCH_CONNECTED_TEXT);

      // A visitor asks on A; the answer shows on B.
      const visitor = cookiesOf(await post(a, '/public/chat/turnstile/verify', { token: '' }, { 'x-forwarded-for': '198.51.100.7' }));
      const sent = await post(a, '/public/chat/send', { message: 'When is the costume contest?' }, { cookie: visitor, 'x-forwarded-for': '198.51.100.7' });
      expect(sent.status).toBe(200);
      const reply = (await sent.json()) as { response: string };
      await expect.poll(() => texts.length, { timeout: 10_000 }).toBe(2);
      const message = WatchMessageSchema.parse(JSON.parse(texts[1]!));
      expect(message).toMatchObject({ prompt: 'When is the costume contest?', response: reply.response, username: 'public chat', context: 'public_chat', state: 'completed' });
      expect(message.user_id).toMatch(/^public:[A-Za-z0-9_-]{8}$/);

      // Signing out on A closes the session's connection on B at once (not only at B's next check of the sessions).
      const signedOutAt = Date.now();
      expect((await post(a, '/logout', {}, { cookie: admin })).status).toBe(200);
      expect(await closed).toBe(WATCH_CLOSE.sessionEnded);
      console.log(`watch across processes: the connection on B closed ${Date.now() - signedOutAt} ms after signing out on A`);
    } finally {
      socket.terminate();
    }
  }, 90_000);
});
