import type { Kysely } from 'kysely';
import { notNull, timestampType } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * The Discord bot:
 * - `discord_allowed_channel_ids`, the channels /ask and /whisper answer in
 *   (empty: everywhere);
 * - `discord_gateway`, one row every process shares: which process holds the
 *   gateway (the leader, under a lease like the ask pipeline's), whether an
 *   operator disconnected it, how it is and why, and the connects,
 *   disconnects and messages handled since the start of the database;
 * - `ask_command_feedback_undos`: how many times a user took back feedback
 *   on an answer (bounded by `feedback_max_undo`).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = timestampType(dialect);
  await db.schema.alterTable('runtime_config').addColumn('discord_allowed_channel_ids', 'text', (column) => column.notNull().defaultTo('')).execute();

  await db.schema
    .createTable('discord_gateway')
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('owner', 'text')
    .addColumn('lease_expires_at', ts)
    .addColumn('operator_disconnected', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('connected', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('state', 'text', (column) => column.notNull().defaultTo('off'))
    .addColumn('reason', 'text')
    .addColumn('connected_at', ts)
    .addColumn('connects', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('disconnects', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('messages_handled', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('commands_hash', 'text')
    .addColumn('updated_at', ts, notNull)
    .execute();

  await db.schema
    .createTable('ask_command_feedback_undos')
    .addColumn('ask_command_id', dialect === 'postgres' ? 'bigint' : 'integer', (column) => column.notNull().references('ask_commands.id').onDelete('cascade'))
    .addColumn('user_id', 'text', notNull)
    .addColumn('count', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('updated_at', ts, notNull)
    .addPrimaryKeyConstraint('ask_command_feedback_undos_pk', ['ask_command_id', 'user_id'])
    .execute();
}
