import { describe, expect, it } from 'vitest';
import { SharedCheck } from './shared-check.ts';

/** A database stand-in whose round trips the test answers one by one, on a clock the test moves. */
function harness() {
  const clock = { now: 0 };
  const trips: { resolve(value: number): void; reject(error: Error): void }[] = [];
  const check = new SharedCheck(
    () =>
      new Promise<number>((resolve, reject) => {
        trips.push({ resolve, reject });
      }),
    { refreshAfterMs: 1000, usableForMs: 3000, timeoutMs: 200, now: () => clock.now },
  );
  /** The first check, answered with `value`: from then on there is a good figure read at the clock's time. */
  const primed = async (value: number) => {
    const first = check.get();
    trips.at(-1)!.resolve(value);
    await first;
  };
  return { clock, trips, check, primed };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('SharedCheck (the main port /healthz database figure)', () => {
  it('makes a round trip for the first check, and one for all the checks waiting on it', async () => {
    const { trips, check } = harness();
    const first = check.get();
    const second = check.get();
    expect(trips).toHaveLength(1);
    trips[0]!.resolve(4);
    expect(await Promise.all([first, second])).toEqual([4, 4]);
  });

  it('answers from the last good figure at once while it is fresh, refreshing it in the background once it is a second old', async () => {
    const { clock, trips, check, primed } = harness();
    await primed(4);

    clock.now = 500;
    expect(await check.get()).toBe(4);
    expect(trips).toHaveLength(1);

    clock.now = 1200;
    // The round trip is under way, and the check does not wait for it.
    expect(await check.get()).toBe(4);
    expect(await check.get()).toBe(4);
    expect(trips).toHaveLength(2);
    trips[1]!.resolve(7);
    await settle();
    expect(await check.get()).toBe(7);
    expect(trips).toHaveLength(2);
  });

  it('waits for a round trip of its own once the last good figure is too old (a monitor asking every few seconds gets a live answer)', async () => {
    const { clock, trips, check, primed } = harness();
    await primed(4);

    clock.now = 3000;
    let answered: number | undefined;
    const late = check.get().then((value) => (answered = value));
    await settle();
    expect(answered).toBeUndefined();
    trips[1]!.resolve(9);
    await late;
    expect(answered).toBe(9);
  });

  it('gives a failure to the checks that waited for it, and asks again at the next check', async () => {
    const { trips, check } = harness();
    const first = check.get();
    const second = check.get();
    trips[0]!.reject(new Error('connection refused'));
    await expect(first).rejects.toThrow('connection refused');
    await expect(second).rejects.toThrow('connection refused');

    const next = check.get();
    expect(trips).toHaveLength(2);
    trips[1]!.resolve(0);
    expect(await next).toBe(0);
  });

  it('drops the good figure when the background round trip fails: the next check waits for the database', async () => {
    const { clock, trips, check, primed } = harness();
    await primed(4);

    clock.now = 1500;
    expect(await check.get()).toBe(4);
    trips[1]!.reject(new Error('connection refused'));
    await settle();

    const after = check.get();
    expect(trips).toHaveLength(3);
    trips[2]!.reject(new Error('connection refused'));
    await expect(after).rejects.toThrow('connection refused');
  });

  it('fails a round trip the database does not answer within the timeout, and is not stuck behind it', async () => {
    const { trips, check } = harness();
    await expect(check.get()).rejects.toThrow('database did not answer within 200 ms');
    expect(trips).toHaveLength(1);
    const next = check.get();
    expect(trips).toHaveLength(2);
    trips[1]!.resolve(2);
    expect(await next).toBe(2);
  });

  it('is not stuck when reading the figure throws at once: the next check asks again', async () => {
    let reads = 0;
    const check = new SharedCheck<number>(() => {
      if (++reads === 1) throw new Error('no connection');
      return Promise.resolve(5);
    });
    await expect(check.get()).rejects.toThrow('no connection');
    expect(await check.get()).toBe(5);
    expect(reads).toBe(2);
  });
});
