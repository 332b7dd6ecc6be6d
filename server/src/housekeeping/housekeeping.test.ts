import { afterEach, describe, expect, it } from 'vitest';
import { cookieFrom, createTestContext, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

describe('housekeeping', () => {
  let ctx: TestContext;
  afterEach(() => ctx.close());

  it('forgets old rate-limit windows, spent tokens and expired admin sessions, and the Status figures stay the same', async () => {
    const time = manualClock(new Date('2026-03-13T15:00:00Z'));
    ctx = await createTestContext({ clock: time.clock });
    const admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', public_chat_requests_per_minute: 1 });
    await uploadKnowledge(ctx.app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.');
    const visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: '198.51.100.9' }));
    const ask = () =>
      ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'lost and found?' }, headers: { cookie: visitor }, remoteAddress: '198.51.100.9' });
    expect((await ask()).statusCode).toBe(200);
    expect((await ask()).statusCode).toBe(429);
    const { db } = ctx.deps.database;
    await db.insertInto('spent_verification_tokens').values({ token_hash: 'old-token', created_at: time.clock.now().toISOString() }).execute();
    const status = async (cookie: string) => (await ctx.app.inject({ url: '/api/status', headers: { cookie } })).json().public_chat;
    expect(await status(admin)).toMatchObject({ message_count: 2, session_count: 1, rate_limit_exceeded_count: 1 });

    // A month and a day later, someone verifies again: their window is new and stays.
    time.advance(31 * 24 * 60 * 60_000);
    await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: '198.51.100.10' });
    const before = await status(await signIn(ctx.app));
    await ctx.deps.housekeeping.runOnce();

    const windows = await db.selectFrom('public_chat_rate_limits').select('identifier').execute();
    expect(windows).toEqual([{ identifier: 'verify:198.51.100.10' }]);
    expect(await db.selectFrom('spent_verification_tokens').selectAll().execute()).toEqual([]);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie: admin } })).statusCode).toBe(401);
    expect(await db.selectFrom('admin_sessions').selectAll().execute()).toHaveLength(1); // only the new sign-in

    const after = await status(await signIn(ctx.app));
    expect(after).toEqual(before);
    expect(after).toMatchObject({ message_count: 2, session_count: 2, rate_limit_exceeded_count: 1 });
  });
});
