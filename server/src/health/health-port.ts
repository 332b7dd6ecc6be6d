import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { HealthSources } from './health.routes.ts';
import type { FromHealthWorker, HealthFigures, HealthWorkerData, ToHealthWorker } from './health-worker.ts';

const WORKER_URL = new URL('./health-worker.ts', import.meta.url);

/** How often the main thread checks the database and posts its figures to the health port. */
export const HEALTH_BEAT_MS = 1000;

/**
 * How long the main thread may go without posting before the health port
 * answers 503. A crowd of 10,000 connections at once kept the event loop
 * busy for up to 9 s between turns (bench/RESULTS.md): that process is
 * slow, not dead, and a load balancer taking it out then would only push
 * its crowd onto the others. A loop silent for longer is stuck.
 */
export const HEALTH_STALL_LIMIT_MS = 15_000;

/**
 * Failed pings in a row before the database counts as unreachable. One is
 * not enough: in a crowd the main thread can be busy for longer than the
 * ping's timeout (3 s in a PostgreSQL burst, bench/RESULTS.md). A reply
 * already read when the timer fires still counts (answeredWithin), but one
 * still on its way, or a database slow for a moment under the same crowd,
 * fails a single ping with the database up. A database that is down fails
 * the next ping too, a second later.
 */
export const FAILED_PINGS_TO_FAIL = 2;

/** What the health record is made of, read on the main thread: the main port's sources, the database's ping and the pause. */
export interface HealthProbe extends HealthSources {
  ping(): Promise<void>;
  paused(): boolean;
}

export interface HealthPortOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  probe: HealthProbe;
  logger: Logger;
  stallLimitMs?: number;
  beatMs?: number;
}

/**
 * `GET /healthz` on a port of its own, answered by a worker thread
 * (health-worker.ts) from figures this side posts every second: a load
 * balancer's health check keeps its answer in milliseconds while the main
 * port's event loop is busy with a crowd, and still fails when the database
 * does not answer, when the main thread stops turning, and as soon as the
 * process begins to shut down (so the balancer stops sending it new
 * visitors while it finishes the answers in flight).
 */
export class HealthPort {
  readonly #options: HealthPortOptions & { stallLimitMs: number };
  readonly #timer: NodeJS.Timeout;
  #worker: Worker;
  #port: number;
  #draining = false;
  #stopped = false;
  #databaseReachable = true;
  #queueSize = 0;
  /** When the database check in flight began; undefined when none is. */
  #checkingSince: number | undefined;
  /** Pings failed in a row. */
  #failedPings = 0;

  private constructor(worker: Worker, port: number, options: HealthPortOptions & { stallLimitMs: number }) {
    this.#options = options;
    this.#worker = worker;
    this.#port = port;
    this.#watch(worker);
    this.#timer = setInterval(() => this.#beat(), options.beatMs ?? HEALTH_BEAT_MS);
    this.#timer.unref();
  }

  /** Starts the thread and resolves once it listens; rejects (EADDRINUSE…) if it cannot. */
  static async start(options: HealthPortOptions): Promise<HealthPort> {
    const settled = { ...options, stallLimitMs: options.stallLimitMs ?? HEALTH_STALL_LIMIT_MS };
    const { worker, port } = await HealthPort.#spawn(settled, options.port);
    const healthPort = new HealthPort(worker, port, settled);
    await healthPort.#check();
    return healthPort;
  }

  /** The port it listens on (the one picked when asked for 0). */
  get port(): number {
    return this.#port;
  }

  /** The thread answering now (a test stops it to see it come back). */
  get thread(): Worker {
    return this.#worker;
  }

  static async #spawn(options: HealthPortOptions & { stallLimitMs: number }, port: number): Promise<{ worker: Worker; port: number }> {
    const worker = new Worker(WORKER_URL, {
      name: 'health-port',
      workerData: { host: options.host, port, stallLimitMs: options.stallLimitMs } satisfies HealthWorkerData,
      // A thread that answers one small route: a small heap.
      resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 },
    });
    worker.unref();
    // Rejects if the thread fails before it says whether it listens.
    const [reply] = (await once(worker, 'message')) as [FromHealthWorker];
    if (reply.kind === 'failed') {
      await worker.terminate();
      throw new Error(`HEALTH_PORT: cannot listen on ${options.host}:${port}: ${reply.message}`);
    }
    return { worker, port: reply.port };
  }

  /** A thread that dies (out of its small heap under a flood of connections, say) is started again on the same port. */
  #watch(worker: Worker): void {
    worker.on('error', (error) => this.#options.logger.error({ err: error }, 'health port: its thread failed'));
    worker.on('exit', (code) => {
      if (this.#stopped) return;
      this.#options.logger.error({ code }, 'health port: its thread stopped; starting it again in a second');
      setTimeout(() => void this.#restart(), 1000).unref();
    });
  }

  async #restart(): Promise<void> {
    if (this.#stopped) return;
    try {
      const { worker } = await HealthPort.#spawn(this.#options, this.#port);
      if (this.#stopped) {
        await worker.terminate();
        return;
      }
      this.#worker = worker;
      this.#watch(worker);
      this.#publish();
      if (this.#draining) this.#post({ kind: 'draining' });
      this.#options.logger.info({ port: this.#port }, 'health port: listening again');
    } catch (error) {
      this.#options.logger.error({ err: error }, 'health port: could not start its thread again; trying again in a second');
      setTimeout(() => void this.#restart(), 1000).unref();
    }
  }

  /** From now on the health check fails with 503 `shutting_down`. */
  draining(): void {
    this.#draining = true;
    // The answer no longer depends on the figures, and the database is about to close: no more checks.
    clearInterval(this.#timer);
    this.#post({ kind: 'draining' });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#worker.terminate();
  }

  #beat(): void {
    if (this.#checkingSince === undefined) {
      void this.#check();
    } else if (Date.now() - this.#checkingSince > this.#options.stallLimitMs) {
      this.#reachable(false, new Error(`no answer to the health check's ping in ${Math.round((Date.now() - this.#checkingSince) / 1000)} s`));
    }
    this.#publish();
  }

  /** Pings the database and counts the queue, then posts the figures at once. */
  async #check(): Promise<void> {
    this.#checkingSince = Date.now();
    try {
      await this.#options.probe.ping();
      this.#queueSize = await this.#options.probe.queueSize();
      this.#failedPings = 0;
      this.#reachable(true);
    } catch (error) {
      if (++this.#failedPings >= FAILED_PINGS_TO_FAIL) this.#reachable(false, error);
    } finally {
      this.#checkingSince = undefined;
    }
    this.#publish();
  }

  #reachable(reachable: boolean, error?: unknown): void {
    if (reachable === this.#databaseReachable) return;
    this.#databaseReachable = reachable;
    if (reachable) this.#options.logger.info('health port: the database answers again');
    else this.#options.logger.error({ err: error }, 'health port: database unreachable; the health check fails until it answers');
  }

  #publish(): void {
    const figures: HealthFigures = {
      paused: this.#options.probe.paused(),
      queue_size: this.#queueSize,
      discord_gateway_connected: this.#options.probe.discordGatewayConnected(),
      database_reachable: this.#databaseReachable,
    };
    this.#post({ kind: 'figures', figures });
  }

  #post(message: ToHealthWorker): void {
    this.#worker.postMessage(message);
  }
}
