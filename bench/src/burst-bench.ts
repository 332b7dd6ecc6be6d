import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { defaultInstructions } from '@concierge/server/src/config/defaults.ts';
import { loadEnv } from '@concierge/server/src/config/env.ts';
import { cookiesOf, ServerProcess } from '@concierge/server/src/test-support/server-process.ts';
import { startBareChat } from './bare-chat.ts';
import type { BurstResult, FromBurst, ToBurst } from './burst-load.ts';
import { count, type Engine } from './engines.ts';
import type { HealthChecks } from './health-prober.ts';
import { startRefusingServer } from './refusing-server.ts';
import { percentile, type BenchResult } from './report.ts';

const PROFILE_DIR = process.env.BENCH_PROFILE;

export interface BurstOptions {
  /** Questions sent at once. */
  questions: number;
}

/** The load side in a child process (its memory is not the server's). */
class BurstLoad {
  readonly #child: ChildProcess;
  #waiting: ((message: FromBurst) => void) | null = null;

  private constructor() {
    this.#child = fork(new URL('./burst-load.ts', import.meta.url), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.#child.on('message', (message: FromBurst) => this.#waiting?.(message));
  }

  static async start(): Promise<{ load: BurstLoad; url: string; apiKey: string }> {
    const load = new BurstLoad();
    const ready = await load.#next();
    if (ready.type !== 'ready') throw new Error('the burst load did not start');
    return { load, url: ready.url, apiKey: ready.apiKey };
  }

  #next(send?: ToBurst): Promise<FromBurst> {
    return new Promise((resolve, reject) => {
      this.#child.once('exit', (code) => reject(new Error(`the burst load stopped (${code})`)));
      this.#waiting = (message) => {
        this.#waiting = null;
        resolve(message);
      };
      if (send) this.#child.send(send);
    });
  }

  async burst(target: string, questions: number, healthUrls: string[]): Promise<BurstResult> {
    const reply = await this.#next({ type: 'burst', target, questions, question: 'When does the opening ceremony start?', healthUrls });
    if (reply.type !== 'result') throw new Error('unexpected reply from the burst load');
    return reply.result;
  }

  close(): void {
    this.#child.send({ type: 'close' } satisfies ToBurst);
  }
}

/** A process's resident memory now (MB), from /proc. */
function rssMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** Samples the RSS of the server process `pid` while `run` runs; returns the highest. */
async function peakRss<T>(pid: number, run: () => Promise<T>): Promise<{ value: T; peakMb: number }> {
  let peak = rssMb(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 20);
  try {
    const value = await run();
    return { value, peakMb: Math.max(peak, rssMb(pid)) };
  } finally {
    clearInterval(timer);
  }
}

const ADMIN = { username: 'bench', password: 'bench-password-123' };

/** Signs in to a server process (setting up its admin first) and edits its runtime configuration. */
async function configure(server: ServerProcess, changes: Record<string, unknown>): Promise<void> {
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    server.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  await post('/setup', { ...ADMIN, confirm_password: ADMIN.password });
  const login = await post('/login', ADMIN);
  if (login.status !== 200) throw new Error(`burst bench: sign-in failed (${login.status})`);
  const patch = await server.fetch('/api/config', { method: 'PATCH', headers: { 'content-type': 'application/json', cookie: cookiesOf(login) }, body: JSON.stringify(changes) });
  if (patch.status !== 200) throw new Error(`burst bench: configuration refused (${patch.status}): ${await patch.text()}`);
}

const describe = (outcomes: Record<string, number>) =>
  Object.entries(outcomes)
    .sort(([, a], [, b]) => b - a)
    .map(([kind, n]) => `${kind} ×${count(n)}`)
    .join(', ');

/**
 * Overload (issue 17): N questions at once from N sessions, each on a
 * connection of its own, against the product with its default
 * MAX_CONCURRENT_RUNS (limits per session and per second raised so only
 * the cap refuses), then against the bare route, then against the floor (a
 * plain node:http server refusing every question: refusing-server.ts).
 * Every reply must be an answer or DESIGN §9's busy 503 (no reset, no other
 * error), the server's RSS stay under 512 MB, and /healthz answer
 * throughout with p99 ≤ 50 ms (its max reported beside the bare route's and
 * the floor's in the same burst), asked both on the health port and on the
 * main port.
 */
