import { isDeepStrictEqual } from 'node:util';
import { createQueryId, type Compilable, type CompiledQuery, type DialectAdapter, type QueryResult, type RawBuilder, type RootOperationNode } from 'kysely';
import type { Db } from './database.ts';

/** Stands for one of a statement's values while its template is compiled. */
class Slot {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
}

interface Compiled {
  sql: string;
  query: RootOperationNode;
  /** Each parameter: a Slot (the value at its index) or a value the statement always has. */
  parameters: readonly unknown[];
}

/**
 * Values a template is built from: records and arrays of them, down to the
 * values that become parameters. A property that is `undefined` is left
 * out, as Kysely leaves it out of an INSERT or an UPDATE.
 */
export type TemplateValues = { readonly [key: string]: unknown };

/**
 * A statement built and compiled once per shape, then run with new values:
 * building a statement with Kysely and compiling it is about half of what a
 * statement costs the server on SQLite (bench/RESULTS.md), and the hot path
 * runs the same dozen statements for every answer.
 *
 * `build` gets the values as they will be, but with each leaf (a string,
 * number, boolean or null) replaced by a stand-in: it must hand them to
 * Kysely as values (in `values`, `set`, `where`, `eb.val`, `sql`), not
 * compute with them — whatever depends on a value is computed by the caller
 * and passed as one. The compiled statement is kept per shape (the records'
 * keys and the arrays' lengths) and per open database (its Kysely adapter:
 * SQLite and PostgreSQL compile differently).
 *
 * With CONCIERGE_CHECK_TEMPLATES=1 in the environment as the process starts
 * (the test suites set it) every run also builds the statement with the
 * real values and throws if Kysely compiles it to anything else.
 */
export class StatementTemplate<V extends TemplateValues> {
  readonly #build: (db: Db, values: V) => Statement;
  readonly #compiled = new WeakMap<DialectAdapter, Map<string, Compiled>>();
  static readonly MAX_SHAPES = 200;
  /**
   * A statement with more values than this (a large batch of rows) is built
   * each time, as without a template: its build is shared by its many rows
   * already, and keeping it would keep a large statement per row count.
   */
  static readonly MAX_VALUES = 256;
  /** Check every run against Kysely's own compile (read once: the environment is slow to read on every statement). */
  static check = process.env.CONCIERGE_CHECK_TEMPLATES === '1';

  constructor(build: (db: Db, values: V) => Statement) {
    this.#build = build;
  }

  async execute<R = unknown>(db: Db, values: V): Promise<QueryResult<R>> {
    const leaves: unknown[] = [];
    const shape = shapeOf(values, leaves);
    if (leaves.length > StatementTemplate.MAX_VALUES) return db.executeQuery<R>(compile(db, this.#build(db, values)) as CompiledQuery<R>);
    const adapter = db.getExecutor().adapter;
    let shapes = this.#compiled.get(adapter);
    if (!shapes) this.#compiled.set(adapter, (shapes = new Map()));
    let compiled = shapes.get(shape);
    if (!compiled) {
      const { sql, query, parameters } = compile(db, this.#build(db, standIns(values, { next: 0 }) as V));
      compiled = { sql, query, parameters };
      // A template has a handful of shapes (a row count, optional columns); many more would be a caller's mistake.
      if (shapes.size >= StatementTemplate.MAX_SHAPES) shapes.clear();
      shapes.set(shape, compiled);
    }
    const parameters = compiled.parameters.map((parameter) => (parameter instanceof Slot ? leaves[parameter.index] : parameter));
    const query: CompiledQuery<R> = { sql: compiled.sql, query: compiled.query, parameters, queryId: createQueryId() };
    if (StatementTemplate.check) checkAgainstKysely(compile(db, this.#build(db, values)), query);
    return db.executeQuery(query);
  }
}

/** What a template builds: a query builder's statement, or one written with `sql`. */
type Statement = Compilable<unknown> | RawBuilder<unknown>;

const compile = (db: Db, statement: Statement): CompiledQuery<unknown> => ('isRawBuilder' in statement ? statement.compile(db) : statement.compile());

/** The values' shape as a string, their leaves pushed onto `leaves` in the order standIns numbers them. */
function shapeOf(value: unknown, leaves: unknown[]): string {
  if (Array.isArray(value)) {
    let shape = '[';
    for (const item of value) shape += `${shapeOf(item, leaves)},`;
    return `${shape}]`;
  }
  if (isRecord(value)) {
    let shape = '{';
    for (const key in value) {
      const item = value[key];
      // Keys are column and field names: no quoting needed for the shape to be unambiguous.
      if (item !== undefined) shape += `${key}:${shapeOf(item, leaves)},`;
    }
    return `${shape}}`;
  }
  leaves.push(value);
  return '_';
}

/** The values with each leaf replaced by a Slot numbered as shapeOf orders them. */
function standIns(value: unknown, counter: { next: number }): unknown {
  if (Array.isArray(value)) return value.map((item) => standIns(item, counter));
  if (isRecord(value)) {
    const result: Record<string, unknown> = {};
    for (const key in value) {
      const item = value[key];
      if (item !== undefined) result[key] = standIns(item, counter);
    }
    return result;
  }
  return new Slot(counter.next++);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

function checkAgainstKysely(expected: CompiledQuery<unknown>, actual: CompiledQuery<unknown>): void {
  if (expected.sql !== actual.sql || !isDeepStrictEqual([...expected.parameters], [...actual.parameters])) {
    throw new Error(`a statement template compiled differently from Kysely:\n${actual.sql}\n${JSON.stringify(actual.parameters)}\nagainst\n${expected.sql}\n${JSON.stringify(expected.parameters)}`);
  }
}
