import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { TurnPacer } from './turn-pacer.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Keeps the thread busy for `ms`, as a piece of real work would. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Runs `work` once paced (at once when the pacer has room). */
async function paced(pacer: TurnPacer, work: () => void): Promise<void> {
  const wait = pacer.pace();
  if (wait) await wait;
  work();
}

describe('TurnPacer', () => {
  it('lets the first pieces of a turn go at once and the rest a turn at a time, oldest first', async () => {
    const pacer = new TurnPacer(2);
    const done: number[] = [];
    const all = Promise.all([1, 2, 3, 4, 5].map((n) => paced(pacer, () => done.push(n))));
    expect(done).toEqual([1, 2]);
    expect(pacer.waiting).toBe(3);
    await nextTurn();
    expect(done).toEqual([1, 2, 3, 4]);
    await nextTurn();
    expect(done).toEqual([1, 2, 3, 4, 5]);
    await all;
    expect(pacer.waiting).toBe(0);
  });

  it('makes a newcomer wait behind those already waiting, even in a turn with room', async () => {
    const pacer = new TurnPacer(1);
    const done: string[] = [];
    const first = [paced(pacer, () => done.push('a')), paced(pacer, () => done.push('b')), paced(pacer, () => done.push('c'))];
    await nextTurn();
    // 'b' went in the turn just ended; 'c' is still waiting, so 'd' goes after it.
    const late = paced(pacer, () => done.push('d'));
    await Promise.all([...first, late]);
    expect(done).toEqual(['a', 'b', 'c', 'd']);
  });

  it('gives a new turn its full room once the queue has drained', async () => {
    const pacer = new TurnPacer(3);
    await Promise.all([1, 2, 3, 4].map(() => paced(pacer, () => {})));
    await nextTurn();
    await nextTurn();
    expect([pacer.pace(), pacer.pace(), pacer.pace()]).toEqual([undefined, undefined, undefined]);
    expect(pacer.pace()).toBeInstanceOf(Promise);
  });

  it('leaves a short turn alone however much starts in it, and paces it once it has run long', async () => {
    const pacer = new TurnPacer(2, { longTurnMs: 10 });
    const done: number[] = [];
    const pieces = [1, 2, 3, 4, 5].map((n) => paced(pacer, () => done.push(n)));
    expect(done).toEqual([1, 2, 3, 4, 5]);
    busy(12);
    const late = [6, 7, 8].map((n) => paced(pacer, () => done.push(n)));
    expect(done).toEqual([1, 2, 3, 4, 5]);
    await nextTurn();
    expect(done).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await Promise.all([...pieces, ...late]);
    expect(done).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('lets the event loop read a socket between the turns of a crowd of work', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    const [socket] = await accepted;
    await once(client, 'connect');
    try {
      const pacer = new TurnPacer(4);
      let piecesRun = 0;
      let piecesRunWhenRead = -1;
      socket.once('data', () => (piecesRunWhenRead = piecesRun));
      client.write('health check');
      // Forty pieces of 2 ms each, ready at once: unpaced, the read would wait for all of them (80 ms).
      await Promise.all(Array.from({ length: 40 }, () => paced(pacer, () => (busy(2), piecesRun++))));
      expect(piecesRunWhenRead).toBeGreaterThanOrEqual(0);
      expect(piecesRunWhenRead).toBeLessThanOrEqual(8);
    } finally {
      client.destroy();
      socket.destroy();
      server.close();
    }
  });

  it('refuses a turn without room', () => {
    expect(() => new TurnPacer(0)).toThrow(RangeError);
  });
});
