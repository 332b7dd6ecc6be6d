import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RouteSummary } from '../app.ts';
import { createTestContext, signIn, type TestContext } from '../test-support/test-context.ts';

/**
 * Walks Fastify's own route table, so a route added later without its
 * guard fails here without anyone keeping a list. Guards are declared per
 * route (the admin scope, or the route's own rule), never read from the URL:
 * these tests are what ties the URLs to them.
 */
describe('who may call each route', () => {
  let ctx: TestContext;
  let all: RouteSummary[];
  let admin: RouteSummary[];
  const pathOf = (route: RouteSummary) => route.url.replace(/:([a-z_]+)/g, '1').replace('*', 'x');

  beforeAll(async () => {
    ctx = await createTestContext();
    all = ctx.app.listRoutes();
    admin = all.filter((route) => route.access === 'admin');
  });
  afterAll(() => ctx.close());

  it('declares an admin session on every /api route but the API description, and on no route elsewhere', () => {
    expect(admin.length).toBeGreaterThanOrEqual(30);
    expect(admin.map((route) => route.url)).toEqual(expect.arrayContaining(['/api/config', '/api/ws/token', '/api/logged_in', '/api/chat/send']));
    const undeclared = all.filter((route) => route.url.startsWith('/api/') && route.access !== 'admin');
    expect(undeclared.map((route) => `${route.method} ${route.url} (${route.access})`).sort()).toEqual(['GET /api/openapi.json (public)', 'HEAD /api/openapi.json (public)']);
    expect(admin.filter((route) => !route.url.startsWith('/api/'))).toEqual([]);
    expect(all.filter((route) => route.access === 'watch_token').map((route) => `${route.method} ${route.url}`)).toEqual(['GET /ws', 'HEAD /ws']);
  });

  it('answers every admin route with 401 without a session, and with a forged cookie, before reading the body or the origin', async () => {
    for (const route of admin) {
      const url = pathOf(route);
      const bodyless = route.method === 'GET' || route.method === 'HEAD';
      // A malformed body and another site's Origin: the 401 still comes first (not a 400, not a 403).
      for (const headers of [{}, { cookie: 'concierge_admin=forged.value' }, { origin: 'https://elsewhere.example', 'content-type': 'application/json' }]) {
        const response = await ctx.app.inject({ method: route.method as 'GET', url, headers, payload: bodyless ? undefined : '{"not json' });
        expect(response.statusCode, `${route.method} ${url} ${JSON.stringify(headers)}`).toBe(401);
        if (route.method !== 'HEAD') expect(response.json(), `${route.method} ${url}`).toEqual({ error: 'Unauthorized', code: 'unauthorized' });
      }
    }
  });

  it('works with a session, and still refuses a signed-in request from another site', async () => {
    const cookie = await signIn(ctx.app);
    expect((await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } })).statusCode).toBe(200);
    const crossSite = await ctx.app.inject({ method: 'POST', url: '/api/ws/token', headers: { cookie, origin: 'https://elsewhere.example' } });
    expect(crossSite.statusCode).toBe(403);
    expect(crossSite.json()).toMatchObject({ code: 'cross_site_request' });
    // The public chat keeps the same check.
    const visitor = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', headers: { origin: 'https://elsewhere.example' }, payload: { token: '' } });
    expect(visitor.statusCode).toBe(403);
  });

  it('refuses a /ws upgrade without a valid Watch token (401, no websocket), even to a signed-in admin', async () => {
    const cookie = await signIn(ctx.app);
    const base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const refusal = (query: string, headers: Record<string, string> = {}) =>
      new Promise<number>((resolve, reject) => {
        const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/ws${query}`, { headers });
        socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.on('open', () => reject(new Error(`upgraded with ${query}`)));
        socket.on('error', () => {});
      });
    expect(await refusal('')).toBe(401);
    expect(await refusal('?token=forged')).toBe(401);
    // The admin session is not the rule of /ws: only a token is.
    expect(await refusal('', { cookie })).toBe(401);
    // Without an upgrade, the same rule first.
    expect((await ctx.app.inject({ url: '/ws' })).statusCode).toBe(401);
  });
});
