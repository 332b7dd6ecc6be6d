import type { Kysely } from 'kysely';
import { timestampType } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * Growing sign-in delays per account: an account's throttle row says until
 * when its next attempt from an unknown device must wait.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('login_throttle').addColumn('blocked_until', timestampType(dialect)).execute();
}
