import { answeredWithin, PING_TIMEOUT_MS } from '../db/database.ts';

/** Once the last good figure is this old, the next check that reads it also starts a new one in the background. */
export const REFRESH_AFTER_MS = 1000;

/**
 * How old a good figure may be and still answer a check. Past this, a check
 * waits for a database round trip of its own. A load balancer or monitor
 * asking every 5 s or more (the usual) therefore always gets a live answer;
 * checks asked close together share one.
 */
export const USABLE_FOR_MS = 3000;

export interface SharedCheckOptions {
  refreshAfterMs?: number;
  usableForMs?: number;
  timeoutMs?: number;
  now?: () => number;
}

/**
 * A database figure for the main port's `/healthz` (the queue's count, which
 * is also its database check), shared by checks asked close together.
 *
 * A check that waits for its own round trip to PostgreSQL waits a second
 * turn of the event loop, and in a crowd of thousands of new connections
 * every turn is long: in the 10,000-question burst that second turn alone
 * put the main port's p99 at 76–85 ms (bench/RESULTS.md). Here a check
 * answers from the last good figure while it is under `usableForMs` old,
 * starting a new round trip in the background once it is `refreshAfterMs`
 * old, so that under frequent checks none waits for the database.
 *
 * Only good figures are shared over time. A failure (the database refused,
 * or gave no answer within `timeoutMs`) is given to the checks that were
 * waiting for that round trip and drops the good figure, and the next check
 * asks again: a database that answers once more is seen at once, one that is
 * down is seen at most `usableForMs` after its last good answer (a timeout's
 * length later when it does not answer at all). At most one round trip is in
 * flight.
 */
export class SharedCheck<T> {
  readonly #read: () => Promise<T>;
  readonly #refreshAfterMs: number;
  readonly #usableForMs: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  /** The last good figure and when the round trip that read it began. */
  #last: { value: T; at: number } | undefined;
  #inFlight: Promise<T> | undefined;

  constructor(read: () => Promise<T>, options: SharedCheckOptions = {}) {
    this.#read = read;
    this.#refreshAfterMs = options.refreshAfterMs ?? REFRESH_AFTER_MS;
    this.#usableForMs = options.usableForMs ?? USABLE_FOR_MS;
    this.#timeoutMs = options.timeoutMs ?? PING_TIMEOUT_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The figure, or the database's error (a timeout included). */
  get(): Promise<T> {
    const last = this.#last;
    const age = last ? this.#now() - last.at : Number.POSITIVE_INFINITY;
    if (last && age < this.#usableForMs) {
      // The background round trip's failure reaches the next check that waits for one, not this one.
      if (age >= this.#refreshAfterMs) this.#roundTrip().catch(() => {});
      return Promise.resolve(last.value);
    }
    return this.#roundTrip();
  }

  #roundTrip(): Promise<T> {
    // `finally` runs after this assignment even when the read fails at once, so no settled trip stays in flight.
    this.#inFlight ??= this.#readAndKeep().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  async #readAndKeep(): Promise<T> {
    const at = this.#now();
    try {
      const value = await answeredWithin(this.#read(), this.#timeoutMs);
      this.#last = { value, at };
      return value;
    } catch (error) {
      // A good figure read before this failure no longer answers anyone.
      this.#last = undefined;
      throw error;
    }
  }
}
