import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import { FINAL_RUN_STATUSES, type RunState } from './provider.ts';
import type { SlotSource } from './rate-gate.ts';

/** Looks at a run once: its state now. */
export type RunCheck = () => Promise<RunState>;

/** A run a caller waits for. */
interface Watched {
  check: RunCheck;
  /** How often the run is looked at (the poll interval, a little less: see SOONER). */
  periodMs: number;
  /** When it should next be looked at (this clock's ms). */
  dueAt: number;
  /** A look is under way (a run has at most one). */
  checking: boolean;
  settle: (outcome: { state: RunState } | { error: unknown }) => void;
}

/**
 * A run is looked at this much sooner than its poll interval (a tenth of it,
 * at most 250 ms), so that the look that sees it finished *and* reading its
 * answer fit inside the interval.
 */
const SOONER_FRACTION = 0.1;
const SOONER_MAX_MS = 250;
/** The shortest wait between looks at one run, whatever the interval. */
const MIN_PERIOD_MS = 50;

export interface RunPollerOptions {
  clock: Clock;
  logger: Logger;
  /**
   * Status checks per second the poller may make, for all runs together
   * (`openai_max_polls_per_second`); read before every check so an edit
   * applies at once. Not a positive number: no limit.
   */
  perSecond: () => number;
  /** Where the budget's slots come from: this process, or every process sharing the database. */
  slots: SlotSource;
}

/**
 * One poller for every run this process waits on (DESIGN §2's retrieve_run,
 * where a run is not streamed): instead of a timer per run backing off to
 * `assistant_max_poll_interval` (a 60 s answer then reached the user up to
 * ~28 s late, and thousands of runs made thousands of checks a second),
 * each run is looked at once when it is added and then every
 * `assistant_poll_interval`, and the looks of all runs together spend one
 * budget of checks per second. While the runs in flight need no more than
 * the budget (runs × 1 / interval ≤ budget), every answer is seen within the
 * interval of the run finishing; beyond it, runs are looked at in the order
 * they fell due, so each waits about runs ÷ budget seconds and none is
 * starved.
 */
export class RunPoller {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #perSecond: () => number;
  readonly #slots: SlotSource;
  readonly #watched = new Set<Watched>();
  /** When this process's latest looks started (at most `rate` of them kept). */
  readonly #recent: number[] = [];
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: RunPollerOptions) {
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#perSecond = options.perSecond;
    this.#slots = options.slots;
  }

  /** Runs being waited on now. */
  get size(): number {
    return this.#watched.size;
  }

  /**
   * Looks at the run at once and then every `intervalMs` (within the
   * budget) until it reaches a final status, which it resolves with. A
   * failed look rejects (the caller decides, as with one look of its own);
   * `signal` stops waiting.
   */
  wait(check: RunCheck, intervalMs: number, signal?: AbortSignal): Promise<RunState> {
    signal?.throwIfAborted();
    return new Promise<RunState>((resolve, reject) => {
      const onAbort = () => finish({ error: signal!.reason });
      const finish = (outcome: { state: RunState } | { error: unknown }) => {
        if (!this.#watched.delete(watched)) return;
        signal?.removeEventListener('abort', onAbort);
        if ('state' in outcome) resolve(outcome.state);
        else reject(outcome.error);
      };
      const periodMs = Math.max(MIN_PERIOD_MS, intervalMs - Math.min(SOONER_MAX_MS, intervalMs * SOONER_FRACTION));
      const watched: Watched = { check, periodMs, dueAt: this.#clock.now().getTime(), checking: false, settle: finish };
      this.#watched.add(watched);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#kick();
    });
  }

  /** Wakes the loop (a run was added or a look ended), starting it when it is not running. */
  #kick(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
    this.#loop ??= this.#run().finally(() => {
      this.#loop = undefined;
      // A run added as the loop was ending.
      if (this.#watched.size > 0) this.#kick();
    });
  }

  /** The next run to look at: the one longest due, not being looked at already. */
  #next(): Watched | undefined {
    let next: Watched | undefined;
    for (const watched of this.#watched) {
      if (!watched.checking && (!next || watched.dueAt < next.dueAt)) next = watched;
    }
    return next;
  }

  async #run(): Promise<void> {
    while (this.#watched.size > 0) {
      const next = this.#next();
      const now = this.#clock.now().getTime();
      if (!next || next.dueAt > now) {
        // Nothing due: sleep until the earliest is (or, with every run being looked at, until a look ends), or until a run is added.
        const woken = new AbortController();
        const wake = new Promise<void>((resolve) => woken.signal.addEventListener('abort', () => resolve(), { once: true }));
        this.#wake = () => woken.abort();
        await (next ? this.#clock.sleep(next.dueAt - now, woken.signal).catch(() => {}) : wake);
        this.#wake = undefined;
        continue;
      }
      // Take the budget's next slot (spaced 1/rate apart, shared by every process on PostgreSQL), and never more than
      // `rate` looks from this process in any second, however late timers bunch them: then look at whichever run is most overdue.
      const rate = this.#perSecond();
      if (rate > 0) {
        const slot = await this.#slots(now, 1000 / rate).catch((error: unknown) => {
          this.#logger.warn({ err: error }, 'could not take a slot of the status-check budget; checking without it');
          return now;
        });
        const wait = Math.max(slot, this.#windowOpensAt(rate)) - this.#clock.now().getTime();
        if (wait > 0) await this.#clock.sleep(wait);
      }
      const chosen = this.#next();
      if (!chosen) continue;
      this.#look(chosen);
    }
  }

  /** When the sliding second allows another look: the look `rate` looks ago, plus a second. */
  #windowOpensAt(rate: number): number {
    const allowed = Math.max(1, Math.floor(rate));
    if (this.#recent.length > allowed) this.#recent.splice(0, this.#recent.length - allowed);
    return this.#recent.length < allowed ? 0 : this.#recent[0]! + 1000;
  }

  #look(watched: Watched): void {
    watched.checking = true;
    const startedAt = this.#clock.now().getTime();
    this.#recent.push(startedAt);
    watched.check().then(
      (state) => {
        watched.checking = false;
        if (FINAL_RUN_STATUSES.has(state.status)) return watched.settle({ state });
        watched.dueAt = startedAt + watched.periodMs;
        this.#kick();
      },
      (error: unknown) => {
        watched.checking = false;
        watched.settle({ error });
      },
    );
  }
}
