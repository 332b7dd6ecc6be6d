import type { Kysely } from 'kysely';
import { notNull, timestampType, withId } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * What several processes on one PostgreSQL share (README "Several processes"):
 * the Status screen's counters (API requests, provider calls, pauses, crawler
 * checks), the provider's request budget, and the payloads of cross-process
 * events too big for a NOTIFY.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  await db.schema
    .createTable('status_counters')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('value', big, notNull)
    .execute();
  await db.schema
    .createTable('rate_budgets')
    .addColumn('name', 'text', (column) => column.primaryKey())
    // When the next request may go, in milliseconds since the epoch (a token bucket of one token, kept as its refill time).
    .addColumn('next_slot_ms', big, notNull)
    .execute();
  await withId(db.schema.createTable('cluster_event_payloads'), dialect)
    .addColumn('payload', 'text', notNull)
    .addColumn('created_at', timestampType(dialect), notNull)
    .execute();
  await db.schema.createIndex('cluster_event_payloads_created_at_idx').on('cluster_event_payloads').column('created_at').execute();
}
