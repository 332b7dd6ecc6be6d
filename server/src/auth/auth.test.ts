import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN, cookieFrom, createTestContext, manualClock, signIn, type TestContext } from '../test-support/test-context.ts';
import type { LightMyRequestResponse } from 'fastify';
import { accountDelayMs, SESSION_POLICY, THROTTLE_POLICY } from './auth.service.ts';

const setupBody = { username: ADMIN.username, password: ADMIN.password, confirm_password: ADMIN.password };

describe('first-time setup', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  it('is required until the first admin exists, then refused', async () => {
    expect((await ctx.app.inject({ url: '/setup/status' })).json()).toEqual({ required: true });

    const created = await ctx.app.inject({ method: 'POST', url: '/setup', payload: setupBody });
    expect(created.statusCode).toBe(200);
    expect(created.json()).toEqual({ username: ADMIN.username });
    expect((await ctx.app.inject({ url: '/setup/status' })).json()).toEqual({ required: false });

    const again = await ctx.app.inject({ method: 'POST', url: '/setup', payload: { ...setupBody, username: 'intruder' } });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'setup_complete' });
    const admins = await ctx.deps.database.db.selectFrom('admin_users').select('username').execute();
    expect(admins).toEqual([{ username: ADMIN.username }]);
  });

  it("answers 'Passwords don't match' and stores nothing", async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/setup', payload: { ...setupBody, confirm_password: 'something else' } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "Passwords don't match", code: 'passwords_mismatch', field: 'confirm_password' });
    expect((await ctx.app.inject({ url: '/setup/status' })).json()).toEqual({ required: true });
  });

  it('names the missing or bad field', async () => {
    const short = await ctx.app.inject({ method: 'POST', url: '/setup', payload: { ...setupBody, password: 'short', confirm_password: 'short' } });
    expect(short.statusCode).toBe(400);
    expect(short.json().error).toMatch(/^password: /);
    const missing = await ctx.app.inject({ method: 'POST', url: '/setup', payload: { password: 'x', confirm_password: 'x' } });
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toMatchObject({ code: 'validation_error', field: 'username' });
  });

  it('lets only one of several concurrent setups win', async () => {
    const replies = await Promise.all(
      ['a1', 'a2', 'a3', 'a4'].map((username) =>
        ctx.app.inject({ method: 'POST', url: '/setup', payload: { ...setupBody, username } }),
      ),
    );
    expect(replies.map((reply) => reply.statusCode).sort()).toEqual([200, 409, 409, 409]);
    const admins = await ctx.deps.database.db.selectFrom('admin_users').select('username').execute();
    expect(admins).toHaveLength(1);
  });

  it('stores an Argon2id hash, never the password', async () => {
    await ctx.app.inject({ method: 'POST', url: '/setup', payload: setupBody });
    const row = await ctx.deps.database.db.selectFrom('admin_users').select('password_hash').executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(row.password_hash).not.toContain(ADMIN.password);
  });
});

