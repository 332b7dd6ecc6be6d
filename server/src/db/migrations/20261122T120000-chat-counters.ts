import { sql, type Kysely } from 'kysely';
import { notNull, timestampType } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * Counters the Status screen reads instead of scanning the public chat tables
 * (its cost must not grow with the data), the sets behind its distinct
 * counts, and indexes for the time-window counts (active and today's).
 * Counters start from whatever the tables already hold.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  await db.schema
    .createTable('public_chat_counters')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('value', big, notNull)
    .execute();
  await db.schema
    .createTable('public_chat_client_ips')
    .addColumn('client_ip', 'text', (column) => column.primaryKey())
    .addColumn('created_at', timestampType(dialect), notNull)
    .execute();
  await db.schema
    .createTable('public_chat_limited_identifiers')
    .addColumn('identifier', 'text', (column) => column.primaryKey())
    .addColumn('created_at', timestampType(dialect), notNull)
    .execute();
  await db.schema.createIndex('public_chat_sessions_expires_at_idx').on('public_chat_sessions').column('expires_at').execute();
  await db.schema.createIndex('public_chat_sessions_last_seen_at_idx').on('public_chat_sessions').column('last_seen_at').execute();

  // Seed from existing rows.
  const now = dialect === 'postgres' ? sql`now()` : sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
  await sql`insert into public_chat_client_ips (client_ip, created_at) select distinct client_ip, ${now} from public_chat_sessions where client_ip is not null`.execute(db);
  await sql`insert into public_chat_limited_identifiers (identifier, created_at) select distinct identifier, ${now} from public_chat_rate_limits where limited and identifier like 'session:%'`.execute(db);
  const durationMs =
    dialect === 'postgres'
      ? sql`coalesce(sum(extract(epoch from (last_seen_at - first_seen_at)) * 1000), 0)`
      : sql`coalesce(sum((julianday(last_seen_at) - julianday(first_seen_at)) * 86400000.0), 0)`;
  const seeds = [
    sql`select 'session_count' as name, count(*) as value from public_chat_sessions`,
    sql`select 'thread_count', count(thread_id) from public_chat_sessions`,
    sql`select 'client_ip_count', count(*) from public_chat_client_ips`,
    sql`select 'limited_session_count', count(*) from public_chat_limited_identifiers`,
    sql`select 'session_duration_ms_sum', cast(${durationMs} as ${sql.raw(big)}) from public_chat_sessions`,
    sql`select 'message_count', count(*) from public_chat_messages`,
    sql`select 'prompt_tokens', coalesce(sum(prompt_tokens), 0) from public_chat_sessions`,
    sql`select 'completion_tokens', coalesce(sum(completion_tokens), 0) from public_chat_sessions`,
    sql`select 'total_tokens', coalesce(sum(total_tokens), 0) from public_chat_sessions`,
    sql`select 'processing_ms_sum', coalesce(sum(processing_duration_ms), 0) from public_chat_messages where role = 'user' and state = 'completed'`,
    sql`select 'processing_count', count(*) from public_chat_messages where role = 'user' and state = 'completed' and processing_duration_ms is not null`,
    sql`select 'state:' || state, count(*) from public_chat_messages group by state`,
    sql`select 'run_status:' || run_status, count(*) from public_chat_messages where role = 'user' and run_status is not null group by run_status`,
    sql`select 'feedback:' || type, count(*) from public_chat_feedback group by type`,
  ];
  for (const seed of seeds) await sql`insert into public_chat_counters (name, value) ${seed}`.execute(db);
}
