import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * How long personal data and bulky records are kept, as runtime
 * configuration (enforced by the hourly housekeeping). The values are
 * written out here so this migration never changes after it has run.
 */
const RETENTION: Record<string, number> = {
  retention_messages_days: 90,
  retention_client_ip_days: 30,
  retention_call_bodies_days: 30,
  retention_crawler_runs: 10,
};

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  for (const [column, value] of Object.entries(RETENTION)) {
    await db.schema
      .alterTable('runtime_config')
      .addColumn(column, 'integer', (col) => col.notNull().defaultTo(value))
      .execute();
  }
}
