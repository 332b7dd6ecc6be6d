import { on, once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Level, Logger } from 'pino';
import type { Database } from './database.ts';

/** An operation the query thread can run: named, on a Database, with arguments and a result that cross threads (structured clone). */
type Operation = (database: Database, args: never) => Promise<unknown>;

/**
 * How the query thread runs several calls of one operation that reach it
 * together (one turn of the server's event loop: at the peak, a score of
 * answers end in the same turn) as one statement rather than a round trip
 * each: on PostgreSQL, each statement's round trip and commit cost the
 * server and the database more than the rows it writes.
 */
export interface OperationBatch<A, R> {
  /** The engines the batch is for; the others run each call alone. */
  dialects: readonly Database['dialect'][];
  /**
   * Calls that share a batch have the same shape (the batched statement's
   * columns, say); calls whose shape is undefined run alone.
   */
  shape?: (args: A) => string | undefined;
  /**
   * What a call writes that no other call of its batch may (its question's
   * row, its session's): a call whose key an earlier call has goes to
   * another batch, so that one statement never writes a row twice.
   */
  keys?: (args: A) => readonly string[];
  /**
   * Runs the calls (two or more) and resolves with their results, in their
   * order. All or nothing: it must throw only when it wrote nothing (one
   * statement, or one transaction), for then each call runs alone, so that
   * an error is its own call's.
   */
  run: (database: Database, calls: A[]) => Promise<R[]>;
}

const operations = new Map<string, Operation>();
const batches = new Map<string, OperationBatch<never, unknown>>();

/**
 * Declares one of the hot path's database operations, under a name the query
 * thread knows it by. The function returned runs it on the database's query
 * thread when it has one that knows the name (the server's database, a
 * SQLite file or PostgreSQL), and where it is called otherwise (an
 * in-memory database, the command-line tools, a database opened without
 * one, or a thread that stopped). Either way
 * it resolves once what it wrote is committed.
 *
 * An operation takes the Database, never an open transaction: it runs whole
 * on the thread's own connection, its transactions included (one message
 * there and one back, not one per statement). Its arguments and its result
 * must survive a structured clone (plain objects, arrays, strings, numbers,
 * booleans, null), and it must depend on nothing but them and the database:
 * the thread has no clock, configuration or logger of the server's.
 */
export function onQueryThread<A, R>(
  name: string,
  run: (database: Database, args: A) => Promise<R>,
  options: {
    /**
     * The operation is called as a turn of the event loop ends, with the
     * turn's batch (a TurnBatch's write, the call logs' flush): it is posted
     * at once, with whatever else waits, rather than at the end of the next turn.
     */
    atTurnEnd?: boolean;
    /** Several calls that reach the thread together run as one (OperationBatch). */
    batch?: OperationBatch<A, R>;
  } = {},
): (database: Database, args: A) => Promise<R> {
  if (operations.has(name)) throw new Error(`two query-thread operations are named ${name}`);
  operations.set(name, run as Operation);
  if (options.batch) batches.set(name, options.batch as OperationBatch<never, unknown>);
  const atOnce = options.atTurnEnd ?? false;
  return (database, args) => {
    const thread = database.queryThread;
    return thread?.runs(name) ? (thread.call(name, args, atOnce) as Promise<R>) : run(database, args);
  };
}

/** The operations declared so far in this thread (the query thread lists its own when it is ready). */
export const queryThreadOperations = (): ReadonlyMap<string, Operation> => operations;

/** How each operation that has one runs its calls together (the query thread's own declarations). */
export const queryThreadBatches = (): ReadonlyMap<string, OperationBatch<never, unknown>> => batches;

/**
 * The calls of one operation that reached the thread together, as the
 * batches they run in (OperationBatch): by shape, then so that no key
 * repeats within a batch (the first batch with room takes a call). Calls
 * without a shape, and batches of one, run alone.
 */
export function batchCalls<C extends { args: unknown }>(calls: readonly C[], batch: Pick<OperationBatch<never, unknown>, 'shape' | 'keys'>): { batches: C[][]; alone: C[] } {
  const groups: { shape: string; calls: C[]; keys: Set<string> }[] = [];
  const alone: C[] = [];
  for (const call of calls) {
    const args = call.args as never;
    const shape = batch.shape ? batch.shape(args) : '';
    if (shape === undefined) {
      alone.push(call);
      continue;
    }
    const keys = batch.keys?.(args) ?? [];
    let group = groups.find((candidate) => candidate.shape === shape && keys.every((key) => !candidate.keys.has(key)));
    if (!group) groups.push((group = { shape, calls: [], keys: new Set() }));
    group.calls.push(call);
    for (const key of keys) group.keys.add(key);
  }
  const batched = groups.filter((group) => group.calls.length > 1).map((group) => group.calls);
  for (const group of groups) if (group.calls.length === 1) alone.push(group.calls[0]!);
  return { batches: batched, alone };
}

