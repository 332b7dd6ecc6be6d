import { sql, type Kysely } from 'kysely';
import { idRefType, notNull, timestampType, withId, withTimestamps } from '../columns.ts';
import type { Dialect } from '../database.ts';

const PROVIDER_LOG_TABLES = [
  'openai_create_thread_logs',
  'openai_create_message_logs',
  'openai_create_run_logs',
  'openai_retrieve_run_logs',
  'openai_list_messages_logs',
  'openai_vector_store_logs',
] as const;

/**
 * The ask pipeline shared by every front (DESIGN §6, §9 "Ask pipeline ownership"):
 * - public chat questions become resumable work: the thread, provider message
 *   and run they were asked on, the step reached, the attempts made, and the
 *   owner (a process) with its lease;
 * - the Discord side's users (SPEC §3 "User"), ask commands as work rows
 *   (SPEC §3 "Ask command record"), their feedback, and stored Discord messages;
 * - provider call logs learn the ask command they were made for.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = timestampType(dialect);
  const ref = idRefType(dialect);

  for (const [column, type] of [
    ['thread_id', 'text'],
    ['provider_message_id', 'text'],
    ['step', 'text'],
    ['owner', 'text'],
    ['lease_expires_at', ts],
  ] as const) {
    await db.schema.alterTable('public_chat_messages').addColumn(column, type).execute();
  }
  await db.schema.alterTable('public_chat_messages').addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0)).execute();
  // Recovery looks only at questions still being answered.
  await db.schema
    .createIndex('public_chat_messages_in_flight_idx')
    .on('public_chat_messages')
    .columns(['lease_expires_at', 'id'])
    .where(sql.ref('state'), '=', 'processing')
    .execute();

  await db.schema
    .createTable('users')
    // The Discord user id (a snowflake, kept as text).
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('username', 'text', notNull)
    .addColumn('global_name', 'text')
    .addColumn('bot', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('content', 'text')
    .addColumn('thread_id', 'text')
    .addColumn('priority', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('ignored', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('donated', 'boolean', (column) => column.notNull().defaultTo(false))
    // Per-user overrides; null means "the global setting".
    .addColumn('request_limit_6h', 'integer')
    .addColumn('request_limit_24h', 'integer')
    .addColumn('openai_truncation_strategy_type', 'text')
    .addColumn('openai_truncation_strategy_last_messages', 'integer')
    .addColumn('openai_max_completion_tokens', 'integer')
    .addColumn('openai_max_prompt_tokens', 'integer')
    .addColumn('assistant_additional_instructions', 'text')
    .addColumn('assistant_poll_interval', 'text')
    .addColumn('assistant_max_poll_interval', 'text')
    .addColumn('forget_count', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('created_at', ts, notNull)
    .addColumn('updated_at', ts, notNull)
    .addColumn('deleted_at', ts)
    .execute();
  await db.schema.createIndex('users_username_idx').on('users').columns(['username', 'id']).execute();

  let commands = withTimestamps(withId(db.schema.createTable('ask_commands'), dialect), dialect)
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id'))
    .addColumn('state', 'text', notNull)
    .addColumn('step', 'text', notNull)
    .addColumn('prompt', 'text', notNull)
    .addColumn('whisper', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('thread_id', 'text')
    // The provider's id of the question in the thread.
    .addColumn('message_id', 'text')
    .addColumn('run_id', 'text')
    .addColumn('run_status', 'text')
    .addColumn('priority', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('total_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('custom_id', 'text');
  for (const flag of [
    'disable_good',
    'disable_outdated',
    'disable_hallucinated',
    'disable_other',
    'show_good',
    'show_outdated',
    'show_hallucinated',
    'show_other',
    'show_undo',
  ]) {
    commands = commands.addColumn(flag, 'boolean', (column) => column.notNull().defaultTo(false));
  }
  await commands
    .addColumn('interaction_id', 'text')
    // The platform's id of the message that carries the answer.
    .addColumn('discord_message_id', 'text')
    .addColumn('token', 'text')
    .addColumn('token_expires', ts)
    .addColumn('application_id', 'text')
    .addColumn('type', 'text', notNull)
    .addColumn('guild_id', 'text')
    .addColumn('channel_id', 'text')
    .addColumn('context', 'text')
    .addColumn('content', 'text')
    .addColumn('started_at', ts)
    .addColumn('finished_at', ts)
    .addColumn('acknowledged', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('response', 'text')
    .addColumn('sources', 'text')
    .addColumn('error', 'text')
    .addColumn('processing_duration_ms', 'integer')
    .addColumn('owner', 'text')
    .addColumn('lease_expires_at', ts)
    .execute();
  await db.schema.createIndex('ask_commands_created_at_id_idx').on('ask_commands').columns(['created_at', 'id']).execute();
  // The queue: priority first, then oldest.
  await db.schema
    .createIndex('ask_commands_queue_idx')
    .on('ask_commands')
    .columns(['priority', 'id'])
    .where(sql.ref('state'), '=', 'queued')
    .execute();
  // One command in flight per user, held by the database itself.
  await db.schema.createIndex('ask_commands_one_in_flight_idx').on('ask_commands').column('user_id').unique().where(sql.ref('state'), '=', 'in_progress').execute();
  await db.schema
    .createIndex('ask_commands_in_flight_idx')
    .on('ask_commands')
    .columns(['lease_expires_at', 'id'])
    .where(sql.ref('state'), '=', 'in_progress')
    .execute();
  // Quotas and a user's history read the user's recent commands.
  await db.schema.createIndex('ask_commands_user_created_idx').on('ask_commands').columns(['user_id', 'created_at']).execute();
  await db.schema.createIndex('ask_commands_interaction_idx').on('ask_commands').column('interaction_id').unique().execute();

  await withTimestamps(withId(db.schema.createTable('ask_command_feedback'), dialect), dialect)
    .addColumn('ask_command_id', ref, (column) => column.notNull().references('ask_commands.id').onDelete('cascade'))
    // Who gave it (any Discord user may vote on a public answer).
    .addColumn('user_id', 'text', notNull)
    .addColumn('type', 'text', notNull)
    .addColumn('description', 'text')
    .execute();
  await db.schema
    .createIndex('ask_command_feedback_vote_idx')
    .on('ask_command_feedback')
    .columns(['ask_command_id', 'user_id', 'type'])
    .unique()
    .execute();
  await db.schema.createIndex('ask_command_feedback_user_idx').on('ask_command_feedback').columns(['user_id', 'type']).execute();

  await withTimestamps(withId(db.schema.createTable('discord_messages'), dialect), dialect)
    .addColumn('message_id', 'text', notNull)
    .addColumn('content', 'text')
    .addColumn('channel_id', 'text')
    .addColumn('guild_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('username', 'text')
    .addColumn('global_name', 'text')
    .addColumn('interaction_id', 'text')
    .addColumn('referenced_message_id', 'text')
    .addColumn('payload', 'text')
    .execute();
  await db.schema.createIndex('discord_messages_created_at_id_idx').on('discord_messages').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('discord_messages_message_idx').on('discord_messages').column('message_id').unique().execute();

  for (const table of PROVIDER_LOG_TABLES) {
    await db.schema.alterTable(table).addColumn('ask_command_id', ref).execute();
    await db.schema.createIndex(`${table}_ask_command_idx`).on(table).column('ask_command_id').execute();
  }
}
