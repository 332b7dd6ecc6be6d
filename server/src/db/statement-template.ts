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
  /** The values' shape this statement was compiled for. */
  shape: Shape;
  sql: string;
  query: RootOperationNode;
  /** Each parameter: a Slot (the value at its index) or a value the statement always has. */
  parameters: readonly unknown[];
}

/**
 * The shape of a template's values: a leaf (a value that becomes a
 * parameter), an array of shapes, or a record's keys (those whose value is
 * not undefined, in their order) and their values' shapes.
 */
type Shape = null | { readonly items: readonly Shape[] } | { readonly keys: readonly string[]; readonly values: readonly Shape[] };

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
  readonly #compiled = new WeakMap<DialectAdapter, Compiled[]>();
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
    const executor = db.getExecutor();
    let shapes = this.#compiled.get(executor.adapter);
    if (!shapes) this.#compiled.set(executor.adapter, (shapes = []));
    // The values are compared with each compiled shape in turn (a template has a handful) rather than described by
    // a key built for the lookup: that key's strings were an answer's largest allocation in the statements' code.
    const leaves: unknown[] = [];
    let compiled: Compiled | undefined;
    for (const known of shapes) {
      leaves.length = 0;
      if (fits(values, known.shape, leaves)) {
        compiled = known;
        break;
      }
    }
    if (!compiled) {
      leaves.length = 0;
      const shape = shapeOf(values, leaves);
      if (leaves.length > StatementTemplate.MAX_VALUES) return db.executeQuery<R>(compile(db, this.#build(db, values)) as CompiledQuery<R>);
      const { sql, query, parameters } = compile(db, this.#build(db, standIns(values, { next: 0 }) as V));
      compiled = { shape, sql, query, parameters };
      // A template has a handful of shapes (a row count, optional columns); many more would be a caller's mistake.
      if (shapes.length >= StatementTemplate.MAX_SHAPES) shapes.length = 0;
      shapes.push(compiled);
    }
    const parameters = compiled.parameters.map((parameter) => (parameter instanceof Slot ? leaves[parameter.index] : parameter));
    const query: CompiledQuery<R> = { sql: compiled.sql, query: compiled.query, parameters, queryId: createQueryId() };
    if (StatementTemplate.check) checkAgainstKysely(compile(db, this.#build(db, values)), query);
    // Straight to a connection: Kysely's executeQuery around it only hands the result to plugins, and there are none.
    if (executor.plugins.length > 0) return db.executeQuery(query);
    return executor.provideConnection((connection) => connection.executeQuery<R>(query));
  }
}

/** What a template builds: a query builder's statement, or one written with `sql`. */
type Statement = Compilable<unknown> | RawBuilder<unknown>;

const compile = (db: Db, statement: Statement): CompiledQuery<unknown> => ('isRawBuilder' in statement ? statement.compile(db) : statement.compile());

/** The values' shape, their leaves pushed onto `leaves` in the order standIns numbers them. */
function shapeOf(value: unknown, leaves: unknown[]): Shape {
  if (Array.isArray(value)) return { items: value.map((item) => shapeOf(item, leaves)) };
  if (isRecord(value)) {
    const keys: string[] = [];
    const values: Shape[] = [];
    for (const key in value) {
      const item = value[key];
      if (item === undefined) continue;
      keys.push(key);
      values.push(shapeOf(item, leaves));
    }
    return { keys, values };
  }
  leaves.push(value);
  return null;
}

/** Whether `value` has `shape`, its leaves pushed onto `leaves` as shapeOf orders them (some of them when it has not). */
function fits(value: unknown, shape: Shape, leaves: unknown[]): boolean {
  if (shape === null) {
    if (Array.isArray(value) || isRecord(value)) return false;
    leaves.push(value);
    return true;
  }
  if ('items' in shape) {
    if (!Array.isArray(value) || value.length !== shape.items.length) return false;
    for (let i = 0; i < value.length; i++) if (!fits(value[i], shape.items[i]!, leaves)) return false;
    return true;
  }
  if (!isRecord(value)) return false;
  let at = 0;
  for (const key in value) {
    const item = value[key];
    if (item === undefined) continue;
    if (key !== shape.keys[at] || !fits(item, shape.values[at]!, leaves)) return false;
    at++;
  }
  return at === shape.keys.length;
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