export interface QueryThreadData {
  /** The database's URL (`sqlite:<file>` or `postgres://…`). */
  url: string;
  /** PostgreSQL: the schema and the pool's size, as the server's own pool has them. */
  schema?: string;
  poolSize?: number;
  /** SQLite: leave the write-ahead log to SQLite's automatic checkpoints (false: another thread checkpoints it). */
  autocheckpoint: boolean;
}

/** One call of an operation, and its answer. */
export interface QueryCall {
  id: number;
  name: string;
  args: unknown;
}
export type QueryAnswer = { id: number; result: unknown; error?: undefined } | { id: number; error: ThreadError };

/** The calls of one turn of the server's event loop go in one message, and the answers of one turn of the thread's come back in one. */
export type ToQueryThread = { kind: 'calls'; calls: QueryCall[] } | { kind: 'stop' };

/** An error as it crosses threads: its message, and the fields callers read (node:sqlite's code, errcode and errstr; pg's code). */
export interface ThreadError {
  name: string;
  message: string;
  stack?: string;
  code?: unknown;
  errcode?: unknown;
  errstr?: unknown;
}

export type FromQueryThread =
  | { kind: 'ready'; operations: string[] }
  | { kind: 'failed'; error: ThreadError }
  | { kind: 'answers'; answers: QueryAnswer[] }
  /** One line the thread logged (pino's JSON), for the server's logger to write. */
  | { kind: 'log'; line: string };

export function toThreadError(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const { name, message, stack } = error;
  const { code, errcode, errstr } = error as Error & { code?: unknown; errcode?: unknown; errstr?: unknown };
  return { name, message, stack, code, errcode, errstr };
}

function fromThreadError(thrown: ThreadError): Error {
  const error = new Error(thrown.message) as Error & Record<string, unknown>;
  error.name = thrown.name;
  if (thrown.stack) error.stack = thrown.stack;
  for (const key of ['code', 'errcode', 'errstr'] as const) if (thrown[key] !== undefined) error[key] = thrown[key];
  return error;
}

/**
 * Writes a line the thread logged through the server's logger, at its level
 * (the server's logger filters it, as its level may change at run time).
 */
function writeThreadLog(logger: Logger, line: string): void {
  const { level, msg, ...fields } = JSON.parse(line) as { level: number; msg?: string };
  logger[(logger.levels.labels[level] ?? 'error') as Level](fields, msg);
}

const WORKER_URL = new URL('./query-thread-worker.ts', import.meta.url);

/**
 * The hot path's database work on a thread of its own. On SQLite a
 * statement runs on the thread that calls it, so at the peak the server's
 * event loop spends about a third of an answer's time inside SQLite
 * (bench/RESULTS.md). The operations declared with onQueryThread run here
 * instead, each whole (a transaction of several statements too) on this
 * thread's connection to the same file, and the event loop only posts them
 * and reads their results. Everything else keeps the server's connection.
 *
 * The two connections share the file as two processes would: WAL lets
 * either read while the other writes, and a write waits for the other's to
 * commit (within the busy timeout). Writes on this thread share commits as
 * the server's connection's do (NodeSqliteDriver): those of one turn of its
 * event loop, which takes every message waiting, commit together.
 *
 * On PostgreSQL the thread has a pool of its own (as large as the
 * server's), and takes the driver's and Kysely's work for each statement
 * off the event loop.
 *
 * When the thread stops (it should not), the calls waiting on it fail and
 * the operations run on the server's connection from then on.
 */
export class QueryThread {
  readonly #worker: Worker;
  readonly #logger: Logger | undefined;
  readonly #known: ReadonlySet<string>;
  readonly #pending = new Map<number, PromiseWithResolvers<unknown>>();
  #nextId = 0;
  /** Calls made in this turn of the event loop, not yet posted. */
  #outbox: QueryCall[] = [];
  #running = true;
  #stopping: Promise<void> | null = null;

