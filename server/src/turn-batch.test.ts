import { describe, expect, it } from 'vitest';
import { TurnBatch } from './turn-batch.ts';

describe('TurnBatch', () => {
  it('writes what is asked for in one turn together, and what comes later in a write of its own', async () => {
    const writes: number[][] = [];
    const batch = new TurnBatch<number>(async (items) => {
      writes.push(items);
    });
    await Promise.all([batch.add(1), batch.add(2), batch.add(3)]);
    await batch.add(4);
    expect(writes).toEqual([[1, 2, 3], [4]]);
  });

  it('takes items asked for while a write is under way into the next one', async () => {
    const writes: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const batch = new TurnBatch<string>(async (items) => {
      writes.push(items);
      if (items.includes('first')) await held;
    });
    const first = batch.add('first');
    await new Promise((resolve) => setImmediate(resolve));
    const second = batch.add('second');
    await second;
    expect(writes).toEqual([['first'], ['second']]);
    release();
    await first;
  });

  it('rejects every caller of a failed write, and the next write goes ahead', async () => {
    let fail = true;
    const batch = new TurnBatch<number>(async () => {
      if (fail) throw new Error('the database is gone');
    });
    const results = await Promise.allSettled([batch.add(1), batch.add(2)]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(batch.add(3)).resolves.toBeUndefined();
  });
});
