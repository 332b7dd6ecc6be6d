import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * The Users screen reads only users not deleted: its page (by username, then
 * id) and its true total. A partial index on exactly those rows makes the
 * page an index walk, and carrying deleted_at lets SQLite count the total
 * from the index alone (it does not count from a partial index whose columns
 * leave out the filtered one). A plain index on deleted_at would count as
 * fast, but SQLite's planner then picks it for the page and sorts every
 * user. It replaces the index on every user by username. With 100,000 users
 * (bench/RESULTS.md) the first page went from 62 to 12 ms on SQLite.
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createIndex('users_live_username_idx')
    .on('users')
    .columns(['username', 'id', 'deleted_at'])
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.dropIndex('users_username_idx').execute();
}

export async function down(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.createIndex('users_username_idx').on('users').columns(['username', 'id']).execute();
  await db.schema.dropIndex('users_live_username_idx').execute();
}
