import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * The status-check budget of the one run poller (`openai_max_polls_per_second`):
 * runs that are not streamed are looked at every poll interval within it,
 * instead of each backing off on a timer of its own.
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('runtime_config').addColumn('openai_max_polls_per_second', 'integer', (column) => column.notNull().defaultTo(20)).execute();
}
