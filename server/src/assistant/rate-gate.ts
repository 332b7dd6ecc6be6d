/**
 * Spaces out events to at most `perSecond()` per second in this process
 * (run creation, `openai_max_requests_per_second`). Callers wait their turn;
 * the rate is read on every call so a config edit applies at once.
 */
export class RateGate {
  readonly #perSecond: () => number;
  #nextSlot = 0;

  constructor(perSecond: () => number) {
    this.#perSecond = perSecond;
  }

  async wait(signal?: AbortSignal): Promise<void> {
    const rate = this.#perSecond();
    if (!(rate > 0)) return;
    const now = Date.now();
    const slot = Math.max(now, this.#nextSlot);
    this.#nextSlot = slot + 1000 / rate;
    const delay = slot - now;
    if (delay > 0) await sleep(delay, signal);
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
