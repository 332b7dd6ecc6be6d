import { fork, type ChildProcess } from 'node:child_process';
import OpenAI from 'openai';
import { startBareChat } from './bare-chat.ts';
import type { BurstResult, FromBurst, ToBurst } from './burst-load.ts';
import { count, type Engine } from './engines.ts';
import type { BenchResult } from './report.ts';

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

  async burst(target: string, questions: number): Promise<BurstResult> {
    const reply = await this.#next({ type: 'burst', target, questions, question: 'When does the opening ceremony start?' });
    if (reply.type !== 'result') throw new Error('unexpected reply from the burst load');
    return reply.result;
  }

  close(): void {
    this.#child.send({ type: 'close' } satisfies ToBurst);
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
}

/** Samples this process's RSS (the server under test) while `run` runs; returns the highest. */
async function peakRss<T>(run: () => Promise<T>): Promise<{ value: T; peakMb: number }> {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 25);
  try {
    const value = await run();
    return { value, peakMb: Math.max(peak, process.memoryUsage.rss()) / 1024 / 1024 };
  } finally {
    clearInterval(timer);
  }
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
 * the cap refuses), then against the bare route. Every reply must be an
 * answer or DESIGN §9's busy 503 (no reset, no other error), the server's
 * RSS stay under 512 MB, and /healthz answer throughout with p99 ≤ 50 ms
 * (its max reported beside the bare route's in the same burst).
 */
export async function benchBurst(engine: Engine, report: (result: BenchResult) => void, options: BurstOptions): Promise<void> {
  const { load, url: fakeUrl, apiKey } = await BurstLoad.start();
  const cleanups: (() => Promise<void>)[] = [async () => load.close()];
  try {
    const store = await new OpenAI({ apiKey, baseURL: fakeUrl }).vectorStores.create({ name: 'Burst knowledge' });
    const product = await engine.serve({ OPENAI_API_KEY: apiKey, OPENAI_BASE_URL: fakeUrl, OPENAI_MODEL: 'gpt-5-mini', OPENAI_VECTOR_STORE_ID: store.id, TRUST_PROXY: 'loopback' });
    cleanups.unshift(() => product.cleanup());
    const { deps } = product.server;
    await deps.config.update({ public_chat_requests_per_minute: 60, openai_max_requests_per_second: 1000, assistant_poll_interval: '100ms', assistant_max_poll_interval: '200ms' });
    const bare = await startBareChat({ apiKey, baseURL: fakeUrl, model: 'gpt-5-mini', vectorStoreId: store.id, instructions: deps.assistant.runSettings().instructions, pollMs: 100, maxPollMs: 200 });
    cleanups.unshift(() => bare.close());

    const rssBefore = process.memoryUsage.rss() / 1024 / 1024;
    const p = await peakRss(() => load.burst(product.server.url, options.questions));
    const b = await load.burst(bare.url, options.questions);
    const product_ = p.value;
    const answered = product_.outcomes['200 answer'] ?? 0;
    const busy = product_.outcomes['503 busy'] ?? 0;
    const other = options.questions - answered - busy;
    const what = `${count(options.questions)} questions at once (each on its own connection, sessions made first), MAX_CONCURRENT_RUNS ${deps.pipeline.capacity}`;
    console.log(
      `      product: ${describe(product_.outcomes)} in ${(product_.elapsedMs / 1000).toFixed(1)} s (sessions made in ${(product_.setUpMs / 1000).toFixed(1)} s); ` +
        `bare: ${describe(b.outcomes)} in ${(b.elapsedMs / 1000).toFixed(1)} s`,
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
      baselineMeasure: 'RSS before the burst (product and bare route in one process)',
      unit: 'MB',
      ratio: p.peakMb / rssBefore,
      maxValue: 512,
    });
    const healthP99 = percentile(product_.health, 0.99);
    const bareP99 = percentile(b.health, 0.99);
    report({
      name: `burst: /healthz p99 on ${engine.name}`,
      measure: `p99 time of /healthz asked every 10 ms during the burst (client side), ${what}`,
      value: Number(healthP99.toFixed(1)),
      baseline: Number(bareP99.toFixed(1)),
      baselineMeasure: 'the bare route\'s /healthz in the same burst',
      unit: 'ms',
      ratio: healthP99 / bareP99,
      maxValue: 50,
      notes: [
        `max: product ${Math.max(...product_.health).toFixed(1)} ms, bare ${Math.max(...b.health).toFixed(1)} ms; p50 product ${percentile(product_.health, 0.5).toFixed(1)} ms, bare ${percentile(b.health, 0.5).toFixed(1)} ms`,
        `checks: product ${count(product_.health.length)} (${product_.healthFailures} failed), bare ${count(b.health.length)} (${b.healthFailures} failed)`,
      ],
    });
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
}
