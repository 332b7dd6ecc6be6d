import { sql } from 'kysely';
import type { Database } from '../db/database.ts';

/** The public chat figures of the Status screen (SPEC §3 "Bot status" → public_chat), from indexed aggregates. */
export async function publicChatFigures(database: Database, now: string, todayStart: string) {
  const { db } = database;
  const sessions = await db
    .selectFrom('public_chat_sessions')
    .select((eb) => [
      eb.fn.countAll<number>().as('session_count'),
      eb.fn.count<number>('thread_id').distinct().as('unique_thread_count'),
      eb.fn.count<number>('client_ip').distinct().as('unique_client_ip_count'),
      eb.fn.sum<number>(eb.case().when('expires_at', '>', now).then(1).else(0).end()).as('active_session_count'),
      eb.fn.sum<number>(eb.case().when('last_seen_at', '>=', todayStart).then(1).else(0).end()).as('sessions_today'),
      eb.fn.sum<number>(eb.case().when('created_at', '>=', todayStart).then(1).else(0).end()).as('new_sessions_today'),
      eb.fn.sum<number>('prompt_tokens').as('total_prompt_tokens'),
      eb.fn.sum<number>('completion_tokens').as('total_completion_tokens'),
      eb.fn.sum<number>('total_tokens').as('total_tokens'),
      database.dialect === 'postgres'
        ? sql<number>`avg(extract(epoch from (last_seen_at - first_seen_at)) / 60.0)`.as('average_session_duration_minutes')
        : sql<number>`avg((julianday(last_seen_at) - julianday(first_seen_at)) * 1440.0)`.as('average_session_duration_minutes'),
    ])
    .executeTakeFirstOrThrow();

  const messages = await db
    .selectFrom('public_chat_messages')
    .select((eb) => [
      eb.fn.countAll<number>().as('message_count'),
      eb.fn.sum<number>(eb.case().when('state', '=', 'failed').then(1).else(0).end()).as('message_error_count'),
      eb.fn.sum<number>(eb.case().when('created_at', '>=', todayStart).then(1).else(0).end()).as('messages_today'),
    ])
    .executeTakeFirstOrThrow();

  const processing = await db
    .selectFrom('public_chat_messages')
    .select((eb) => eb.fn.avg<number>('processing_duration_ms').as('average_processing_time_ms'))
    .where('role', '=', 'user')
    .where('state', '=', 'completed')
    .executeTakeFirstOrThrow();

  const byState = await db.selectFrom('public_chat_messages').select(['state', (eb) => eb.fn.countAll<number>().as('count')]).groupBy('state').execute();
  const byRunStatus = await db
    .selectFrom('public_chat_messages')
    .select(['run_status', (eb) => eb.fn.countAll<number>().as('count')])
    .where('role', '=', 'user')
    .where('run_status', 'is not', null)
    .groupBy('run_status')
    .execute();
  const byFeedback = await db.selectFrom('public_chat_feedback').select(['type', (eb) => eb.fn.countAll<number>().as('count')]).groupBy('type').execute();
  const limited = await db
    .selectFrom('public_chat_rate_limits')
    .select((eb) => eb.fn.count<number>('identifier').distinct().as('count'))
    .where('limited', '=', true)
    .where('identifier', 'like', 'session:%')
    .executeTakeFirstOrThrow();

  const number = (value: unknown) => Number(value ?? 0);
  const counts = (rows: { count: number }[], key: (row: never) => string | null) =>
    Object.fromEntries(rows.map((row) => [key(row as never) ?? 'unknown', number(row.count)]));
  return {
    session_count: number(sessions.session_count),
    active_session_count: number(sessions.active_session_count),
    unique_thread_count: number(sessions.unique_thread_count),
    message_count: number(messages.message_count),
    message_error_count: number(messages.message_error_count),
    message_state_counts: counts(byState, (row: { state: string }) => row.state),
    run_status_counts: counts(byRunStatus, (row: { run_status: string | null }) => row.run_status),
    total_prompt_tokens: number(sessions.total_prompt_tokens),
    total_completion_tokens: number(sessions.total_completion_tokens),
    total_tokens: number(sessions.total_tokens),
    unique_client_ip_count: number(sessions.unique_client_ip_count),
    feedback_count: byFeedback.reduce((total, row) => total + number(row.count), 0),
    feedback_type_counts: counts(byFeedback, (row: { type: string }) => row.type),
    rate_limit_exceeded_count: number(limited.count),
    average_session_duration_minutes: number(sessions.average_session_duration_minutes),
    average_processing_time_ms: number(processing.average_processing_time_ms),
    messages_today: number(messages.messages_today),
    sessions_today: number(sessions.sessions_today),
    new_sessions_today: number(sessions.new_sessions_today),
  };
}

/** Every session starts a new conversation: its thread is forgotten. */
export const clearThreads = (database: Database, now: string) =>
  database.db.updateTable('public_chat_sessions').set({ thread_id: null, updated_at: now }).where('thread_id', 'is not', null).executeTakeFirst();
