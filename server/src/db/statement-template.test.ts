import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { StatementTemplate } from './statement-template.ts';

describe(`statement templates on ${testDatabaseKind()}`, () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  type Setting = { name: string; value: string; created_at: string };
  const at = '2026-11-27T10:00:00.000Z';

  /** Runs `fn` without the test suites' check, which builds every statement again with Kysely. */
  async function unchecked<T>(fn: () => Promise<T>): Promise<T> {
    const check = StatementTemplate.check;
    StatementTemplate.check = false;
    try {
      return await fn();
    } finally {
      StatementTemplate.check = check;
    }
  }

  it('builds a statement once per shape and runs it with each call\'s values', async () => {
    const { db } = ctx.deps.database;
    let builds = 0;
    const insert = new StatementTemplate((kysely, { rows }: { rows: Setting[] }) => {
      builds++;
      return kysely.insertInto('app_settings').values(rows).returning('name');
    });
    await unchecked(async () => {
      expect((await insert.execute<{ name: string }>(db, { rows: [{ name: 'one', value: '1', created_at: at }] })).rows).toEqual([{ name: 'one' }]);
      expect((await insert.execute<{ name: string }>(db, { rows: [{ name: 'two', value: '2', created_at: at }] })).rows).toEqual([{ name: 'two' }]);
      expect(builds).toBe(1);
      // Another row count is another shape, built once more.
      await insert.execute(db, { rows: [{ name: 'three', value: '3', created_at: at }, { name: 'four', value: '4', created_at: at }] });
      await insert.execute(db, { rows: [{ name: 'five', value: '5', created_at: at }, { name: 'six', value: '6', created_at: at }] });
      expect(builds).toBe(2);
    });
    const stored = await db.selectFrom('app_settings').select(['name', 'value']).where('name', 'in', ['one', 'two', 'three', 'four', 'five', 'six']).orderBy('value').execute();
    expect(stored.map((row) => `${row.name} ${row.value}`)).toEqual(['one 1', 'two 2', 'three 3', 'four 4', 'five 5', 'six 6']);
  });

  it('builds a statement with very many values each time, as without a template', async () => {
    const { db } = ctx.deps.database;
    let builds = 0;
    const insert = new StatementTemplate((kysely, { rows }: { rows: Setting[] }) => {
      builds++;
      return kysely.insertInto('app_settings').values(rows);
    });
    const batch = (from: number) => Array.from({ length: 100 }, (_, i) => ({ name: `batch ${from + i}`, value: '1', created_at: at }));
    await unchecked(async () => {
      await insert.execute(db, { rows: batch(0) });
      await insert.execute(db, { rows: batch(100) });
    });
    expect(builds).toBe(2);
    expect(await db.selectFrom('app_settings').select((eb) => eb.fn.countAll<number>().as('count')).where('name', 'like', 'batch %').executeTakeFirst()).toEqual({ count: 200 });
  });

  it('runs in a transaction, leaves an undefined value out as Kysely does and reports the rows it changed', async () => {
    const { database } = ctx.deps;
    let builds = 0;
    const change = new StatementTemplate((kysely, { from, set }: { from: string; set: { name?: string; value?: string } }) => {
      builds++;
      return kysely.updateTable('app_settings').set(set).where('name', '=', from);
    });
    await database.db.insertInto('app_settings').values({ name: 'colour', value: 'red', created_at: at }).execute();
    await unchecked(async () => {
      const changed = await database.transaction((trx) => change.execute(trx, { from: 'colour', set: { value: 'blue', name: undefined } }));
      expect(Number(changed.numAffectedRows)).toBe(1);
      expect(Number((await change.execute(database.db, { from: 'no such setting', set: { value: 'green' } })).numAffectedRows)).toBe(0);
      expect(builds).toBe(1);
      await change.execute(database.db, { from: 'colour', set: { name: 'shade' } });
      expect(builds).toBe(2);
    });
    expect(await database.db.selectFrom('app_settings').select(['name', 'value']).where('name', 'in', ['colour', 'shade']).execute()).toEqual([{ name: 'shade', value: 'blue' }]);
  });

  it('refuses, where templates are checked (the tests), a build that computes with its values', async () => {
    expect(StatementTemplate.check).toBe(true);
    // The stand-ins are not numbers: the template would keep the first call's result for every call.
    const wrong = new StatementTemplate((kysely, { name, length }: { name: string; length: number }) =>
      kysely.selectFrom('app_settings').select('name').where('name', '=', name).limit(Number(length) > 0 ? 1 : 2),
    );
    await expect(wrong.execute(ctx.deps.database.db, { name: 'x', length: 3 })).rejects.toThrow('a statement template compiled differently from Kysely');
  });
});
