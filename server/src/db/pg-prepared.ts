import { createHash } from 'node:crypto';
import type pg from 'pg';
import { TextKeyed } from './text-keyed.ts';

/** A statement's text seen this often in a process is prepared on each connection that runs it again. */
export const PREPARE_AFTER = 3;
/** Prepared statements per process at most (each connection holds those it has run). */
export const MAX_PREPARED = 300;
/** Texts counted at most; past it the count starts again (statements already prepared stay so). */
const MAX_COUNTED = 5000;
/** Statements a server can prepare; transaction control and DDL go unnamed. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;

/**
 * Which statement texts run as named prepared statements. The hot path's
 * statements (a question stored, its outcome, the counters) are the same
 * text every time; sent unnamed, PostgreSQL parses and plans each anew,
 * which on a busy server costs more of its CPU than running them. Named,
 * a connection parses one once.
 *
 * How a connection plans them (each run for its parameters, or once and
 * kept) is its pool's setting: pgPlanSettings in database.ts.
 *
 * Only texts that recur are named, and only so many, so that a statement
 * built anew each time (a multi-row INSERT of a varying number of rows)
 * does not fill the server's memory with statements never used again.
 */
export class StatementNames {
  readonly #counts = new TextKeyed<number>();
  readonly #names = new TextKeyed<string>();

  /** The name to prepare `text` under, or undefined to send it unnamed. */
  nameFor(text: string): string | undefined {
    const name = this.#names.get(text);
    if (name !== undefined) return name;
    if (this.#names.size >= MAX_PREPARED || !PREPARABLE.test(text)) return undefined;
    const count = (this.#counts.get(text) ?? 0) + 1;
    if (count < PREPARE_AFTER) {
      if (this.#counts.size >= MAX_COUNTED) this.#counts.clear();
      this.#counts.set(text, count);
      return undefined;
    }
    this.#counts.delete(text);
    const named = `concierge_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    this.#names.set(text, named);
    return named;
  }
}

/** Makes a connection run the recurring parameterised statements (Kysely's `query(text, values)`) as prepared ones. */
export function prepareRecurring(client: pg.ClientBase, names: StatementNames): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const [text, values] = args;
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
      const name = names.nameFor(text);
      if (name) return query({ name, text, values });
    }
    return query(...args);
  }) as typeof client.query;
}
