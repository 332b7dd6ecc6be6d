import { randomInt } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from 'node:net';
import fc from 'fast-check';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACTION_ROUTES,
  forbiddenChanges,
  hostileRequest,
  routeShapes,
  snapshot,
  snapshotTables,
  type HostileRequest,
  type RouteShape,
  type Snapshot,
  type SnapshotTable,
} from '../test-support/hostile-requests.ts';
import { ADMIN, cookieFrom, createTestContext, signIn, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { until } from '../test-support/until.ts';

/**
 * Hostile input on every route of Fastify's route table (issue 18): wrong
 * types, huge and deeply nested JSON, NUL and lone surrogates, right-to-left
 * text, wrong content types, missing and duplicated parameters, bad
 * multipart, oversized headers — anonymous, signed in and with a forged
 * session. No request gets a 5xx, the process keeps serving, and a refused
 * request changes no domain row.
 *
 * `npm test` sends FUZZ_RUNS (2,000) per engine with a new seed each run;
 * `npm run fuzz` sends 20,000 per engine and tallies every failure instead
 * of stopping at the first. Replay a failure with the seed it prints:
 * FUZZ_SEED=<seed> npx vitest run --project server-sqlite server/src/http/hostile-input.test.ts
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 2_000);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : randomInt(2 ** 31);
/** Tally every failure rather than stopping (and shrinking) at the first one. */
const KEEP_GOING = process.env.FUZZ_KEEP_GOING === '1';
/** How long the generated requests may take in all; the count actually sent is printed. */
const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 240_000);
/** A request still unanswered after this long counts as a hang. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * The only 5xx replies allowed: a typed "unavailable" refusal SPEC names
 * (503 busy / paused / Discord not configured, 502 the schedule source
 * failing), never the catch-all 500 or a reply without a code. HEAD carries
 * no body, so its 502/503 is taken on the route's word.
 */
function byDesign(request: HostileRequest, response: { statusCode: number; body: string }): boolean {
  if (response.statusCode !== 502 && response.statusCode !== 503) return false;
  if (request.method === 'HEAD') return true;
  try {
    const { code } = JSON.parse(response.body) as { code?: unknown };
    return typeof code === 'string' && code !== 'internal_error';
  } catch {
    return false;
  }
}

/** A stand-in for web/dist: an index.html with the run-time values' placeholder and one hashed asset, so /ui/* serves files. */
function builtWebApp(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'concierge-fuzz-dist-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><html><head><title>x</title><!--app-config--></head><body><div id="root"></div></body></html>');
  writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), 'console.log("app")');
  return dir;
}

interface Failure {
  label: string;
  problem: string;
}

