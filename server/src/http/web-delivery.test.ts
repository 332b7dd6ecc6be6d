import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliCompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cookieFrom, createTestContext, signIn, type TestContext } from '../test-support/test-context.ts';

const INDEX = `<!doctype html><html><head><title>placeholder</title><!--app-config--></head><body><div id="root"><p>${'Welcome to the convention. '.repeat(60)}</p></div></body></html>`;
/** A built chunk with its precompressed copies, as the web build writes them. */
const SCRIPT = `console.log(${JSON.stringify('the chat '.repeat(400))});\n`;

function appConfigOf(html: string): Record<string, unknown> {
  const match = /<script type="application\/json" id="app-config">(.*?)<\/script>/.exec(html);
  if (!match) throw new Error('no app-config block');
  return JSON.parse(match[1]!);
}

describe('delivering the web app', () => {
  let dist: string;
  let ctx: TestContext | undefined;

  beforeAll(() => {
    dist = mkdtempSync(path.join(tmpdir(), 'concierge-dist-'));
    mkdirSync(path.join(dist, 'assets'));
    writeFileSync(path.join(dist, 'index.html'), INDEX);
    writeFileSync(path.join(dist, 'assets', 'chat-Ab12Cd34.js'), SCRIPT);
    writeFileSync(path.join(dist, 'assets', 'chat-Ab12Cd34.js.br'), brotliCompressSync(SCRIPT));
    writeFileSync(path.join(dist, 'assets', 'chat-Ab12Cd34.js.gz'), gzipSync(SCRIPT));
  });
  afterAll(() => rmSync(dist, { recursive: true, force: true }));
  afterEach(async () => {
    await ctx?.close();
    ctx = undefined;
  });

  const start = async (env: Record<string, string> = {}) => {
    ctx = await createTestContext({ env: { WEB_DIST_DIR: dist, ...env } });
    return ctx;
  };

  it('sends the precompressed asset the browser takes (br, else gzip), cached for a year, over real HTTP', async () => {
    const { app } = await start();
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `${base}/ui/assets/chat-Ab12Cd34.js`;
    const brotli = await fetch(url, { headers: { 'accept-encoding': 'br' } });
    expect(brotli.headers.get('content-encoding')).toBe('br');
    expect(brotli.headers.get('content-type')).toMatch(/^text\/javascript|^application\/javascript/);
    expect(brotli.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(brotli.headers.get('vary')).toMatch(/accept-encoding/i);
    expect(await brotli.text()).toBe(SCRIPT);

    const gzip = await fetch(url, { headers: { 'accept-encoding': 'gzip, deflate' } });
    expect(gzip.headers.get('content-encoding')).toBe('gzip');
    expect(await gzip.text()).toBe(SCRIPT);

    const plain = await app.inject({ method: 'GET', url: '/ui/assets/chat-Ab12Cd34.js', headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body).toBe(SCRIPT);
    app.server.closeAllConnections();
  });

  it('compresses replies over 1 KB on the fly, leaves small ones alone, and index.html is no-cache', async () => {
    const { app } = await start();
    const spec = await app.inject({ method: 'GET', url: '/api/openapi.json', headers: { 'accept-encoding': 'gzip, br' } });
    expect(spec.headers['content-encoding']).toBe('br');
    const small = await app.inject({ method: 'GET', url: '/healthz', headers: { 'accept-encoding': 'br' } });
    expect(small.headers['content-encoding']).toBeUndefined();
    const page = await app.inject({ method: 'GET', url: '/ui/chat', headers: { 'accept-encoding': 'gzip' } });
    expect(page.headers['cache-control']).toBe('no-cache, private');
    expect(page.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(page.rawPayload).toString('utf8')).toContain('id="app-config"');
  });

  it('redirects / and /chat to the chat page', async () => {
    const { app } = await start();
    for (const url of ['/', '/chat']) {
      const reply = await app.inject({ method: 'GET', url });
      expect(reply.statusCode).toBe(302);
      expect(reply.headers.location).toBe('/ui/chat');
    }
  });

  it('tells the page whether an admin is signed in, so the chat needs no /api/logged_in request', async () => {
    const { app } = await start();
    const anonymous = await app.inject({ method: 'GET', url: '/ui/chat' });
    expect(appConfigOf(anonymous.body).admin).toBeNull();
    const admin = await signIn(app);
    const signedIn = await app.inject({ method: 'GET', url: '/ui/chat', headers: { cookie: admin } });
    expect(appConfigOf(signedIn.body).admin).toEqual({ username: 'volunteer' });
    // Another visitor right after gets no trace of it.
    const next = await app.inject({ method: 'GET', url: '/ui/chat' });
    expect(appConfigOf(next.body).admin).toBeNull();
    const forged = await app.inject({ method: 'GET', url: '/ui/chat', headers: { cookie: 'concierge_admin=forged.value' } });
    expect(appConfigOf(forged.body).admin).toBeNull();
  });

  it('lets only this site frame any page, by default', async () => {
    const { app } = await start();
    for (const url of ['/ui/chat', '/ui/admin/status']) {
      const reply = await app.inject({ method: 'GET', url });
      expect(String(reply.headers['content-security-policy'])).toContain("frame-ancestors 'self'");
      expect(reply.headers['x-frame-options']).toBe('SAMEORIGIN');
    }
    const verify = await app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
    expect(String(verify.headers['set-cookie'])).toMatch(/SameSite=Lax/);
  });

  it('lets the EMBED_ORIGINS sites frame the chat, never the console, with a cookie that works in their frame', async () => {
    const { app } = await start({ EMBED_ORIGINS: 'https://con.example.org,http://localhost:4000' });
    for (const url of ['/ui/chat', '/ui/chat?embed=1', '/ui/', '/ui']) {
      const chat = await app.inject({ method: 'GET', url });
      expect(String(chat.headers['content-security-policy']), url).toContain("frame-ancestors 'self' https://con.example.org http://localhost:4000");
      expect(chat.headers['x-frame-options'], url).toBeUndefined();
    }
    const admin = await app.inject({ method: 'GET', url: '/ui/admin/status' });
    expect(String(admin.headers['content-security-policy'])).toContain("frame-ancestors 'self';");
    expect(admin.headers['x-frame-options']).toBe('SAMEORIGIN');

    const verify = await app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
    const cookie = String(verify.headers['set-cookie']);
    expect(cookie).toMatch(/SameSite=None/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; Partitioned/);
    expect(cookie).toMatch(/HttpOnly/);
    const send = await app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie: cookieFrom(verify) }, payload: { message: 'hello' } });
    expect(send.statusCode).toBe(200);
  });

  it('serves the embed script to any site', async () => {
    const { app } = await start({ PRODUCT_NAME: 'Starfall </script> Concierge' });
    const reply = await app.inject({ method: 'GET', url: '/ui/embed.js' });
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(reply.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(reply.body).toContain("'/ui/chat?embed=1'");
    expect(reply.body).toContain('"Starfall \\u003c/script> Concierge"');
    expect(reply.body).not.toContain('</script>');
    // It parses as a script.
    expect(() => new Function(reply.body)).not.toThrow();
  });
});
