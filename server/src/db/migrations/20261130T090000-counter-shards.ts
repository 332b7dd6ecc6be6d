import { sql, type Kysely } from 'kysely';
import { notNull } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * The Status counters get a shard: on PostgreSQL every answer's transaction
 * adds to the same dozen counters, and with one row per counter concurrent
 * answers queued on its row lock, each waiting for the one before it to
 * commit. Now each connection adds to rows of its own (chat.queries
 * `bumpCounters`) and a counter is the sum of its rows. What was counted
 * so far stays, as shard 0 (SQLite writes only shard 0: one writer).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  await db.schema
    .createTable('public_chat_counter_shards')
    .addColumn('name', 'text', notNull)
    .addColumn('shard', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('value', big, notNull)
    .addPrimaryKeyConstraint('public_chat_counters_name_shard_pk', ['name', 'shard'])
    .execute();
  await sql`insert into public_chat_counter_shards (name, shard, value) select name, 0, value from public_chat_counters`.execute(db);
  await db.schema.dropTable('public_chat_counters').execute();
  await db.schema.alterTable('public_chat_counter_shards').renameTo('public_chat_counters').execute();
}
