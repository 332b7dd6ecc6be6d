import { sql, type Kysely } from 'kysely';

/** Each list table and the time its rows are filtered and ordered by. */
const LISTS = [
  ['public_chat_sessions', 'created_at'],
  ['public_chat_messages', 'created_at'],
  ['public_chat_feedback', 'created_at'],
  ['public_chat_rate_limits', 'created_at'],
  ['openai_create_thread_logs', 'created_at'],
  ['openai_create_message_logs', 'created_at'],
  ['openai_create_run_logs', 'created_at'],
  ['openai_retrieve_run_logs', 'created_at'],
  ['openai_list_messages_logs', 'created_at'],
  ['openai_vector_store_logs', 'created_at'],
  ['crawler_runs', 'created_at'],
  ['crawler_events', 'start_at'],
] as const;

const LOG_TABLES = LISTS.map(([table]) => table).filter((table) => table.startsWith('openai_'));

/**
 * Indexes that keep the console's lists as fast with a million rows as with
 * a thousand (see `paged` in admin/list-query.ts):
 * - (time, id) on every list table, replacing the index on time alone: the
 *   date range and the order are one index walk, no sort;
 * - the same, partial, on the rows with an error (sessions, call logs) or
 *   over their limit (rate limits), so "has error" and "limited" pages read
 *   only those rows however rare they are;
 * - the message id on the call logs, for their message filter.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [table, time] of LISTS) {
    await db.schema.dropIndex(time === 'start_at' ? `${table}_start_idx` : `${table}_created_at_idx`).ifExists().execute();
    await db.schema.createIndex(`${table}_${time}_id_idx`).on(table).columns([time, 'id']).execute();
  }
  for (const table of ['public_chat_sessions', ...LOG_TABLES]) {
    await db.schema.createIndex(`${table}_errors_idx`).on(table).columns(['created_at', 'id']).where(sql.ref('error'), 'is not', null).execute();
  }
  await db.schema.createIndex('public_chat_rate_limits_limited_idx').on('public_chat_rate_limits').columns(['created_at', 'id']).where(sql<boolean>`limited`).execute();
  for (const table of LOG_TABLES) {
    await db.schema.createIndex(`${table}_message_idx`).on(table).column('public_chat_message_id').execute();
  }
}
