import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Where the PgBouncer binary is: PGBOUNCER_PATH, else Debian's package's. */
export const PGBOUNCER_PATH = process.env.PGBOUNCER_PATH ?? '/usr/sbin/pgbouncer';
export const havePgbouncer = (): boolean => existsSync(PGBOUNCER_PATH);

export interface PgbouncerOptions {
  /** `transaction` (each transaction on whichever server connection is free) or `session`. */
  poolMode: 'transaction' | 'session';
  /** Server connections per database and user (default_pool_size). */
  poolSize: number;
  /** ignore_startup_parameters, e.g. ['options']. */
  ignore?: string[];
  /** A statement run on each new connection to PostgreSQL (connect_query), e.g. a `set`. */
  connectQuery?: string;
}

export interface Pgbouncer {
  /** The pooler's URL for the same database, user and password as `target`'s. */
  url: string;
  /** Stops PgBouncer (its connections to PostgreSQL close with it) and removes its files. */
  stop(): Promise<void>;
}

/**
 * A real PgBouncer in front of the PostgreSQL at `target` (a postgres://
 * URL), on a free local port, trusting its clients and logging in to
 * PostgreSQL as `target` says. PgBouncer refuses to run as root: as root it
 * switches to `nobody`, so its files are made readable by everyone.
 */
export async function startPgbouncer(target: string, options: PgbouncerOptions): Promise<Pgbouncer> {
  if (!havePgbouncer()) throw new Error(`no PgBouncer at ${PGBOUNCER_PATH} (apt-get install pgbouncer, or set PGBOUNCER_PATH)`);
  const server = new URL(target);
  const user = decodeURIComponent(server.username || 'postgres');
  const database = decodeURIComponent(server.pathname.slice(1) || user);
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'concierge-pgbouncer-'));
  chmodSync(dir, 0o755);
  const password = server.password ? ` password=${decodeURIComponent(server.password)}` : '';
  const ini = [
    '[databases]',
    `${database} = host=${server.hostname} port=${server.port || 5432} user=${user}${password}${options.connectQuery ? ` connect_query='${options.connectQuery}'` : ''}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    "unix_socket_dir = ''",
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'users.txt')}`,
    `pool_mode = ${options.poolMode}`,
    `default_pool_size = ${options.poolSize}`,
    `ignore_startup_parameters = ${(options.ignore ?? []).join(',')}`,
  ].join('\n');
  for (const [name, text] of [
    ['pgbouncer.ini', `${ini}\n`],
    ['users.txt', `"${user}" ""\n`],
  ] as const) {
    writeFileSync(path.join(dir, name), text);
    chmodSync(path.join(dir, name), 0o644);
  }
  const args = [...(process.getuid?.() === 0 ? ['-u', 'nobody'] : []), path.join(dir, 'pgbouncer.ini')];
  const child = spawn(PGBOUNCER_PATH, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
    await ended(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await listening(port, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), stop };
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Resolves once the port takes connections; rejects with PgBouncer's output if it exits first or takes over 5 s. */
async function listening(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < 5000) {
    if (child.exitCode !== null) throw new Error(`PgBouncer exited (${child.exitCode}): ${output()}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`PgBouncer did not listen on ${port} within 5 s: ${output()}`);
}

async function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}
