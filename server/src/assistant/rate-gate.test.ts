import { describe, expect, it } from 'vitest';
import { manualClock } from '../test-support/test-context.ts';
import { RateGate } from './rate-gate.ts';

describe('RateGate (openai_max_requests_per_second)', () => {
  it('spaces run creation to the configured rate, reading the rate on every call', async () => {
    const time = manualClock(new Date(0), { autoAdvance: false });
    let rate = 2;
    const gate = new RateGate(() => rate, time.clock);
    const passed: number[] = [];
    const waits = [0, 1, 2, 3].map(() => gate.wait().then(() => passed.push(time.clock.now().getTime())));
    for (let step = 0; step < 4; step++) {
      await new Promise((resolve) => setImmediate(resolve));
      time.advance(500);
    }
    await Promise.all(waits);
    // Each caller passes when the clock reaches its slot (the clock moves in 500 ms steps here).
    expect(passed).toEqual([0, 500, 1000, 1500]);

    rate = 0; // no limit
    const before = time.clock.now().getTime();
    await gate.wait();
    expect(time.clock.now().getTime()).toBe(before);
    expect(time.waiting).toBe(0);
  });

  it('stops waiting when the request is abandoned', async () => {
    const time = manualClock(new Date(0), { autoAdvance: false });
    const gate = new RateGate(() => 1, time.clock);
    await gate.wait();
    const controller = new AbortController();
    const waiting = gate.wait(controller.signal);
    controller.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
  });
});
