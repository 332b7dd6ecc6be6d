import type pg from 'pg';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import { closeSession, lockKey, openSession, pingSession, queryWithin } from './pg-session.ts';

/** Background work only one process runs (the ask worker, the crawler's schedule, housekeeping, the Discord gateway). */
export interface LeaderWork {
  /** This process became the leader. */
  start(): void | Promise<void>;
  /**
   * It stopped being the leader (or is shutting down): stop starting new
   * work. Resolves soon; what is in flight may finish afterwards under its
   * own guard (leases, the crawler's lock), and the next leader starts at once.
   */
  stop(): Promise<void>;
}

/** How a process holds the leader's role. */
interface LeaderLock {
  /**
   * Takes the role when it is free and runs `hold` while it is held;
   * `lost` aborts when it is lost (the connection went). Returns false at
   * once when another process holds it.
   */
  run(hold: (lost: AbortSignal) => Promise<void>): Promise<boolean>;
  close(): void;
}

export interface LeadershipOptions {
  database: Database;
  clock: Clock;
  logger: Logger;
  /** How often a follower tries for the role (PostgreSQL). */
  retryMs?: number;
  /** How often the leader checks its connection (PostgreSQL). */
  checkMs?: number;
}

const RETRY_MS = 1000;
const CHECK_MS = 2000;
/** A leader whose connection does not answer for this long steps down (its lock may already be someone else's). */
const CHECK_TIMEOUT_MS = 5000;

/**
 * Which process runs the singleton background work (DESIGN §1). On
 * PostgreSQL the leader is the process holding an advisory lock on a
 * connection of its own: when it dies its connection drops, PostgreSQL
 * releases the lock and a follower, trying every second, takes over; a
 * leader whose connection fails steps down at once. On SQLite the one
 * process is the leader.
 *
 * Work is registered with `add()` and started in order when leadership is
 * gained, stopped in reverse order when it is lost or on `stop()`.
 */
export class Leadership {
  readonly #lock: LeaderLock;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #retryMs: number;
  readonly #works: { name: string; work: LeaderWork }[] = [];
  readonly #listeners = new Set<(leader: boolean) => void>();
  #leader = false;
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: LeadershipOptions) {
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#retryMs = options.retryMs ?? RETRY_MS;
    this.#lock =
      options.database.dialect === 'postgres'
        ? new AdvisoryLock(options.database, options.logger, options.checkMs ?? CHECK_MS)
        : { run: async (hold) => (await hold(new AbortController().signal), true), close: () => {} };
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  /** Work that runs only while this process is the leader. */
  add(name: string, work: LeaderWork): void {
    this.#works.push({ name, work });
    if (this.#leader) void this.#startWork(name, work);
  }

  /** Called with true when this process becomes the leader, false when it stops being it. */
  onChange(listener: (leader: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts trying for the role; resolves after the first try (this process is then the leader or a follower). */
  start(): Promise<void> {
    if (this.#loop) return Promise.resolve();
    const stop = new AbortController();
    this.#stop = stop;
    let firstTryDone!: () => void;
    const firstTry = new Promise<void>((resolve) => (firstTryDone = resolve));
    this.#loop = (async () => {
      while (!stop.signal.aborted) {
        try {
          const held = await this.#lock.run(async (lost) => {
            await this.#gain();
            firstTryDone();
            await untilAborted(lost, stop.signal);
            await this.#lose(lost.aborted ? `lost: ${describe(lost.reason)}` : 'stopping');
          });
          if (held && !stop.signal.aborted) this.#logger.warn('leadership lost; trying to take it again');
        } catch (error) {
          this.#logger.error({ err: error }, 'could not try for leadership; trying again');
        }
        firstTryDone();
        await this.#clock.sleep(this.#retryMs, stop.signal).catch(() => {});
      }
    })();
    return firstTry;
  }

  /** Stops the leader's work (when leader), gives up the role and stops trying. */
  async stop(): Promise<void> {
    this.#stop?.abort();
    await this.#loop;
    this.#loop = undefined;
    this.#lock.close();
  }

  async #gain(): Promise<void> {
    this.#leader = true;
    this.#logger.info({ work: this.#works.map(({ name }) => name) }, 'leadership gained: this process runs the background work');
    // Work added meanwhile is started by add() itself.
    for (const { name, work } of [...this.#works]) await this.#startWork(name, work);
    this.#notify(true);
  }

  async #lose(why: string): Promise<void> {
    this.#leader = false;
    this.#logger[why === 'stopping' ? 'info' : 'warn']({ why }, 'leadership given up: stopping the background work');
    for (const { name, work } of [...this.#works].reverse()) {
      try {
        await work.stop();
      } catch (error) {
        this.#logger.error({ err: error, work: name }, 'leader work failed to stop');
      }
    }
    this.#notify(false);
  }

  async #startWork(name: string, work: LeaderWork): Promise<void> {
    try {
      await work.start();
    } catch (error) {
      this.#logger.error({ err: error, work: name }, 'leader work failed to start');
    }
  }

  #notify(leader: boolean): void {
    for (const listener of this.#listeners) {
      try {
        listener(leader);
      } catch (error) {
        this.#logger.error({ err: error }, 'leadership listener failed');
      }
    }
  }
}

/**
 * The leader's PostgreSQL advisory lock, on a session of its own (the shape
 * of atproto ozone's `Leader`: try the lock, hold it while the work runs,
 * abort the work when the session fails). A follower keeps its session
 * between tries; a leader ends its session when it gives up the role,
 * which is what releases the lock, whatever the server last heard.
 */
class AdvisoryLock implements LeaderLock {
  readonly #database: Database;
  readonly #logger: Logger;
  readonly #checkMs: number;
  readonly #key: string;
  #session: pg.Client | undefined;

  constructor(database: Database, logger: Logger, checkMs: number) {
    this.#database = database;
    this.#logger = logger;
    this.#checkMs = checkMs;
    this.#key = lockKey(database, 'leader');
  }

  async run(hold: (lost: AbortSignal) => Promise<void>): Promise<boolean> {
    const session = (this.#session ??= await openSession(this.#database, 'concierge leader'));
    let locked: boolean;
    try {
      const { rows } = await queryWithin<{ locked: boolean }>(session, 'select pg_try_advisory_lock($1::bigint) as locked', [this.#key], CHECK_TIMEOUT_MS);
      locked = rows[0]?.locked === true;
    } catch (error) {
      this.close();
      throw error;
    }
    if (!locked) return false;

    const lost = new AbortController();
    const fail = (error: unknown) => {
      if (!lost.signal.aborted) lost.abort(error instanceof Error ? error : new Error('the leader connection ended'));
    };
    const onError = (error: Error) => fail(error);
    const onEnd = () => fail(new Error('the leader connection ended'));
    session.on('error', onError);
    session.on('end', onEnd);
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      timer = setTimeout(() => {
        pingSession(session, CHECK_TIMEOUT_MS).then(() => {
          if (!lost.signal.aborted) check();
        }, fail);
      }, this.#checkMs);
      timer.unref();
    };
    check();
    try {
      await hold(lost.signal);
    } finally {
      clearTimeout(timer);
      session.off('error', onError);
      session.off('end', onEnd);
      this.close();
    }
    return true;
  }

  close(): void {
    if (!this.#session) return;
    closeSession(this.#session);
    this.#session = undefined;
    this.#logger.debug('leader session closed');
  }
}

function untilAborted(...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal.aborted)) return resolve();
    for (const signal of signals) signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

const describe = (reason: unknown) => (reason instanceof Error ? reason.message : String(reason));