describe('sign in and out', () => {
  let ctx: TestContext;
  const time = manualClock();
  beforeEach(async () => {
    time.set(new Date('2026-03-13T15:00:00Z'));
    ctx = await createTestContext({ clock: time.clock, env: { TRUST_PROXY: 'true' } });
    await ctx.app.inject({ method: 'POST', url: '/setup', payload: setupBody });
  });
  afterEach(() => ctx.close());

  const login = (payload: object, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'POST', url: '/login', payload, headers });

  it('sets an HttpOnly, SameSite=Lax session cookie and answers the username', async () => {
    const response = await login(ADMIN);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ username: ADMIN.username });
    const cookie = response.cookies[0]!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(cookie.secure).toBeFalsy();

    const me = await ctx.app.inject({ url: '/api/logged_in', headers: { cookie: cookieFrom(response) } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toEqual({ username: ADMIN.username });
  });

  it('marks the cookie Secure behind a TLS-terminating proxy', async () => {
    const response = await login(ADMIN, { 'x-forwarded-proto': 'https' });
    expect(response.cookies[0]!.secure).toBe(true);
  });

  it('refuses a wrong password or unknown user with 401', async () => {
    for (const payload of [{ ...ADMIN, password: 'wrong password' }, { username: 'nobody', password: 'whatever1' }]) {
      const response = await login(payload);
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ error: 'Invalid username or password', code: 'invalid_credentials' });
      expect(response.cookies).toHaveLength(0);
    }
  });

  it('revokes the session on logout, so the old cookie stops working', async () => {
    const cookie = cookieFrom(await login(ADMIN));
    const out = await ctx.app.inject({ method: 'POST', url: '/logout', headers: { cookie } });
    expect(out.statusCode).toBe(200);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } })).statusCode).toBe(401);
    // Logging out again, or without a session, is fine.
    expect((await ctx.app.inject({ method: 'POST', url: '/logout', headers: { cookie } })).statusCode).toBe(200);
    expect((await ctx.app.inject({ method: 'POST', url: '/logout', headers: { 'content-type': 'application/json' } })).statusCode).toBe(200);
  });

  it('refuses a tampered cookie', async () => {
    const cookie = cookieFrom(await login(ADMIN));
    const tampered = cookie.replace(/=(.)/, (_, first: string) => `=${first === 'a' ? 'b' : 'a'}`);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie: tampered } })).statusCode).toBe(401);
  });

  it('slides the expiry while used and ends an idle session', async () => {
    const cookie = cookieFrom(await login(ADMIN));
    time.advance(SESSION_POLICY.idleMs - 60_000);
    const used = await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } });
    expect(used.statusCode).toBe(200);
    expect(used.cookies).toHaveLength(1); // renewed cookie with the new expiry
    time.advance(SESSION_POLICY.idleMs - 60_000);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } })).statusCode).toBe(200);
    time.advance(SESSION_POLICY.idleMs + 1);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } })).statusCode).toBe(401);
  });

  it('notices a session ended elsewhere (another process, the admin CLI) within a few seconds', async () => {
    const cookie = cookieFrom(await login(ADMIN));
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } })).statusCode).toBe(200);
    await ctx.deps.database.db.deleteFrom('admin_sessions').execute();
    time.advance(SESSION_POLICY.recheckEveryMs);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } })).statusCode).toBe(401);
  });

  it('throttles repeated failures per username and IP without locking the admin out elsewhere', async () => {
    const attacker = { 'x-forwarded-for': '203.0.113.9' };
    for (let i = 0; i < THROTTLE_POLICY.maxFailuresPerUserAndIp; i++) {
      expect((await login({ ...ADMIN, password: `guess-${i}` }, attacker)).statusCode).toBe(401);
    }
    const blocked = await login(ADMIN, attacker);
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.json().code).toBe('login_throttled');

    // The real admin, elsewhere, waits no more than the account's delay (the fifth failure set 1 s).
    const elsewhere = await login(ADMIN, { 'x-forwarded-for': '198.51.100.7' });
    expect(elsewhere.statusCode).toBe(429);
    expect(elsewhere.headers['retry-after']).toBe('1');
    time.advance(1000);
    expect((await login(ADMIN, { 'x-forwarded-for': '198.51.100.7' })).statusCode).toBe(200);

    // The window passes and the attacker's address may try again.
    time.advance(THROTTLE_POLICY.windowMs + 1000);
    expect((await login(ADMIN, attacker)).statusCode).toBe(200);
  });

  it('throttles one address guessing many usernames', async () => {
    const attacker = { 'x-forwarded-for': '203.0.113.10' };
    for (let i = 0; i < THROTTLE_POLICY.maxFailuresPerIp; i++) {
      await login({ username: `user${i}`, password: 'guess-guess' }, attacker);
    }
    expect((await login({ username: 'another', password: 'guess-guess' }, attacker)).statusCode).toBe(429);
    expect((await login(ADMIN, { 'x-forwarded-for': '198.51.100.7' })).statusCode).toBe(200);
  });
});

