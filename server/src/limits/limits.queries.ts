import type { Db } from '../db/database.ts';

/** Counts one request in the identifier's window (one atomic upsert); returns the count after it. */
export async function countInWindow(
  db: Db,
  window: { identifier: string; client_ip: string | null; window_start: string; window_end: string; max_requests: number; now: string },
): Promise<{ request_count: number; max_requests: number }> {
  const { now, ...values } = window;
  return db
    .insertInto('public_chat_rate_limits')
    .values({ ...values, request_count: 1, limited: window.max_requests < 1, limited_at: window.max_requests < 1 ? now : null, created_at: now, updated_at: now })
    .onConflict((conflict) =>
      conflict.columns(['identifier', 'window_start']).doUpdateSet((eb) => {
        const over = eb(eb('public_chat_rate_limits.request_count', '+', 1), '>', eb.ref('excluded.max_requests'));
        return {
          request_count: eb('public_chat_rate_limits.request_count', '+', 1),
          max_requests: eb.ref('excluded.max_requests'),
          limited: over.$castTo<boolean>(),
          limited_at: eb.case().when(over).then(eb.fn.coalesce('public_chat_rate_limits.limited_at', eb.val(now))).else(eb.ref('public_chat_rate_limits.limited_at')).end(),
          client_ip: eb.ref('excluded.client_ip'),
          updated_at: now,
        };
      }),
    )
    .returning(['request_count', 'max_requests'])
    .executeTakeFirstOrThrow();
}

/**
 * Takes back one request counted in the identifier's window (a request
 * refused after it was counted, before it reached the assistant). Leaves a
 * window already emptied alone.
 */
export async function uncountInWindow(db: Db, window: { identifier: string; window_start: string; now: string }): Promise<void> {
  await db
    .updateTable('public_chat_rate_limits')
    .set((eb) => ({
      request_count: eb('request_count', '-', 1),
      limited: eb(eb('request_count', '-', 1), '>', eb.ref('max_requests')).$castTo<boolean>(),
      updated_at: window.now,
    }))
    .where('identifier', '=', window.identifier)
    .where('window_start', '=', window.window_start)
    .where('request_count', '>', 0)
    .execute();
}
