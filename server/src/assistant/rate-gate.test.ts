import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateGate } from './rate-gate.ts';

describe('RateGate (openai_max_requests_per_second)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('spaces run creation to the configured rate, reading the rate on every call', async () => {
    let rate = 2;
    const gate = new RateGate(() => rate);
    const passed: number[] = [];
    const waits = [0, 1, 2, 3].map(() => gate.wait().then(() => passed.push(Date.now())));
    await vi.advanceTimersByTimeAsync(2000);
    await Promise.all(waits);
    expect(passed).toEqual([0, 500, 1000, 1500]);

    rate = 0; // no limit
    const before = Date.now();
    await gate.wait();
    expect(Date.now()).toBe(before);
  });

  it('stops waiting when the request is abandoned', async () => {
    const gate = new RateGate(() => 1);
    await gate.wait();
    const controller = new AbortController();
    const waiting = gate.wait(controller.signal);
    controller.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
  });
});
