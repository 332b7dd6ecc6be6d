import { createHash } from 'node:crypto';
import pg from 'pg';
import { pgApplicationName, type Database } from '../db/database.ts';

/**
 * A PostgreSQL connection of its own, outside the pool, for what lives in a
 * session: the leader's advisory lock, the crawler's run lock and the LISTEN
 * of cross-process events. It connects to the database's session URL
 * (DATABASE_SESSION_URL) when there is one: a pooler in transaction mode
 * lends its server connections to one transaction at a time, so a lock or a
 * LISTEN taken through it would stay on a connection that other clients'
 * transactions then use (they would hold the lock too) while its own
 * statements went elsewhere.
 *
 * Both sides notice a dead peer within seconds rather than hours: the client
 * with TCP keep-alives, the server with its own (so a leader whose machine
 * vanished frees its lock after about 25 s; a killed process frees it at
 * once, its socket closed by the kernel).
 */
export async function openSession(database: Database, applicationName: string): Promise<pg.Client> {
  const target = database.sharedAs;
  if (database.dialect !== 'postgres' || !target) throw new Error('a PostgreSQL session needs a PostgreSQL database');
  const client = new pg.Client({
    connectionString: target.sessionUrl ?? target.url,
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

/** How long taking or giving up a run's lock may take before the run counts as failed (or, at its end, the session is just closed). */
const LOCK_TIMEOUT_MS = 5000;

/**
 * Runs `fn` only if no other process is running the work named `name`
 * (PostgreSQL: a session advisory lock held for the run on a session of its
 * own, openSession's, released at its end or when the process dies). A run
 * is rare (a crawl), so the session is opened for it and closed after: its
 * close releases the lock even when the unlock could not be sent. SQLite has
 * one process, whose own guard is enough: `fn` just runs.
 */
export async function tryWithLock<T>(database: Database, name: string, fn: () => Promise<T>): Promise<LockedRun<T>> {
  if (database.dialect !== 'postgres') return { ran: true, result: await fn() };
  const key = lockKey(database, name);
  const session = await openSession(database, `concierge ${name} lock`);
  try {
    const { rows } = await queryWithin<{ locked: boolean }>(session, 'select pg_try_advisory_lock($1::bigint) as locked', [key], LOCK_TIMEOUT_MS);
    if (!rows[0]?.locked) return { ran: false };
    try {
      return { ran: true, result: await fn() };
    } finally {
      // Given up before the run's end is reported, so that a run asked for next finds it free; closing the session
      // (which does not wait for PostgreSQL) releases it anyway.
      await queryWithin(session, 'select pg_advisory_unlock($1::bigint)', [key], LOCK_TIMEOUT_MS).catch(() => {});
    }
  } finally {
    closeSession(session);
  }
}
