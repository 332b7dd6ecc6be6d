import type { Kysely } from 'kysely';
import { idRefType, notNull, timestampType, withId, withTimestamps } from '../columns.ts';
import type { Dialect } from '../database.ts';

/** Admin accounts and sessions, sign-in throttling, app settings and the runtime configuration row. */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = timestampType(dialect);

  await withTimestamps(withId(db.schema.createTable('admin_users'), dialect), dialect)
    .addColumn('username', 'text', (column) => column.notNull().unique())
    .addColumn('password_hash', 'text', notNull)
    .execute();

  await db.schema
    .createTable('admin_sessions')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('admin_user_id', idRefType(dialect), (column) => column.notNull().references('admin_users.id').onDelete('cascade'))
    .addColumn('client_ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', ts, notNull)
    .addColumn('last_seen_at', ts, notNull)
    .addColumn('expires_at', ts, notNull)
    .addColumn('absolute_expires_at', ts, notNull)
    .execute();
  await db.schema.createIndex('admin_sessions_admin_user_id_idx').on('admin_sessions').column('admin_user_id').execute();
  await db.schema.createIndex('admin_sessions_expires_at_idx').on('admin_sessions').column('expires_at').execute();

  await db.schema
    .createTable('login_throttle')
    .addColumn('key', 'text', (column) => column.primaryKey())
    .addColumn('window_start', ts, notNull)
    .addColumn('failures', 'integer', notNull)
    .execute();

  await db.schema
    .createTable('app_settings')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('value', 'text', notNull)
    .addColumn('created_at', ts, notNull)
    .execute();

  let config = db.schema.createTable('runtime_config').addColumn('id', 'integer', (column) => column.primaryKey());
  const columns: [string, 'boolean' | 'text' | 'integer' | 'double precision'][] = [
    ['paused', 'boolean'],
    ['recover_panic', 'boolean'],
    ['discord_gateway_enabled', 'boolean'],
    ['discord_custom_status', 'text'],
    ['discord_error_message', 'text'],
    ['discord_rate_limit_message', 'text'],
    ['discord_notification_channel_id', 'text'],
    ['feedback_enabled', 'boolean'],
    ['feedback_modal_title', 'text'],
    ['feedback_modal_input_label', 'text'],
    ['feedback_modal_placeholder', 'text'],
    ['feedback_modal_min_length', 'integer'],
    ['feedback_modal_max_length', 'integer'],
    ['feedback_max_undo', 'integer'],
    ['ask_command_max_attempts', 'integer'],
    ['ask_command_description', 'text'],
    ['ask_command_option_description', 'text'],
    ['ask_command_min_length', 'integer'],
    ['ask_command_max_length', 'integer'],
    ['whisper_command_description', 'text'],
    ['whisper_command_option_description', 'text'],
    ['ack_early', 'boolean'],
    ['openai_truncation_strategy_type', 'text'],
    ['openai_truncation_strategy_last_messages', 'integer'],
    ['openai_max_requests_per_second', 'double precision'],
    ['openai_max_prompt_tokens', 'integer'],
    ['openai_max_completion_tokens', 'integer'],
    ['donated_role_id', 'text'],
    ['assistant_poll_interval', 'text'],
    ['assistant_max_poll_interval', 'text'],
    ['assistant_instructions', 'text'],
    ['assistant_additional_instructions', 'text'],
    ['crawler_schedule', 'text'],
    ['user_ask_command_limit_6h', 'integer'],
    ['donation_url', 'text'],
    ['public_chat_enabled', 'boolean'],
    ['public_chat_requests_per_minute', 'integer'],
    ['public_chat_turnstile_validation_enabled', 'boolean'],
    ['log_level', 'text'],
    ['openai_log_level', 'text'],
    ['discord_log_level', 'text'],
    ['discordgo_log_level', 'text'],
    ['database_log_level', 'text'],
    ['discord_webhook_log_level', 'text'],
    ['api_log_level', 'text'],
  ];
  for (const [name, type] of columns) {
    config = config.addColumn(name, dialect === 'sqlite' && type === 'double precision' ? 'real' : type, notNull);
  }
  await withTimestamps(config, dialect).execute();
}
