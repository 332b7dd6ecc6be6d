import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import type { ProviderStep } from '../db/schema/assistant.ts';
import { insertProviderLogBatch, insertProviderLogs, type ProviderLogRow } from './assistant.queries.ts';

/** How long a call log may wait in memory before it is written (an answer's own logs are written when it ends). */
const FLUSH_EVERY_MS = 100;
/** Rows per INSERT statement (well under SQLite's and PostgreSQL's limits on bound parameters). */
const ROWS_PER_STATEMENT = 200;
/** Rows kept for another try when the database refuses them; beyond it the oldest are dropped (and logged). */
const MAX_PENDING = 20_000;
/** Writes a refused row is given before it is dropped (and logged), so one bad row cannot hold up the others for ever. */
const MAX_ATTEMPTS = 3;

interface Pending {
  step: ProviderStep;
  row: ProviderLogRow;
  attempts: number;
}

/**
 * Writes the provider call logs of the answers' steps (thread, message, run,
 * retrieve, list) in batches: a call's row waits in memory and is written
 * with the others — one multi-row INSERT per log table — when the ask
 * pipeline flushes them (before it stores an id a call gave, and before the
 * answer, so a stored step always has its call's log whenever the process
 * dies), at most FLUSH_EVERY_MS after it was made, and when the process
 * stops.
 *
 * Under load many answers share one write: while one batch is being
 * written, the next gathers. A batch is written with one commit, whatever
 * tables it spans.
 */
export class ProviderLogWriter {
  readonly #database: Database;
  readonly #logger: Logger;
  readonly #flushEveryMs: number;
  #pending: Pending[] = [];
  /** The last write asked for; the next one starts after it. */
  #flushing: Promise<void> = Promise.resolve();
  /** A write asked for that has not taken its rows yet: flushes until then join it. */
  #queued: Promise<void> | null = null;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: { database: Database; logger: Logger; flushEveryMs?: number }) {
    this.#database = options.database;
    this.#logger = options.logger;
    this.#flushEveryMs = options.flushEveryMs ?? FLUSH_EVERY_MS;
  }

  /** Queues a call's row; written within FLUSH_EVERY_MS (or at once after close). */
  add(step: ProviderStep, row: ProviderLogRow): void {
    this.#pending.push({ step, row, attempts: 0 });
    if (this.#closed) {
      void this.flush();
      return;
    }
    if (!this.#timer) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.flush();
      }, this.#flushEveryMs);
      this.#timer.unref();
    }
  }

  /**
   * Writes every queued row (those queued while a write is under way go in
   * the next). Never throws. The write starts in the event loop's next turn,
   * and every flush asked for until then joins it: answers that end in the
   * same turn share one transaction.
   */
  flush(): Promise<void> {
    if (this.#queued) return this.#queued;
    const write = this.#flushing
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        this.#queued = null;
        return this.#write();
      });
    this.#queued = write;
    this.#flushing = write;
    return write;
  }

  async #write(): Promise<void> {
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    const byStep = new Map<ProviderStep, Pending[]>();
    for (const pending of batch) {
      let rows = byStep.get(pending.step);
      if (!rows) byStep.set(pending.step, (rows = []));
      rows.push(pending);
    }
    const chunks: { step: ProviderStep; rows: Pending[] }[] = [];
    for (const [step, rows] of byStep) {
      for (let at = 0; at < rows.length; at += ROWS_PER_STATEMENT) chunks.push({ step, rows: rows.slice(at, at + ROWS_PER_STATEMENT) });
    }
    // One commit for the whole batch (one WAL write, one fsync on PostgreSQL) rather than one per table: several
    // tables' rows are written together (one statement on PostgreSQL), a single chunk on its own.
    if (chunks.length > 1) {
      try {
        await insertProviderLogBatch(
          this.#database,
          chunks.map((chunk) => ({ step: chunk.step, rows: chunk.rows.map((pending) => pending.row) })),
        );
        return;
      } catch {
        // Written again chunk by chunk below, so that one refused row holds up only its own chunk.
      }
    }
    for (const chunk of chunks) {
      try {
        await insertProviderLogs(this.#database, { step: chunk.step, rows: chunk.rows.map((pending) => pending.row) });
      } catch (error) {
        const kept = chunk.rows.filter((pending) => ++pending.attempts < MAX_ATTEMPTS);
        this.#logger.error(
          { err: error, step: chunk.step, rows: chunk.rows.length, dropped: chunk.rows.length - kept.length },
          'could not write provider call logs; kept for the next write',
        );
        this.#keep(kept);
      }
    }
  }

  #keep(rows: Pending[]): void {
    this.#pending = [...rows, ...this.#pending];
    if (this.#pending.length > MAX_PENDING) {
      const dropped = this.#pending.length - MAX_PENDING;
      this.#pending = this.#pending.slice(dropped);
      this.#logger.error({ dropped }, 'provider call logs dropped: the database refused them too long');
    }
  }

  /** Writes what is queued; later rows are written as they come. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }
}
