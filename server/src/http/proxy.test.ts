import path from 'node:path';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../server.ts';
import { startForwardingProxy, requestFrom, type ForwardingProxy, type PlainResponse } from '../test-support/forwarding-proxy.ts';
import { ADMIN, freshDatabase, minuteStartClock, type FreshDatabase } from '../test-support/test-context.ts';

/** The visitor's own address; the proxy listens on 127.0.0.1, so the two differ. */
const CLIENT = '127.0.0.2';

const cookieOf = (response: PlainResponse) =>
  [response.headers['set-cookie'] ?? []].flat().map((line) => line.split(';')[0]).join('; ');

describe('behind a reverse proxy (a real HTTP hop that appends X-Forwarded-For as nginx does)', () => {
  let server: RunningServer | undefined;
  let database: FreshDatabase | undefined;
  let proxy: ForwardingProxy | undefined;

  afterEach(async () => {
    await proxy?.close();
    if (server && database) {
      await server.app.close();
      // The clean-up pass that started with the server must be done before its schema is dropped.
      await server.deps.housekeeping.stop();
      await database.dispose(server.deps);
    }
    server = database = proxy = undefined;
  });

  async function start(trustProxy: string, hostHeader: 'http_host' | 'host' = 'http_host', forwardedProto: 'http' | 'https' = 'http') {
    database = freshDatabase();
    server = await startServer(
      {
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: database.url,
        TRUST_PROXY: trustProxy,
        LOG_LEVEL: 'silent',
        WEB_DIST_DIR: path.join(tmpdir(), 'concierge-no-web-build'),
      },
      { databaseSchema: database.schema, runCrawler: false, clock: minuteStartClock() },
    );
    proxy = await startForwardingProxy({ target: server.url, hostHeader, forwardedProto });
    // What a browser on the proxy's (non-default) port sends with a POST.
    const origin = proxy.url.replace(/^http:/, `${forwardedProto}:`);
    const call = (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) =>
      requestFrom(CLIENT, `${proxy!.url}${url}`, { method, body, headers: { origin, ...headers } });
    return { call, origin, server };
  }

  it('with TRUST_PROXY=1, a forged X-Forwarded-For neither dodges the sign-in throttle nor changes the throttled address', async () => {
    const { call, server } = await start('1');
    expect((await call('POST', '/setup', { ...ADMIN, confirm_password: ADMIN.password })).status).toBe(200);

    // Five wrong passwords, each claiming to come from somewhere else.
    for (let attempt = 1; attempt <= 5; attempt++) {
      const wrong = await call('POST', '/login', { ...ADMIN, password: 'not the password' }, { 'x-forwarded-for': `203.0.113.${attempt}` });
      expect(wrong.status).toBe(401);
    }
    // A sixth address changes nothing: this client is locked out, even with the right password.
    const sixth = await call('POST', '/login', ADMIN, { 'x-forwarded-for': '203.0.113.6' });
    expect(sixth.status).toBe(429);
    expect(Number(sixth.headers['retry-after'])).toBeGreaterThan(0);

    const keys = await server.deps.database.db.selectFrom('login_throttle').select(['key', 'failures']).orderBy('key').execute();
    expect(keys).toEqual([
      { key: `account:${ADMIN.username}`, failures: 5 },
      { key: `ip:${CLIENT}`, failures: 5 },
      { key: `user:${ADMIN.username}|ip:${CLIENT}`, failures: 5 },
    ]);
  });

  it('with TRUST_PROXY=1, a forged X-Forwarded-For changes neither the rate-limit identifier nor the per-address limit', async () => {
    const { call, server } = await start('1');
    await server.deps.config.update({ public_chat_requests_per_minute: 1, assistant_poll_interval: '100ms' });

    // Eleven visitors' sessions from one address, each forging a different one:
    // the address allows 10 × the per-session limit, so the eleventh is refused.
    const statuses: number[] = [];
    for (let visitor = 1; visitor <= 11; visitor++) {
      const forged = { 'x-forwarded-for': `198.51.100.${visitor}` };
      const verified = await call('POST', '/public/chat/turnstile/verify', { token: '' }, forged);
      expect(verified.status).toBe(200);
      const answer = await call('POST', '/public/chat/send', { message: 'When is the costume contest?' }, { ...forged, cookie: cookieOf(verified) });
      statuses.push(answer.status);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(statuses[10]).toBe(429);

    const { db } = server.deps.database;
    const addressWindows = await db.selectFrom('public_chat_rate_limits').select(['identifier', 'client_ip', 'request_count']).where('identifier', 'not like', 'session:%').orderBy('identifier').execute();
    expect(addressWindows).toEqual([
      { identifier: `ip:${CLIENT}`, client_ip: CLIENT, request_count: 11 },
      { identifier: `verify:${CLIENT}`, client_ip: CLIENT, request_count: 11 },
    ]);
    const recorded = await db.selectFrom('public_chat_sessions').select('client_ip').distinct().execute();
    expect(recorded).toEqual([{ client_ip: CLIENT }]);
  });

  it('with TRUST_PROXY=true (every hop trusted), the forged address is believed: why 1 is the setting for one proxy', async () => {
    const { call, server } = await start('true');
    await call('POST', '/setup', { ...ADMIN, confirm_password: ADMIN.password });
    await call('POST', '/login', { ...ADMIN, password: 'not the password' }, { 'x-forwarded-for': '203.0.113.77' });
    const keys = await server.deps.database.db.selectFrom('login_throttle').select('key').where('key', 'not like', 'account:%').orderBy('key').execute();
    expect(keys.map((row) => row.key)).toEqual(['ip:203.0.113.77', `user:${ADMIN.username}|ip:203.0.113.77`]);
  });

  it('passes the same-origin check on a non-default port when the proxy forwards Host with its port ($http_host)', async () => {
    const { call, origin } = await start('1', 'http_host');
    expect(origin).toMatch(/:\d+$/);
    expect((await call('POST', '/setup', { ...ADMIN, confirm_password: ADMIN.password })).status).toBe(200);
    expect((await call('POST', '/login', ADMIN)).status).toBe(200);
    expect((await call('POST', '/public/chat/turnstile/verify', { token: '' })).status).toBe(200);
  });

  it('refuses with a message naming the Origin it saw when the proxy drops the port ($host)', async () => {
    const { call, origin } = await start('1', 'host');
    const login = await call('POST', '/setup', { ...ADMIN, confirm_password: ADMIN.password });
    expect(login.status).toBe(403);
    expect(login.json()).toMatchObject({ code: 'cross_site_request' });
    expect(login.json<{ error: string }>().error).toContain(origin);
    expect(login.json<{ error: string }>().error).toContain('$http_host');

    const verify = await call('POST', '/public/chat/turnstile/verify', { token: '' });
    expect(verify.status).toBe(403);
    expect(verify.json()).toMatchObject({ success: false, code: 'cross_site_request', error: expect.stringContaining(`comes from ${origin}`) });
  });

  it('behind a proxy that terminates TLS (X-Forwarded-Proto: https), an https Origin passes and an http one is another site', async () => {
    const { call, origin } = await start('1', 'http_host', 'https');
    expect(origin).toMatch(/^https:/);
    expect((await call('POST', '/setup', { ...ADMIN, confirm_password: ADMIN.password })).status).toBe(200);
    expect((await call('POST', '/login', ADMIN)).status).toBe(200);

    const plain = origin.replace(/^https:/, 'http:');
    const refused = await call('POST', '/login', ADMIN, { origin: plain });
    expect(refused.status).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'cross_site_request', error: expect.stringContaining(`comes from ${plain}`) });
    expect(refused.json<{ error: string }>().error).toContain(`(${origin})`);
  });

  it('without TRUST_PROXY, the scheme the proxy claims is not believed: the https Origin is refused, naming X-Forwarded-Proto', async () => {
    const { call, origin } = await start('false', 'http_host', 'https');
    const refused = await call('POST', '/setup', { ...ADMIN, confirm_password: ADMIN.password });
    expect(refused.status).toBe(403);
    expect(refused.json<{ error: string }>().error).toContain(`comes from ${origin}`);
    expect(refused.json<{ error: string }>().error).toContain('X-Forwarded-Proto');
  });
});
