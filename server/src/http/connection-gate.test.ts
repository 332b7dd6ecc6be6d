import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { gateNewConnections } from './connection-gate.ts';

/** A raw client connection: what it has received so far, and a way to wait for a whole reply. */
class Client {
  readonly socket: net.Socket;
  received = '';
  #replies = 0;
  #waiters: (() => void)[] = [];

  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => {
      this.received += chunk;
      const replies = this.received.split('HTTP/1.1 200').length - 1;
      if (replies > this.#replies) {
        this.#replies = replies;
        for (const waiter of this.#waiters.splice(0)) waiter();
      }
    });
    this.socket.on('error', () => {});
  }

  async opened(): Promise<this> {
    if (this.socket.connecting) await new Promise((resolve) => this.socket.once('connect', resolve));
    return this;
  }

  /** Sends a kept-alive GET and resolves with the milliseconds until its reply, or null if none came within `withinMs`. */
  async ask(path: string, withinMs: number): Promise<number | null> {
    const before = this.#replies;
    const started = performance.now();
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`);
    return (await this.#until(() => this.#replies > before, withinMs)) ? performance.now() - started : null;
  }

  /** Waits for the reply of a request already sent. */
  reply(withinMs: number): Promise<boolean> {
    return this.#until(() => this.#replies > 0, withinMs);
  }

  /** Whether `done()` holds, looked at as each reply comes, within `withinMs`. */
  async #until(done: () => boolean, withinMs: number): Promise<boolean> {
    const started = performance.now();
    while (!done()) {
      const left = withinMs - (performance.now() - started);
      if (left <= 0) return false;
      await Promise.race([new Promise<void>((resolve) => this.#waiters.push(resolve)), sleep(left)]);
    }
    return true;
  }
}

describe('the gate on new connections', () => {
  let server: http.Server | undefined;
  const clients: Client[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) client.socket.destroy();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
    server = undefined;
  });

  const start = async (options: { places: number; holdMs: number }) => {
    server = http.createServer((request, response) => response.end(`answered ${request.url}`));
    gateNewConnections(server, options);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    return async () => {
      const client = new Client(port);
      clients.push(client);
      return client.opened();
    };
  };

  it('leaves a new connection unread while every place is taken, and reads it when one is given back', async () => {
    const connect = await start({ places: 1, holdMs: 60_000 });
    const silent = await connect();
    // The silent connection holds the one place: the next one's question is not read.
    const waiting = await connect();
    expect(await waiting.ask('/question', 400)).toBeNull();
    // The silent one closes: its place goes to the waiting connection, whose question is read and answered.
    silent.socket.end();
    expect(await waiting.reply(3000)).toBe(true);
    expect(waiting.received).toContain('answered /question');
  });

  it('takes the place back from a connection that sends nothing for holdMs', async () => {
    const connect = await start({ places: 1, holdMs: 300 });
    await connect();
    const waiting = await connect();
    const started = performance.now();
    waiting.socket.write('GET /late HTTP/1.1\r\nHost: test\r\n\r\n');
    expect(await waiting.reply(3000)).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('gives the place back with the first request, and never holds a kept-alive connection again', async () => {
    const connect = await start({ places: 1, holdMs: 60_000 });
    // New connections asking one after another each get the place in turn and are answered at once.
    for (let index = 0; index < 5; index++) {
      const client = await connect();
      expect(await client.ask(`/one-${index}`, 2000)).not.toBeNull();
    }
    // A kept-alive connection (a load balancer's health check) is answered even while a silent newcomer holds the place.
    const keptAlive = clients[0]!;
    await connect();
    expect(await keptAlive.ask('/healthz', 2000)).not.toBeNull();
    expect(keptAlive.received).toContain('answered /healthz');
  });

  it('closes the connections still waiting when the server stops, so that it stops at once', async () => {
    const connect = await start({ places: 1, holdMs: 60_000 });
    await connect();
    const waiting = await connect();
    const closed = new Promise((resolve) => waiting.socket.once('close', resolve));
    // The HTTP server closes the connections it knows of (a stopping Fastify closes the idle ones); the waiting one
    // is not one of them yet.
    const stopped = new Promise((resolve) => server!.close(resolve));
    server!.closeAllConnections();
    await Promise.all([stopped, closed]);
    server = undefined;
  });

  it('lets a crowd in a few at a time: every one of 300 new connections is answered', async () => {
    const connect = await start({ places: 8, holdMs: 60_000 });
    const crowd = await Promise.all(Array.from({ length: 300 }, () => connect()));
    for (const [index, client] of crowd.entries()) client.socket.write(`GET /crowd-${index} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`);
    const answered = await Promise.all(crowd.map((client) => client.reply(10_000)));
    expect(answered.every(Boolean)).toBe(true);
    expect(crowd.every((client, index) => client.received.includes(`answered /crowd-${index}`))).toBe(true);
  });
});
