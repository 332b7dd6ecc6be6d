/** A deadline on a clock: its signal aborts with a TimeoutError when the time comes. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Forgets the deadline (the work finished in time). */
  clear(): void;
}

/**
 * Time as services see it: the current instant, waiting and deadlines.
 * Injected everywhere instead of `Date.now()` and `setTimeout`, so tests can
 * pin or move it and timeouts, leases and replays are tested without real
 * waiting.
 */
export interface Clock {
  now(): Date;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A deadline `ms` of this clock's time from now. */
  deadline(ms: number): Deadline;
}

export const timeoutError = (message = 'The operation timed out.') => new DOMException(message, 'TimeoutError');

/**
 * Waits `ms` of real time; an abort rejects with the signal's reason (e.g. a
 * TimeoutError), not a generic AbortError. Built on setTimeout rather than
 * `timers/promises`, whose abort makes an AbortError and its stack trace
 * that would only be thrown away: a streamed answer's keep-alive wait ends
 * that way once per answer.
 */
export function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (!signal) return new Promise((resolve) => setTimeout(resolve, ms));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const aborted = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    signal.addEventListener('abort', aborted, { once: true });
  });
}

export function realDeadline(ms: number): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(timeoutError()), ms);
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

export const systemClock: Clock = { now: () => new Date(), sleep: realSleep, deadline: realDeadline };
