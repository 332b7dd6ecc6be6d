import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * "New conversation" (DESIGN §9): a session remembers the newest message id
 * before its current conversation began, so the restored history shows only
 * what came after it.
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('public_chat_sessions').addColumn('conversation_after_id', 'integer').execute();
}
