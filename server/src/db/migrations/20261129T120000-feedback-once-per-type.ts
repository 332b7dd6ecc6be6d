import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * One piece of public chat feedback per type per message per session: a new
 * one replaces the old (README "Reliability"). Duplicates stored before keep
 * their newest, and the Status screen's feedback counters are counted again
 * from what remains.
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await sql`delete from public_chat_feedback where id not in (
    select max(id) from public_chat_feedback group by public_chat_message_id, session_id, type
  )`.execute(db);
  await sql`delete from public_chat_counters where name like 'feedback:%'`.execute(db);
  await sql`insert into public_chat_counters (name, value) select 'feedback:' || type, count(*) from public_chat_feedback group by type`.execute(db);
  await db.schema
    .createIndex('public_chat_feedback_one_per_type_idx')
    .unique()
    .on('public_chat_feedback')
    .columns(['public_chat_message_id', 'session_id', 'type'])
    .execute();
}
