import type { Database, Db } from '../db/database.ts';
import { onQueryThread } from '../db/query-thread.ts';
import { StatementTemplate } from '../db/statement-template.ts';

export interface WindowRow {
  identifier: string;
  client_ip: string | null;
  window_start: string;
  window_end: string;
  max_requests: number;
}

/** Counts one request in the identifier's window (one atomic upsert); returns the count after it. */
export async function countInWindow(database: Database, window: WindowRow & { now: string }): Promise<{ request_count: number; max_requests: number }> {
  const { now, ...row } = window;
  const [counted] = await countInWindows(database, { windows: [row], now });
  return counted!;
}

/**
 * Counts one request in each of several windows in one atomic multi-row
 * upsert, rows in identifier order (so concurrent requests lock them in the
 * same order on PostgreSQL); returns each window's count after it.
 */
export const countInWindows = onQueryThread('limits.countInWindows', async (
  database: Database,
  { windows, now }: { windows: WindowRow[]; now: string },
): Promise<{ identifier: string; request_count: number; max_requests: number }[]> => {
  const rows = [...windows]
    .sort((a, b) => (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0))
    .map((row) => ({ ...row, request_count: 1, limited: row.max_requests < 1, limited_at: row.max_requests < 1 ? now : null, created_at: now, updated_at: now }));
  const { rows: counted } = await countStatement.execute<{ identifier: string; request_count: number; max_requests: number }>(database.db, { rows, now });
  return counted;
});

type CountedRow = WindowRow & { request_count: number; limited: boolean; limited_at: string | null; created_at: string; updated_at: string };

const countStatement = new StatementTemplate((db, { rows, now }: { rows: CountedRow[]; now: string }) =>
  db
    .insertInto('public_chat_rate_limits')
    .values(rows)
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
    .returning(['identifier', 'request_count', 'max_requests']),
);

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
