import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import OpenAI from 'openai';
import { parseDuration } from '@concierge/contract';
import type { Database } from '@concierge/server/src/db/database.ts';
import { startBareChat } from './bare-chat.ts';
import type { FromLoad, LoadSetup, RoundRequest, RoundResult, ToLoad } from './chat-load.ts';
import { RoundProfiler, type ProfileKind } from './cpu-profile.ts';
import { count, type Engine } from './engines.ts';
import { machineCpu, machineCpuSince, type MachineCpu } from './machine-cpu.ts';
import { percentile, type BenchResult } from './report.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Attendee questions about the bundled schedule (the same the offline assistant is tested with). */
const QUESTIONS = (JSON.parse(readFileSync(path.join(ROOT, 'server/sample-data/questions.json'), 'utf8')) as { questions: { question: string }[] }).questions.map(
  (entry) => entry.question,
);

/**
 * With BENCH_PROFILE=<dir>, each timed round's CPU profile of the server's
 * thread goes there (cpu-profile.ts); with BENCH_PROFILE_KIND=heap too, its
 * allocation profile instead.
 */
const PROFILE_DIR = process.env.BENCH_PROFILE;
const PROFILE_KIND: ProfileKind = process.env.BENCH_PROFILE_KIND === 'heap' || process.env.BENCH_PROFILE_KIND === 'promoted' ? process.env.BENCH_PROFILE_KIND : 'cpu';

export interface ChatBenchOptions {
  /** Virtual users asking at once, each in a session of its own. */
  sessions: number;
  /** Questions each user asks in a round, one after another (the same work for product and bare). */
  questionsPerSession: number;
  /** Timed rounds of each, interleaved: product, bare, product, bare, … */
  rounds: number;
  /** Questions per user in one untimed round of each first (JIT, connections, caches). */
  warmUpQuestions: number;
  /** How long the fake keeps a run going; 0 (the default) answers at once so only the server is measured. */
  runDurationMs: number;
  /** Ask for answers as event streams, as the chat page does (the default); `json` measures the JSON reply instead. */
  stream: boolean;
}

/**
 * 200 users asking 20 questions each: rounds of 4,000 answers (about 10 s
 * on a 2-vCPU machine). Rounds of 1,000 (5 questions) lasted 2–3 s, and
 * their p99 (the 10th slowest answer) and throughput moved by a tenth from
 * one round to the next on an idle machine.
 *
 * A warm-up of 2,000 answers a side (10 questions a user): after one of 400
 * (2 questions), the product's first timed round on PostgreSQL had the
 * lowest ratio in each of seven runs (0.60–0.67 against 0.67–0.79), its
 * heap, JIT and PostgreSQL's plans still settling; after 2,000 the rounds
 * agree.
 */
export const CHAT_BENCH_DEFAULTS: ChatBenchOptions = { sessions: 200, questionsPerSession: 20, rounds: 5, warmUpQuestions: 10, runDurationMs: 0, stream: true };
const QUICK: Partial<ChatBenchOptions> = { sessions: 20, questionsPerSession: 10, warmUpQuestions: 5 };

/** `quick`, `json`, then any of `sessions=N`, `questions=N`, `rounds=N`, `warmup=N`, `run-ms=N`. */
export function chatBenchOptions(args: string[]): ChatBenchOptions {
  const options = { ...CHAT_BENCH_DEFAULTS, ...(args.includes('quick') ? QUICK : {}), ...(args.includes('json') ? { stream: false } : {}) };
  const keys: Record<string, Exclude<keyof ChatBenchOptions, 'stream'>> = {
    sessions: 'sessions',
    questions: 'questionsPerSession',
    rounds: 'rounds',
    warmup: 'warmUpQuestions',
    'run-ms': 'runDurationMs',
  };
  for (const arg of args) {
    if (arg === 'quick' || arg === 'json') continue;
    const [name, value] = arg.split('=');
    const key = name && Object.hasOwn(keys, name) ? keys[name] : undefined;
    const number = Number(value);
    if (!key || !Number.isInteger(number) || number < 0) throw new Error(`chat bench: unknown option "${arg}" (quick, json, ${Object.keys(keys).map((k) => `${k}=N`).join(', ')})`);
    options[key] = number;
  }
  if (options.sessions < 1 || options.rounds < 1 || options.questionsPerSession < 1) throw new Error('chat bench: sessions, questions and rounds must be at least 1');
  // The product answers at most public_chat_requests_per_minute (60 at most) questions per session and minute.
  if (options.questionsPerSession > 60 || options.warmUpQuestions > 60) throw new Error('chat bench: at most 60 questions per session (the product allows 60 a minute)');
  return options;
}

