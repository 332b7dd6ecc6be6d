import { sql, type Kysely } from 'kysely';
import { timestampType } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * The crawler's health in one row (id 1): when it last fetched the schedule
 * successfully (stored or found unchanged) and when it last failed, and how
 * many times in a row it has failed. Kept in the database because any
 * process may be asked for /metrics while only one runs the crawler.
 * Seeded from the runs already stored; a new database gets its row at the
 * first check (so a freshly migrated database holds no rows at all).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('crawler_health')
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('last_success_at', timestampType(dialect))
    .addColumn('last_failure_at', timestampType(dialect))
    .addColumn('consecutive_failures', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .execute();
  await sql`
    insert into crawler_health (id, last_success_at, last_failure_at, consecutive_failures, last_error)
    select 1,
      (select max(updated_at) from crawler_runs where error is null),
      (select max(created_at) from crawler_runs where error is not null),
      (select count(*) from crawler_runs where error is not null
         and id > coalesce((select max(id) from crawler_runs where error is null), 0)),
      (select error from crawler_runs where error is not null order by id desc limit 1)
    where exists (select 1 from crawler_runs)
  `.execute(db);
}
