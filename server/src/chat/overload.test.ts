import path from 'node:path';
import { tmpdir } from 'node:os';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ASK_ERRORS } from '../ask/ask-pipeline.ts';
import { startServer, type RunningServer } from '../server.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { freshDatabase, type FreshDatabase } from '../test-support/test-context.ts';

const CAP = 4;
const BURST = 300;

describe('a burst of questions far over the concurrency cap (DESIGN §9 "Busy")', () => {
  let fake: FakeOpenAI;
  let server: RunningServer | undefined;
  let database: FreshDatabase | undefined;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());
  afterEach(async () => {
    if (server && database) {
      await server.app.close();
      await server.deps.housekeeping.stop();
      await database.dispose(server.deps);
    }
    server = database = undefined;
  });

  it('gets only answers and clean busy 503s: no reset connection, no other error, the wait queue bounded, /healthz answering throughout', async () => {
    // Runs outlast the 5 s wait for a place: the first CAP questions are answered, every other one is refused busy.
    fake.configure({ runDurationMs: 6_000 });
    const store = await new OpenAI({ apiKey: fake.apiKey, baseURL: fake.url }).vectorStores.create({ name: 'Overload' });
    database = freshDatabase();
    server = await startServer(
      {
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: database.url,
        LOG_LEVEL: 'silent',
        WEB_DIST_DIR: path.join(tmpdir(), 'concierge-no-web-build'),
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        OPENAI_VECTOR_STORE_ID: store.id,
        MAX_CONCURRENT_RUNS: String(CAP),
        // Every visitor comes from an address of its own (X-Forwarded-For from loopback), so no per-address limit is met.
        TRUST_PROXY: 'loopback',
      },
      { databaseSchema: database.schema, runCrawler: false },
    );
    await server.deps.config.update({ assistant_poll_interval: '500ms', assistant_max_poll_interval: '1s' });
    const { url, deps } = server;
    const post = (route: string, body: unknown, headers: Record<string, string>) =>
      fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const visitors = await Promise.all(
      Array.from({ length: BURST }, async (_, i) => {
        const address = `10.9.${i >> 8}.${i & 255}`;
        const verify = await post('/public/chat/turnstile/verify', { token: '' }, { 'x-forwarded-for': address });
        expect(verify.status).toBe(200);
        return { address, cookie: verify.headers.get('set-cookie')!.split(';')[0]! };
      }),
    );

    let mostWaiting = 0;
    let mostAdmitted = 0;
    let healthChecks = 0;
    let healthFailures = 0;
    let bursting = true;
    const watching = (async () => {
      while (bursting) {
        mostWaiting = Math.max(mostWaiting, deps.pipeline.waiting);
        mostAdmitted = Math.max(mostAdmitted, deps.pipeline.admitted);
        const health = await fetch(`${url}/healthz`).catch(() => null);
        healthChecks++;
        if (health?.status !== 200) healthFailures++;
        await health?.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const outcomes = await Promise.all(
      visitors.map(async ({ address, cookie }, i) => {
        try {
          const reply = await post('/public/chat/send', { message: `Where is the lost and found? (${i})` }, { cookie, 'x-forwarded-for': address });
          return {
            status: reply.status,
            retryAfter: reply.headers.get('retry-after'),
            connection: reply.headers.get('connection'),
            body: (await reply.json()) as { success: boolean; code?: string; error?: string },
          };
        } catch (error) {
          return { status: 0, retryAfter: null, connection: null, body: { success: false, error: String(error) } };
        }
      }),
    );
    bursting = false;
    await watching;

    const answered = outcomes.filter((outcome) => outcome.status === 200);
    const busy = outcomes.filter((outcome) => outcome.status === 503);
    const other = outcomes.filter((outcome) => outcome.status !== 200 && outcome.status !== 503);
    expect(other).toEqual([]);
    for (const outcome of answered) expect(outcome.body).toMatchObject({ success: true });
    for (const outcome of busy) {
      expect(outcome.body).toMatchObject({ success: false, code: 'busy', error: ASK_ERRORS.busy });
      expect(outcome.retryAfter).toBe('5');
      // The refused visitor's connection is not kept: a crowd over the cap does not hold thousands of idle sockets.
      expect(outcome.connection).toBe('close');
    }
    expect(answered).toHaveLength(CAP);
    expect(busy).toHaveLength(BURST - CAP);
    // At most as many questions waited for a place as there are places; the rest were refused at once.
    expect(mostWaiting).toBeGreaterThan(0);
    expect(mostWaiting).toBeLessThanOrEqual(CAP);
    // However many arrived at once, no more were let through to the database (sessions, limits) than the places
    // and the wait queue hold (CAP each; AskPipeline.saturated): the crowd's reads would otherwise queue on the
    // database's pool or its query thread.
    expect(mostAdmitted).toBeLessThanOrEqual(2 * CAP);
    expect(healthChecks).toBeGreaterThan(5);
    expect(healthFailures).toBe(0);
    // A refused question leaves nothing behind: only the answered ones are stored, and every session may ask again.
    const stored = await deps.database.db.selectFrom('public_chat_messages').select('state').where('role', '=', 'user').execute();
    expect(stored.map((row) => row.state)).toEqual(Array(CAP).fill('completed'));
    const held = await deps.database.db.selectFrom('public_chat_sessions').select('session_id').where('in_flight_since', 'is not', null).execute();
    expect(held).toEqual([]);
  }, 60_000);
});
