import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestContext, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { MAX_PREPARED, PREPARE_AFTER, StatementNames } from './pg-prepared.ts';
import { TextKeyed } from './text-keyed.ts';

describe('statements prepared on PostgreSQL', () => {
  it('names a statement once it recurs, the same name every time after, and never transaction control', () => {
    const names = new StatementNames();
    const text = 'select "value" from "app_settings" where "name" = $1';
    const given = Array.from({ length: PREPARE_AFTER + 2 }, () => names.nameFor(text));
    expect(given.slice(0, PREPARE_AFTER - 1)).toEqual(Array(PREPARE_AFTER - 1).fill(undefined));
    expect(given[PREPARE_AFTER - 1]).toMatch(/^concierge_[0-9a-f]{24}$/);
    expect(new Set(given.slice(PREPARE_AFTER - 1)).size).toBe(1);
    for (let n = 0; n < PREPARE_AFTER * 2; n++) {
      expect(names.nameFor('begin')).toBeUndefined();
      expect(names.nameFor('create index "i" on "t" ("c")')).toBeUndefined();
    }
  });

  it('names only so many statements in a process, so texts built anew each time cannot fill the server', () => {
    const names = new StatementNames();
    const recurring = (n: number) => `insert into "logs" ("a") values ${Array.from({ length: n }, (_, i) => `($${i + 1})`).join(', ')}`;
    for (let n = 1; n <= MAX_PREPARED; n++) for (let seen = 0; seen < PREPARE_AFTER; seen++) names.nameFor(recurring(n));
    expect(names.nameFor(recurring(1))).toBeDefined();
    for (let seen = 0; seen < PREPARE_AFTER * 2; seen++) expect(names.nameFor(recurring(MAX_PREPARED + 1))).toBeUndefined();
  });

  it('keeps texts of the same length apart and finds a text built anew by concatenation', () => {
    const kept = new TextKeyed<string>();
    const build = (table: string) => ['select * from "', table, '" where "id" = $1'].reduce((text, part) => text + part, '');
    kept.set(build('aaaa'), 'a');
    kept.set(build('bbbb'), 'b');
    kept.set(build('aaaa'), 'a again');
    expect(kept.size).toBe(2);
    expect([kept.get(build('aaaa')), kept.get(build('bbbb')), kept.get(build('cccc'))]).toEqual(['a again', 'b', undefined]);
    kept.delete(build('aaaa'));
    kept.delete(build('cccc'));
    expect([kept.size, kept.get(build('aaaa')), kept.get(build('bbbb'))]).toEqual([1, undefined, 'b']);
    kept.clear();
    expect([kept.size, kept.get(build('bbbb'))]).toEqual([0, undefined]);
  });

  it('names two statements of the same length apart', () => {
    const names = new StatementNames();
    const [a, b] = ['select "a" from "t" where "x" = $1', 'select "b" from "t" where "x" = $1'];
    for (let seen = 0; seen < PREPARE_AFTER; seen++) [a, b].forEach((text) => names.nameFor(text));
    expect(names.nameFor(a)).toMatch(/^concierge_/);
    expect(names.nameFor(b)).toMatch(/^concierge_/);
    expect(names.nameFor(a)).not.toBe(names.nameFor(b));
  });

  describe.runIf(testDatabaseKind() === 'postgres')('on a server', () => {
    let ctx: TestContext;
    afterEach(() => ctx.close());

    it('runs a recurring query as one prepared statement per connection, with the right rows each time', async () => {
      ctx = await createTestContext();
      const { database } = ctx.deps;
      const now = new Date().toISOString();
      await database.db.insertInto('app_settings').values([{ name: 'a', value: '1', created_at: now }, { name: 'b', value: '2', created_at: now }]).execute();
      // On one connection (a transaction) so that its prepared statements can be read.
      const { values, prepared } = await database.transaction(async (trx) => {
        const values: (string | undefined)[] = [];
        for (let n = 0; n < 6; n++) values.push((await trx.selectFrom('app_settings').select('value').where('name', '=', n % 2 ? 'b' : 'a').executeTakeFirst())?.value);
        const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'concierge\\_%'`.execute(trx);
        return { values, prepared: rows.map((row) => row.statement) };
      });
      expect(values).toEqual(['1', '2', '1', '2', '1', '2']);
      expect(prepared.filter((statement) => statement.includes('"app_settings"'))).toHaveLength(1);
    });
  });
});
