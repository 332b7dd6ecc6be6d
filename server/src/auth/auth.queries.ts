import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { AdminSessionTable } from '../db/schema/index.ts';

export const countAdmins = async (db: Db): Promise<number> => {
  const row = await db.selectFrom('admin_users').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
};

export const findAdminByUsername = (db: Db, username: string) =>
  db.selectFrom('admin_users').select(['id', 'username', 'password_hash']).where('username', '=', username).executeTakeFirst();

export const insertAdmin = (db: Db, values: { username: string; password_hash: string; now: string }) =>
  db
    .insertInto('admin_users')
    .values({ username: values.username, password_hash: values.password_hash, created_at: values.now, updated_at: values.now })
    .returning(['id', 'username'])
    .executeTakeFirstOrThrow();

export const updateAdminPassword = (db: Db, id: number, passwordHash: string, now: string) =>
  db.updateTable('admin_users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', id).execute();

export const insertSession = (db: Db, session: AdminSessionTable) => db.insertInto('admin_sessions').values(session).execute();

export const findSession = (db: Db, id: string) =>
  db
    .selectFrom('admin_sessions')
    .innerJoin('admin_users', 'admin_users.id', 'admin_sessions.admin_user_id')
    .select([
      'admin_sessions.id',
      'admin_sessions.admin_user_id',
      'admin_sessions.last_seen_at',
      'admin_sessions.expires_at',
      'admin_sessions.absolute_expires_at',
      'admin_users.username',
    ])
    .where('admin_sessions.id', '=', id)
    .executeTakeFirst();

export const touchSession = (db: Db, id: string, lastSeenAt: string, expiresAt: string) =>
  db.updateTable('admin_sessions').set({ last_seen_at: lastSeenAt, expires_at: expiresAt }).where('id', '=', id).execute();

/** Which of these sessions still exist and have not expired. */
export const findLiveSessionIds = async (db: Db, ids: readonly string[], now: string): Promise<string[]> => {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('admin_sessions')
    .select('id')
    .where('id', 'in', ids)
    .where('expires_at', '>', now)
    .where('absolute_expires_at', '>', now)
    .execute();
  return rows.map((row) => row.id);
};

export const deleteSession = (db: Db, id: string) => db.deleteFrom('admin_sessions').where('id', '=', id).execute();

export const deleteSessionsOfAdmin = (db: Db, adminUserId: number) =>
  db.deleteFrom('admin_sessions').where('admin_user_id', '=', adminUserId).execute();

export const deleteExpiredSessions = (db: Db, now: string) =>
  db.deleteFrom('admin_sessions').where((eb) => eb.or([eb('expires_at', '<=', now), eb('absolute_expires_at', '<=', now)])).execute();

/**
 * Counts one failed sign-in against `key` in a single atomic statement: a
 * window older than `windowStartCutoff` restarts at 1, otherwise the count
 * goes up. Concurrent failures are all counted.
 */
export const recordLoginFailure = (db: Db, key: string, now: string, windowStartCutoff: string) =>
  db
    .insertInto('login_throttle')
    .values({ key, window_start: now, failures: 1 })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        failures: sql<number>`case when login_throttle.window_start <= ${windowStartCutoff} then 1 else login_throttle.failures + 1 end`,
        window_start: sql<string>`case when login_throttle.window_start <= ${windowStartCutoff} then ${now} else login_throttle.window_start end`,
      }),
    )
    .execute();

export const findThrottleRows = (db: Db, keys: string[], windowStartCutoff: string) =>
  db.selectFrom('login_throttle').selectAll().where('key', 'in', keys).where('window_start', '>', windowStartCutoff).execute();

export const clearThrottle = (db: Db, key: string) => db.deleteFrom('login_throttle').where('key', '=', key).execute();

export const deleteStaleThrottleRows = (db: Db, windowStartCutoff: string) =>
  db.deleteFrom('login_throttle').where('window_start', '<=', windowStartCutoff).execute();

export const findThrottleRow = (db: Db, key: string) => db.selectFrom('login_throttle').selectAll().where('key', '=', key).executeTakeFirst();

/**
 * Takes the next sign-in attempt on an account's row as a compare-and-set:
 * it succeeds only when the row is still as it was read (`seen`, or absent),
 * so concurrent attempts from many addresses each see the count the one
 * before them left, and none slips past a delay another has just set.
 */
export async function takeAccountAttempt(
  db: Db,
  key: string,
  seen: { failures: number; window_start: string } | undefined,
  next: { failures: number; window_start: string; blocked_until: string | null },
): Promise<boolean> {
  if (!seen) {
    const inserted = await db
      .insertInto('login_throttle')
      .values({ key, ...next })
      .onConflict((conflict) => conflict.column('key').doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
  }
  const updated = await db
    .updateTable('login_throttle')
    .set(next)
    .where('key', '=', key)
    .where('failures', '=', seen.failures)
    .where('window_start', '=', seen.window_start)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}

/** An attempt taken with takeAccountAttempt turned out right: it was no failure, and the wait it set is lifted. */
export const releaseAccountAttempt = (db: Db, key: string) =>
  db
    .updateTable('login_throttle')
    .set({ failures: sql<number>`case when failures > 0 then failures - 1 else 0 end`, blocked_until: null })
    .where('key', '=', key)
    .execute();

/** Every throttle row (addresses, accounts, devices); answers how many there were. */
export async function clearAllThrottles(db: Db): Promise<number> {
  const deleted = await db.deleteFrom('login_throttle').executeTakeFirst();
  return Number(deleted.numDeletedRows);
}
