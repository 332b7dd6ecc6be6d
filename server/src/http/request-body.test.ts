import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, signIn, type TestContext } from '../test-support/test-context.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './request-body.ts';

const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('jsonDepthExceeds', () => {
  it('counts nesting of arrays and objects, not brackets inside strings', () => {
    expect(jsonDepthExceeds(deepArray(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonDepthExceeds(deepArray(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonDepthExceeds(JSON.stringify({ text: '['.repeat(1000), quoted: '\\"[[[[' }))).toBe(false);
    expect(jsonDepthExceeds('{"a":'.repeat(40) + '1' + '}'.repeat(40))).toBe(true);
    expect(jsonDepthExceeds(deepArray(30_000))).toBe(true);
  });
});

describe('request bodies on actions without parameters', () => {
  let ctx: TestContext;
  let cookie: string;
  let shutdowns: number;
  beforeEach(async () => {
    ctx = await createTestContext();
    cookie = await signIn(ctx.app);
    shutdowns = 0;
    ctx.deps.requestShutdown = () => shutdowns++;
  });
  afterEach(() => ctx.close());

  const post = (url: string, payload?: string, contentType = 'application/json') =>
    ctx.app.inject({ method: 'POST', url, headers: { cookie, ...(payload === undefined ? {} : { 'content-type': contentType }) }, payload });

  it('refuses a 30,000-deep array with a 400 before any handler runs: /api/quit does not quit, /api/pause does not pause', async () => {
    const quit = await post('/api/quit', deepArray(30_000));
    expect(quit.statusCode).toBe(400);
    expect(quit.json()).toEqual({ error: `Request body is nested too deeply (more than ${MAX_JSON_DEPTH} levels)`, code: 'json_too_deep' });
    const pause = await post('/api/pause', deepArray(30_000));
    expect(pause.statusCode).toBe(400);
    await new Promise((resolve) => setImmediate(resolve));
    expect(shutdowns).toBe(0);
    expect(ctx.deps.config.get().paused).toBe(false);
  });

  it('refuses deep JSON on routes with a body schema too (400, never a 500)', async () => {
    const config = await ctx.app.inject({ method: 'PATCH', url: '/api/config', headers: { cookie, 'content-type': 'application/json' }, payload: `{"paused":${deepArray(5_000)}}` });
    expect(config.statusCode).toBe(400);
    expect(config.json()).toMatchObject({ code: 'json_too_deep' });
    const login = await ctx.app.inject({ method: 'POST', url: '/login', headers: { 'content-type': 'application/json' }, payload: deepArray(30_000) });
    expect(login.statusCode).toBe(400);
  });

  it.each([
    ['a JSON object with fields', '{"force":true}', 'application/json'],
    ['a JSON array', '[]', 'application/json'],
    ['a JSON string', '"quit"', 'application/json'],
    ['a JSON number', '1', 'application/json'],
    ['plain text', 'please quit', 'text/plain'],
  ])('refuses %s with a 400 that says the action takes no body', async (_name, payload, contentType) => {
    for (const url of ['/api/quit', '/api/pause', '/api/clear_threads', '/api/users/reload', '/logout']) {
      const response = await post(url, payload, contentType);
      expect(response.statusCode, url).toBe(400);
      expect(response.json(), url).toEqual({ error: 'This action takes no request body (send none, or {})', code: 'unexpected_body' });
    }
    const chat = await ctx.app.inject({ method: 'POST', url: '/public/chat/new_conversation', headers: { 'content-type': contentType }, payload });
    expect(chat.statusCode).toBe(400);
    expect(chat.json()).toMatchObject({ success: false, code: 'unexpected_body' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(shutdowns).toBe(0);
    expect(ctx.deps.config.get().paused).toBe(false);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } })).statusCode).toBe(200);
  });

  it('accepts no body, an empty body and {}', async () => {
    expect((await post('/api/pause')).statusCode).toBe(200);
    expect((await post('/api/resume', '')).statusCode).toBe(200);
    expect((await post('/api/pause', '{}')).statusCode).toBe(200);
    expect((await post('/api/resume', ' { } ')).statusCode).toBe(200);
    const quit = await post('/api/quit', '{}');
    expect(quit.statusCode).toBe(200);
    await new Promise((resolve) => setImmediate(resolve));
    expect(shutdowns).toBe(1);
  });
});