describe('hostile input on every route', () => {
  let ctx: TestContext;
  let routes: RouteShape[];
  let tables: SnapshotTable[];
  let adminCookie = '';
  let signIns = 0;
  let dist: string;

  /** A new admin session from an address of its own (wrong passwords from the fuzzed addresses may have throttled them). */
  async function signInAgain(): Promise<void> {
    signIns += 1;
    const login = await ctx.app.inject({ method: 'POST', url: '/login', payload: ADMIN, remoteAddress: `198.51.100.${signIns % 250}` });
    if (login.statusCode !== 200) throw new Error(`signing in again failed: ${login.statusCode} ${login.body}`);
    adminCookie = cookieFrom(login);
  }

  beforeAll(async () => {
    dist = builtWebApp();
    ctx = await createTestContext({ env: { WEB_DIST_DIR: dist } });
    adminCookie = await signIn(ctx.app);
    routes = await routeShapes(ctx.app);
    tables = await snapshotTables(ctx.deps.database);
    // A known exchange and some feedback, so the lists, details and feedback routes have rows to reach.
    const visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: {}, remoteAddress: '192.0.2.1' }));
    const sent = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie: visitor }, payload: { message: 'Where is registration?', client_message_id: 'seed-1' }, remoteAddress: '192.0.2.1' });
    expect(sent.statusCode, sent.body).toBe(200);
    const message = await ctx.deps.database.db.selectFrom('public_chat_messages').select('id').where('role', '=', 'user').executeTakeFirstOrThrow();
    const feedback = await ctx.app.inject({ method: 'POST', url: '/public/chat/feedback', headers: { cookie: visitor }, payload: { feedback_id: message.id, type: 'good' }, remoteAddress: '192.0.2.1' });
    expect(feedback.statusCode, feedback.body).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await ctx?.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('walks a route table worth fuzzing', () => {
    expect(routes.length).toBeGreaterThan(40);
    const withFields = routes.filter((route) => Object.keys(route.body).length + Object.keys(route.query).length > 0);
    expect(withFields.length, 'routes whose fields the OpenAPI description names').toBeGreaterThan(15);
    expect(routes.find((route) => route.url === '/api/openai/vector_store/upload')?.multipart).toBe(true);
    expect(routes.map((route) => `${route.method} ${route.url}`)).toEqual(expect.arrayContaining([...ACTION_ROUTES]));
  });

  it(
    `answers ${RUNS} generated requests without a 5xx, and refusals change no domain row`,
    async () => {
      console.log(`hostile input (${testDatabaseKind()}): seed ${SEED}, ${RUNS} requests; replay with FUZZ_SEED=${SEED}`);
      const started = Date.now();
      const statuses = new Map<number, number>();
      const failures: Failure[] = [];
      let sent = 0;
      let unexpected5xx = 0;
      let unchanged: Snapshot | undefined;

      const check = async (request: HostileRequest): Promise<Failure | null> => {
        // After a refusal nothing may have moved, so its snapshot is the next request's "before".
        const before = unchanged ?? (await snapshot(ctx.deps.database, tables));
        unchanged = undefined;
        sent += 1;
        let timer: NodeJS.Timeout | undefined;
        const response = await Promise.race([
          ctx.app.inject({ method: request.method as 'GET', url: request.url, headers: request.headers, payload: request.body, remoteAddress: `203.0.113.${sent % 200}` }),
          new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), REQUEST_TIMEOUT_MS))),
        ]).finally(() => clearTimeout(timer));
        if (!response) return { label: request.label, problem: `no answer within ${REQUEST_TIMEOUT_MS} ms` };
        statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        if (request.caller === 'admin' && request.route.url === '/logout' && response.statusCode < 400) await signInAgain();
        if (response.statusCode >= 500 && !byDesign(request, response)) {
          unexpected5xx += 1;
          return { label: request.label, problem: `${response.statusCode}: ${response.body.slice(0, 300)}` };
        }
        if (response.statusCode >= 400) {
          const after = await snapshot(ctx.deps.database, tables);
          const changes = forbiddenChanges(before, after);
          if (!changes.length) unchanged = after;
          if (changes.length) return { label: request.label, problem: `refused with ${response.statusCode} but changed ${changes.slice(0, 3).join('; ')}` };
        }
        return null;
      };

      await fc.assert(
        fc.asyncProperty(
          hostileRequest(routes, () => adminCookie),
          async (request) => {
            const failure = await check(request);
            if (!failure) return;
            if (!KEEP_GOING) throw new Error(`${failure.problem}\n  request: ${failure.label}`);
            failures.push(failure);
          },
        ),
        { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false, endOnFailure: KEEP_GOING },
      );

      const seconds = (Date.now() - started) / 1000;
      const histogram = [...statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${status}×${count}`).join(' ');
      console.log(
        `hostile input (${testDatabaseKind()}): ${sent} requests in ${seconds.toFixed(0)} s, seed ${SEED}; statuses ${histogram}; ` +
          `${unexpected5xx} × unexpected 5xx; ${failures.length} failures`,
      );
      if (process.env.FUZZ_REPORT) {
        writeFileSync(process.env.FUZZ_REPORT, JSON.stringify({ engine: testDatabaseKind(), seed: SEED, sent, seconds, statuses: Object.fromEntries(statuses), unexpected5xx, failures }, null, 2));
      }

      // Still serving, and the admin still signed in.
      expect((await ctx.app.inject({ url: '/healthz' })).statusCode).toBe(200);
      const loggedIn = await ctx.app.inject({ url: '/api/logged_in', headers: { cookie: adminCookie } });
      if (loggedIn.statusCode !== 200) await signInAgain();
      expect(sent, 'the time budget let too few requests through to mean anything').toBeGreaterThanOrEqual(Math.min(RUNS, 200));
      expect(failures.slice(0, 20)).toEqual([]);
    },
    BUDGET_MS + 120_000,
  );
});

/**
 * What inject() cannot send: oversized headers and broken HTTP framing on a
 * real socket. Node's parser refuses them (431, 400) before the app; the
 * server keeps answering afterwards.
 */
describe('hostile bytes on a real socket', () => {
  let ctx: TestContext;
  let port: number;

  beforeAll(async () => {
    ctx = await createTestContext();
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  afterAll(() => ctx?.close());

  const raw = (bytes: Buffer): Promise<string> =>
    new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let reply = '';
      socket.setTimeout(10_000, () => socket.destroy());
      socket.on('data', (chunk) => (reply += chunk.toString('latin1')));
      socket.on('close', () => resolve(reply));
      socket.on('error', () => resolve(reply));
      socket.end(bytes);
    });

  const framing = fc.oneof(
    fc.integer({ min: 17_000, max: 200_000 }).map((size) => `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(size)}\r\n\r\n`),
    fc.integer({ min: 200, max: 3_000 }).map((count) => `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: count }, (_, index) => `X-${index}: v`).join('\r\n')}\r\n\r\n`),
    fc.integer({ min: 17_000, max: 100_000 }).map((size) => `GET /public/chat/history HTTP/1.1\r\nHost: x\r\nCookie: concierge_chat=${'c'.repeat(size)}\r\n\r\n`),
    fc.constantFrom(
      'POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"username":"a"}',
      'POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n{}',
      'POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      'POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n0\r\n\r\n',
      'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n',
      'GET /he\u0000althz HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /%ED%A0%80 HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad\u0000: 1\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: \u202eevil\r\n\r\n',
      'GARBAGE\r\n\r\n',
      '\u0000\u0001\u0002',
      'POST /public/chat/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{',
    ),
    fc.uint8Array({ minLength: 1, maxLength: 2_000 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
  );

  it(
    'refuses oversized headers and broken framing with a 4xx or a closed connection, never a 5xx, and keeps serving',
    async () => {
      let sent = 0;
      await fc.assert(
        fc.asyncProperty(framing, async (request) => {
          sent += 1;
          const reply = await raw(Buffer.from(request, 'latin1'));
          const status = /^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1];
          expect(status === undefined || Number(status) < 500, `${request.slice(0, 120)} → ${reply.slice(0, 120)}`).toBe(true);
        }),
        { seed: SEED, numRuns: Math.max(50, Math.round(RUNS / 20)) },
      );
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      console.log(`hostile bytes (${testDatabaseKind()}): ${sent} raw requests, seed ${SEED}`);
    },
    120_000,
  );
});

/**
 * A client that sends its headers and part of its body, then nothing (a
 * slow-body attack, or a phone that lost its network mid-request): the
 * request timeout answers 408 and frees the connection, while an idle
 * kept-alive connection between requests is left alone.
 */
describe('a request that stops arriving', () => {
  const TIMEOUT_MS = 300;
  let ctx: TestContext;
  let port: number;

  beforeAll(async () => {
    ctx = await createTestContext({ app: { requestTimeoutMs: TIMEOUT_MS, requestTimeoutCheckMs: 50 } });
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  afterAll(() => ctx?.close());

  /** A socket kept open, what it has been sent so far, and when it closed. */
  const open = () => {
    const socket = connect(port, '127.0.0.1');
    const state = { reply: '', closed: null as number | null };
    socket.on('data', (chunk) => (state.reply += chunk.toString('latin1')));
    socket.on('close', () => (state.closed = Date.now()));
    socket.on('error', () => {});
    return { socket, state };
  };

  it('answers 408 and closes the connection when the body stops half-way, and goes on serving', async () => {
    const { socket, state } = open();
    const started = Date.now();
    socket.write('POST /public/chat/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"message":"Where is');
    await until(() => state.closed !== null, 10_000);
    expect(state.reply).toMatch(/^HTTP\/1\.1 408 /);
    expect(state.closed! - started).toBeGreaterThanOrEqual(TIMEOUT_MS);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });

  it('leaves an idle kept-alive connection open past the timeout for its next request', async () => {
    const { socket, state } = open();
    const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    socket.write(request);
    await until(() => state.reply.includes('\r\n\r\n'), 5_000);
    expect(state.reply).toMatch(/^HTTP\/1\.1 200 /);
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 4));
    expect(state.closed).toBeNull();
    socket.write(request);
    await until(() => state.reply.split('HTTP/1.1 200 ').length === 3, 5_000);
    expect(state.reply.split('HTTP/1.1 200 ')).toHaveLength(3);
    socket.end();
  });
});
