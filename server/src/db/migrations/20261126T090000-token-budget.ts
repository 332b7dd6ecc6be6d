import type { Kysely } from 'kysely';
import { notNull, timestampType } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * The spending cap: a daily token budget in the runtime configuration and
 * what happens when it is spent, and the provider tokens spent per
 * convention day (shared by every process).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('runtime_config').addColumn('daily_token_budget', 'integer', (column) => column.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('runtime_config').addColumn('token_budget_action', 'text', (column) => column.notNull().defaultTo('offline')).execute();
  await db.schema
    .createTable('token_spend')
    // The convention-local day, e.g. 2026-11-21.
    .addColumn('day', 'text', (column) => column.primaryKey())
    .addColumn('tokens', dialect === 'postgres' ? 'bigint' : 'integer', (column) => column.notNull().defaultTo(0))
    // When the day's budget was first found spent (the notification goes out once).
    .addColumn('exhausted_at', timestampType(dialect))
    .addColumn('updated_at', timestampType(dialect), notNull)
    .execute();
}