/** The worker thread that runs the fake OpenAI server and the virtual users. */
class LoadWorker {
  readonly #worker: Worker;
  #waiting: ((message: FromLoad) => void) | null = null;
  #failed: Error | null = null;

  private constructor(setup: LoadSetup) {
    this.#worker = new Worker(new URL('./chat-load.ts', import.meta.url), { name: 'chat-load', workerData: setup });
    this.#worker.on('message', (message: FromLoad) => this.#waiting?.(message));
    this.#worker.on('error', (error) => {
      this.#failed = error;
      this.#waiting?.({ type: 'closed' });
    });
  }

  static async start(setup: LoadSetup): Promise<{ worker: LoadWorker; url: string; apiKey: string }> {
    const worker = new LoadWorker(setup);
    const ready = await worker.#next();
    if (ready.type !== 'ready') throw new Error('the load worker did not start');
    return { worker, url: ready.url, apiKey: ready.apiKey };
  }

  #next(send?: ToLoad): Promise<FromLoad> {
    return new Promise((resolve, reject) => {
      this.#waiting = (message) => {
        this.#waiting = null;
        if (this.#failed) reject(this.#failed);
        else resolve(message);
      };
      if (send) this.#worker.postMessage(send);
    });
  }

  async round(request: Omit<RoundRequest, 'type'>): Promise<RoundResult> {
    const reply = await this.#next({ type: 'round', ...request });
    if (reply.type !== 'result') throw new Error('the load worker stopped during a round');
    return reply.result;
  }

  async close(): Promise<void> {
    await this.#next({ type: 'close' }).catch(() => undefined);
    await this.#worker.terminate();
  }
}

interface RoundFigures {
  p50: number;
  p99: number;
  throughput: number;
  answers: number;
  /** Share of the round the main thread (the server under test) was busy. */
  serverUtilization: number;
  /** CPU time of the server's thread per answer (ms): its own work, which the machine's other load moves little. */
  serverCpuPerAnswer: number;
  /** CPU time of the whole machine per answer (ms): every thread and process, PostgreSQL's included; null without /proc. */
  machineCpuPerAnswer: number | null;
  /** Of that, the local PostgreSQL server's processes. */
  postgresCpuPerAnswer: number | null;
  /** How long per answer the server's thread was ready to run but waited for a core (ms); null without /proc. */
  serverWaitPerAnswer: number | null;
  loadUtilization: number;
}

type Measured = RoundResult & { serverUtilization: number; serverCpuMs: number; machine: MachineCpu | null };

const median = (values: number[]) => percentile(values, 0.5);

function figures(result: Measured): RoundFigures {
  return {
    p50: percentile(result.latencies, 0.5),
    p99: percentile(result.latencies, 0.99),
    throughput: result.latencies.length / (result.elapsedMs / 1000),
    answers: result.latencies.length,
    serverUtilization: result.serverUtilization,
    serverCpuPerAnswer: result.serverCpuMs / Math.max(1, result.latencies.length),
    machineCpuPerAnswer: result.machine ? result.machine.busyMs / Math.max(1, result.latencies.length) : null,
    postgresCpuPerAnswer: result.machine ? result.machine.postgresMs / Math.max(1, result.latencies.length) : null,
    serverWaitPerAnswer: result.machine ? (result.machine.threadsWaitMs.MainThread ?? 0) / Math.max(1, result.latencies.length) : null,
    loadUtilization: result.loadUtilization,
  };
}

const ms = (n: number) => `${n.toFixed(1)} ms`;
const pct = (n: number) => `${Math.round(n * 100)} %`;

/**
 * The public chat's hot path under load: N virtual users, each verifying a
 * session and asking questions one after another, against the product
 * (`startServer`, OpenAI provider on the fake OpenAI server at zero latency,
 * limits raised so nothing is refused) and against a bare Fastify route
 * making the same provider calls. Rounds are interleaved (product, bare,
 * product, bare, …) and the figures are medians over rounds.
 */
