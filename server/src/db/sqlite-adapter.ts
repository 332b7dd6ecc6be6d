import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Adapts Node's built-in `node:sqlite` to the statement interface Kysely's
 * SqliteDialect expects (the shape better-sqlite3 has), so the embedded
 * database needs no compiled addon.
 *
 * Two conversions keep services dialect-agnostic:
 * - parameters: booleans become 1/0, Dates ISO strings, undefined null;
 * - results: columns declared `boolean` come back as JS booleans, as they do
 *   from PostgreSQL.
 */
export class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, PreparedStatement>();
  static readonly CACHE_SIZE = 500;

  constructor(filename: string) {
    this.#db = new DatabaseSync(filename, { enableForeignKeyConstraints: true, timeout: 5000 });
  }

  exec(sql: string): void {
    this.#db.exec(sql);
  }

  prepare(sql: string): SqliteStatement {
    let statement = this.#cache.get(sql);
    if (statement) {
      // Refresh its place in the LRU order.
      this.#cache.delete(sql);
    } else {
      statement = new PreparedStatement(this.#db.prepare(sql));
      if (this.#cache.size >= NodeSqliteDatabase.CACHE_SIZE) {
        this.#cache.delete(this.#cache.keys().next().value!);
      }
    }
    this.#cache.set(sql, statement);
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
