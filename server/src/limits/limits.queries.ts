import { sql } from 'kysely';
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
export const countInWindows = onQueryThread(
  'limits.countInWindows',
  async (database: Database, { windows, now }: { windows: WindowRow[]; now: string }): Promise<WindowCounted[]> => {
    const { rows: counted } = await countStatement.execute<WindowCounted>(database.db, { rows: countedRows(windows, now), now });
    return counted;
  },
  {
    // The requests that came in together, counted in one upsert: a window that several of them count (a venue's
    // shared address) is one row counted that many times, and each request gets its own count, in their order.
    batch: {
      dialects: ['postgres'],
      // A request counts in the windows of its moment: requests either side of a window's end go apart.
      shape: ({ windows }) => windows[0]?.window_start ?? '',
      run: async (database, calls) => {
        const rows = new Map<string, CountedRow>();
        // Each request's windows, and which of the batch's requests it is in each (1 for the first).
        const counting = calls.map(({ windows, now }) =>
          countedRows(windows, now).map((window) => {
            const row = rows.get(window.identifier);
            if (!row) {
              rows.set(window.identifier, window);
              return { identifier: window.identifier, nth: 1 };
            }
            // The later request's address, limit and time, as counting them one after another would leave them.
            const request_count = row.request_count + 1;
            const limited = request_count > window.max_requests;
            rows.set(window.identifier, { ...window, request_count, limited, limited_at: row.limited_at ?? (limited ? now : null), created_at: row.created_at });
            return { identifier: window.identifier, nth: request_count };
          }),
        );
        const { rows: counted } = await sql<WindowCounted>`
          insert into public_chat_rate_limits (identifier, client_ip, window_start, window_end, max_requests, request_count, limited, limited_at, created_at, updated_at)
          select identifier, client_ip, window_start, window_end, max_requests, request_count, limited, limited_at, created_at, updated_at
          from json_populate_recordset(null::public_chat_rate_limits, cast(${JSON.stringify([...rows.values()].sort(byIdentifier))} as json)) order by identifier
          on conflict (identifier, window_start) do update set
            request_count = public_chat_rate_limits.request_count + excluded.request_count,
            max_requests = excluded.max_requests,
            limited = public_chat_rate_limits.request_count + excluded.request_count > excluded.max_requests,
            limited_at = case when public_chat_rate_limits.request_count + excluded.request_count > excluded.max_requests
              then coalesce(public_chat_rate_limits.limited_at, excluded.updated_at) else public_chat_rate_limits.limited_at end,
            client_ip = excluded.client_ip,
            updated_at = excluded.updated_at
          returning identifier, request_count, max_requests`.execute(database.db);
        // Each window's count after the whole batch, less the requests of the batch that came after this one.
        const after = new Map(counted.map((row) => [row.identifier, row]));
        return counting.map((windows) =>
          windows.map(({ identifier, nth }) => {
            const row = after.get(identifier)!;
            return { ...row, request_count: Number(row.request_count) - rows.get(identifier)!.request_count + nth };
          }),
        );
      },
    },
  },
);

type WindowCounted = { identifier: string; request_count: number; max_requests: number };

const byIdentifier = (a: { identifier: string }, b: { identifier: string }) => (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0);

/** The rows a request's windows are counted with, in identifier order (the order their rows are locked in). */
const countedRows = (windows: WindowRow[], now: string): CountedRow[] =>
  [...windows]
    .sort(byIdentifier)
    .map((row) => ({ ...row, request_count: 1, limited: row.max_requests < 1, limited_at: row.max_requests < 1 ? now : null, created_at: now, updated_at: now }));

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
