import { createHash } from 'node:crypto';
import type pg from 'pg';

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
 * a connection parses one once and (after a few runs) keeps a generic plan.
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

/**
 * Values kept by statement text, found by the text's length and then
 * compared. Kysely builds every text anew by concatenation; as a Map key it
 * is flattened and hashed whole on each query (15–18 µs for one of the hot
 * path's 3 KB CTEs; 2 % of the server's CPU on PostgreSQL), where comparing
 * it with the one or two kept texts of its length takes a third of that
 * (and stops at the first difference).
 */
export class TextKeyed<V> {
  readonly #byLength = new Map<number, { text: string; value: V }[]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(text: string): V | undefined {
    return this.#entry(text)?.value;
  }

  set(text: string, value: V): void {
    const entry = this.#entry(text);
    if (entry) {
      entry.value = value;
      return;
    }
    const entries = this.#byLength.get(text.length);
    if (entries) entries.push({ text, value });
    else this.#byLength.set(text.length, [{ text, value }]);
    this.#size++;
  }

  delete(text: string): void {
    const entries = this.#byLength.get(text.length);
    const at = entries ? entries.findIndex((entry) => entry.text === text) : -1;
    if (at < 0) return;
    entries!.splice(at, 1);
    if (entries!.length === 0) this.#byLength.delete(text.length);
    this.#size--;
  }

  clear(): void {
    this.#byLength.clear();
    this.#size = 0;
  }

  #entry(text: string): { text: string; value: V } | undefined {
    const entries = this.#byLength.get(text.length);
    if (entries) for (const entry of entries) if (entry.text === text) return entry;
    return undefined;
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
