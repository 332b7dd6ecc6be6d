import type { Database, Db } from '../db/database.ts';
import { onQueryThread } from '../db/query-thread.ts';
import { readCounters, setCounter } from '../chat/chat.queries.ts';

const prefixed = (counters: Map<string, number>, prefix: string) =>
  Object.fromEntries([...counters].filter(([name, value]) => name.startsWith(prefix) && value !== 0).map(([name, value]) => [name.slice(prefix.length), value]));

/**
 * The public chat figures of the Status screen (SPEC §3 "Bot status" →
 * public_chat). Totals come from counters kept with every write; only the
 * time-window counts (active, today) read rows, through indexes, so the cost
 * follows today's traffic rather than the size of the tables.
 */
export async function publicChatFigures(database: Database, now: string, todayStart: string) {
  const { db } = database;
  const counters = new Map((await readCounters(db)).map((row) => [row.name, Number(row.value)]));
  const counter = (name: string) => counters.get(name) ?? 0;
  const countWhere = async (table: 'public_chat_sessions' | 'public_chat_messages', column: 'expires_at' | 'last_seen_at' | 'created_at', from: string) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .where(column, column === 'expires_at' ? '>' : '>=', from)
          .executeTakeFirstOrThrow()
      ).count,
    );

  const sessionCount = counter('session_count');
  const processingCount = counter('processing_count');
  const feedbackTypes = prefixed(counters, 'feedback:');
  const states = prefixed(counters, 'state:');
  return {
    session_count: sessionCount,
    active_session_count: await countWhere('public_chat_sessions', 'expires_at', now),
    unique_thread_count: counter('thread_count'),
    message_count: counter('message_count'),
    message_error_count: states.failed ?? 0,
    message_state_counts: states,
    run_status_counts: prefixed(counters, 'run_status:'),
    total_prompt_tokens: counter('prompt_tokens'),
    total_completion_tokens: counter('completion_tokens'),
    total_tokens: counter('total_tokens'),
    unique_client_ip_count: counter('client_ip_count'),
    feedback_count: Object.values(feedbackTypes).reduce((total, value) => total + value, 0),
    feedback_type_counts: feedbackTypes,
    rate_limit_exceeded_count: counter('limited_session_count'),
    average_session_duration_minutes: sessionCount ? counter('session_duration_ms_sum') / sessionCount / 60_000 : 0,
    average_processing_time_ms: processingCount ? counter('processing_ms_sum') / processingCount : 0,
    messages_today: await countWhere('public_chat_messages', 'created_at', todayStart),
    sessions_today: await countWhere('public_chat_sessions', 'last_seen_at', todayStart),
    new_sessions_today: await countWhere('public_chat_sessions', 'created_at', todayStart),
  };
}

/** Every session starts a new conversation: threads are forgotten, and the thread count with them. */
export async function clearThreads(database: Database, now: string) {
  return database.transaction(async (trx) => {
    const result = await trx.updateTable('public_chat_sessions').set({ thread_id: null, updated_at: now }).where('thread_id', 'is not', null).executeTakeFirst();
    await setCounter(trx, 'thread_count', 0);
    return result;
  });
}


/**
 * Adds to the Status screen's shared totals (status_counters): one statement
 * for every change, keys in sorted order, so concurrent writers lock the
 * rows in the same order (no deadlocks on PostgreSQL). A process's periodic
 * flush (StatusCounters) is the event loop's one regular write at the peak:
 * it runs on the query thread.
 */
export const addStatusCounters = onQueryThread('status.addCounters', async (database: Database, deltas: Map<string, number>): Promise<void> => {
  const rows = [...deltas]
    .filter(([, delta]) => delta !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => ({ name, value }));
  if (rows.length === 0) return;
  await database.db
    .insertInto('status_counters')
    .values(rows)
    .onConflict((conflict) => conflict.column('name').doUpdateSet((eb) => ({ value: eb('status_counters.value', '+', eb.ref('excluded.value')) })))
    .execute();
});

export async function readStatusCounters(db: Db): Promise<Map<string, number>> {
  const rows = await db.selectFrom('status_counters').select(['name', 'value']).execute();
  return new Map(rows.map((row) => [row.name, Number(row.value)]));
}
