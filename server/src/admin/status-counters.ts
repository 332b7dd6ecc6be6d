import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import { addStatusCounters, readStatusCounters } from './status.queries.ts';

/** How often counts made in this process are written. */
const FLUSH_EVERY_MS = 1000;

/**
 * The Status screen's running totals (API requests per route, provider
 * calls, tokens, pauses, crawler checks), kept in the database so every
 * process shows the same figures and a restart keeps them. Counting is in
 * memory — an HTTP request must not pay a write — and written every second
 * as one statement, on reading and on close.
 */
export class StatusCounters {
  readonly #database: Database;
  readonly #logger: Logger;
  #pending = new Map<string, number>();
  #flushing: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: { database: Database; logger: Logger; flushEveryMs?: number }) {
    this.#database = options.database;
    this.#logger = options.logger;
    this.#timer = setInterval(() => void this.flush(), options.flushEveryMs ?? FLUSH_EVERY_MS);
    this.#timer.unref();
  }

  add(name: string, delta = 1): void {
    if (delta === 0) return;
    this.#pending.set(name, (this.#pending.get(name) ?? 0) + delta);
  }

  /** Writes what was counted since the last write; a failed write is kept for the next. Never throws. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return;
      const batch = this.#pending;
      this.#pending = new Map();
      try {
        await addStatusCounters(this.#database, batch);
      } catch (error) {
        for (const [name, delta] of batch) this.add(name, delta);
        this.#logger.error({ err: error }, 'could not write the status counters; kept for the next write');
      }
    });
    return this.#flushing;
  }

  /** Every process's totals, this one's latest counts included. */
  async read(): Promise<Map<string, number>> {
    await this.flush();
    return readStatusCounters(this.#database.db);
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }
}
