import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { Database } from '../db/database.ts';

/**
 * For a suite whose tests each open a SQLite file of their own (the
 * checkpoint and query threads, which an in-memory database does not get):
 * before each test a fresh temporary folder, `file` the database's path in
 * it; after the test, the database it left in `database` is closed and the
 * folder removed.
 */
export function sqliteFileForEachTest(prefix: string): { readonly file: string; database: Database | undefined } {
  let dir = '';
  const state = { file: '', database: undefined as Database | undefined };
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), `concierge-${prefix}-`));
    state.file = path.join(dir, 'db.sqlite');
  });
  afterEach(async () => {
    await state.database?.close();
    state.database = undefined;
    rmSync(dir, { recursive: true, force: true });
  });
  return state;
}
