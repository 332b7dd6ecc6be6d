import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { realDeadline, realSleep } from './clock.ts';

describe('realSleep', () => {
  it('waits the time asked for', async () => {
    const started = performance.now();
    await realSleep(30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
  });

  it("ends early with the signal's own reason when it aborts, and leaves no listener behind either way", async () => {
    const deadline = realDeadline(20);
    const started = performance.now();
    const error = await realSleep(10_000, deadline.signal).catch((caught: unknown) => caught);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(error).toBe(deadline.signal.reason);
    expect(error).toMatchObject({ name: 'TimeoutError' });
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0);

    const kept = new AbortController();
    await realSleep(5, kept.signal);
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);
  });

  it('refuses at once with a signal that has already aborted', async () => {
    const reason = new Error('stopped');
    await expect(realSleep(10_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });
});
