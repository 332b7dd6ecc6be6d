import { sql, type Kysely } from 'kysely';

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
 * Indexes that every answer wrote to and nothing read, or wrote NULLs to:
 * - The session index of each call log table, and the client address index
 *   of the sessions: the console's filters on those columns match a
 *   substring (`like '%…%'`), which a B-tree cannot serve, and nothing else
 *   looks them up. Their keys are random, so each of an answer's five log
 *   rows changed a page of its own in them.
 * - The call logs' indexes on the chat message and the ask command now hold
 *   only the rows that have one: a public chat answer wrote four NULLs into
 *   the ask-command indexes, a Discord answer two into the message indexes.
 *   Lookups are by equality (the console's filters), which both engines
 *   answer from a partial index on `is not null`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('public_chat_sessions_client_ip_idx').execute();
  for (const table of PROVIDER_LOG_TABLES) {
    await db.schema.dropIndex(`${table}_session_idx`).execute();
    for (const [name, column] of [['message', 'public_chat_message_id'], ['ask_command', 'ask_command_id']] as const) {
      await db.schema.dropIndex(`${table}_${name}_idx`).execute();
      await db.schema.createIndex(`${table}_${name}_idx`).on(table).column(column).where(sql.ref(column), 'is not', null).execute();
    }
  }
}