export async function benchChat(engine: Engine, report: (result: BenchResult) => void, options: ChatBenchOptions): Promise<void> {
  const profiler = PROFILE_DIR ? new RoundProfiler(PROFILE_DIR, PROFILE_KIND) : null;
  const { worker, url: fakeUrl, apiKey } = await LoadWorker.start({ runDurationMs: options.runDurationMs });
  const cleanups: (() => Promise<void>)[] = [() => worker.close()];
  try {
    const openai = new OpenAI({ apiKey, baseURL: fakeUrl });
    // Both servers search the same vector store; the product's crawler puts the bundled schedule in it.
    const store = await openai.vectorStores.create({ name: 'Bench knowledge' });
    const product = await engine.serve({
      OPENAI_API_KEY: apiKey,
      OPENAI_BASE_URL: fakeUrl,
      OPENAI_MODEL: 'gpt-5-mini',
      OPENAI_VECTOR_STORE_ID: store.id,
      MAX_CONCURRENT_RUNS: '10000',
      // Each virtual session comes from an address of its own (X-Forwarded-For from the load worker on loopback).
      TRUST_PROXY: 'loopback',
    });
    cleanups.unshift(() => product.cleanup());
    const { deps } = product.server;
    const deadline = Date.now() + 30_000;
    while (!(await deps.crawler.lastRefresh()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    if (!(await deps.crawler.lastRefresh())) throw new Error('the product did not load the bundled schedule within 30 s');
    const config = await deps.config.update({
      public_chat_requests_per_minute: 60,
      openai_max_requests_per_second: 1000,
      assistant_poll_interval: '100ms',
      assistant_max_poll_interval: '200ms',
    });
    const bare = await startBareChat({
      apiKey,
      baseURL: fakeUrl,
      model: 'gpt-5-mini',
      vectorStoreId: store.id,
      instructions: deps.assistant.runSettings().instructions,
      pollMs: parseDuration(config.assistant_poll_interval)!,
      maxPollMs: parseDuration(config.assistant_max_poll_interval)!,
    });
    cleanups.unshift(() => bare.close());

    const load = { sessions: options.sessions, questions: QUESTIONS, stream: options.stream };
    const targets = { product: product.server.url, bare: bare.url };
    const results: Record<'product' | 'bare', Measured[]> = { product: [], bare: [] };
    if (options.warmUpQuestions > 0) {
      for (const side of ['product', 'bare'] as const) await worker.round({ ...load, target: targets[side], questionsPerSession: options.warmUpQuestions });
    }
    for (let round = 0; round < options.rounds; round++) {
      for (const side of ['product', 'bare'] as const) {
        await profiler?.start();
        const loopBefore = performance.eventLoopUtilization();
        const cpuBefore = process.threadCpuUsage();
        const machineBefore = machineCpu();
        const gc = watchGc();
        const measured = await worker.round({ ...load, target: targets[side], questionsPerSession: options.questionsPerSession });
        const collections = gc.stop();
        const cpu = process.threadCpuUsage(cpuBefore);
        const machine = machineCpuSince(machineBefore);
        const result = { ...measured, serverUtilization: performance.eventLoopUtilization(loopBefore).utilization, serverCpuMs: (cpu.user + cpu.system) / 1000, machine };
        await profiler?.stop(`${engine.name}-${side}-${round + 1}`);
        results[side].push(result);
        const f = figures(result);
        console.log(
          `      round ${round + 1} ${side.padEnd(7)} ${count(f.answers)} answers in ${(result.elapsedMs / 1000).toFixed(1)} s: ` +
            `p50 ${ms(f.p50)}, p99 ${ms(f.p99)}, ${f.throughput.toFixed(1)} answers/s, ${Object.values(result.failures).reduce((a, b) => a + b, 0)} non-200, ` +
            `event loops busy: server ${pct(f.serverUtilization)}, load ${pct(f.loadUtilization)}; server CPU ${ms(f.serverCpuPerAnswer)} per answer` +
            (f.machineCpuPerAnswer === null ? '' : `, machine ${ms(f.machineCpuPerAnswer)}`) +
            ((f.postgresCpuPerAnswer ?? 0) >= 0.05 ? ` (PostgreSQL ${ms(f.postgresCpuPerAnswer!)})` : '') +
            threadsNote(result, f.serverWaitPerAnswer) +
            `; GC ${collections}`,
        );
      }
    }

    const rows = await rowCounts(deps.database.db);
    const perSide = (side: 'product' | 'bare') => {
      const rounds = results[side].map(figures);
      const all = results[side];
      const answers = all.reduce((total, result) => total + result.latencies.length, 0);
      const calls: Record<string, number> = {};
      for (const result of all) for (const [name, n] of Object.entries(result.providerCalls)) calls[name] = (calls[name] ?? 0) + n;
      const failures: Record<string, number> = {};
      for (const result of all) for (const [name, n] of Object.entries(result.failures)) failures[name] = (failures[name] ?? 0) + n;
      return {
        p50: median(rounds.map((f) => f.p50)),
        p99: median(rounds.map((f) => f.p99)),
        throughput: median(rounds.map((f) => f.throughput)),
        rounds,
        answers,
        requests: all.reduce((total, result) => total + result.requests, 0),
        sessions: all.reduce((total, result) => total + result.sessionsStarted, 0),
        failures,
        failureSamples: all.flatMap((result) => result.failureSamples).slice(0, 5),
        callsPerAnswer: Object.entries(calls)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, n]) => `${name} ${(n / Math.max(1, answers)).toFixed(2)}`)
          .join(', '),
      };
    };
    const p = perSide('product');
    const b = perSide('bare');
    const what = `${options.sessions} concurrent sessions × ${options.questionsPerSession} questions, ${options.stream ? 'streamed (text/event-stream)' : 'JSON replies'}, ${options.rounds} interleaved rounds (medians over rounds)`;
    const roundList = (side: typeof p, key: 'p50' | 'p99' | 'throughput') => side.rounds.map((f) => f[key].toFixed(1)).join(' / ');
    const busy = (side: typeof p, key: 'serverUtilization' | 'loadUtilization') => pct(median(side.rounds.map((f) => f[key])));
    // Each product round against the bare round run right after it: on a machine whose speed drifts, what the
    // ratio of the medians (the figure held to the target) pairs may be rounds minutes apart.
    const pairedRatios = (key: 'p50' | 'throughput') =>
      `each round's own ratio (product ÷ the bare round after it): ${p.rounds.map((f, i) => (f[key] / b.rounds[i]![key]).toFixed(3)).join(' / ')}`;
    const fakeRun = options.runDurationMs > 0 ? `runs last ${options.runDurationMs} ms, so both poll` : 'runs complete at once, so neither polls';
    report({
      name: `chat p50 answer time on ${engine.name}`,
      measure: `p50 time to an answer as the client sees it, product, ${what}`,
      value: p.p50,
      baseline: b.p50,
      baselineMeasure: 'bare Fastify route making the same provider calls, same load',
      unit: 'ms',
      ratio: p.p50 / b.p50,
      maxRatio: 1.2,
      notes: [
        `ms added per answer (p50 product − p50 bare): ${(p.p50 - b.p50).toFixed(1)} ms`,
        `rounds p50 (ms): product ${roundList(p, 'p50')}; bare ${roundList(b, 'p50')}`,
        pairedRatios('p50'),
        `fake OpenAI at 0 ms latency in a worker thread with the load (${fakeRun}); poll interval ${config.assistant_poll_interval} up to ${config.assistant_max_poll_interval}; ` +
          `each round every user verifies a new session (own client address) and asks ${options.questionsPerSession} questions one after another`,
        `provider calls per answer: product ${p.callsPerAnswer}; bare ${b.callsPerAnswer}`,
      ],
    });
    report({
      name: `chat p99 answer time on ${engine.name}`,
      measure: `p99 time to an answer as the client sees it, product, ${what}`,
      value: p.p99,
      baseline: b.p99,
      baselineMeasure: 'bare Fastify route, same load',
      unit: 'ms',
      ratio: p.p99 / b.p99,
      maxRatio: 1.2,
      notes: [`rounds p99 (ms): product ${roundList(p, 'p99')}; bare ${roundList(b, 'p99')}`],
    });
    report({
      name: `chat throughput on ${engine.name}`,
      measure: `answers per second, product, ${what}`,
      value: p.throughput,
      baseline: b.throughput,
      baselineMeasure: 'bare Fastify route, same load',
      unit: 'answers/s',
      ratio: p.throughput / b.throughput,
      minRatio: 0.8,
      notes: [
        `rounds (answers/s): product ${roundList(p, 'throughput')}; bare ${roundList(b, 'throughput')}`,
        pairedRatios('throughput'),
        `event loops busy (median of rounds): server under test ${busy(p, 'serverUtilization')} product, ${busy(b, 'serverUtilization')} bare; ` +
          `load worker ${busy(p, 'loadUtilization')} / ${busy(b, 'loadUtilization')}`,
        `CPU time of the server's thread per answer (median of rounds): product ${ms(median(p.rounds.map((f) => f.serverCpuPerAnswer)))}, bare ${ms(median(b.rounds.map((f) => f.serverCpuPerAnswer)))}`,
        ...machineNote(p.rounds, b.rounds),
        `timed answers: product ${count(p.answers)} in ${count(p.sessions)} sessions; bare ${count(b.answers)} in ${count(b.sessions)} sessions`,
        `product database after all rounds (warm-up included): ${Object.entries(rows)
          .map(([table, n]) => `${table} ${count(n)}`)
          .join(', ')}`,
      ],
    });
    const failed = (side: typeof p) => Object.values(side.failures).reduce((total, n) => total + n, 0);
    const describe = (side: typeof p) => (failed(side) === 0 ? '0' : `${failed(side)} (${Object.entries(side.failures).map(([what, n]) => `${what} ×${n}`).join(', ')})`);
    report({
      name: `chat replies other than an answer on ${engine.name}`,
      measure: 'non-200 replies (and failed requests) in the timed rounds, both servers',
      value: failed(p) + failed(b),
      baseline: p.requests + b.requests,
      baselineMeasure: 'requests made (verifications and questions)',
      unit: 'replies',
      ratio: (failed(p) + failed(b)) / (p.requests + b.requests),
      maxRatio: 0,
      notes: [`product ${describe(p)}; bare ${describe(b)}`, ...[...p.failureSamples, ...b.failureSamples].slice(0, 5)],
    });
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
}

