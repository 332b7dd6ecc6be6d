import type { Logger } from 'pino';
import type { Answer } from '../assistant/provider.ts';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database } from '../db/database.ts';
import type { Quota, UsersService } from '../users/users.service.ts';
import { AskCommandRecorder } from './ask-command-recorder.ts';
import * as queries from './ask-commands.queries.ts';
import { AskFailedError, type AskPipeline, type Slot } from './ask-pipeline.ts';
import type { LeasedWork } from './lease-keeper.ts';

/** A run is never started this close to the interaction token's end: its answer could not be delivered. */
export const TOKEN_SAFETY_MS = 2 * 60_000;
/** The longest an ask command's answer may take (its token's end comes first when sooner). */
export const ASK_COMMAND_CEILING_MS = 5 * 60_000;
/** How often the worker looks at the queue when nothing wakes it. */
const IDLE_LOOK_MS = 1000;

/** What the worker tells the front about a command it finished. */
export type Delivery =
  | { kind: 'answered'; answer: Answer; quota: Quota }
  | { kind: 'failed'; message: string }
  | { kind: 'expired' };

/** A front that tells the asker how their command ended (the Discord bot). */
export interface AskCommandFront {
  deliver(command: queries.AskCommandRow, delivery: Delivery): Promise<void>;
}

/**
 * Answers queued ask commands through the pipeline: takes the next one
 * (priority users first, one in flight per user, only priority users while
 * paused), resumes it from what it reached, bounds its attempts
 * (`ask_command_max_attempts`, 0 = no bound) and its time (the interaction
 * token's life), and hands the outcome to the front. Background work with
 * start()/stop(); `drain()` runs it to quiet for tests.
 */
