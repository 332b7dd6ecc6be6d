import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidField } from '../errors.ts';

/**
 * Text that cannot be stored as it was sent: a NUL character (PostgreSQL's
 * text type refuses it, SQLite keeps it, so the engines would disagree) or a
 * UTF-16 surrogate without its pair (encoded to UTF-8 it silently becomes
 * U+FFFD). Tabs and newlines are fine.
 */
export const isStorableText = (text: string): boolean => text.isWellFormed() && !text.includes('\u0000');

export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

/** One value met while walking a request part, linked to its parent so a path is built only for the one that fails. */
interface Visit {
  value: unknown;
  key: string | null;
  parent: Visit | null;
}

/** A key as it can be shown in an error: the offending characters escaped the way JSON writes them. */
const printableKey = (key: string) => (isStorableText(key) ? key : JSON.stringify(key).slice(1, -1));

function pathOf(visit: Visit): string[] {
  const path: string[] = [];
  for (let at: Visit | null = visit; at?.key != null; at = at.parent) path.push(printableKey(at.key));
  return path.reverse();
}

/**
 * The path of the first string (or object key) in `root` that cannot be
 * stored, in document order, or null when every one can. Walks without
 * recursion, so a deeply nested body cannot overflow the stack.
 */
export function findUnstorableText(root: unknown): string[] | null {
  const stack: Visit[] = [{ value: root, key: null, parent: null }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const { value } = visit;
    if (typeof value === 'string') {
      if (!isStorableText(value)) return pathOf(visit);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, child] = entries[index]!;
        const childVisit = { value: child, key, parent: visit };
        if (!isStorableText(key)) return pathOf(childVisit);
        stack.push(childVisit);
      }
    }
  }
  return null;
}

/** The dotted path of a field, its middle left out when it is very deep (a nested array thousands of levels down). */
function fieldName(path: string[], part: string): string {
  if (path.length === 0) return part;
  const shown = path.length > 12 ? [...path.slice(0, 6), '…', ...path.slice(-4)] : path;
  const name = shown.join('.');
  return name.length > 200 ? `${name.slice(0, 200)}…` : name;
}

const PARTS = [
  { part: 'params', read: (request: FastifyRequest) => request.params },
  { part: 'query', read: (request: FastifyRequest) => request.query },
  { part: 'body', read: (request: FastifyRequest) => request.body },
] as const;

/**
 * Every route refuses text that cannot be stored (NUL, unpaired surrogates)
 * in its path parameters, query string and JSON body with a 400 naming the
 * field, before its own validation runs: one rule in one place, the same
 * answer on SQLite and PostgreSQL.
 */
export function refuseUnstorableText(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    for (const { part, read } of PARTS) {
      const path = findUnstorableText(read(request));
      if (path) throw invalidField(fieldName(path, part), UNSTORABLE_TEXT_MESSAGE);
    }
  });
}
