import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import { LEASE_RENEW_MS, type AskPipeline } from './ask-pipeline.ts';

/** Rows a front answers under leases (public chat questions, ask commands). */
export interface LeasedWork {
  /** Renews the leases of the rows `owner` is answering until `until` (ISO); returns how many. */
  renew(owner: string, until: string): Promise<number>;
  /**
   * Takes over rows whose owner is gone — leases that ran out before `now`,
   * or, when `everyone`, any row not held by `owner` — and resumes or fails
   * them. Returns how many were taken.
   */
  recover(scope: { owner: string; now: Date; everyone: boolean }): Promise<number>;
}

/**
 * Keeps this process's leases alive and takes over the work of processes
 * that stopped (DESIGN §9 "Ask pipeline ownership"): every 5 s it renews the
 * leases of the rows this process answers and recovers rows whose lease ran
 * out. The first pass at start may take over everyone's unfinished rows at
 * once — right for SQLite, where this is the only process.
 */
export class LeaseKeeper {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #pipeline: AskPipeline;
  readonly #everyoneAtStart: boolean;
  readonly #works: LeasedWork[] = [];
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: { clock: Clock; logger: Logger; pipeline: AskPipeline; everyoneAtStart: boolean }) {
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#pipeline = options.pipeline;
    this.#everyoneAtStart = options.everyoneAtStart;
  }

  register(work: LeasedWork): void {
    this.#works.push(work);
  }

  start(): void {
    if (this.#loop) return;
    const stop = new AbortController();
    this.#stop = stop;
    this.#loop = (async () => {
      let first = true;
      while (!stop.signal.aborted) {
        await this.tick({ everyone: first && this.#everyoneAtStart });
        first = false;
        await this.#clock.sleep(LEASE_RENEW_MS, stop.signal).catch(() => {});
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stop?.abort();
    await this.#loop;
    this.#loop = undefined;
  }

  /** One pass: renew, then recover. Errors are logged, never thrown (the next pass tries again). */
  async tick(options: { everyone?: boolean } = {}): Promise<{ renewed: number; recovered: number }> {
    let renewed = 0;
    let recovered = 0;
    const owner = this.#pipeline.owner;
    for (const work of this.#works) {
      try {
        renewed += await work.renew(owner, this.#pipeline.leaseUntil());
        recovered += await work.recover({ owner, now: this.#clock.now(), everyone: options.everyone ?? false });
      } catch (error) {
        this.#logger.error({ err: error }, 'lease renewal or recovery failed');
      }
    }
    if (recovered > 0) this.#logger.info({ recovered }, 'took over unfinished answers of a stopped process');
    return { renewed, recovered };
  }
}