export class AskWorker implements LeasedWork {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #config: ConfigService;
  readonly #logger: Logger;
  readonly #pipeline: AskPipeline;
  readonly #users: UsersService;
  /** At most this many commands at once, leaving the rest of the pipeline's places to the public chat. */
  readonly #maxConcurrent: number;
  readonly #inFlight = new Set<Promise<void>>();
  #front: AskCommandFront | null = null;
  #wake: (() => void) | null = null;
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: { database: Database; clock: Clock; config: ConfigService; logger: Logger; pipeline: AskPipeline; users: UsersService; maxConcurrent?: number }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#config = options.config;
    this.#logger = options.logger;
    this.#pipeline = options.pipeline;
    this.#users = options.users;
    this.#maxConcurrent = options.maxConcurrent ?? Math.max(1, Math.floor(options.pipeline.capacity / 2));
  }

  get #db() {
    return this.#database.db;
  }

  /** The front that delivers outcomes; without one, answers are only stored. */
  setFront(front: AskCommandFront | null): void {
    this.#front = front;
  }

  /** A command joined the queue: look now. */
  poke(): void {
    this.#wake?.();
  }

  start(): void {
    if (this.#loop) return;
    const stop = new AbortController();
    this.#stop = stop;
    this.#loop = (async () => {
      while (!stop.signal.aborted) {
        try {
          await this.pass();
        } catch (error) {
          this.#logger.error({ err: error }, 'ask worker pass failed');
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          this.#clock.sleep(IDLE_LOOK_MS, stop.signal).then(resolve, resolve);
        });
        this.#wake = null;
      }
    })();
  }

  /** Stops taking commands; those in flight go on (another process may take the queue at once). */
  async halt(): Promise<void> {
    this.#stop?.abort();
    this.#wake?.();
    await this.#loop;
    this.#loop = undefined;
  }

  /** Stops taking commands and waits for those in flight. */
  async stop(): Promise<void> {
    await this.halt();
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Runs passes until the queue is empty (or holds only what cannot run now) and nothing is in flight. */
  async drain(): Promise<void> {
    for (;;) {
      const started = await this.pass();
      if (this.#inFlight.size === 0 && started === 0) return;
      if (this.#inFlight.size > 0) await Promise.race([...this.#inFlight]);
    }
  }

  /** One look at the queue: expires what can no longer be answered in time, then starts what fits. Returns how many started. */
  async pass(): Promise<number> {
    // Most looks find the queue empty: then they only read (see anyQueued).
    if (!(await queries.anyQueued(this.#db))) return 0;
    await this.#expireQueued();
    let started = 0;
    while (this.#inFlight.size < this.#maxConcurrent) {
      const slot = this.#pipeline.tryAcquire();
      if (!slot) break;
      let command: queries.AskCommandRow | undefined;
      try {
        command = await this.#claim();
      } catch (error) {
        slot.release();
        throw error;
      }
      if (!command) {
        slot.release();
        break;
      }
      started++;
      const work = this.#process(slot, command).catch((error: unknown) => this.#logger.error({ err: error, askCommandId: command.id }, 'ask command failed unexpectedly'));
      this.#inFlight.add(work);
      void work.finally(() => {
        this.#inFlight.delete(work);
        this.poke();
      });
    }
    return started;
  }

  async #claim(): Promise<queries.AskCommandRow | undefined> {
    // The day's budget spent with "pause": nobody is answered until midnight (or a higher budget).
    if (this.#pipeline.budgetPaused()) return undefined;
    const paused = !this.#pipeline.isOpen();
    for (let tries = 0; tries < 3; tries++) {
      try {
        const now = this.#clock.now().toISOString();
        return await queries.claimNext(this.#db, this.#database.dialect, { owner: this.#pipeline.owner, until: this.#pipeline.leaseUntil(), now, priorityOnly: paused });
      } catch (error) {
        // Another worker took a command of the same user at the same moment (the one-in-flight index): look again.
        if (!isUniqueViolation(error)) throw error;
      }
    }
    return undefined;
  }

  async #process(slot: Slot, claimed: queries.AskCommandRow): Promise<void> {
    const recorder = new AskCommandRecorder({ database: this.#database, clock: this.#clock, logger: this.#logger, users: this.#users, owner: this.#pipeline.owner, command: claimed });
    const now = this.#clock.now();
    const maxAttempts = this.#config.get().ask_command_max_attempts;
    const tokenLeft = claimed.token_expires ? Date.parse(claimed.token_expires) - now.getTime() : Infinity;
    const end = async (state: 'failed' | 'expired', error: string) => {
      slot.release();
      const row = await queries.updateOwnedCommand(this.#db, claimed.id, this.#pipeline.owner, {
        state,
        error,
        finished_at: now.toISOString(),
        owner: null,
        lease_expires_at: null,
        updated_at: now.toISOString(),
      });
      if (row) await this.#deliver(row, state === 'expired' ? { kind: 'expired' } : { kind: 'failed', message: this.#config.get().discord_error_message });
    };
    if (maxAttempts > 0 && claimed.attempts > maxAttempts) return end('failed', `Gave up after ${maxAttempts} attempts`);
    if (tokenLeft <= 0 || (!claimed.run_id && tokenLeft < TOKEN_SAFETY_MS)) {
      return end('expired', 'The interaction expired before the answer could be sent');
    }

    let user;
    try {
      user = await this.#users.get(claimed.user_id);
    } catch (error) {
      slot.release();
      throw error;
    }
    const settings = this.#pipeline.runSettings(this.#users.runOverrides(user));
    try {
      const outcome = await this.#pipeline.answer(
        slot,
        {
          asker: {
            origin: 'discord',
            askCommandId: claimed.id,
            userId: user.id,
            username: user.username,
            globalName: user.global_name,
            interactionId: claimed.interaction_id,
            context: claimed.context,
            private: claimed.whisper,
          },
          prompt: claimed.prompt,
          progress: { threadId: claimed.thread_id ?? user.thread_id, messageId: claimed.message_id, runId: claimed.run_id },
          settings,
          log: { askCommandId: claimed.id },
          ceilingMs: Math.min(ASK_COMMAND_CEILING_MS, Math.max(1000, tokenLeft - 10_000)),
        },
        recorder,
      );
      await this.#deliver(recorder.stored, { kind: 'answered', answer: outcome.answer, quota: await this.#users.quota(user) });
    } catch (error) {
      if (!(error instanceof AskFailedError)) throw error;
      await this.#deliver(recorder.stored, { kind: 'failed', message: this.#config.get().discord_error_message });
    }
  }

  async #deliver(command: queries.AskCommandRow, delivery: Delivery): Promise<void> {
    if (!this.#front) return;
    try {
      await this.#front.deliver(command, delivery);
    } catch (error) {
      this.#logger.error({ err: error, askCommandId: command.id }, 'could not deliver an ask command outcome');
    }
  }

  /** Queued commands whose token ends too soon for a new run become expired (and the asker is told, while the token still works). */
  async #expireQueued(): Promise<void> {
    const now = this.#clock.now();
    const expired = await queries.expireQueued(this.#db, {
      startBefore: new Date(now.getTime() + TOKEN_SAFETY_MS).toISOString(),
      now: now.toISOString(),
    });
    for (const row of expired) await this.#deliver(row, { kind: 'expired' });
  }

  /** Keeps this process's claim on the commands it is answering. */
  renew(owner: string, until: string): Promise<number> {
    return queries.renewLeases(this.#db, owner, until);
  }

  /** Puts a stopped process's commands back on the queue; the worker resumes them from their stored run. */
  async recover(scope: { owner: string; now: Date; everyone: boolean }): Promise<number> {
    const ids = await queries.requeueAbandoned(this.#db, { owner: scope.owner, now: scope.now.toISOString(), everyone: scope.everyone });
    if (ids.length > 0) {
      this.#logger.info({ askCommandIds: ids }, 'ask commands of a stopped process are back on the queue');
      this.poke();
    }
    return ids.length;
  }
}

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  return code === '23505' || /UNIQUE constraint failed/i.test(message);
}
