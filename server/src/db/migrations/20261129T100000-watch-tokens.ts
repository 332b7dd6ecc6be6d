import type { Kysely } from 'kysely';
import { notNull, timestampType } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * Single-use tokens of the Watch feed's websocket (DESIGN §9 "Watch"), kept in
 * the database so that a token issued by one process is accepted by any other
 * behind the same load balancer. Only the token's hash is stored.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('watch_tokens')
    .addColumn('id', 'text', (column) => column.primaryKey())
    // The admin session (admin_sessions.id) the token was issued for: the connection lives only as long as it.
    .addColumn('session_id', 'text', notNull)
    .addColumn('username', 'text', notNull)
    .addColumn('created_at', timestampType(dialect), notNull)
    .addColumn('expires_at', timestampType(dialect), notNull)
    .execute();
  await db.schema.createIndex('watch_tokens_expires_at_idx').on('watch_tokens').column('expires_at').execute();
}
