import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, signIn, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';

describe('GET /healthz', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  it('reports the pause state, queue size and gateway state without a session', async () => {
    const response = await ctx.app.inject({ url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ paused: false, queue_size: 0, discord_gateway_connected: false });

    const cookie = await signIn(ctx.app);
    await ctx.app.inject({ method: 'PATCH', url: '/api/config', headers: { cookie }, payload: { paused: true } });
    expect((await ctx.app.inject({ url: '/healthz' })).json().paused).toBe(true);
  });

  it.runIf(testDatabaseKind() === 'postgres')('answers while a crowd holds every pooled connection: the check has a connection of its own', async () => {
    // More statements than the pool has connections, each holding one for 3 s: the ping (2 s timeout) would wait behind them.
    const crowd = Array.from({ length: 12 }, () => sql`select pg_sleep(3)`.execute(ctx.deps.database.db));
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const response = await ctx.app.inject({ url: '/healthz' });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ paused: false, queue_size: 0, discord_gateway_connected: false });
    } finally {
      await Promise.all(crowd);
    }
  });

  it('answers 503 when the database cannot be reached', async () => {
    const { healthDb } = ctx.deps.database;
    // The health connection's statements fail as a refused connection's would.
    const refused = healthDb.withPlugin({
      transformQuery: () => {
        throw new Error('connection refused');
      },
      transformResult: (args) => Promise.resolve(args.result),
    });
    Object.assign(ctx.deps.database, { healthDb: refused });
    try {
      const response = await ctx.app.inject({ url: '/healthz' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({ error: 'Database unreachable', code: 'database_unreachable' });
    } finally {
      Object.assign(ctx.deps.database, { healthDb });
    }
  });

  it('shares one database round trip among checks asked close together, and still fails within seconds of the database going down', async () => {
    const queueSize = ctx.deps.health.queueSize;
    let trips = 0;
    let down = false;
    Object.assign(ctx.deps.health, {
      queueSize: () => {
        trips++;
        return down ? Promise.reject(new Error('connection refused')) : queueSize();
      },
    });
    try {
      for (let i = 0; i < 20; i++) expect((await ctx.app.inject({ url: '/healthz' })).statusCode).toBe(200);
      // One round trip, or two on a machine slow enough for 20 checks to take over a second: not one a check.
      expect(trips).toBeLessThanOrEqual(2);

      down = true;
      const since = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - since < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = (await ctx.app.inject({ url: '/healthz' })).statusCode;
      }
      expect(status).toBe(503);
      expect(Date.now() - since).toBeLessThan(3500);
    } finally {
      Object.assign(ctx.deps.health, { queueSize });
    }
  });

  it('answers 503 when the database does not answer within 2 s', async () => {
    const queueSize = ctx.deps.health.queueSize;
    Object.assign(ctx.deps.health, { queueSize: () => new Promise<number>(() => {}) });
    try {
      const response = await ctx.app.inject({ url: '/healthz' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({ error: 'Database unreachable', code: 'database_unreachable' });
    } finally {
      Object.assign(ctx.deps.health, { queueSize });
    }
  });
});
