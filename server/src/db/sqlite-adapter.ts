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
    this.#db = new DatabaseSync(filename, { enableForeignKeyConstraints: true, timeout: 5000 });
  }

  exec(sql: string): void {
    this.#db.exec(sql);
  }

  prepare(sql: string): SqliteStatement {
    let statement = this.#cache.get(sql);
    if (!statement) {
      statement = new PreparedStatement(this.#db.prepare(sql));
      // The product's statements are a few hundred texts at most; past that, start again rather than keep an order of use.
      if (this.#cache.size >= NodeSqliteDatabase.CACHE_SIZE) this.#cache.clear();
      this.#cache.set(sql, statement);
    }
    return statement;
  }

  close(): void {
    this.#cache.clear();
    if (this.#db.isOpen) this.#db.close();
  }
}

type Row = Record<string, unknown>;

class PreparedStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly #statement: StatementSync;
  readonly #booleanColumns: string[];

  constructor(statement: StatementSync) {
    this.#statement = statement;
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
 * Kysely's SQLite dialect on a NodeSqliteDatabase, without the lock Kysely
 * takes around every statement on a single connection (about 4 µs a
 * statement: nearly half of what a simple UPDATE costs through Kysely,
 * bench/RESULTS.md). A statement runs within the
 * call, so statements cannot overlap; only a transaction, which awaits
 * between its statements, must be kept apart, and the driver does that
 * itself: while one is open, statements from elsewhere wait until it commits
 * or rolls back, so none of them runs inside it.
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

class NodeSqliteDriver implements Driver {
  readonly #database: NodeSqliteDatabase;
  /** The connection whose transaction is open, if any. */
  #inTransaction: NodeSqliteConnection | null = null;
  #waiting: (() => void)[] = [];

  constructor(database: NodeSqliteDatabase) {
    this.#database = database;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new NodeSqliteConnection(this);
  }

  async releaseConnection(): Promise<void> {}

  async run<R>(connection: NodeSqliteConnection, compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    while (this.#inTransaction !== null && this.#inTransaction !== connection) await this.#transactionEnded();
    return this.#execute<R>(compiledQuery);
  }

  /** The rows one at a time, as Kysely's own SQLite driver streams them. */
  async *stream<R>(connection: NodeSqliteConnection, { sql, parameters }: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    while (this.#inTransaction !== null && this.#inTransaction !== connection) await this.#transactionEnded();
    for (const row of this.#database.prepare(sql).iterate(parameters)) yield { rows: [row as R] };
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    while (this.#inTransaction !== null) await this.#transactionEnded();
    this.#execute(CompiledQuery.raw('begin'));
    this.#inTransaction = connection as NodeSqliteConnection;
  }

  async commitTransaction(): Promise<void> {
    // A commit that fails (another connection holds the database) leaves the transaction open: Kysely rolls it back next.
    this.#execute(CompiledQuery.raw('commit'));
    this.#endTransaction();
  }

  async rollbackTransaction(): Promise<void> {
    try {
      this.#execute(CompiledQuery.raw('rollback'));
    } finally {
      this.#endTransaction();
    }
  }

  async destroy(): Promise<void> {
    this.#database.close();
  }

  #execute<R>({ sql, parameters }: CompiledQuery): QueryResult<R> {
    const statement = this.#database.prepare(sql);
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  #transactionEnded(): Promise<void> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #endTransaction(): void {
    this.#inTransaction = null;
    const waiting = this.#waiting;
    this.#waiting = [];
    // In the order they came: statements run, and the first waiting transaction begins and holds the rest again.
    for (const resume of waiting) resume();
  }
}
