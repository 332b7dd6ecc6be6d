import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely';
import { TextKeyed } from './text-keyed.ts';

/**
 * Adapts Node's built-in `node:sqlite` to Kysely's SQLite statement interface
 * (the shape better-sqlite3 has), which NodeSqliteDialect below runs, so the
 * embedded database needs no compiled addon.
 *
 * Two conversions keep services dialect-agnostic:
 * - parameters: booleans become 1/0, Dates ISO strings, undefined null;
 * - results: columns declared `boolean` come back as JS booleans, as they do
 *   from PostgreSQL.
 */
export class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #cache = new TextKeyed<PreparedStatement>();
  static readonly CACHE_SIZE = 500;

  constructor(filename: string) {
    this.#db = new DatabaseSync(filename, { enableForeignKeyConstraints: true, timeout: BUSY_TIMEOUT_MS });
  }

  exec(sql: string): void {
    this.#db.exec(sql);
  }

  prepare(sql: string): PreparedStatement {
    let statement = this.#cache.get(sql);
    if (!statement) {
      statement = new PreparedStatement(this.#db.prepare(sql), kindOf(sql));
      // The product's statements are a few hundred texts at most; past that, start again rather than keep an order of use.
      if (this.#cache.size >= NodeSqliteDatabase.CACHE_SIZE) this.#cache.clear();
      this.#cache.set(sql, statement);
    }
    return statement;
  }

  /** A transaction is open on the connection (SQLite ends one by itself after some errors). */
  get inTransaction(): boolean {
    return this.#db.isTransaction;
  }

  close(): void {
    this.#cache.clear();
    if (this.#db.isOpen) this.#db.close();
  }
}

type Row = Record<string, unknown>;

/**
 * What a statement does, as far as transactions go (NodeSqliteDriver):
 * - `read`: reads only, and may run inside an open transaction;
 * - `write`: changes rows, and may share a transaction with other writes;
 * - `alone`: must not run inside a transaction (VACUUM, most pragmas) or
 *   changes the schema: it runs on its own, after the writes before it.
 */
export type StatementKind = 'read' | 'write' | 'alone';

function kindOf(sql: string): StatementKind {
  const verb = /^\s*([a-z]+)/i.exec(sql)?.[1]?.toLowerCase();
  if (verb === 'select' || verb === 'explain') return 'read';
  // A `with` may only read; it is taken as a write, which is only slower.
  if (verb === 'insert' || verb === 'update' || verb === 'delete' || verb === 'replace' || verb === 'with') return 'write';
  return 'alone';
}

class PreparedStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly kind: StatementKind;
  readonly #statement: StatementSync;
  readonly #booleanColumns: string[];

  constructor(statement: StatementSync, kind: StatementKind) {
    this.#statement = statement;
    this.kind = kind;
    const columns = statement.columns();
    this.reader = columns.length > 0;
    this.#booleanColumns = columns.filter((column) => column.type?.toLowerCase() === 'boolean').map((column) => column.name);
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    const rows = this.#statement.all(...bind(parameters)) as Row[];
    if (this.#booleanColumns.length > 0) for (const row of rows) this.#fixBooleans(row);
    return rows;
  }

  run(parameters: ReadonlyArray<unknown>) {
    const { changes, lastInsertRowid } = this.#statement.run(...bind(parameters));
    return { changes, lastInsertRowid };
  }

  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    for (const row of this.#statement.iterate(...bind(parameters)) as IterableIterator<Row>) {
      if (this.#booleanColumns.length > 0) this.#fixBooleans(row);
      yield row;
    }
  }

  #fixBooleans(row: Row): void {
    for (const name of this.#booleanColumns) {
      const value = row[name];
      if (value !== null && value !== undefined) row[name] = value === 1 || value === 1n || value === true;
    }
  }
}

function bind(parameters: ReadonlyArray<unknown>): SQLInputValue[] {
  return parameters.map((value): SQLInputValue => {
    if (value === undefined || value === null) return null;
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (value instanceof Date) return value.toISOString();
    return value as SQLInputValue;
  });
}

/**
 * Kysely's SQLite dialect on a NodeSqliteDatabase (NodeSqliteDriver below):
 * without the lock Kysely takes around every statement on a single
 * connection, and with the writes of one turn of the event loop committed
 * together.
 */
export class NodeSqliteDialect implements Dialect {
  readonly #database: NodeSqliteDatabase;

  constructor(database: NodeSqliteDatabase) {
    this.#database = database;
  }

  createAdapter() {
    return new UnlockedSqliteAdapter();
  }

  createDriver(): Driver {
    return new NodeSqliteDriver(this.#database);
  }

  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>) {
    return new SqliteIntrospector(db);
  }
}

class UnlockedSqliteAdapter extends SqliteAdapter {
  // NodeSqliteDriver keeps transactions apart itself.
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

/** What Kysely gets for each statement or transaction it runs. */
class NodeSqliteConnection implements DatabaseConnection {
  readonly #driver: NodeSqliteDriver;

  constructor(driver: NodeSqliteDriver) {
    this.#driver = driver;
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    return this.#driver.run<R>(this, compiledQuery);
  }

  streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    return this.#driver.stream<R>(this, compiledQuery);
  }
}

/** A statement or a transaction waiting for the open transaction to end (NodeSqliteDriver). */
interface Waiter {
  readonly transaction: boolean;
  resume(): void;
}

/** One SQLite transaction that the writes of a turn of the event loop share. */
interface SharedCommit {
  /** Settles when the transaction has committed, or rejects with why it did not. */
  readonly done: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

// Takes the write lock at once: a transaction that read first could not write once another connection had committed.
const BEGIN = CompiledQuery.raw('begin immediate');
/** SQLite's SQLITE_BUSY, as node:sqlite reports it (extended codes such as SQLITE_BUSY_SNAPSHOT differ). */
const SQLITE_BUSY = 5;
/** What a statement waits for another connection's lock: the connection's busy timeout, and the bound of #begin's attempts. */
const BUSY_TIMEOUT_MS = 5_000;
/** A cell that never changes, for Atomics.wait to sleep on. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));
const COMMIT = CompiledQuery.raw('commit');
const SAVEPOINT = CompiledQuery.raw('savepoint unit');
const RELEASE = CompiledQuery.raw('release unit');
const ROLLBACK_TO = CompiledQuery.raw('rollback to unit');

/**
 * Runs Kysely's statements and transactions on the one SQLite connection.
 *
 * No lock per statement (about 4 µs each through Kysely's, nearly half of
 * what a simple UPDATE costs; bench/RESULTS.md): a statement runs within the
 * call, so statements cannot overlap. Only a transaction, which awaits
 * between its statements, must be kept apart: while one is open, statements
 * from elsewhere wait until it ends, so none of them runs inside it.
 *
 * Shared commits: a commit's fixed cost (about 70 µs, most of a small
 * transaction's) is paid once per turn of the event loop rather than once
 * per write. The first write of a turn (a transaction, or an INSERT, UPDATE
 * or DELETE of its own) begins a SQLite transaction; each of Kysely's
 * transactions runs in a savepoint of it, so a rollback undoes only its own
 * statements; at the end of the turn (`setImmediate`, or as the transaction
 * open then ends) it commits. Every write's promise settles only then, so a
 * write that resolved is on disk as before, and when the commit fails each of
 * them sees the error. Reads run at once, inside the shared transaction when
 * one is open (seeing the turn's writes, as a read after a commit would).
 * Statements that cannot run in a transaction (VACUUM, pragmas, schema
 * changes) commit the turn's writes first. The write lock is held from the
 * turn's first write to its commit: another connection to the file (the
 * crawler's thread, a command-line tool) waits that long at most, within its
 * busy timeout, but a second connection in the same thread would wait on a
 * commit its own waiting holds up.
 */
class NodeSqliteDriver implements Driver {
  readonly #database: NodeSqliteDatabase;
  /** The connection whose transaction (a savepoint of the shared one) is open, if any. */
  #inTransaction: NodeSqliteConnection | null = null;
  /** Statements and transactions waiting for the open transaction to end, in the order they came. */
  #waiting: Waiter[] = [];
  /** Where the next waiter woken at the last end, and beaten to it by a newcomer, goes back in: ahead of the rest, as it was. */
  #rewaitAt = 0;
  /** The SQLite transaction of this turn's writes, while open. */
  #shared: SharedCommit | null = null;
  /** The turn ended while a transaction was open in the shared one: it commits as that transaction ends. */
  #commitWhenFree = false;

  constructor(database: NodeSqliteDatabase) {
    this.#database = database;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new NodeSqliteConnection(this);
  }

  async releaseConnection(): Promise<void> {}

  async run<R>(connection: NodeSqliteConnection, compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#inTransaction !== null && this.#inTransaction !== connection) await this.#untilFree(connection, false);
    if (this.#inTransaction === connection) return this.#execute<R>(compiledQuery);
    const statement = this.#database.prepare(compiledQuery.sql);
    if (statement.kind === 'read') return this.#execute<R>(compiledQuery, statement);
    if (statement.kind === 'alone') {
      this.#commitShared();
      return this.#execute<R>(compiledQuery, statement);
    }
    const shared = this.#openShared();
    const result = this.#execute<R>(compiledQuery, statement);
    await shared.done;
    return result;
  }

  /** The rows one at a time, as Kysely's own SQLite driver streams them. */
  async *stream<R>(connection: NodeSqliteConnection, { sql, parameters }: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (this.#inTransaction !== null && this.#inTransaction !== connection) await this.#untilFree(connection, false);
    for (const row of this.#database.prepare(sql).iterate(parameters)) yield { rows: [row as R] };
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#inTransaction !== null) await this.#untilFree(null, true);
    this.#openShared();
    this.#execute(SAVEPOINT);
    this.#inTransaction = connection as NodeSqliteConnection;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#inTransaction !== connection) throw new Error('no transaction of this connection is open');
    const shared = this.#shared;
    // A release that fails leaves the transaction open: Kysely rolls it back next.
    this.#execute(RELEASE);
    this.#endTransaction();
    if (!shared) throw new Error('the transaction was rolled back by SQLite');
    await shared.done;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // Kysely also rolls back a transaction whose shared commit failed: it has ended already.
    if (this.#inTransaction !== connection) return;
    try {
      // After some errors SQLite has rolled back the whole transaction itself (#execute noted it).
      if (this.#database.inTransaction) {
        this.#execute(ROLLBACK_TO);
        this.#execute(RELEASE);
      }
    } finally {
      this.#endTransaction();
    }
  }

  async destroy(): Promise<void> {
    // The turn's finished writes are kept; a transaction still open (closing mid-way) is not half committed.
    if (this.#inTransaction && this.#database.inTransaction) {
      this.#execute(ROLLBACK_TO);
      this.#execute(RELEASE);
    }
    this.#inTransaction = null;
    this.#commitShared();
    this.#database.close();
  }

  #execute<R>({ sql, parameters }: CompiledQuery, statement = this.#database.prepare(sql)): QueryResult<R> {
    try {
      if (statement.reader) return { rows: statement.all(parameters) as R[] };
      const { changes, lastInsertRowid } = statement.run(parameters);
      return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
    } catch (error) {
      // Some errors (a full disk, an I/O error) make SQLite roll the whole transaction back: every write in it is lost.
      if (this.#shared && !this.#database.inTransaction) this.#failShared(error);
      throw error;
    }
  }

  #openShared(): SharedCommit {
    if (this.#shared) return this.#shared;
    this.#begin();
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    // Writes that failed at once do not wait for the commit; a failed commit with nobody waiting is no unhandled error.
    promise.catch(() => {});
    const shared: SharedCommit = { done: promise, resolve, reject };
    this.#shared = shared;
    setImmediate(() => {
      if (this.#shared !== shared) return;
      if (this.#inTransaction) this.#commitWhenFree = true;
      else this.#commitShared();
    });
    return shared;
  }

  /**
   * BEGIN IMMEDIATE, begun again while SQLite answers plain SQLITE_BUSY and
   * the busy timeout has not run out. With the query thread's and the event
   * loop's connections both writing on a loaded machine, SQLite sometimes
   * gives up about 20 ms into a BEGIN instead of waiting out its busy timeout
   * (the chat bench under a profiler: 1 to 43 failed answers a round, and a
   * 500 on a session check); a second BEGIN went through at once each time.
   * The pause between attempts blocks the thread, as SQLite's own wait does.
   */
  #begin(): void {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        this.#execute(BEGIN);
        return;
      } catch (error) {
        if ((error as { errcode?: unknown }).errcode !== SQLITE_BUSY || performance.now() - started >= BUSY_TIMEOUT_MS) throw error;
        Atomics.wait(PAUSE, 0, 0, Math.min(50, 1 + attempt * 5));
      }
    }
  }

  #commitShared(): void {
    const shared = this.#shared;
    if (!shared) return;
    this.#shared = null;
    this.#commitWhenFree = false;
    try {
      this.#execute(COMMIT);
      shared.resolve();
    } catch (error) {
      // A commit that fails (another connection holds the database past the busy timeout) leaves the transaction open.
      if (this.#database.inTransaction) this.#database.exec('rollback');
      shared.reject(error);
    }
  }

  #failShared(error: unknown): void {
    const shared = this.#shared;
    this.#shared = null;
    this.#commitWhenFree = false;
    shared?.reject(error);
  }

  /** Waits until no transaction but `connection`'s is open (`connection` null: none at all). */
  async #untilFree(connection: NodeSqliteConnection | null, transaction: boolean): Promise<void> {
    let woken = false;
    while (this.#inTransaction !== null && this.#inTransaction !== connection) {
      await new Promise<void>((resume) => {
        const waiter = { transaction, resume };
        if (woken) this.#waiting.splice(this.#rewaitAt++, 0, waiter);
        else this.#waiting.push(waiter);
      });
      woken = true;
    }
  }

  /**
   * Wakes, in the order they came, the waiting statements up to the first
   * waiting transaction, and that transaction, which begins and holds the
   * rest until it ends. Waking every waiter had each waiting transaction
   * wait again at every end: about 18 waits a transaction with 200 answers
   * under way.
   */
  #endTransaction(): void {
    this.#inTransaction = null;
    if (this.#commitWhenFree) this.#commitShared();
    let woken = 0;
    while (woken < this.#waiting.length) {
      const waiter = this.#waiting[woken++]!;
      waiter.resume();
      if (waiter.transaction) break;
    }
    this.#waiting.splice(0, woken);
    this.#rewaitAt = 0;
  }
}
