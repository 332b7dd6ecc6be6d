import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.ts';

// Spelled out, as each migration does: a migration changes the tables as they were when it was written.
const PROVIDER_LOG_TABLES = [
  'openai_create_thread_logs',
  'openai_create_message_logs',
  'openai_create_run_logs',
  'openai_retrieve_run_logs',
  'openai_list_messages_logs',
  'openai_vector_store_logs',
] as const;

/**
 * PostgreSQL keeps a call log's row in its table as written, up to a page
 * (`toast_tuple_target` 8160 instead of about 2 KB). A row over 2 KB was
 * otherwise compressed or moved to the table's TOAST table as it was
 * inserted, on the answer's way to its reply: a streamed run's log (about
 * 2.8 KB: its request and the `response.created` event) failed to compress
 * by a quarter and went to the TOAST table uncompressed, a heap row and an
 * index entry more each time; the run's completion (about 2.5 KB of body)
 * was compressed. Logs are read on the console now and then and kept for 30
 * days; under a kilobyte more of disk per answer costs less than that work
 * at every answer. Rows over a page are still compressed or moved out.
 * SQLite keeps every row whole already.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  for (const table of PROVIDER_LOG_TABLES) await sql`alter table ${sql.id(table)} set (toast_tuple_target = 8160)`.execute(db);
}
