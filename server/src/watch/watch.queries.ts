import type { Db } from '../db/database.ts';
import type { WatchTokenTable } from '../db/schema/admin.ts';

export const insertToken = (db: Db, token: WatchTokenTable) => db.insertInto('watch_tokens').values(token).execute();

/**
 * Takes a token out in one statement: of two requests presenting the same
 * token, in one process or two, only one gets the row (single use).
 */
export const takeToken = (db: Db, id: string) =>
  db.deleteFrom('watch_tokens').where('id', '=', id).returning(['session_id', 'username', 'expires_at']).executeTakeFirst();

export const deleteExpiredTokens = (db: Db, now: string) => db.deleteFrom('watch_tokens').where('expires_at', '<=', now).execute();
