import { sql, type Kysely } from 'kysely';

const PROVIDER_LOG_TABLES = [
  'openai_create_thread_logs',
  'openai_create_message_logs',
  'openai_create_run_logs',
  'openai_retrieve_run_logs',
  'openai_list_messages_logs',
  'openai_vector_store_logs',
] as const;

/** A call log's references: a public chat row has no ask command, a Discord row no session or chat message. */
const REFERENCES = [
  ['session', 'session_id'],
  ['message', 'public_chat_message_id'],
  ['ask_command', 'ask_command_id'],
] as const;

/**
 * The call logs' indexes on what a row belongs to hold only the rows that
 * belong to one: every public chat answer wrote four log rows whose
 * ask_command_id was NULL into the ask-command index, and every Discord
 * answer two NULLs into the session and message indexes. Lookups are by
 * equality (the console's filters, the foreign keys' checks), which both
 * engines answer from a partial index on `is not null`; "from Discord
 * only" reads the whole of the ask-command index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of PROVIDER_LOG_TABLES) {
    for (const [name, column] of REFERENCES) {
      await db.schema.dropIndex(`${table}_${name}_idx`).execute();
      await db.schema.createIndex(`${table}_${name}_idx`).on(table).column(column).where(sql.ref(column), 'is not', null).execute();
    }
  }
}
