import type { Kysely } from 'kysely';
import { idRefType, notNull, timestampType, withId, withTimestamps } from '../columns.ts';
import type { Dialect } from '../database.ts';

/** The five assistant step logs of SPEC §3 "AI provider log entry", plus one for vector store calls. */
const PROVIDER_LOG_TABLES = [
  'openai_create_thread_logs',
  'openai_create_message_logs',
  'openai_create_run_logs',
  'openai_retrieve_run_logs',
  'openai_list_messages_logs',
  'openai_vector_store_logs',
] as const;

/**
 * Public chat (sessions, messages, feedback, rate-limit windows, spent
 * verification tokens), the assistant's call logs, and the offline `local`
 * provider's own threads, runs and knowledge files.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = timestampType(dialect);
  const ref = idRefType(dialect);

  await withTimestamps(withId(db.schema.createTable('public_chat_sessions'), dialect), dialect)
    .addColumn('session_id', 'text', (column) => column.notNull().unique())
    .addColumn('client_ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('referer', 'text')
    .addColumn('thread_id', 'text')
    .addColumn('message_count', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('total_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('active', 'boolean', (column) => column.notNull().defaultTo(true))
    .addColumn('verified', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('verified_at', ts)
    // Set while an answer is being produced: one request in flight per session.
    .addColumn('in_flight_since', ts)
    .addColumn('first_seen_at', ts, notNull)
    .addColumn('last_seen_at', ts, notNull)
    .addColumn('expires_at', ts, notNull)
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('public_chat_sessions_created_at_idx').on('public_chat_sessions').column('created_at').execute();
  await db.schema.createIndex('public_chat_sessions_client_ip_idx').on('public_chat_sessions').column('client_ip').execute();

  await withTimestamps(withId(db.schema.createTable('public_chat_messages'), dialect), dialect)
    .addColumn('session_id', 'text', (column) => column.notNull().references('public_chat_sessions.session_id').onDelete('cascade'))
    .addColumn('role', 'text', notNull)
    .addColumn('content', 'text', notNull)
    .addColumn('response', 'text')
    .addColumn('state', 'text', notNull)
    .addColumn('prompt_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('total_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('client_ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('openai_message_id', 'text')
    .addColumn('run_id', 'text')
    .addColumn('run_status', 'text')
    .addColumn('processing_duration_ms', 'integer')
    .addColumn('response_latency_ms', 'integer')
    // The browser's id for the exchange, so a retry over flaky Wi-Fi is answered once.
    .addColumn('client_message_id', 'text')
    // JSON array of {file_id, filename} the answer cites.
    .addColumn('sources', 'text')
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('public_chat_messages_session_idx').on('public_chat_messages').columns(['session_id', 'id']).execute();
  await db.schema.createIndex('public_chat_messages_created_at_idx').on('public_chat_messages').column('created_at').execute();
  await db.schema
    .createIndex('public_chat_messages_client_message_idx')
    .on('public_chat_messages')
    .columns(['session_id', 'client_message_id', 'role'])
    .unique()
    .execute();

  await withTimestamps(withId(db.schema.createTable('public_chat_feedback'), dialect), dialect)
    .addColumn('public_chat_message_id', ref, (column) => column.notNull().references('public_chat_messages.id').onDelete('cascade'))
    .addColumn('session_id', 'text', notNull)
    .addColumn('type', 'text', notNull)
    .addColumn('description', 'text')
    .addColumn('detail', 'text')
    .addColumn('client_ip', 'text')
    .addColumn('user_agent', 'text')
    .execute();
  await db.schema.createIndex('public_chat_feedback_message_idx').on('public_chat_feedback').column('public_chat_message_id').execute();
  await db.schema.createIndex('public_chat_feedback_created_at_idx').on('public_chat_feedback').column('created_at').execute();

  await withTimestamps(withId(db.schema.createTable('public_chat_rate_limits'), dialect), dialect)
    .addColumn('identifier', 'text', notNull)
    .addColumn('client_ip', 'text')
    .addColumn('window_start', ts, notNull)
    .addColumn('window_end', ts, notNull)
    .addColumn('request_count', 'integer', notNull)
    .addColumn('max_requests', 'integer', notNull)
    .addColumn('limited', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('limited_at', ts)
    .addColumn('notes', 'text')
    .execute();
  await db.schema
    .createIndex('public_chat_rate_limits_window_idx')
    .on('public_chat_rate_limits')
    .columns(['identifier', 'window_start'])
    .unique()
    .execute();
  await db.schema.createIndex('public_chat_rate_limits_created_at_idx').on('public_chat_rate_limits').column('created_at').execute();

  await db.schema
    .createTable('spent_verification_tokens')
    .addColumn('token_hash', 'text', (column) => column.primaryKey())
    .addColumn('created_at', ts, notNull)
    .execute();

  for (const table of PROVIDER_LOG_TABLES) {
    await withTimestamps(withId(db.schema.createTable(table), dialect), dialect)
      .addColumn('session_id', 'text')
      .addColumn('public_chat_message_id', ref)
      .addColumn('client_ip', 'text')
      .addColumn('user_agent', 'text')
      .addColumn('operation', 'text')
      .addColumn('request_started', ts, notNull)
      .addColumn('request_ended', ts)
      .addColumn('request_body', 'text')
      .addColumn('response_body', 'text')
      .addColumn('response_headers', 'text')
      .addColumn('error', 'text')
      .execute();
    await db.schema.createIndex(`${table}_created_at_idx`).on(table).column('created_at').execute();
    await db.schema.createIndex(`${table}_session_idx`).on(table).column('session_id').execute();
  }

  // The offline provider's threads, messages and runs (it follows the same steps as OpenAI).
  await db.schema
    .createTable('local_threads')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('created_at', ts, notNull)
    .execute();
  await db.schema
    .createTable('local_messages')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('thread_id', 'text', (column) => column.notNull().references('local_threads.id').onDelete('cascade'))
    .addColumn('run_id', 'text')
    .addColumn('role', 'text', notNull)
    .addColumn('content', 'text', notNull)
    .addColumn('sources', 'text')
    .addColumn('created_at', ts, notNull)
    .execute();
  await db.schema.createIndex('local_messages_thread_idx').on('local_messages').columns(['thread_id', 'created_at']).execute();
  await db.schema
    .createTable('local_runs')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('thread_id', 'text', (column) => column.notNull().references('local_threads.id').onDelete('cascade'))
    .addColumn('status', 'text', notNull)
    .addColumn('prompt_tokens', 'integer', notNull)
    .addColumn('completion_tokens', 'integer', notNull)
    .addColumn('error', 'text')
    .addColumn('created_at', ts, notNull)
    .execute();

  // The offline provider's "vector stores": files kept in the database and indexed for full-text search.
  await db.schema
    .createTable('local_vector_stores')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('name', 'text', notNull)
    .addColumn('created_at', ts, notNull)
    .execute();
  await db.schema
    .createTable('local_files')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('vector_store_id', 'text', (column) => column.notNull().references('local_vector_stores.id').onDelete('cascade'))
    .addColumn('filename', 'text', notNull)
    .addColumn('bytes', 'integer', notNull)
    .addColumn('content', 'text', notNull)
    .addColumn('created_at', ts, notNull)
    .execute();
}
