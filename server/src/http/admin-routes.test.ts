import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, signIn, type TestContext } from '../test-support/test-context.ts';

/**
 * Walks Fastify's own route table, so a route added later without the guard
 * fails here without anyone keeping a list.
 */
describe('every /api route', () => {
  let ctx: TestContext;
  const routes: { method: string; url: string }[] = [];

  beforeAll(async () => {
    ctx = await createTestContext();
    routes.push(...ctx.app.listRoutes().filter((route) => route.url.startsWith('/api/') && !route.public));
  });
  afterAll(() => ctx.close());

  it('exists in a number worth checking', () => {
    expect(routes.length).toBeGreaterThanOrEqual(4);
    expect(routes.map((route) => route.url)).toContain('/api/config');
  });

  it('is public only where the route says so, and then only the API description', () => {
    const open = ctx.app.listRoutes().filter((route) => route.url.startsWith('/api/') && route.public);
    expect(open.map((route) => `${route.method} ${route.url}`).sort()).toEqual(['GET /api/openapi.json', 'HEAD /api/openapi.json']);
  });

  it('answers 401 without a session, and with a forged cookie', async () => {
    for (const route of routes) {
      const url = route.url.replace(/:([a-z_]+)/g, '1').replace('*', 'x');
      for (const headers of [{}, { cookie: 'concierge_admin=forged.value' }]) {
        const response = await ctx.app.inject({ method: route.method as 'GET', url, headers, payload: route.method === 'GET' || route.method === 'HEAD' ? undefined : {} });
        expect(response.statusCode, `${route.method} ${url}`).toBe(401);
        if (route.method !== 'HEAD') expect(response.json(), `${route.method} ${url}`).toEqual({ error: 'Unauthorized', code: 'unauthorized' });
      }
    }
  });

  it('works with a session (sanity check that the walk reaches real routes)', async () => {
    const cookie = await signIn(ctx.app);
    const response = await ctx.app.inject({ url: '/api/logged_in', headers: { cookie } });
    expect(response.statusCode).toBe(200);
  });
});
