import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../server.ts';
import { freshDatabase, type FreshDatabase } from '../test-support/test-context.ts';
import { HealthPort, type HealthProbe } from './health-port.ts';

interface Probe {
  status: number;
  body: string;
  ms: number;
}

/**
 * Asks `urls` from another process while this thread (the server's event
 * loop) is blocked for as long as that process runs: what a load balancer
 * sees while a crowd keeps the main thread busy. `delayMs` waits first.
 */
function askWhileBlocked(urls: string[], delayMs = 0): Probe[] {
  const script = `
    await new Promise((resolve) => setTimeout(resolve, ${delayMs}));
    const results = [];
    for (const url of ${JSON.stringify(urls)}) {
      const started = performance.now();
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(1500) });
        results.push({ status: response.status, body: await response.text(), ms: performance.now() - started });
      } catch (error) {
        results.push({ status: 0, body: String(error.name), ms: performance.now() - started });
      }
    }
    console.log(JSON.stringify(results));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  if (child.status !== 0) throw new Error(`the probe failed: ${child.stderr}`);
  return JSON.parse(child.stdout) as Probe[];
}

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('the health port (HEALTH_PORT)', () => {
  let server: RunningServer | undefined;
  let database: FreshDatabase | undefined;
  let port: HealthPort | undefined;

  afterEach(async () => {
    await port?.stop();
    if (server && database) {
      await server.app.close();
      await database.dispose(server.deps);
    }
    server = database = port = undefined;
  });

  it('answers the health record in milliseconds while the main port cannot answer at all', async () => {
    database = freshDatabase();
    server = await startServer(
      {
        PORT: '0',
        HEALTH_PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: database.url,
        LOG_LEVEL: 'silent',
        WEB_DIST_DIR: path.join(tmpdir(), 'concierge-no-web-build'),
      },
      { databaseSchema: database.schema, runCrawler: false },
    );
    const healthz = `${server.healthUrl!}/healthz`;
    const main = await fetch(`${server.url}/healthz`);
    const own = await fetch(healthz);
    expect(own.status).toBe(200);
    expect(own.headers.get('cache-control')).toBe('no-store');
    expect(await own.json()).toEqual(await main.json());

    // An operator's pause shows within a beat.
    await server.deps.config.update({ paused: true });
    await until('the pause on the health port', async () => ((await (await fetch(healthz)).json()) as { paused: boolean }).paused);

    // This thread is now blocked (as a crowd blocks it): the main port's /healthz times out, the health port answers.
    const [onMainPort, onHealthPort] = askWhileBlocked([`${server.url}/healthz`, healthz]);
    expect(onMainPort!.status).toBe(0);
    expect(onHealthPort!.status).toBe(200);
    expect(JSON.parse(onHealthPort!.body)).toEqual({ paused: true, queue_size: 0, discord_gateway_connected: false });
    expect(onHealthPort!.ms).toBeLessThan(500);
  });

  describe('with a probe of its own', () => {
    const probe = (overrides: Partial<HealthProbe> = {}): HealthProbe => ({
      ping: async () => {},
      paused: () => false,
      queueSize: async () => 3,
      discordGatewayConnected: () => true,
      ...overrides,
    });
    const start = async (given: HealthProbe, stallLimitMs = 15_000) => {
      port = await HealthPort.start({ host: '127.0.0.1', port: 0, probe: given, logger: pino({ level: 'silent' }), stallLimitMs, beatMs: 100 });
      return `http://127.0.0.1:${port.port}`;
    };

    it('fails while the database does not answer its ping, and recovers when it does', async () => {
      let down = false;
      const url = await start(probe({ ping: async () => (down ? Promise.reject(new Error('connection refused')) : undefined) }));
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ paused: false, queue_size: 3, discord_gateway_connected: true });
      down = true;
      await until('the 503', async () => (await fetch(`${url}/healthz`)).status === 503);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ error: 'Database unreachable', code: 'database_unreachable' });
      down = false;
      await until('the 200', async () => (await fetch(`${url}/healthz`)).status === 200);
    });

    it('keeps answering 200 through one failed ping (a busy event loop times its ping out), not through two in a row', async () => {
      let failures = 0;
      let holding: Promise<void> | null = null;
      let release = () => {};
      let held = false;
      const url = await start(
        probe({
          ping: async () => {
            if (failures > 0) {
              failures--;
              throw new Error('no answer to the ping in 2 s');
            }
            if (holding) {
              held = true;
              await holding;
            }
          },
        }),
      );
      // One ping fails, and the next one is still on its way: the check answers as before.
      holding = new Promise((resolve) => (release = () => resolve()));
      failures = 1;
      await until('the ping after the failed one', async () => held);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      holding = null;
      release();
      // Two in a row: the database is down.
      failures = 2;
      await until('the 503', async () => (await fetch(`${url}/healthz`)).status === 503);
    });

    it('fails once the main thread has been silent longer than the stall limit', async () => {
      const url = await start(probe(), 1000);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const [stalled] = askWhileBlocked([`${url}/healthz`], 1600);
      expect(stalled!.status).toBe(503);
      expect(JSON.parse(stalled!.body)).toMatchObject({ code: 'event_loop_stalled' });
      // The loop turns again: healthy within a beat.
      await until('the 200', async () => (await fetch(`${url}/healthz`)).status === 200);
    });

    it('fails from the moment the process begins to shut down', async () => {
      const url = await start(probe());
      port!.draining();
      await until('the 503', async () => (await fetch(`${url}/healthz`)).status === 503);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ error: 'Shutting down', code: 'shutting_down' });
    });

    it('starts its thread again on the same port when it dies', async () => {
      const url = await start(probe());
      const first = port!.thread;
      await first.terminate();
      await until('the thread to answer again', async () => (await fetch(`${url}/healthz`).catch(() => null))?.status === 200, 10_000);
      expect(port!.thread).not.toBe(first);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ paused: false, queue_size: 3, discord_gateway_connected: true });
    });

    it('answers HEAD, and 404 or 405 for anything else', async () => {
      const url = await start(probe());
      const head = await fetch(`${url}/healthz`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
      expect((await fetch(`${url}/healthz?verbose=1`)).status).toBe(200);
      expect((await fetch(`${url}/`)).status).toBe(404);
      const post = await fetch(`${url}/healthz`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
    });

    it('says why when its port is taken', async () => {
      const url = await start(probe());
      const taken = Number(new URL(url).port);
      await expect(HealthPort.start({ host: '127.0.0.1', port: taken, probe: probe(), logger: pino({ level: 'silent' }) })).rejects.toThrow(
        new RegExp(`HEALTH_PORT: cannot listen on 127.0.0.1:${taken}: .*EADDRINUSE`),
      );
    });
  });
});
