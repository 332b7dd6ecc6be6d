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
