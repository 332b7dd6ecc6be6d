import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { migrationsFor } from '../db/migrations/index.ts';
import type { Deps } from '../deps.ts';
import { freshDatabase } from '../test-support/test-context.ts';

describe('the crawler health migration', () => {
  it('starts from the runs already stored: last success, last failure and the failures since', async () => {
    const fresh = freshDatabase();
    const database = await openDatabase(fresh.url, { schema: fresh.schema });
    try {
      const migrations = migrationsFor(database.dialect);
      const schema = database.dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(database.db)).rows[0]!.s : undefined;
      const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema });
      const before = Object.keys(migrations).sort().filter((name) => name < '20261125T100000-crawler-health').at(-1)!;
      expect((await migrator.migrateTo(before)).error).toBeUndefined();
      const run = (minute: number, error: string | null) => {
        const at = `2026-03-13T15:${String(minute).padStart(2, '0')}:00.000Z`;
        return { url: 'https://example.org/s.ics', error, created_at: at, updated_at: at };
      };
      await database.db.insertInto('crawler_runs').values([run(0, 'first failure'), run(10, null), run(20, 'timed out'), run(30, 'HTTP 502')]).execute();

      await migrateToLatest(database);
      const health = await database.db.selectFrom('crawler_health').selectAll().execute();
      expect(health).toEqual([
        {
          id: 1,
          last_success_at: '2026-03-13T15:10:00.000Z',
          last_failure_at: '2026-03-13T15:30:00.000Z',
          consecutive_failures: 2,
          last_error: 'HTTP 502',
        },
      ]);
    } finally {
      await fresh.dispose({ database, close: () => database.close() } as unknown as Deps);
    }
  });
});