  private constructor(worker: Worker, known: string[], logger: Logger | undefined) {
    this.#worker = worker;
    this.#known = new Set(known);
    this.#logger = logger;
    worker.on('message', (message: FromQueryThread) => {
      if (message.kind !== 'answers') return;
      for (const answer of message.answers) {
        const pending = this.#pending.get(answer.id);
        if (!pending) continue;
        this.#pending.delete(answer.id);
        if (answer.error) pending.reject(fromThreadError(answer.error));
        else pending.resolve(answer.result);
      }
      if (this.#pending.size === 0) this.#worker.unref();
    });
    worker.on('error', (error) => this.#logger?.error({ err: error }, 'the database query thread failed'));
    worker.once('exit', (code) => {
      this.#running = false;
      if (!this.#stopping) this.#logger?.error({ code }, "the database query thread stopped; the server's connection runs its work from now on");
      const lost = [...this.#pending.values()];
      this.#pending.clear();
      for (const pending of lost) pending.reject(new Error('the database query thread stopped before it answered'));
    });
  }

  /**
   * Starts the thread and waits until it has the database open. Undefined
   * (the operations then run on the server's connection) when it cannot start.
   */
  static async start(options: QueryThreadData & { logger?: Logger }): Promise<QueryThread | undefined> {
    const { url, schema, poolSize, autocheckpoint } = options;
    const worker = new Worker(WORKER_URL, {
      name: 'query-thread',
      workerData: { url, schema, poolSize, autocheckpoint } satisfies QueryThreadData,
      // Short-lived rows and messages: a small young generation (3 × 8 MB; the server's is 16 MB semi-spaces, see SERVER_NODE_OPTIONS).
      resourceLimits: { maxYoungGenerationSizeMb: 24 },
    });
    // Only calls waiting for an answer keep the process alive (#track).
    worker.unref();
    const logger = options.logger?.child({ thread: 'query' });
    worker.on('message', (message: FromQueryThread) => {
      if (message.kind === 'log' && logger) writeThreadLog(logger, message.line);
    });
    try {
      // What the thread logs while it opens the database (its pool's settings, say) comes first.
      let message: FromQueryThread | undefined;
      for await (const [next] of on(worker, 'message', { close: ['exit'] }) as AsyncIterable<[FromQueryThread]>) {
        if (next.kind === 'log') continue;
        message = next;
        break;
      }
      if (!message) throw new Error('the thread stopped before it had the database open');
      if (message.kind === 'failed') throw fromThreadError(message.error);
      if (message.kind !== 'ready') throw new Error(`unexpected first message: ${message.kind}`);
      const missing = [...operations.keys()].filter((name) => !message.operations.includes(name));
      // An operation the thread does not know (its module is not among the thread's imports) runs on the server's connection.
      if (missing.length > 0) options.logger?.warn({ missing }, 'the database query thread does not know some operations; they run on the event loop');
      return new QueryThread(worker, message.operations, options.logger);
    } catch (error) {
      options.logger?.warn({ err: error }, "no database query thread; the server's connection runs its work");
      await worker.terminate();
      return undefined;
    }
  }

  /** The thread is running and knows the operation. */
  runs(name: string): boolean {
    return this.#running && this.#stopping === null && this.#known.has(name);
  }

  /**
   * Runs a declared operation on the thread; resolves with its result once
   * it has committed. The call is posted at the end of the turn, with the
   * turn's other calls (a message costs the event loop more than its
   * contents), or with `atOnce` now, with those made so far: a call made as
   * a turn ends would otherwise wait for the next turn's end.
   */
  call(name: string, args: unknown, atOnce = false): Promise<unknown> {
    const id = ++this.#nextId;
    const pending = Promise.withResolvers<unknown>();
    if (this.#pending.size === 0) this.#worker.ref();
    this.#pending.set(id, pending);
    this.#outbox.push({ id, name, args });
    if (atOnce) this.#post();
    else if (this.#outbox.length === 1) setImmediate(this.#post);
    return pending.promise;
  }

  readonly #post = () => {
    const calls = this.#outbox;
    if (calls.length === 0) return;
    this.#outbox = [];
    try {
      this.#worker.postMessage({ kind: 'calls', calls } satisfies ToQueryThread);
    } catch (error) {
      // Arguments that cannot be cloned (a declared operation called with a function, say): those calls fail, the rest go again.
      for (const call of calls) {
        try {
          this.#worker.postMessage({ kind: 'calls', calls: [call] } satisfies ToQueryThread);
        } catch {
          const pending = this.#pending.get(call.id);
          this.#pending.delete(call.id);
          pending?.reject(error);
        }
      }
      if (this.#pending.size === 0) this.#worker.unref();
    }
  };

  /** The thread itself (tests stop it to see the work go back to the event loop). */
  get thread(): Worker {
    return this.#worker;
  }

  /**
   * Lets the calls already made finish, then closes the thread's connection
   * and ends the thread. New calls run on the server's connection meanwhile.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      if (!this.#running) return;
      const exited = once(this.#worker, 'exit');
      // The calls of this turn go first: the thread answers every call it got before the stop.
      this.#post();
      this.#worker.postMessage({ kind: 'stop' } satisfies ToQueryThread);
      const timer = setTimeout(() => void this.#worker.terminate(), 10_000);
      await exited;
      clearTimeout(timer);
    })();
    return this.#stopping;
  }
}
