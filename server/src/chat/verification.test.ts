import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeTurnstile, TURNSTILE_TEST_SECRETS, TURNSTILE_TEST_SITE_KEY, type FakeTurnstile } from '../test-support/fake-turnstile.ts';
import { cookieFrom, createTestContext, minuteStartClock, type TestContext } from '../test-support/test-context.ts';
import { CHAT_ERRORS } from './chat.service.ts';

describe('human verification (Turnstile)', () => {
  let siteverify: FakeTurnstile;
  let ctx: TestContext;

  beforeAll(async () => {
    siteverify = await startFakeTurnstile();
  });
  afterAll(() => siteverify.close());

  async function contextWith(secret: string) {
    // Attempts are counted per clock minute: start at the top of one, so a busy machine never splits the count.
    ctx = await createTestContext({
      clock: minuteStartClock(),
      env: { TURNSTILE_SITE_KEY: TURNSTILE_TEST_SITE_KEY, TURNSTILE_SECRET_KEY: secret, TURNSTILE_VERIFY_URL: siteverify.url },
    });
    await ctx.deps.config.update({ public_chat_turnstile_validation_enabled: true, assistant_poll_interval: '100ms' });
  }
  afterEach(() => ctx?.close());

  const verify = (token: string, cookie?: string, remoteAddress = '198.51.100.20') =>
    ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token }, headers: cookie ? { cookie } : {}, remoteAddress });
  const send = (cookie: string | undefined) =>
    ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'hello', token: 'whatever' }, headers: cookie ? { cookie } : {} });

  describe('with a real-looking secret', () => {
    beforeEach(() => contextWith('0x4AAAAAAAtest-secret-for-the-fake'));

    it('is announced as enabled', async () => {
      const reply = await ctx.app.inject({ method: 'GET', url: '/public/chat/turnstile/enabled' });
      expect(reply.json()).toEqual({ enabled: true, success: true });
    });

    it('refuses to chat before verification (403), then chats after it', async () => {
      const before = await send(undefined);
      expect(before.statusCode).toBe(403);
      expect(before.json().error).toBe(CHAT_ERRORS.notVerified);

      const verified = await verify('token-abc');
      expect(verified.statusCode).toBe(200);
      expect(verified.json()).toEqual({ success: true, error: null });
      const call = siteverify.calls.at(-1)!;
      expect(call).toMatchObject({ secret: '0x4AAAAAAAtest-secret-for-the-fake', response: 'token-abc', remoteip: '198.51.100.20' });
      expect(call.idempotency_key).toMatch(/^[0-9a-f-]{36}$/);

      const after = await send(cookieFrom(verified));
      expect(after.statusCode).toBe(200);
    });

    it('accepts a token once only', async () => {
      expect((await verify('token-once')).statusCode).toBe(200);
      const calls = siteverify.calls.length;
      const again = await verify('token-once');
      expect(again.statusCode).toBe(400);
      expect(again.json()).toMatchObject({ success: false, error: CHAT_ERRORS.invalidToken });
      expect(siteverify.calls.length).toBe(calls); // refused before asking Cloudflare
    });

    it('refuses an empty or rejected token (400) and keeps the session unverified', async () => {
      expect((await verify('')).statusCode).toBe(400);
      const rejected = await verify('bad-token');
      expect(rejected.statusCode).toBe(400);
      expect(rejected.json().error).toBe(CHAT_ERRORS.invalidToken);
      const sessions = await ctx.deps.database.db.selectFrom('public_chat_sessions').selectAll().execute();
      expect(sessions.filter((session) => session.verified)).toEqual([]);
    });

    it('limits verification attempts per address (429)', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 125; i++) statuses.push((await verify(`bad-${i}`, undefined, '198.51.100.77')).statusCode);
      expect(statuses.filter((status) => status === 400)).toHaveLength(120);
      const limited = await verify('token-late', undefined, '198.51.100.77');
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error).toBe(CHAT_ERRORS.tooManyVerifications);
    });
  });

  it("follows Cloudflare's test secret that always passes", async () => {
    await contextWith(TURNSTILE_TEST_SECRETS.passes);
    expect((await verify('XXXX.DUMMY.TOKEN.XXXX')).statusCode).toBe(200);
  });

  it("follows Cloudflare's test secret that always fails", async () => {
    await contextWith(TURNSTILE_TEST_SECRETS.fails);
    expect((await verify('XXXX.DUMMY.TOKEN.XXXX')).statusCode).toBe(400);
  });

  it("follows Cloudflare's test secret whose tokens are already spent", async () => {
    await contextWith(TURNSTILE_TEST_SECRETS.spent);
    expect((await verify('XXXX.DUMMY.TOKEN.XXXX')).statusCode).toBe(400);
  });

  it('answers 502 when siteverify cannot be reached', async () => {
    // Attempts are counted per clock minute: start at the top of one, so a busy machine never splits the count.
    ctx = await createTestContext({
      clock: minuteStartClock(),
      env: { TURNSTILE_SITE_KEY: TURNSTILE_TEST_SITE_KEY, TURNSTILE_SECRET_KEY: 'secret', TURNSTILE_VERIFY_URL: 'http://127.0.0.1:9/siteverify' },
    });
    await ctx.deps.config.update({ public_chat_turnstile_validation_enabled: true });
    const reply = await verify('token');
    expect(reply.statusCode).toBe(502);
    expect(reply.json()).toMatchObject({ success: false, error: CHAT_ERRORS.verificationUnavailable });
  });

  it('is off, and an empty token readies the session, when verification is disabled', async () => {
    await contextWith(TURNSTILE_TEST_SECRETS.passes);
    await ctx.deps.config.update({ public_chat_turnstile_validation_enabled: false });
    const enabled = await ctx.app.inject({ method: 'GET', url: '/public/chat/turnstile/enabled' });
    expect(enabled.json()).toEqual({ enabled: false, success: true });
    const ready = await verify('');
    expect(ready.statusCode).toBe(200);
    expect((await send(cookieFrom(ready))).statusCode).toBe(200);
  });
});
