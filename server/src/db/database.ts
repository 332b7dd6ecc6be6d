import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { prepareRecurring, StatementNames } from './pg-prepared.ts';
import { QueryThread } from './query-thread.ts';
import { NodeSqliteDatabase, NodeSqliteDialect } from './sqlite-adapter.ts';
import { SqliteCheckpointer } from './sqlite-checkpointer.ts';
import type { DB } from './schema/index.ts';

export type Dialect = 'sqlite' | 'postgres';

/** A query executor: the database itself or an open transaction. */
export type Db = Kysely<DB> | Transaction<DB>;

export interface Database {
  readonly db: Kysely<DB>;
  readonly dialect: Dialect;
  /**
   * How another thread opens the same database (`openDatabase(url, { schema })`),
   * or null when it cannot: an in-memory SQLite database lives in its connection.
   */
  readonly sharedAs: { url: string; schema: string | undefined; sessionUrl?: string } | null;
  /** Runs `fn` in one transaction; it commits when `fn` resolves and rolls back when it throws. */
  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T>;
  /** SQLite with `checkpointThread`: the thread that checkpoints the write-ahead log. */
  readonly checkpointer?: SqliteCheckpointer;
  /** With `queryThread`: the thread that runs the hot path's operations (onQueryThread). */
  readonly queryThread?: QueryThread;
  /**
   * The health checks' own connection (PostgreSQL; on SQLite the one
   * connection): a check measures the database, so it must not wait its
   * turn behind the pool's queue, which a crowd of questions fills.
   */
  readonly healthDb: Kysely<DB>;
  /** Resolves when the database answers a trivial query (on healthDb) within `timeoutMs`. */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** How long a health check waits for the database before it counts it unreachable (Database.ping's default). */
export const PING_TIMEOUT_MS = 2000;

export interface DatabaseOptions {
  logger?: Logger;
  /** PostgreSQL only: the schema to work in (created if missing). Tests use one per suite. */
  schema?: string;
  /** PostgreSQL only: the pool size (DATABASE_POOL_SIZE for the server's; 10 by default). */
  poolSize?: number;
  /** PostgreSQL only: what pg_stat_activity shows for the pool's connections (`concierge` by default), with the schema when one is set. */
  applicationName?: string;
  /**
   * SQLite only (a file): checkpoints in a thread of their own instead of on
   * the event loop (SqliteCheckpointer). The server's database asks for it;
   * other threads and the command-line tools keep SQLite's default.
   */
  checkpointThread?: boolean;
  /**
   * The hot path's operations (onQueryThread) run on a thread of their own
   * with its own connection (SQLite, a file) or pool (PostgreSQL, as large
   * as `poolSize`): QueryThread. The server's database asks for it.
   */
  queryThread?: boolean;
  /**
   * PostgreSQL only: where the connections that must be sessions of their own
   * connect (pg-session.ts: the leader's lock, the crawler's run lock, the
   * events' LISTEN), when DATABASE_URL is a pooler in transaction mode
   * (DATABASE_SESSION_URL). Unset: the database's own URL.
   */
  sessionUrl?: string;
  /**
   * PostgreSQL only: the pool runs only statements that find their rows by
   * key (the query thread's, onQueryThread), so its prepared statements may
   * keep one plan for every run instead of being planned for each
   * (`plan_cache_mode=auto`), and a plan that reads a table whole is ruled
   * out (`enable_seqscan=off`). See pgPlanSettings.
   */
  keyedStatements?: boolean;
}

/**
 * How a PostgreSQL pool's connections plan prepared statements (pg-prepared.ts
 * prepares the recurring ones).
 *
 * A plan PostgreSQL keeps for a statement (its generic plan) is made from the
 * tables' sizes as it last knew them, and remade only when a table is next
 * analyzed. The chat's batch statements, prepared while a new database's tables
 * were nearly empty, kept a plan that scanned them whole, and went on doing so
 * as they grew to thousands of rows; with autovacuum off (as on the test
 * server) nothing analyzed them, ever. So by default every run is planned for
 * its own parameters (`force_custom_plan`): the admin lists' plans depend on
 * their filters too.
 *
 * The query thread's pool runs only the hot path's statements, every one of
 * which finds its rows through a key (an id, a session, a window, a counter's
 * name). There a sequential scan is never the right plan, whatever the
 * statistics say, and with it ruled out the kept plan is the custom one without
 * the planning: PostgreSQL's own choice (`auto`) keeps it after five runs when
 * it costs no more than they did. A statement whose kept plan could not use its
 * index (a partial index whose condition is a parameter) costs more than its
 * custom plans, so PostgreSQL goes on planning that one per run. Planning the
 * batches was about a fifth of PostgreSQL's CPU in the chat bench (0.2 ms an
 * answer of 0.8–0.9).
 */
export const pgPlanSettings = (keyedStatements: boolean): Record<string, string> =>
  keyedStatements ? { plan_cache_mode: 'auto', enable_seqscan: 'off' } : { plan_cache_mode: 'force_custom_plan' };

/*
 * Behind a connection pooler. Every connection asks for its settings in its
 * startup packet (`options`: no round trip). PgBouncer before 1.20 refuses a
 * connection that does; later versions refuse the settings they do not track
 * (the plan settings) unless `options` is in their ignore_startup_parameters,
 * and then drop those silently. The first is reported at start-up with what
 * to do. The second is harmless for the time zone (every timestamp is read
 * with its offset) but not for the plans, so they are checked, and a warning
 * logged when a plan kept from when the tables were small could read them
 * whole as they grow (above) — unless the plan settings reach PostgreSQL
 * another way (the database role's own, as the README says).
 */

/** The error to report when a server (a pooler) refused the connection's startup settings; undefined for any other error. */
function refusedSettings(error: unknown): Error | undefined {
  const message = error instanceof Error ? error.message : '';
  if (!/unsupported (options )?startup parameter/i.test(message)) return undefined;
  return new Error(
    `DATABASE_URL: the server refused the connections' settings (${message}). A pooler such as PgBouncer must pass them on or ignore them: ` +
      'add `options` to its ignore_startup_parameters (README: Behind PgBouncer).',
    { cause: error },
  );
}

/** Logs a warning when the plan settings PostgreSQL applied could keep a plan that reads a growing table whole. */
async function checkSettings(client: pg.PoolClient, asked: Record<string, string>, logger: Logger | undefined): Promise<void> {
  const { rows } = await client.query<{ plan_cache_mode: string; enable_seqscan: string }>(
    "select current_setting('plan_cache_mode') as plan_cache_mode, current_setting('enable_seqscan') as enable_seqscan",
  );
  const applied = rows[0]!;
  if (applied.plan_cache_mode === 'force_custom_plan' || applied.enable_seqscan === 'off') return;
  logger?.warn(
    { asked, applied },
    "PostgreSQL did not apply the connections' plan settings (a pooler in front of it dropped them): plans kept from when the tables " +
      'were small may read them whole as they grow. Set plan_cache_mode = force_custom_plan on the database role (README: Behind PgBouncer)',
  );
}

export const dialectOf = (url: string): Dialect => (url.startsWith('sqlite:') ? 'sqlite' : 'postgres');

/** Opens the database named by a `sqlite:<path>` or `postgres://…` URL. */
export async function openDatabase(url: string, options: DatabaseOptions = {}): Promise<Database> {
  const dialect = dialectOf(url);
  const logger = options.logger;
  let db: Kysely<DB>;
  let healthDb: Kysely<DB>;
  let checkpointer: SqliteCheckpointer | undefined;
  let queryThread: QueryThread | undefined;
  if (dialect === 'sqlite') {
    const file = url.slice('sqlite:'.length);
    const sqlite = openSqlite(file);
    db = healthDb = sqlite.db;
    if (options.checkpointThread && file !== ':memory:') checkpointer = await SqliteCheckpointer.start({ file, connection: sqlite.connection, logger });
    if (options.queryThread && file !== ':memory:') queryThread = await QueryThread.start({ url, autocheckpoint: !checkpointer, logger });
  } else {
    ({ db, healthDb } = await openPostgres(url, options));
    if (options.queryThread) queryThread = await QueryThread.start({ url, schema: options.schema, poolSize: options.poolSize, autocheckpoint: true, logger });
  }
  return {
    db,
    healthDb,
    dialect,
    sharedAs: url === 'sqlite::memory:' ? null : { url, schema: options.schema, sessionUrl: options.sessionUrl },
    transaction: (fn) => db.transaction().execute(fn),
    ping: (timeoutMs = PING_TIMEOUT_MS) => answeredWithin(sql`select 1`.execute(healthDb), timeoutMs).then(() => undefined),
    checkpointer,
    queryThread,
    async close() {
      // The threads' connections close first (the query thread's once its calls are answered),
      // so the server's, closing last, folds the whole log in.
      await queryThread?.stop();
      await checkpointer?.stop();
      if (healthDb !== db) await healthDb.destroy();
      await db.destroy();
      logger?.debug('database closed');
    },
  };
}

/**
 * `answer`, or an error once `timeoutMs` have passed without it. An answer
 * that is already in (read from its socket) when the timer fires still
 * counts: a reply is I/O, read after the timers of the same turn of the event
 * loop, so a server busy for longer than `timeoutMs` would otherwise time
 * out a database that answered at once.
 */
export async function answeredWithin<T>(answer: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let afterIo: NodeJS.Immediate | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      afterIo = setImmediate(() => reject(new Error(`database did not answer within ${timeoutMs} ms`)));
    }, timeoutMs);
  });
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
    clearImmediate(afterIo);
  }
}

