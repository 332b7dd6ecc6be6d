import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_UNAVAILABLE } from '../errors.ts';
import { cookiesOf, ServerProcess } from '../test-support/server-process.ts';
import { ADMIN, testDatabaseKind } from '../test-support/test-context.ts';

const run = promisify(execFile);
/** Start two processes, restart the cluster under traffic, wait for both to come back. */
const BUDGET_MS = 120_000;
/** How long the database stays down. */
const DOWN_MS = 3_000;

/** Debian's PostgreSQL programs, newest version first. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((name) => existsSync(path.join(root, name, 'bin/initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error('initdb not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)');
  return path.join(root, newest, 'bin');
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

/**
 * A PostgreSQL cluster of the test's own (initdb in a temporary folder, its
 * own port and socket), never the shared server on 5432. initdb refuses to
 * run as root, so as root it runs as the `postgres` user.
 */
class ThrowawayCluster {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'concierge-pg-'));
  port = 0;
  readonly #bin = postgresBin();
  readonly #asRoot = userInfo().uid === 0;

  async #as(program: string, args: string[]): Promise<void> {
    const command = path.join(this.#bin, program);
    if (this.#asRoot) await run('runuser', ['-u', 'postgres', '--', command, ...args], { cwd: tmpdir() });
    else await run(command, args);
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async create(): Promise<void> {
    if (this.#asRoot) chownSync(this.dir, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), Number((await run('id', ['-g', 'postgres'])).stdout.trim()));
    this.port = await freePort();
    await this.#as('initdb', ['-D', path.join(this.dir, 'data'), '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    await this.start();
  }

  start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
    return this.#as('pg_ctl', ['-D', path.join(this.dir, 'data'), '-o', options, '-l', path.join(this.dir, 'log'), '-w', 'start']);
  }

  /** A fast shutdown: open sessions are cut, as a restart by an operator or a crash of the server would. */
  stop(): Promise<void> {
    return this.#as('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    await this.stop().catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * PostgreSQL restarted under traffic (issue 18): two server processes on a
 * throwaway cluster keep getting requests while the cluster stops for a few
 * seconds and starts again. Neither process dies; once the database is back
 * both answer again (the pool reconnects), and a pause made on one is obeyed
 * by the other at once (its LISTEN session subscribed again).
 */
describe.runIf(testDatabaseKind() === 'postgres')('PostgreSQL restarted under traffic', () => {
  const cluster = new ThrowawayCluster();
  let processes: ServerProcess[] = [];

  beforeAll(async () => {
    await cluster.create();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((server) => server.stop()));
    await cluster.destroy();
  }, 60_000);

  it(
    'keeps both processes up, and they answer and hear each other again once the database is back',
    async () => {
      const env = { DATABASE_URL: cluster.url, CONVENTION_TIMEZONE: 'UTC' };
      const a = new ServerProcess('A', env);
      const b = new ServerProcess('B', env);
      processes = [a, b];
      await Promise.all([a.ready(), b.ready()]);

      const post = (server: ServerProcess, url: string, body: unknown, cookie = '') =>
        server.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify(body) });
      expect((await post(a, '/setup', { ...ADMIN, confirm_password: ADMIN.password })).status).toBe(200);
      const admin = cookiesOf(await post(a, '/login', ADMIN));
      const visitor = cookiesOf(await post(b, '/public/chat/turnstile/verify', { token: '' }));
      const paused = async (server: ServerProcess) => ((await (await server.fetch('/healthz')).json()) as { paused: boolean }).paused;

      // Traffic on both processes the whole time: an operator's list and a visitor's history.
      const statuses: number[] = [];
      const unavailable = new Set<string>();
      let traffic = true;
      const load = (async () => {
        while (traffic) {
          for (const server of [a, b]) {
            for (const [url, cookie] of [['/api/status', admin], ['/public/chat/history', visitor]] as const) {
              const response = await server.fetch(url, { headers: { cookie }, signal: AbortSignal.timeout(15_000) }).catch(() => null);
              statuses.push(response?.status ?? 0);
              if (response?.status === 503) unavailable.add(((await response.json()) as { error: string }).error);
            }
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 500));

      const stoppedAt = Date.now();
      await cluster.stop();
      await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
      await cluster.start();
      const startedAt = Date.now();

      // Both answer again: their pools open new connections.
      const back = async (server: ServerProcess) => {
        for (;;) {
          const response = await server.fetch('/api/status', { headers: { cookie: admin } }).catch(() => null);
          if (response?.status === 200) return Date.now() - startedAt;
          if (Date.now() - startedAt > 30_000) {
            const exit = await Promise.race([server.exited, new Promise((resolve) => setTimeout(() => resolve(null), 10))]);
            throw new Error(`${server.name} did not answer within 30 s of the database's return (last: ${response?.status}; exit ${JSON.stringify(exit)}; ${server.stderr.slice(-1500)}; last log lines ${JSON.stringify(server.logs.slice(-5))})`);
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      };
      const backInMs = Math.max(...(await Promise.all([back(a), back(b)])));
      traffic = false;
      await load;

      // Each process listens to the other again: a pause made on A is obeyed by B's visitors at once, and the resume too.
      await b.waitFor((line) => line.msg === 'listening to the other processes again', 'listening again', 20_000);
      await a.waitFor((line) => line.msg === 'listening to the other processes again', 'listening again', 20_000);
      expect((await post(a, '/api/pause', {}, admin)).status).toBe(200);
      const pausedAt = Date.now();
      for (;;) {
        if (await paused(b)) break;
        if (Date.now() - pausedAt > 5_000) throw new Error('B did not hear the pause made on A within 5 s of it');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const heardInMs = Date.now() - pausedAt;
      const refused = await post(b, '/public/chat/send', { message: 'Is the chat open?' }, visitor);
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ success: false, code: 'paused' });
      expect((await post(b, '/api/resume', {}, admin)).status).toBe(200);
      for (const started = Date.now(); await paused(a); ) {
        if (Date.now() - started > 5_000) throw new Error('A did not hear the resume made on B within 5 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      // Nobody died, and while the database was down the processes refused rather than hung or crashed.
      for (const server of [a, b]) expect(server.has('the server stopped') || server.logs.some((line) => line.level === 60)).toBe(false);
      expect(await Promise.race([a.exited.then(() => 'exited'), b.exited.then(() => 'exited'), new Promise((resolve) => setTimeout(() => resolve('running'), 100))])).toBe('running');
      const during = statuses.filter((status) => status !== 200);
      // While it was down: 503 with the database's clear text (never a 500), or a request still waiting when the wait ended.
      expect(during.every((status) => status === 503 || status === 0), `statuses while down: ${[...new Set(during)].join(', ')}`).toBe(true);
      expect(during.length, 'requests met the outage').toBeGreaterThan(0);
      expect([...unavailable]).toEqual([DATABASE_UNAVAILABLE]);
      console.log(
        `PostgreSQL restart: down ${((startedAt - stoppedAt) / 1000).toFixed(1)} s; both processes answering ${(backInMs / 1000).toFixed(1)} s after its return; ` +
          `a pause heard across processes in ${heardInMs} ms; ${statuses.length} requests under way, ${during.length} refused while it was down (${[...new Set(during)].join(', ') || 'none'})`,
      );

      // An outsider's check that the cluster the processes use is the throwaway one.
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      const { rows } = await client.query<{ count: string }>("select count(*) from pg_stat_activity where datname = 'postgres' and backend_type = 'client backend'");
      await client.end();
      expect(Number(rows[0]!.count)).toBeGreaterThan(1);
    },
    BUDGET_MS,
  );
});