/** The garbage collections of this process's main thread until `stop`: how many of each kind, and the time they paused it. */
function watchGc(): { stop(): string } {
  const kinds = new Map<string, { count: number; ms: number }>();
  const names: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
  };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const name = names[(entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      const kind = kinds.get(name) ?? { count: 0, ms: 0 };
      kind.count++;
      kind.ms += entry.duration;
      kinds.set(name, kind);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      observer.disconnect();
      return [...kinds].map(([name, { count, ms: spent }]) => `${count} ${name} ${spent.toFixed(0)} ms`).join(', ') || 'none';
    },
  };
}

/**
 * This process's threads that spent 0.05 ms or more per answer: the server's (MainThread, its query and checkpoint
 * threads), V8's and the load's; and how long the server's thread waited for a core (the round's figure).
 */
function threadsNote(result: Measured, serverWaitPerAnswer: number | null): string {
  if (!result.machine) return '';
  const perAnswer = Object.entries(result.machine.threadsMs)
    .map(([name, spent]) => [name, spent / Math.max(1, result.latencies.length)] as const)
    .filter(([, spent]) => spent >= 0.05)
    .sort(([, a], [, b]) => b - a);
  return `; threads ${perAnswer.map(([name, spent]) => `${name} ${spent.toFixed(2)}`).join(', ')} ms; the server's thread waited for a core ${(serverWaitPerAnswer ?? 0).toFixed(2)} ms`;
}