function openSqlite(file: string): { db: Kysely<DB>; connection: NodeSqliteDatabase } {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const database = new NodeSqliteDatabase(file);
  // WAL lets readers proceed while a write is in progress; NORMAL sync is safe with WAL.
  database.exec('pragma journal_mode = wal; pragma synchronous = normal; pragma foreign_keys = on;');
  return { db: new Kysely<DB>({ dialect: new NodeSqliteDialect(database) }), connection: database };
}

/**
 * Values come back from PostgreSQL in the same shapes as from SQLite:
 * bigint/numeric as JS numbers (our counts stay far below 2^53) and
 * timestamps as ISO 8601 strings.
 */
const PG_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    switch (oid) {
      case 20: // int8
      case 1700: // numeric
        return (value: string) => Number(value);
      case 1184: // timestamptz
        return (value: string) => new Date(value).toISOString();
      case 1114: // timestamp without time zone: stored as UTC
        return (value: string) => new Date(`${value.replace(' ', 'T')}Z`).toISOString();
      default:
        return pg.types.getTypeParser(oid, format ?? 'text');
    }
  },
} as pg.CustomTypesConfig;

/** pg's pool hangs the failed connection on the error it emits: its whole state, which a log line does not need. */
function withoutClient(error: Error): Error {
  Reflect.deleteProperty(error, 'client');
  return error;
}