describe('sign-in limits per account (guesses spread over many addresses)', () => {
  let ctx: TestContext;
  const time = manualClock();
  beforeEach(async () => {
    time.set(new Date('2026-03-13T15:00:00Z'));
    ctx = await createTestContext({ clock: time.clock, env: { TRUST_PROXY: 'true' } });
    await ctx.app.inject({ method: 'POST', url: '/setup', payload: setupBody });
  });
  afterEach(() => ctx.close());

  const from = (address: string, payload: object = ADMIN, cookie?: string) =>
    ctx.app.inject({ method: 'POST', url: '/login', payload, headers: { 'x-forwarded-for': address, ...(cookie ? { cookie } : {}) } });
  const wrong = { ...ADMIN, password: 'not the password' };
  const deviceCookieOf = (response: LightMyRequestResponse) => {
    const device = response.cookies.find((cookie) => cookie.name === 'concierge_device');
    return device ? `${device.name}=${device.value}` : undefined;
  };

  it('the delays grow from 1 s to at most a few seconds', () => {
    expect([1, 4, 5, 6, 7, 8, 50].map(accountDelayMs)).toEqual([0, 0, 1000, 2000, 4000, 5000, 5000]);
  });

  it('throttles 20 addresses × 5 guesses: only the first 5 are checked, the other 95 are refused with 429', async () => {
    const statuses: number[] = [];
    for (let address = 1; address <= 20; address++) {
      for (let guess = 0; guess < 5; guess++) statuses.push((await from(`203.0.113.${address}`, { ...ADMIN, password: `guess-${address}-${guess}` })).statusCode);
    }
    expect(statuses.filter((status) => status === 401)).toHaveLength(THROTTLE_POLICY.freeFailuresPerAccount);
    expect(statuses.filter((status) => status === 429)).toHaveLength(95);
    const refused = await from('203.0.113.99', wrong);
    expect(refused.json()).toEqual({ error: 'Too many failed sign-in attempts for this account. Try again in 1 second.', code: 'login_throttled' });
  });

  it('an attacker with an address per guess who waits out every delay makes one guess per few seconds, and the real admin from a fresh address gets in within a few seconds', async () => {
    const start = time.clock.now().getTime();
    let checked = 0;
    // A botnet: every attempt from a new address, so no per-address limit ever applies.
    for (let attempt = 0; checked < 100; attempt++) {
      const reply = await from(`10.${attempt >> 16}.${(attempt >> 8) & 255}.${attempt & 255}`, wrong);
      if (reply.statusCode === 401) checked++;
      else {
        expect(reply.statusCode).toBe(429);
        const wait = Number(reply.headers['retry-after']);
        expect(wait).toBeGreaterThanOrEqual(1);
        expect(wait).toBeLessThanOrEqual(THROTTLE_POLICY.maxAccountDelayMs / 1000);
        time.advance(wait * 1000);
      }
    }
    // 100 guesses, 5 free: the other 95 each waited for the account's delay (most of them the longest).
    expect(time.clock.now().getTime() - start).toBeGreaterThanOrEqual(90 * THROTTLE_POLICY.maxAccountDelayMs);

    // The attack stops; the admin, from an address never seen, signs in after at most the longest delay.
    const first = await from('198.51.100.7');
    expect(first.statusCode).toBe(429);
    expect(Number(first.headers['retry-after'])).toBeLessThanOrEqual(THROTTLE_POLICY.maxAccountDelayMs / 1000);
    time.advance(Number(first.headers['retry-after']) * 1000);
    const admin = await from('198.51.100.7');
    expect(admin.statusCode).toBe(200);
    expect(admin.json()).toEqual({ username: ADMIN.username });
  });

  it('lets no burst of concurrent guesses past the count: 30 at once from 30 addresses, 5 checked', async () => {
    const replies = await Promise.all(Array.from({ length: 30 }, (_, index) => from(`203.0.113.${index + 1}`, { ...ADMIN, password: `guess-${index}` })));
    const statuses = replies.map((reply) => reply.statusCode);
    expect(statuses.filter((status) => status === 401)).toHaveLength(THROTTLE_POLICY.freeFailuresPerAccount);
    expect(statuses.filter((status) => status === 429)).toHaveLength(25);
  });

  it('a browser that signed in before (device cookie) gets in at once, even from an address the attack locked', async () => {
    const home = '198.51.100.20';
    const earlier = await from(home);
    expect(earlier.statusCode).toBe(200);
    const device = deviceCookieOf(earlier);
    expect(device).toBeDefined();
    const deviceCookie = earlier.cookies.find((cookie) => cookie.name === 'concierge_device')!;
    expect(deviceCookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/login' });

    // The attack: 20 addresses, and the admin's own address (shared Wi-Fi) locked for this username.
    for (let address = 1; address <= 20; address++) for (let guess = 0; guess < 5; guess++) await from(`203.0.113.${address}`, wrong);
    for (let guess = 0; guess < THROTTLE_POLICY.maxFailuresPerUserAndIp; guess++) await from(home, wrong);
    expect((await from(home)).statusCode).toBe(429);

    const known = await from(home, ADMIN, device);
    expect(known.statusCode).toBe(200);
    // Still honoured for a guessing thief's browser only until it fails 5 times.
    for (let guess = 0; guess < THROTTLE_POLICY.maxFailuresPerDevice; guess++) expect((await from(home, wrong, device)).statusCode).toBe(401);
    expect((await from(home, ADMIN, device)).statusCode).toBe(429);
  });

  it("a device cookie of another account, or a forged one, earns nothing", async () => {
    for (let guess = 0; guess < THROTTLE_POLICY.freeFailuresPerAccount; guess++) await from(`203.0.113.${guess + 1}`, wrong);
    const forged = 'concierge_device=AAAAAAAAAAAAAAAAAAAAAAAA.dm9sdW50ZWVy';
    expect((await from('198.51.100.7', ADMIN, forged)).statusCode).toBe(429);
  });
});

describe('cross-site requests', () => {
  let ctx: TestContext;
  let cookie: string;
  beforeEach(async () => {
    ctx = await createTestContext();
    cookie = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  const patch = (headers: Record<string, string>) =>
    ctx.app.inject({ method: 'PATCH', url: '/api/config', payload: { discord_custom_status: 'changed' }, headers: { cookie, ...headers } });

  it('refuses a state change whose Origin or Referer is another site', async () => {
    expect((await patch({ origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await patch({ referer: 'https://evil.example/page' })).statusCode).toBe(403);
    expect(ctx.deps.config.get().discord_custom_status).toBe('/ask me about the con!');
  });

  it('counts the scheme: an https Origin or Referer is another site than this plain-HTTP server', async () => {
    const refused = await patch({ origin: 'https://localhost' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'cross_site_request', error: expect.stringContaining('comes from https://localhost') });
    expect((await patch({ referer: 'https://localhost:80/ui/admin/config' })).statusCode).toBe(403);
    expect((await patch({ origin: 'http://localhost:8080' })).statusCode).toBe(403);
    expect(ctx.deps.config.get().discord_custom_status).toBe('/ask me about the con!');
  });

  it('lets same-site browsers and header-less clients through', async () => {
    expect((await patch({ origin: 'http://localhost:80' })).statusCode).toBe(200);
    expect((await patch({ referer: 'http://localhost:80/ui/admin/config' })).statusCode).toBe(200);
    expect((await patch({})).statusCode).toBe(200);
  });

  it('checks the session first, so a cross-site anonymous request gets 401', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/pause', headers: { origin: 'https://evil.example' } });
    expect(response.statusCode).toBe(401);
    const anonymous = await ctx.app.inject({ method: 'PATCH', url: '/api/config', payload: {}, headers: { origin: 'https://evil.example' } });
    expect(anonymous.statusCode).toBe(401);
  });

  it('refuses a cross-site sign-in attempt', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/login', payload: ADMIN, headers: { origin: 'https://evil.example' } });
    expect(response.statusCode).toBe(403);
  });
});
