import { sql } from 'kysely';
import type { Database, Db } from '../db/database.ts';
import { onQueryThread } from '../db/query-thread.ts';

/** Sends a notification on `channel` (PostgreSQL); inside a transaction it goes when that commits. */
export async function notify(db: Db, channel: string, payload: string): Promise<void> {
  await sql`select pg_notify(${channel}, ${payload})`.execute(db);
}

/**
 * Sends several notifications on `channel` in one statement, in the order
 * given. (PostgreSQL folds identical payloads sent on one channel in one
 * transaction into one; the transport's payloads are whole events, so two
 * identical ones say the same thing.)
 */
export async function notifyAll(db: Db, channel: string, payloads: readonly string[]): Promise<void> {
  if (payloads.length === 1) return notify(db, channel, payloads[0]!);
  await sql`select pg_notify(${channel}, payload) from unnest(cast(${payloads} as text[])) with ordinality as sent(payload, n) order by n`.execute(db);
}

/**
 * notifyAll on the server's query thread (where its pool is, when it has
 * one): at the peak every answer is a notification, and building, sending
 * and reading back their statements took the server's event loop about a
 * twentieth of an answer's time. Called from a turn's batch, yet not posted
 * at once (no `atTurnEnd`): it goes with the next call that is, or at the
 * end of the next turn, rather than costing a message of its own.
 */
export const sendNotifications = onQueryThread('cluster.sendNotifications', (database: Database, { channel, payloads }: { channel: string; payloads: string[] }) =>
  notifyAll(database.db, channel, payloads),
);

export async function insertEventPayload(db: Db, payload: string, now: string): Promise<number> {
  const row = await db.insertInto('cluster_event_payloads').values({ payload, created_at: now }).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function findEventPayload(db: Db, id: number): Promise<string | undefined> {
  return (await db.selectFrom('cluster_event_payloads').select('payload').where('id', '=', id).executeTakeFirst())?.payload;
}

export async function deleteEventPayloadsBefore(db: Db, before: string): Promise<void> {
  await db.deleteFrom('cluster_event_payloads').where('created_at', '<', before).execute();
}

/** The space the database keeps between two slots of a rate: whole milliseconds, at least one. */
export const slotInterval = (intervalMs: number) => Math.max(1, Math.round(intervalMs));

/**
 * Takes the next `count` slots of a request rate shared by every process, in
 * one atomic statement: the first is the later of now and the budget's next
 * free time (a token bucket of one token, kept as the time it refills), the
 * others follow one interval apart, and the next free time moves one
 * interval past the last. Returns the first slot (ms since the epoch); the
 * callers wait until theirs.
 */
export async function takeRateSlot(db: Db, name: string, nowMs: number, intervalMs: number, count = 1): Promise<number> {
  const interval = slotInterval(intervalMs);
  const now = Math.round(nowMs);
  const span = interval * count;
  const row = await db
    .insertInto('rate_budgets')
    .values({ name, next_slot_ms: now + span })
    .onConflict((conflict) =>
      conflict.column('name').doUpdateSet((eb) => ({
        next_slot_ms: sql<number>`(case when ${eb.ref('rate_budgets.next_slot_ms')} > ${now} then ${eb.ref('rate_budgets.next_slot_ms')} else ${now} end) + ${span}`,
      })),
    )
    .returning('next_slot_ms')
    .executeTakeFirstOrThrow();
  return Number(row.next_slot_ms) - span;
}

/**
 * takeRateSlot on the server's query thread, posted at once (the turn's
 * provider requests wait for it), for the same reason as sendNotifications.
 */
export const takeRateSlots = onQueryThread(
  'cluster.takeRateSlots',
  (database: Database, { name, nowMs, intervalMs, count }: { name: string; nowMs: number; intervalMs: number; count: number }) =>
    takeRateSlot(database.db, name, nowMs, intervalMs, count),
  { atTurnEnd: true },
);
