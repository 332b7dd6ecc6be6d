import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { pgApplicationName, type Database } from '../db/database.ts';

/**
 * A PostgreSQL connection of its own, outside the pool, for what lives in a
 * session: the leader's advisory lock and the LISTEN of cross-process
 * events. Both sides notice a dead peer within seconds rather than hours:
 * the client with TCP keep-alives, the server with its own (so a leader
 * whose machine vanished frees its lock after about 25 s; a killed process
 * frees it at once, its socket closed by the kernel).
 */
export async function openSession(database: Database, applicationName: string): Promise<pg.Client> {
  const target = database.sharedAs;
  if (database.dialect !== 'postgres' || !target) throw new Error('a PostgreSQL session needs a PostgreSQL database');
  const client = new pg.Client({
    connectionString: target.url,
    application_name: pgApplicationName(applicationName, target.schema),
    keepAlive: true,
    keepAliveInitialDelayMillis: 5000,
    connectionTimeoutMillis: 5000,
    options: [
      target.schema ? `-c search_path=${target.schema}` : '',
      '-c timezone=UTC',
      '-c tcp_keepalives_idle=10',
      '-c tcp_keepalives_interval=5',
      '-c tcp_keepalives_count=3',
    ]
      .join(' ')
      .trim(),
  });
  // A connection error is also reported by the next query; without a listener it would end the process.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    closeSession(client);
    throw error;
  }
  return client;
}

/** Resolves when the session answers a trivial query within `timeoutMs`, rejects otherwise. */
export async function pingSession(client: pg.Client, timeoutMs: number): Promise<void> {
  await queryWithin(client, 'select 1', [], timeoutMs);
}

/**
 * A query on a session that must answer within `timeoutMs`: a connection
 * whose peer vanished would otherwise wait for the operating system's
 * keep-alives (minutes).
 */
export async function queryWithin<R extends pg.QueryResultRow>(client: pg.Client, text: string, values: unknown[], timeoutMs: number): Promise<pg.QueryResult<R>> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      client.query<R>(text, values),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`PostgreSQL did not answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ends a session without waiting on a peer that may be gone (which is what releases its session locks). */
export function closeSession(client: pg.Client): void {
  const socket = (client as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection?.stream;
  client.end().catch(() => {});
  // end() waits for the server's goodbye; a dead server never sends one.
  setTimeout(() => socket?.destroy?.(), 1000).unref();
}

/**
 * The advisory lock key of `name` in this database's schema. Advisory locks
 * are per database, not per schema, so two installations (or two test
 * suites) sharing a database each get their own keys.
 */
export function lockKey(database: Database, name: string): string {
  const scope = database.sharedAs?.schema ?? 'public';
  const digest = createHash('sha256').update(`con-concierge:${scope}:${name}`).digest();
  return BigInt.asIntN(64, digest.readBigUInt64BE(0)).toString();
}

export type LockedRun<T> = { ran: false } | { ran: true; result: T };

/**
 * Runs `fn` only if no other process is running the work named `name`
 * (PostgreSQL: a session advisory lock on a pool connection held for the
 * run, released at its end or when the process dies). SQLite has one
 * process, whose own guard is enough: `fn` just runs.
 */
export async function tryWithLock<T>(database: Database, name: string, fn: () => Promise<T>): Promise<LockedRun<T>> {
  if (database.dialect !== 'postgres') return { ran: true, result: await fn() };
  const key = lockKey(database, name);
  return database.db.connection().execute(async (connection) => {
    const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${key}::bigint) as locked`.execute(connection);
    if (!rows[0]?.locked) return { ran: false };
    try {
      return { ran: true, result: await fn() };
    } finally {
      // Fails only on a broken connection, which the pool then drops, and with it the lock.
      await sql`select pg_advisory_unlock(${key}::bigint)`.execute(connection).catch(() => {});
    }
  });
}
