import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { REPO_ROOT, SERVER_ENVIRONMENT, SERVER_NODE_OPTIONS } from '../config/env.ts';
import { testDatabaseKind } from './test-context.ts';

const ENTRY = path.join(REPO_ROOT, 'bin/concierge.mjs');

/** One JSON log line of a server process (pino). */
export interface LogLine {
  level?: number;
  msg?: string;
  url?: string;
  [key: string]: unknown;
}

/**
 * The product in a child process of its own, started the way a supervisor
 * starts it (`bin/concierge.mjs`), on a port of its own; its JSON log lines
 * are kept for the test to wait on.
 */
export class ServerProcess {
  readonly name: string;
  readonly logs: LogLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #child: ChildProcess;
  #stderr = '';
  #origin: string | undefined;
  #healthOrigin: string | undefined;

  constructor(name: string, env: Record<string, string>) {
    this.name = name;
    this.#child = spawn(process.execPath, [...SERVER_NODE_OPTIONS, ENTRY], {
      env: { ...SERVER_ENVIRONMENT, PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', WEB_DIST_DIR: path.join(REPO_ROOT, 'no-web-build-here'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.#child.on('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.#child.stdout! }).on('line', (line) => {
      try {
        this.logs.push(JSON.parse(line) as LogLine);
      } catch {
        this.logs.push({ msg: line });
      }
    });
    this.#child.stderr!.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString('utf8')));
  }

  /** Starts one and waits until it is ready. */
  static async start(name: string, env: Record<string, string>): Promise<ServerProcess> {
    const server = new ServerProcess(name, env);
    await server.ready();
    return server;
  }

  /** What the process wrote to stderr (a crash's stack trace). */
  get stderr(): string {
    return this.#stderr;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** The server's origin (http://127.0.0.1:port), once it said it is ready. */
  get origin(): string {
    if (!this.#origin) throw new Error(`${this.name} is not ready`);
    return this.#origin;
  }

  /** The health port's origin, when the process was started with HEALTH_PORT. */
  get healthOrigin(): string | undefined {
    return this.#healthOrigin;
  }

  has(message: string): boolean {
    return this.logs.some((line) => line.msg?.startsWith(message));
  }

  count(message: string): number {
    return this.logs.filter((line) => line.msg?.startsWith(message)).length;
  }

  async ready(timeoutMs = 30_000): Promise<void> {
    await this.waitFor((line) => Boolean(line.msg?.endsWith('is ready')), 'to be ready', timeoutMs);
    const ready = this.logs.find((line) => line.msg?.endsWith('is ready'))!;
    this.#origin = new URL(ready.url!).origin;
    if (typeof ready.health === 'string') this.#healthOrigin = new URL(ready.health).origin;
  }

  /** Waits for a log line matching `match`; returns it. */
  async waitFor(match: (line: LogLine) => boolean, what: string, timeoutMs = 15_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.logs.find(match);
      if (line) return line;
      if (Date.now() > deadline) throw new Error(`${this.name} did not log ${what} within ${timeoutMs} ms; stderr: ${this.#stderr.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  fetch(url: string, init: RequestInit = {}): Promise<Response> {
    return fetch(`${this.origin}${url}`, { ...init, signal: init.signal ?? AbortSignal.timeout(30_000) });
  }

  kill(signal: NodeJS.Signals): void {
    this.#child.kill(signal);
  }

  /** Kills it at once, as a crash would (SIGKILL), and waits until it is gone. */
  async crash(): Promise<void> {
    this.kill('SIGKILL');
    await this.exited;
  }

  /** Stops it gracefully (SIGTERM), or at once if it does not go within `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.kill('SIGTERM');
    const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * A new, empty PostgreSQL database on the server of `url` (TEST_DATABASE_URL),
 * for processes that cannot be given a schema of their own; `drop()` removes
 * it with any connection still open.
 */
export async function createScratchDatabase(url: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `concierge_scratch_${randomBytes(5).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  return { url: scratch.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

/**
 * A database for the server processes a test starts itself, on the engine
 * the tests run on: a new PostgreSQL database (createScratchDatabase) or a
 * SQLite file in a new temporary folder; `drop()` removes either.
 */
export async function createProcessDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (testDatabaseKind() === 'postgres') return createScratchDatabase(process.env.TEST_DATABASE_URL!);
  const dir = mkdtempSync(path.join(tmpdir(), 'concierge-processes-'));
  return { url: `sqlite:${path.join(dir, 'concierge.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** The Cookie header value of a reply's Set-Cookie headers. */
export const cookiesOf = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');
