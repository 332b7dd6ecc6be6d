import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, createTestContext, type TestContext } from '../test-support/test-context.ts';

const INDEX = '<!doctype html><html><head><title>placeholder</title><!--app-config--></head><body><div id="root"></div></body></html>';

function appConfigOf(html: string): Record<string, unknown> {
  const match = /<script type="application\/json" id="app-config">(.*?)<\/script>/.exec(html);
  if (!match) throw new Error('no app-config block');
  return JSON.parse(match[1]!);
}

describe('serving the web app', () => {
  let dist: string;
  let ctx: TestContext;

  beforeAll(async () => {
    dist = mkdtempSync(path.join(tmpdir(), 'concierge-dist-'));
    mkdirSync(path.join(dist, 'assets'));
    writeFileSync(path.join(dist, 'index.html'), INDEX);
    writeFileSync(path.join(dist, 'assets', 'index-abc123.js'), 'console.log("app")');
    ctx = await createTestContext({
      env: {
        WEB_DIST_DIR: dist,
        PRODUCT_NAME: 'Starfall </script> Concierge',
        COMMUNITY_URL: 'https://chat.example.org/invite',
        TURNSTILE_SITE_KEY: '1x00000000000000000000AA',
        TURNSTILE_SECRET_KEY: '1x0000000000000000000000000000000AA',
      },
    });
  });
  afterAll(async () => {
    await ctx.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('answers every page under /ui with index.html carrying the run-time values', async () => {
    for (const url of ['/ui', '/ui/', '/ui/chat', '/ui/admin/users', '/ui/admin/crawler_events?crawler_run_id=3']) {
      const reply = await ctx.app.inject({ method: 'GET', url });
      expect(reply.statusCode, url).toBe(200);
      expect(reply.headers['content-type']).toContain('text/html');
      expect(reply.headers['cache-control']).toBe('no-cache, private');
      const values = appConfigOf(reply.body);
      expect(values).toMatchObject({
        productName: 'Starfall </script> Concierge',
        turnstileSiteKey: '1x00000000000000000000AA',
        communityUrl: 'https://chat.example.org/invite',
        conventionUrl: null,
      });
      expect(values.version).toMatch(/^\d+\.\d+\.\d+/);
      // Every time the chat shows is in the convention's zone (DESIGN §9), so the page carries it.
      expect(values.timeZone).toBe(ctx.deps.timeZone());
      expect(reply.body).toContain('<title>Starfall &lt;/script&gt; Concierge</title>');
      expect(reply.body).not.toContain('TURNSTILE_SECRET');
      expect(reply.body).not.toContain('0000000000000000000000000000000AA');
    }
  });

  it('serves hashed assets for a year and never answers a missing file with the page', async () => {
    const asset = await ctx.app.inject({ method: 'GET', url: '/ui/assets/index-abc123.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toContain('immutable');
    const missing = await ctx.app.inject({ method: 'GET', url: '/ui/assets/index-gone.js' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'not_found' });
  });

  it('redirects / and /chat to the chat and answers unknown paths with a JSON 404', async () => {
    for (const url of ['/', '/chat']) {
      const root = await ctx.app.inject({ method: 'GET', url });
      expect(root.statusCode, url).toBe(302);
      expect(root.headers.location, url).toBe('/ui/chat');
    }
    const unknown = await ctx.app.inject({ method: 'GET', url: '/nowhere' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: 'Not found: GET /nowhere', code: 'not_found' });
  });

  it('sends security headers that still allow the verification widget', async () => {
    const reply = await ctx.app.inject({ method: 'GET', url: '/ui/' });
    const csp = String(reply.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self' https://challenges.cloudflare.com");
    expect(reply.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('before the web app is built', () => {
  it('explains how to build it instead of failing', async () => {
    const ctx = await createTestContext();
    try {
      const reply = await ctx.app.inject({ method: 'GET', url: '/ui/admin' });
      expect(reply.statusCode).toBe(503);
      expect(reply.body).toContain('npm run build');
    } finally {
      await ctx.close();
    }
  });
});

describe('behind a reverse proxy', () => {
  async function loginCookie(env: Record<string, string>) {
    const ctx = await createTestContext({ env });
    try {
      await ctx.app.inject({ method: 'POST', url: '/setup', payload: { ...ADMIN, confirm_password: ADMIN.password } });
      const login = await ctx.app.inject({
        method: 'POST',
        url: '/login',
        payload: ADMIN,
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' },
      });
      expect(login.statusCode).toBe(200);
      return String(login.headers['set-cookie']);
    } finally {
      await ctx.close();
    }
  }

  it('marks the session cookie Secure when TRUST_PROXY says the client used HTTPS', async () => {
    expect(await loginCookie({ TRUST_PROXY: 'true' })).toMatch(/; Secure/);
  });

  it('ignores forwarded headers without TRUST_PROXY', async () => {
    expect(await loginCookie({})).not.toMatch(/; Secure/);
  });
});