export async function benchBurst(engine: Engine, report: (result: BenchResult) => void, options: BurstOptions): Promise<void> {
  const { load, url: fakeUrl, apiKey } = await BurstLoad.start();
  const cleanups: (() => Promise<void>)[] = [async () => load.close()];
  try {
    const store = await new OpenAI({ apiKey, baseURL: fakeUrl }).vectorStores.create({ name: 'Burst knowledge' });
    // The product in a process of its own, started as a supervisor starts it, with its defaults (the log at info
    // included): its RSS is the server's alone.
    const database = await engine.scratchDatabase();
    cleanups.unshift(() => database.drop());
    const server = new ServerProcess('product', {
      DATABASE_URL: database.url,
      OPENAI_API_KEY: apiKey,
      OPENAI_BASE_URL: fakeUrl,
      OPENAI_MODEL: 'gpt-5-mini',
      OPENAI_VECTOR_STORE_ID: store.id,
      CONVENTION_TIMEZONE: 'UTC',
      TRUST_PROXY: 'loopback',
      // The health check a load balancer should use (README "Health checks"); the main port's /healthz is asked too.
      HEALTH_PORT: '0',
      // With BENCH_PROFILE=<dir>, Node writes a CPU profile of each of the process's threads to <dir>/burst-<engine>
      // as it stops: the main thread's is the one whose name has thread id 0 (`.<pid>.0.`). It covers the whole
      // run, the sessions being made and then the burst (and the sampling slows the server).
      ...(PROFILE_DIR ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${path.join(PROFILE_DIR, `burst-${engine.name}`)}` } : {}),
    });
    cleanups.unshift(() => server.stop());
    await server.ready();
    await configure(server, { public_chat_requests_per_minute: 60, openai_max_requests_per_second: 1000, assistant_poll_interval: '100ms', assistant_max_poll_interval: '200ms' });
    const { MAX_CONCURRENT_RUNS: capacity, PRODUCT_NAME } = loadEnv({});
    const bare = await startBareChat({ apiKey, baseURL: fakeUrl, model: 'gpt-5-mini', vectorStoreId: store.id, instructions: defaultInstructions(PRODUCT_NAME), pollMs: 100, maxPollMs: 200 });
    cleanups.unshift(() => bare.close());

    const rssBefore = rssMb(server.pid!);
    const healthPortUrl = `${server.healthOrigin!}/healthz`;
    const mainPortUrl = `${server.origin}/healthz`;
    const p = await peakRss(server.pid!, () => load.burst(server.origin, options.questions, [healthPortUrl, mainPortUrl]));
    const b = await load.burst(bare.url, options.questions, [`${bare.url}/healthz`]);
    // The floor: what Node's HTTP server alone, refusing every question, lets /healthz take in the same burst.
    const floor = await startRefusingServer();
    cleanups.unshift(() => floor.close());
    const f = await load.burst(floor.url, options.questions, [`${floor.url}/healthz`]);
    const product_ = p.value;
    const answered = product_.outcomes['200 answer'] ?? 0;
    const busy = product_.outcomes['503 busy'] ?? 0;
    const other = options.questions - answered - busy;
    const what = `${count(options.questions)} questions at once (each on its own connection, sessions made first), MAX_CONCURRENT_RUNS ${capacity} (the default)`;
    console.log(
      `      product: ${describe(product_.outcomes)} in ${(product_.elapsedMs / 1000).toFixed(1)} s (sessions made in ${(product_.setUpMs / 1000).toFixed(1)} s); ` +
        `bare: ${describe(b.outcomes)} in ${(b.elapsedMs / 1000).toFixed(1)} s; ` +
        `floor (node:http refusing all): ${describe(f.outcomes)} in ${(f.elapsedMs / 1000).toFixed(1)} s`,
    );
    report({
      name: `burst: replies other than an answer or busy on ${engine.name}`,
      measure: `replies other than 200 answers and 503 busy (resets, timeouts, other errors), ${what}`,
      value: other,
      baseline: options.questions,
      baselineMeasure: 'questions sent',
      unit: 'replies',
      ratio: other / options.questions,
      maxValue: 0,
      notes: [`product: ${describe(product_.outcomes)}`, `bare route (no cap): ${describe(b.outcomes)}`, ...product_.samples],
    });
    report({
      name: `burst: server RSS on ${engine.name}`,
      measure: `highest RSS of the server process during the burst, ${what}`,
      value: Math.round(p.peakMb),
      baseline: Math.round(rssBefore),
      baselineMeasure: 'RSS of the server process before the burst (10,000 sessions made)',
      unit: 'MB',
      ratio: p.peakMb / rssBefore,
      maxValue: 512,
    });
    const bareHealth = b.health[0]!;
    const bareP99 = percentile(bareHealth.times, 0.99);
    const floorHealth = f.health[0]!;
    const floorP99 = percentile(floorHealth.times, 0.99);
    const checks = ({ times, failures }: HealthChecks) =>
      `p50 ${percentile(times, 0.5).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms, ${count(times.length)} checks (${failures} failed)`;
    for (const [where, url] of [
      ['the health port (HEALTH_PORT, its own thread)', healthPortUrl],
      ['the main port', mainPortUrl],
    ] as const) {
      const own = product_.health.find((checked) => checked.url === url)!;
      const p99 = percentile(own.times, 0.99);
      report({
        name: `burst: /healthz p99 on ${where}, ${engine.name}`,
        measure: `p99 time of /healthz on ${where} asked every 10 ms during the burst (client side), ${what}`,
        value: Number(p99.toFixed(1)),
        baseline: Number(bareP99.toFixed(1)),
        baselineMeasure: "the bare route's /healthz in the same burst",
        unit: 'ms',
        ratio: p99 / bareP99,
        maxValue: 50,
        notes: [
          `product: ${checks(own)}`,
          `bare route: ${checks(bareHealth)}`,
          `floor, a plain node:http server giving every question the busy 503: p99 ${floorP99.toFixed(1)} ms, ${checks(floorHealth)}`,
        ],
      });
    }
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
}
