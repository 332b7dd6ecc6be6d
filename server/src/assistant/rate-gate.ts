import type { Clock } from '../clock.ts';
import { slotInterval, takeRateSlots } from '../cluster/cluster.queries.ts';
import type { Database } from '../db/database.ts';
import { TurnBatch } from '../turn-batch.ts';

/** Hands out the time of the next slot of a rate: `nowMs` is now, `intervalMs` the space between slots. */
export type SlotSource = (nowMs: number, intervalMs: number) => Promise<number>;

/** Slots kept in this process's memory: right when it is the only one (SQLite). */
export function slotsInProcess(): SlotSource {
  let nextSlot = 0;
  return async (nowMs, intervalMs) => {
    const slot = Math.max(nowMs, nextSlot);
    nextSlot = slot + intervalMs;
    return slot;
  };
}

/**
 * Slots every process shares, kept in the database: the slots asked for in
 * one turn of the event loop are taken in one atomic statement, in the
 * order asked.
 */
export function slotsInDatabase(database: Database, name: string): SlotSource {
  const batch = new TurnBatch<{ nowMs: number; intervalMs: number; slot: number }>(async (requests) => {
    // One interval for the batch, the longest asked (a rate lowered in between is kept).
    const intervalMs = Math.max(...requests.map((request) => request.intervalMs));
    const first = await takeRateSlots(database, { name, nowMs: Math.max(...requests.map((request) => request.nowMs)), intervalMs, count: requests.length });
    requests.forEach((request, index) => (request.slot = first + index * slotInterval(intervalMs)));
  });
  return async (nowMs, intervalMs) => {
    const request = { nowMs, intervalMs, slot: 0 };
    await batch.add(request);
    return request.slot;
  };
}

/** Slots shared by every process on PostgreSQL, in this process on SQLite (one process by design). */
export const sharedSlots = (database: Database, name: string): SlotSource => (database.dialect === 'postgres' ? slotsInDatabase(database, name) : slotsInProcess());

/**
 * Spaces out events to at most `perSecond()` per second (run creation,
 * `openai_max_requests_per_second`), across every process that shares the
 * slot source. Callers wait their turn; the rate is read on every call so a
 * config edit applies at once. A caller that gives up leaves its slot unused.
 */
export class RateGate {
  readonly #perSecond: () => number;
  readonly #clock: Clock;
  readonly #slots: SlotSource;

  constructor(perSecond: () => number, clock: Clock, slots: SlotSource = slotsInProcess()) {
    this.#perSecond = perSecond;
    this.#clock = clock;
    this.#slots = slots;
  }

  async wait(signal?: AbortSignal): Promise<void> {
    const rate = this.#perSecond();
    if (!(rate > 0)) return;
    const now = this.#clock.now().getTime();
    const slot = await this.#slots(now, 1000 / rate);
    signal?.throwIfAborted();
    const delay = slot - this.#clock.now().getTime();
    if (delay > 0) await this.#clock.sleep(delay, signal);
  }
}
