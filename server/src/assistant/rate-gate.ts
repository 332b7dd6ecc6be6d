import type { Clock } from '../clock.ts';

/**
 * Spaces out events to at most `perSecond()` per second in this process
 * (run creation, `openai_max_requests_per_second`). Callers wait their turn;
 * the rate is read on every call so a config edit applies at once.
 */
export class RateGate {
  readonly #perSecond: () => number;
  readonly #clock: Clock;
  #nextSlot = 0;

  constructor(perSecond: () => number, clock: Clock) {
    this.#perSecond = perSecond;
    this.#clock = clock;
  }

  async wait(signal?: AbortSignal): Promise<void> {
    const rate = this.#perSecond();
    if (!(rate > 0)) return;
    const now = this.#clock.now().getTime();
    const slot = Math.max(now, this.#nextSlot);
    this.#nextSlot = slot + 1000 / rate;
    const delay = slot - now;
    if (delay > 0) await this.#clock.sleep(delay, signal);
  }
}
