import { setTimeout as delay } from 'node:timers/promises';

/**
 * Time as services see it: the current instant and waiting. Injected
 * everywhere instead of `Date.now()` and `setTimeout`, so tests can pin or
 * move it and timeouts, leases and replays are tested without real waiting.
 */
export interface Clock {
  now(): Date;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Waits `ms` of real time; an abort rejects with the signal's reason (e.g. a TimeoutError), not a generic AbortError. */
export async function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  try {
    await delay(ms, undefined, { signal });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

export const systemClock: Clock = { now: () => new Date(), sleep: realSleep };
