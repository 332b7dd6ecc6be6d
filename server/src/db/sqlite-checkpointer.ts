import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { CheckpointResult, CheckpointWorkerData, FromCheckpointWorker, ToCheckpointWorker } from './sqlite-checkpoint-worker.ts';

const WORKER_URL = new URL('./sqlite-checkpoint-worker.ts', import.meta.url);

/** SQLite's own default: a commit that leaves the log longer than this many pages checkpoints it. */
export const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

/** How often the thread checkpoints: at the peak's write rate the log stays a few megabytes. */
export const CHECKPOINT_INTERVAL_MS = 200;

/** The server's connection, as far as the checkpointer needs it. */
interface Connection {
  exec(sql: string): void;
}

export interface CheckpointerOptions {
  /** The database file (not `:memory:`: an in-memory database has no log to copy). */
  file: string;
  connection: Connection;
  logger?: Logger;
  intervalMs?: number;
}

/**
 * Takes SQLite's checkpoints off the event loop. In WAL mode with
 * `synchronous = normal`, a commit appends to the write-ahead log without
 * waiting for the disk; the wait comes at the checkpoint that copies the log
 * back into the database file and fsyncs it, and by default the commit that
 * crosses 1,000 pages runs it, on the event loop (several milliseconds on a
 * fast disk, every few dozen answers at the peak). The server's connection
 * turns its automatic checkpoints off and a thread of its own checkpoints
 * every 200 ms instead.
 *
 * When the thread cannot start or stops (a disk error), the connection goes
 * back to checkpointing by itself, so the log never grows without bound.
 */
export class SqliteCheckpointer {
  readonly #worker: Worker;
  readonly #connection: Connection;
  readonly #logger: Logger | undefined;
  #stopping = false;
  readonly #listeners = new Set<(result: CheckpointResult) => void>();

  private constructor(worker: Worker, options: CheckpointerOptions) {
    this.#worker = worker;
    this.#connection = options.connection;
    this.#logger = options.logger;
    worker.on('message', (message: FromCheckpointWorker) => {
      if (message.kind !== 'checkpointed') return;
      for (const listener of this.#listeners) listener(message.result);
    });
    worker.on('error', (error) => this.#logger?.error({ err: error }, 'the SQLite checkpoint thread failed'));
    worker.once('exit', () => {
      if (this.#stopping) return;
      try {
        this.#connection.exec(`pragma wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
        this.#logger?.error('the SQLite checkpoint thread stopped; the server checkpoints the database itself again');
      } catch (error) {
        // The connection is already closed: there is nothing left to checkpoint.
        this.#logger?.warn({ err: error }, 'the SQLite checkpoint thread stopped after the database closed');
      }
    });
  }

  /**
   * Starts the thread and, once it has the database open, turns the
   * connection's automatic checkpoints off. Undefined (and the connection
   * left as it was) when the thread cannot start.
   */
  static async start(options: CheckpointerOptions): Promise<SqliteCheckpointer | undefined> {
    const worker = new Worker(WORKER_URL, {
      name: 'sqlite-checkpoint',
      workerData: { file: options.file, intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS } satisfies CheckpointWorkerData,
      // A connection and a timer: a small heap.
      resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 },
    });
    // The thread never keeps the process alive: the server stops it when it closes the database.
    worker.unref();
    try {
      const [message] = (await once(worker, 'message')) as [FromCheckpointWorker];
      if (message.kind !== 'ready') throw new Error(`unexpected first message: ${message.kind}`);
    } catch (error) {
      options.logger?.warn({ err: error }, 'no SQLite checkpoint thread; the server checkpoints the database itself');
      await worker.terminate();
      return undefined;
    }
    const checkpointer = new SqliteCheckpointer(worker, options);
    options.connection.exec('pragma wal_autocheckpoint = 0');
    return checkpointer;
  }

  /** Calls `listener` after each checkpoint that found something in the log; returns the unsubscribe. */
  onCheckpoint(listener: (result: CheckpointResult) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The thread itself (tests stop it to see the connection take checkpoints back). */
  get thread(): Worker {
    return this.#worker;
  }

  /**
   * Stops the thread and closes its connection, so that the server's
   * connection, closing last, checkpoints the whole log and removes it.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#worker.threadId === -1) return; // already gone
    const exited = once(this.#worker, 'exit');
    this.#worker.postMessage({ kind: 'stop' } satisfies ToCheckpointWorker);
    const timer = setTimeout(() => void this.#worker.terminate(), 5000);
    await exited;
    clearTimeout(timer);
  }
}
