import { isMarkedAsUntransferable, Worker } from 'node:worker_threads';
import type { CrawlRequest, EventRow, Parsed, PreviousEvent, Prepared, SharedDatabase } from './crawl-worker.ts';

const WORKER_URL = new URL('./crawl-worker.ts', import.meta.url);

/**
 * The worker's heap. A small young generation (V8 gives a thread 3 × 16 MB
 * by default) keeps what a parse throws away from piling up: at 50,000
 * events the process peaks about 90 MB lower. The old generation's bound
 * is a safety net far above what a 20 MB feed needs (about 350 MB for
 * frab XML, the hungriest format): a feed that would need more fails its
 * run with a clear error instead of taking the machine's memory.
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 768 };

/**
 * One refresh's worker thread (crawl-worker.ts), seen from the main thread:
 * each step is a message and its reply. The worker holds the feed and the
 * parsed schedule between steps and ends with the job, so its memory goes
 * back as soon as the run is stored.
 */
export class CrawlJob {
  readonly #worker: Worker;
  #nextId = 1;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #failure: Error | undefined;

  constructor() {
    this.#worker = new Worker(WORKER_URL, { name: 'crawl', resourceLimits: WORKER_LIMITS });
    this.#worker.unref();
    this.#worker.on('message', (reply: { id: number; ok: boolean; result?: unknown; error?: string }) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if (reply.ok) pending.resolve(reply.result);
      else pending.reject(new Error(reply.error));
    });
    const fail = (error: Error) => {
      this.#failure ??= error;
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    this.#worker.on('error', (error: Error & { code?: string }) =>
      fail(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new Error(`Reading the schedule needed more than the crawler's ${WORKER_LIMITS.maxOldGenerationSizeMb} MB of memory`)
          : error,
      ),
    );
    this.#worker.on('exit', (code) => fail(new Error(`The schedule worker stopped (exit code ${code})`)));
  }

  /**
   * The feed's SHA-256; the worker keeps the bytes. A buffer of its own is
   * handed over, not copied: `body` is empty afterwards.
   */
  hash(body: Buffer): Promise<string> {
    const own = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer && !isMarkedAsUntransferable(body.buffer);
    const handed = own ? (body.buffer as ArrayBuffer) : (body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer);
    return this.#send({ type: 'hash', body: handed }, [handed]) as Promise<string>;
  }

  parse(options: Omit<Extract<CrawlRequest, { type: 'parse' }>, 'type'>): Promise<Parsed> {
    return this.#send({ type: 'parse', ...options }) as Promise<Parsed>;
  }

  previous(events: PreviousEvent[]): Promise<number> {
    return this.#send({ type: 'previous', events }) as Promise<number>;
  }

  /** The worker reads a run's events itself, for the comparison; resolves to their number. */
  readPrevious(database: SharedDatabase, runId: number): Promise<number> {
    return this.#send({ type: 'readPrevious', database, runId }) as Promise<number>;
  }

  /** The worker writes the prepared schedule's events to a run itself; resolves to their number. */
  store(database: SharedDatabase, runId: number): Promise<number> {
    return this.#send({ type: 'store', database, runId }) as Promise<number>;
  }

  prepare(options: Omit<Extract<CrawlRequest, { type: 'prepare' }>, 'type'>): Promise<Prepared> {
    return this.#send({ type: 'prepare', ...options }) as Promise<Prepared>;
  }

  rows(from: number, count: number): Promise<EventRow[]> {
    return this.#send({ type: 'rows', from, count }) as Promise<EventRow[]>;
  }

  /** Ends the worker, its database connection closed first (never in the middle of a transaction). */
  async close(): Promise<void> {
    try {
      await this.#send({ type: 'close' });
    } catch {
      // A worker that failed has nothing left to close.
    }
    await this.#worker.terminate();
  }

  #send(request: CrawlRequest, transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, request }, transfer);
    });
  }
}