/** What pg_stat_activity shows for a connection: its role, and the schema when several installations share a database (63 characters at most). */
export const pgApplicationName = (name: string, schema: string | undefined): string => (schema ? `${name} (${schema})` : name).slice(0, 63);

async function openPostgres(url: string, options: DatabaseOptions): Promise<{ db: Kysely<DB>; healthDb: Kysely<DB> }> {
  if (options.schema && !/^[a-z_][a-z0-9_]*$/.test(options.schema)) throw new Error(`invalid schema name: ${options.schema}`);
  const settings = { TimeZone: 'UTC', ...pgPlanSettings(options.keyedStatements ?? false) };
  const config: pg.PoolConfig = {
    connectionString: url,
    types: PG_TYPES,
    // Every connection works in UTC so timestamps without a zone read the same everywhere.
    options: [options.schema ? `-c search_path=${options.schema}` : '', ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(' ').trim(),
  };
  const applicationName = options.applicationName ?? 'concierge';
  const pool = new pg.Pool({ ...config, application_name: pgApplicationName(applicationName, options.schema), max: options.poolSize ?? 10 });
  pool.on('error', (error) => options.logger?.error({ err: withoutClient(error) }, 'idle PostgreSQL connection failed'));
  // Opened at the first check and closed after 10 s without one (pg's idle timeout): tools that never check hold none.
  // A server that does not answer the connection at all fails the checks in the meantime (each ping times out) and
  // frees the pool's one place after 5 s for the next check to try again.
  const healthPool = new pg.Pool({ ...config, application_name: pgApplicationName(`${applicationName} health`, options.schema), max: 1, connectionTimeoutMillis: 5_000 });
  healthPool.on('error', (error) => options.logger?.warn({ err: withoutClient(error) }, "the health checks' PostgreSQL connection failed; the next check opens another"));
  // One that fails during a check fails that check, which reports it; without a listener its 'error' would end the process.
  healthPool.on('connect', (client) => client.on('error', () => {}));
  // A connection checked out of the pool but between queries (a transaction waiting on the server's own work) has no
  // pool listener: when the server goes away (a restart), its 'error' would end the process.
  // The next query on it fails instead, and the pool drops it when it comes back.
  // (An idle one that fails is the pool's 'error' above, and logged there only.)
  const names = new StatementNames();
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_error, client) => checkedOut.delete(client));
  pool.on('connect', (client) => {
    prepareRecurring(client, names);
    client.on('error', (error) => {
      if (checkedOut.has(client)) options.logger?.warn({ err: error }, 'a PostgreSQL connection in use failed; it will be replaced');
    });
  });
  const client = await pool.connect().catch(async (error: unknown) => {
    await Promise.all([pool.end(), healthPool.end()]);
    throw refusedSettings(error) ?? error;
  });
  try {
    if (options.schema) await client.query(`create schema if not exists ${options.schema}`);
    await checkSettings(client, settings, options.logger?.child({ pool: applicationName }));
  } finally {
    client.release();
  }
  return { db: new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }), healthDb: new Kysely<DB>({ dialect: new PostgresDialect({ pool: healthPool }) }) };
}
