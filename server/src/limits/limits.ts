import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import { countInWindows, uncountInWindow } from './limits.queries.ts';

/** A span of time requests are counted in. */
export interface TimeWindow {
  start: Date;
  end: Date;
}

/** The fixed window (aligned to multiples of `windowMs` since the epoch, e.g. clock minutes) holding `now`. */
export function fixedWindow(now: Date, windowMs: number): TimeWindow {
  const start = Math.floor(now.getTime() / windowMs) * windowMs;
  return { start: new Date(start), end: new Date(start + windowMs) };
}

/** The sliding window of `windowMs` ending at `now`: what happened after its start counts. */
export function slidingWindow(now: Date, windowMs: number): TimeWindow {
  return { start: new Date(now.getTime() - windowMs), end: now };
}

export interface WindowCount {
  /** Requests counted in the window, this one included. */
  count: number;
  max: number;
  /** True when this request went over the limit. */
  over: boolean;
  /** Seconds until the window ends (for Retry-After). */
  retryAfterSeconds: number;
  /** The identifier and window this request was counted in, to take it back (`uncount`). */
  counted: { identifier: string; windowStart: Date };
}

/**
 * Counts requests per identifier in fixed windows stored in the database
 * (public_chat_rate_limits), one atomic statement per request, so a limit
 * holds across concurrent requests and across processes.
 */
export class WindowCounter {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #windowMs: number;

  constructor(options: { database: Database; clock: Clock; windowMs: number }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#windowMs = options.windowMs;
  }

  async count(identifier: string, clientIp: string | null, max: number): Promise<WindowCount> {
    const [counted] = await this.countMany([{ identifier, max }], clientIp);
    return counted!;
  }

  /** Counts one request against each identifier's window in one statement; results in the order asked. */
  async countMany(limits: { identifier: string; max: number }[], clientIp: string | null): Promise<WindowCount[]> {
    const now = this.#clock.now();
    const window = fixedWindow(now, this.#windowMs);
    const rows = await countInWindows(this.#database, {
      windows: limits.map(({ identifier, max }) => ({ identifier, client_ip: clientIp, window_start: window.start.toISOString(), window_end: window.end.toISOString(), max_requests: max })),
      now: now.toISOString(),
    });
    const counts = new Map(rows.map((row) => [row.identifier, Number(row.request_count)]));
    const retryAfterSeconds = (window.end.getTime() - now.getTime()) / 1000;
    return limits.map(({ identifier, max }) => {
      const count = counts.get(identifier) ?? 0;
      return { count, max, over: count > max, retryAfterSeconds, counted: { identifier, windowStart: window.start } };
    });
  }

  /** Takes back a request `count` counted, in the window it was counted in (even when a new one has begun since). */
  async uncount(counted: WindowCount['counted']): Promise<void> {
    await uncountInWindow(this.#database.db, {
      identifier: counted.identifier,
      window_start: counted.windowStart.toISOString(),
      now: this.#clock.now().toISOString(),
    });
  }
}

/** A quota over a sliding window (a user's ask commands in 6 h or 24 h). */
export interface QuotaState {
  limit: number;
  /** What counts against the limit in the window. */
  used: number;
  remaining: number;
  /** When the oldest counted use leaves the window (ISO), or null when nothing is counted. */
  frees_at: string | null;
}

/** The state of a sliding-window quota, given what counts in it and the oldest counted use. */
export function quotaState(limit: number, used: number, oldestCounted: string | null, windowMs: number): QuotaState {
  return {
    limit,
    used,
    remaining: Math.max(0, limit - used),
    frees_at: oldestCounted ? new Date(Date.parse(oldestCounted) + windowMs).toISOString() : null,
  };
}
