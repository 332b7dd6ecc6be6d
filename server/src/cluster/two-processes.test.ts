import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../config/env.ts';
import { createDeps, type Deps } from '../deps.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { cookiesOf, createScratchDatabase, ServerProcess } from '../test-support/server-process.ts';
import { ADMIN, testDatabaseKind } from '../test-support/test-context.ts';

/**
 * Two real server processes (bin/concierge.mjs) on one PostgreSQL database
 * of their own, behind no load balancer: the test itself spreads requests
 * over both, as nginx would. What one process does, the other obeys; the
 * singleton work moves to the survivor when the leader is killed.
 *
 * Still to come here, once it lands: the Discord gateway moving to the new
 * leader (register it with `deps.leadership.add('discord gateway', …)`). An
 * answer produced on A reaching a Watch client on B is checked in
 * watch/watch-processes.test.ts.
 */
describe.runIf(testDatabaseKind() === 'postgres')('several processes on one PostgreSQL', () => {
  const LEADER_MESSAGE = 'leadership gained';
  const RATE = 4; // openai_max_requests_per_second
  const PER_MINUTE = 2; // public_chat_requests_per_minute; the per-address limit is 10 ×
  let scratch: { url: string; drop(): Promise<void> };
  let fake: FakeOpenAI;
  let feed: Awaited<ReturnType<typeof startFeed>>;
  let processes: ServerProcess[] = [];
  let database: Database;
  let submitter: Deps | undefined;

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    fake = await startFakeOpenAI({ knobs: { runDurationMs: 50 } });
    feed = await startFeed();
    database = await openDatabase(scratch.url);
  }, 30_000);

  afterAll(async () => {
    await Promise.all(processes.map((server) => server.stop()));
    await submitter?.close();
    await database?.close();
    await fake?.close();
    await new Promise((resolve) => feed?.server.close(resolve));
    await scratch?.drop();
  }, 60_000);

  it('behave as one product: config and pause at once, shared limits and rate budget, one crawler run per tick, failover of the leader', async () => {
    const started = Date.now();
    const env = {
      DATABASE_URL: scratch.url,
      OPENAI_API_KEY: fake.apiKey,
      OPENAI_BASE_URL: fake.url,
      CRAWLER_URL: feed.url,
      CONVENTION_TIMEZONE: 'UTC',
      // The test plays the load balancer: X-Forwarded-For names the visitor.
      TRUST_PROXY: 'true',
    };
    // Both start at once, as a supervisor would start them: migrations and seeding are safe to race.
    const a = new ServerProcess('A', env);
    const b = new ServerProcess('B', env);
    processes = [a, b];
    await Promise.all([a.ready(), b.ready()]);

    // Exactly one leader. A follower keeps trying, so give both a moment to settle.
    const leader = await Promise.race([a, b].map(async (server) => (await server.waitFor((line) => line.msg!.startsWith(LEADER_MESSAGE), 'leadership'), server)));
    const follower = leader === a ? b : a;
    await sleep(1500);
    expect(follower.has(LEADER_MESSAGE)).toBe(false);
    expect(leader.count(LEADER_MESSAGE)).toBe(1);

    // The console signs in on one process; the session works on both.
    const json = (body: unknown) => ({ 'content-type': 'application/json', body: JSON.stringify(body) });
    const post = (server: ServerProcess, url: string, body: unknown = {}, headers: Record<string, string> = {}) => {
      const { body: text, ...contentType } = json(body);
      return server.fetch(url, { method: 'POST', headers: { ...contentType, ...headers }, body: text });
    };
    expect((await post(follower, '/setup', { ...ADMIN, confirm_password: ADMIN.password })).status).toBe(200);
    const admin = cookiesOf(await post(leader, '/login', ADMIN));
    expect((await leader.fetch('/api/status', { headers: { cookie: admin } })).status).toBe(200);
    expect((await follower.fetch('/api/status', { headers: { cookie: admin } })).status).toBe(200);

    // 1. A configuration edit on one process is in force on the other at once.
    const patch = await leader.fetch('/api/config', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', cookie: admin },
      body: JSON.stringify({ assistant_poll_interval: '100ms', assistant_max_poll_interval: '200ms', public_chat_requests_per_minute: PER_MINUTE, openai_max_requests_per_second: RATE }),
    });
    expect(patch.status).toBe(200);
    const followerConfig = await waitUntil(async () => {
      const config = (await (await follower.fetch('/api/config', { headers: { cookie: admin } })).json()) as { public_chat_requests_per_minute: number; openai_max_requests_per_second: number };
      return config.public_chat_requests_per_minute === PER_MINUTE ? config : undefined;
    }, 5000);
    expect(followerConfig.openai_max_requests_per_second).toBe(RATE);

    // 2. A pause on one process is obeyed by the other at once: a visitor of the other gets the paused 503.
    const visitorOf = async (server: ServerProcess, address: string) =>
      cookiesOf(await post(server, '/public/chat/turnstile/verify', { token: '' }, { 'x-forwarded-for': address }));
    const visitor = await visitorOf(follower, '198.51.100.1');
    expect((await post(leader, '/api/pause', {}, { cookie: admin })).status).toBe(200);
    const pausedAt = Date.now();
    await waitUntil(async () => ((await (await follower.fetch('/healthz')).json()) as { paused: boolean }).paused || undefined, 5000);
    const pauseSeenMs = Date.now() - pausedAt;
    const refused = await post(follower, '/public/chat/send', { message: 'When is the costume contest?' }, { cookie: visitor, 'x-forwarded-for': '198.51.100.1' });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ success: false, code: 'paused' });
    // …and a resume on the other is obeyed by the first.
    expect((await post(follower, '/api/resume', {}, { cookie: admin })).status).toBe(200);
    await waitUntil(async () => ((await (await leader.fetch('/healthz')).json()) as { paused: boolean }).paused === false || undefined, 5000);

    // 3. Limits count across processes. One visitor asking in turn on A and B: the per-session number, then 429 on both.
    await awayFromMinuteEnd();
    const asker = await visitorOf(leader, '198.51.100.2');
    const send = (server: ServerProcess, cookie: string, address: string) =>
      post(server, '/public/chat/send', { message: 'When is the costume contest?' }, { cookie, 'x-forwarded-for': address }).then((reply) => reply.status);
    const turns: number[] = [];
    for (const server of [leader, follower, leader, follower]) turns.push(await send(server, asker, '198.51.100.2'));
    expect(turns).toEqual([200, 200, 429, 429]);

    // A burst from one address, one send per visitor, split over A and B: exactly the per-address number gets through.
    const perAddress = PER_MINUTE * 10;
    const visitors = await Promise.all(Array.from({ length: perAddress + 6 }, (_, index) => visitorOf(index % 2 ? follower : leader, `198.51.100.${10 + index}`)));
    const runsBefore = fake.journal.filter(isRunCreation).length;
    const burst = await Promise.all(visitors.map((cookie, index) => send(index % 2 ? follower : leader, cookie, '203.0.113.9')));
    expect(burst.filter((status) => status === 200)).toHaveLength(perAddress);
    expect(burst.filter((status) => status === 429)).toHaveLength(6);

    // 4. The provider's run rate is one budget for both processes (each alone would allow RATE per second).
    const runs = fake.journal
      .filter(isRunCreation)
      .slice(runsBefore)
      .map((entry) => entry.at);
    expect(runs).toHaveLength(perAddress);
    const spanMs = runs.at(-1)! - runs[0]!;
    const runsPerSecond = ((runs.length - 1) * 1000) / spanMs;
    // Slots are exact; what the fake sees is late by each process's event-loop and network delay, so a little slack
    // (two processes each with a budget of their own make about 6.3/s here, the budget can allow at most 8).
    expect(runsPerSecond).toBeLessThanOrEqual(RATE * 1.15);
    expect(busiestSecond(runs)).toBeLessThanOrEqual(RATE + 2);

    // 5. The Status figures are the same on both processes, whichever did the work.
    const statusOf = async (server: ServerProcess) =>
      (await (await server.fetch('/api/status', { headers: { cookie: admin } })).json()) as { pause_count: number; resume_count: number; api_requests: Record<string, number>; openai: { create_run: number } };
    await sleep(1200); // each process writes its counts every second
    const [leaderStatus, followerStatus] = await Promise.all([statusOf(leader), statusOf(follower)]);
    expect(followerStatus).toMatchObject({ pause_count: 1, resume_count: 1 });
    expect(followerStatus.openai.create_run).toBeGreaterThanOrEqual(perAddress + 2);
    expect(followerStatus.api_requests['POST /api/pause']).toBe(1);
    expect(followerStatus.api_requests['POST /public/chat/send']).toBe(leaderStatus.api_requests['POST /public/chat/send']);

    // Prometheus sees which one leads.
    const leads = async (server: ServerProcess) => /^concierge_leader 1$/m.test(await (await server.fetch('/metrics', { headers: { cookie: admin } })).text());
    expect([await leads(leader), await leads(follower)]).toEqual([true, false]);

    // 6. The crawler ticks every second, on the leader only; a forced refresh on the follower never runs beside a tick.
    const ticksFrom = Date.now();
    const scheduled = await follower.fetch('/api/config', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', cookie: admin },
      body: JSON.stringify({ crawler_schedule: '* * * * * *' }),
    });
    expect(scheduled.status).toBe(200);
    // Caught in the act: the feed holds a tick's read; meanwhile the follower's Refresh is refused by the database's lock.
    const tick = feed.holdNext();
    await tick.arrived;
    const duringTick = await post(follower, '/api/schedule/refresh?force=true', {}, { cookie: admin });
    expect(duringTick.status).toBe(409);
    expect(await duringTick.json()).toMatchObject({ code: 'refresh_running' });
    tick.release();
    // Refreshes pressed at any moment: each runs alone or is refused, never beside a tick (checked on the runs below).
    const forced: number[] = [];
    while (Date.now() - ticksFrom < 5000) {
      forced.push((await post(follower, '/api/schedule/refresh?force=true', {}, { cookie: admin })).status);
      await sleep(300);
    }
    expect(forced.every((status) => status === 200 || status === 409)).toBe(true);

    // 7. Killing the leader hands the worker and the crawler to the other within 10 s.
    const leaderRunsBefore = await crawlerRuns(database);
    leader.kill('SIGKILL');
    const killedAt = Date.now();
    await leader.exited;
    await follower.waitFor((line) => line.msg!.startsWith(LEADER_MESSAGE), 'taking over', 10_000);
    const takeoverMs = Date.now() - killedAt;
    expect(takeoverMs).toBeLessThan(10_000);
    expect(await leads(follower)).toBe(true);

    // An ask command submitted now (by a front on any process) is answered by the new leader's worker.
    submitter = await createDeps(loadEnv({ ...env, LOG_LEVEL: 'silent', WEB_DIST_DIR: path.join(tmpdir(), 'no-web-build') }));
    const submitted = await submitter.askCommands.submit({
      user: { id: '4242', username: 'attendee', global_name: 'Attendee' },
      prompt: 'When is the costume contest?',
      whisper: false,
      type: 'ask',
      interaction: {
        id: '900000000000000001',
        token: 'token-1',
        expiresAt: new Date(Date.now() + 15 * 60_000).toISOString(),
        applicationId: null,
        guildId: null,
        channelId: null,
        context: 'guild',
      },
    });
    expect(submitted.status).toBe('queued');
    const answered = await waitUntil(async () => {
      const row = await database.db.selectFrom('ask_commands').select(['state', 'response']).where('id', '=', submitted.command.id).executeTakeFirstOrThrow();
      return row.state === 'completed' ? row : undefined;
    }, 10_000);
    expect(answered.response).toBeTruthy();

    // The crawler ticks on the new leader.
    await waitUntil(async () => ((await crawlerRuns(database)).filter((run) => !run.forced && run.created_at > new Date(killedAt).toISOString()).length >= 3) || undefined, 10_000);

    // 8. One run per tick, across both leaders, and never two runs at once.
    const runsSeen = (await crawlerRuns(database)).filter((run) => run.created_at >= new Date(ticksFrom).toISOString());
    const ticks = runsSeen.filter((run) => !run.forced);
    const perTick = new Map<number, number>();
    for (const run of ticks) perTick.set(Math.floor(run.started / 1000), (perTick.get(Math.floor(run.started / 1000)) ?? 0) + 1);
    expect(Math.max(...perTick.values())).toBe(1);
    const spans = runsSeen.map((run) => [run.started, run.ended] as const).sort(([x], [y]) => x - y);
    for (let index = 1; index < spans.length; index++) expect(spans[index]![0]).toBeGreaterThanOrEqual(spans[index - 1]![1]);
    // Both leaders ticked, and the feed was read once per run (nobody fetched beside the lock).
    expect(leaderRunsBefore.some((run) => !run.forced && run.created_at >= new Date(ticksFrom).toISOString())).toBe(true);
    const fetchesSince = feed.fetches.filter((at) => at >= ticksFrom).length;
    expect(fetchesSince).toBeLessThanOrEqual(runsSeen.length + 2); // a run may be storing as the window closes, or was killed with A

    console.log(
      `two processes: pause obeyed by the other in ${pauseSeenMs} ms; ${runs.length} runs at ${runsPerSecond.toFixed(2)}/s against a shared budget of ${RATE}/s; ` +
        `${ticks.length} scheduled and ${runsSeen.length - ticks.length} forced crawler runs, never two at once; takeover ${takeoverMs} ms after SIGKILL; ` +
        `whole test ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  }, 150_000);

  /** A schedule feed that changes on every read (so every run stores) and answers slowly (so runs last). */
  async function startFeed() {
    const fetches: number[] = [];
    let hold: { arrive: () => void; released: Promise<void> } | undefined;
    const server = createServer((_request, response) => {
      fetches.push(Date.now());
      const version = fetches.length;
      const held = hold;
      hold = undefined;
      held?.arrive();
      void Promise.all([held?.released, new Promise((resolve) => setTimeout(resolve, 400))]).then(() => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            name: 'Scale-out Con',
            timezone: 'UTC',
            events: [
              { id: 'e1', title: `Opening ceremony (edition ${version})`, start: '2026-03-14T10:00:00Z', end: '2026-03-14T11:00:00Z', location: 'Main Stage' },
              { id: 'e2', title: 'Costume Contest', start: '2026-03-14T19:00:00Z', end: '2026-03-14T21:00:00Z', location: 'Main Stage' },
              { id: 'e3', title: 'Closing ceremony', start: '2026-03-15T16:00:00Z', end: '2026-03-15T17:00:00Z', location: 'Hall B' },
            ],
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      server,
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/schedule.json`,
      fetches,
      /** Holds the next read of the feed until released; `arrived` resolves when it comes. */
      holdNext() {
        let arrive!: () => void;
        let release!: () => void;
        const arrived = new Promise<void>((resolve) => (arrive = resolve));
        hold = { arrive, released: new Promise<void>((resolve) => (release = resolve)) };
        return { arrived, release };
      },
    };
  }
});

const isRunCreation = (entry: { method: string; path: string }) => entry.method === 'POST' && entry.path === '/v1/responses';

/** The most events in any one second. */
function busiestSecond(times: number[]): number {
  let most = 0;
  for (let start = 0, end = 0; start < times.length; start++) {
    while (end < times.length && times[end]! < times[start]! + 1000) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

/** Every crawler run with when it began and ended (its duration runs from the start of the check to its last write). */
async function crawlerRuns(database: Database) {
  const rows = await database.db.selectFrom('crawler_runs').select(['id', 'forced', 'created_at', 'updated_at', 'duration_ms']).orderBy('id').execute();
  return rows.map((row) => {
    const ended = Date.parse(row.updated_at);
    return { ...row, forced: Boolean(row.forced), ended, started: ended - Number(row.duration_ms ?? 0) };
  });
}

/** Rate-limit windows are clock minutes: a check of exact counts starts with most of its minute ahead. */
async function awayFromMinuteEnd(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 45_000) await sleep(60_000 - intoMinute + 100);
}

async function waitUntil<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