/**
 * The machine's CPU per answer, both sides: what the answers cost the cores
 * that the server's threads, the load and PostgreSQL share (empty without /proc).
 */
function machineNote(productRounds: RoundFigures[], bareRounds: RoundFigures[]): string[] {
  const of = (rounds: RoundFigures[], key: 'machineCpuPerAnswer' | 'postgresCpuPerAnswer' | 'serverWaitPerAnswer') => {
    const values = rounds.map((f) => f[key]).filter((value): value is number => value !== null);
    return values.length === rounds.length ? median(values) : null;
  };
  const [product, bare, postgres] = [of(productRounds, 'machineCpuPerAnswer'), of(bareRounds, 'machineCpuPerAnswer'), of(productRounds, 'postgresCpuPerAnswer')];
  if (product === null || bare === null) return [];
  return [
    `CPU time of the whole machine per answer (every process, the load and PostgreSQL included; median of rounds): product ${ms(product)}` +
      `${postgres && postgres >= 0.05 ? ` (PostgreSQL's processes ${ms(postgres)})` : ''}, bare ${ms(bare)}`,
    // The cores are shared: what the product's other work (its query thread, V8's collectors, PostgreSQL) takes of
    // them, the server's event loop waits for, ready to run (the kernel's run delay of the thread).
    `time the server's thread waited for a core, ready to run, per answer (median of rounds): product ${ms(of(productRounds, 'serverWaitPerAnswer') ?? 0)}, bare ${ms(of(bareRounds, 'serverWaitPerAnswer') ?? 0)}`,
  ];
}

/** Rows the product wrote: the chat's tables and the provider call logs. */
async function rowCounts(db: Database['db']): Promise<Record<string, number>> {
  const tables = [
    'public_chat_sessions',
    'public_chat_messages',
    'public_chat_rate_limits',
    'openai_create_thread_logs',
    'openai_create_message_logs',
    'openai_create_run_logs',
    'openai_retrieve_run_logs',
    'openai_list_messages_logs',
  ] as const;
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}
