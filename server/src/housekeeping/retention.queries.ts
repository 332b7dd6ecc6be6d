import type { Db } from '../db/database.ts';
import { PROVIDER_LOG_TABLE } from '../db/schema/assistant.ts';

/** The provider call log tables (one per SPEC step, plus vector store calls). */
const PROVIDER_LOG_TABLES = Object.values(PROVIDER_LOG_TABLE);

const changed = (result: { numUpdatedRows?: bigint; numDeletedRows?: bigint }[] | { numUpdatedRows?: bigint; numDeletedRows?: bigint }) =>
  [result].flat().reduce((sum, row) => sum + Number(row.numUpdatedRows ?? row.numDeletedRows ?? 0n), 0);

/**
 * Drops public chat messages written before `before` (their feedback goes
 * with them), sessions last used before it, and the offline assistant's
 * copies of those conversations. Returns the messages and sessions removed.
 */
export async function deleteOldMessages(db: Db, before: string): Promise<{ messages: number; sessions: number }> {
  const messages = changed(await db.deleteFrom('public_chat_messages').where('created_at', '<', before).execute());
  const sessions = changed(await db.deleteFrom('public_chat_sessions').where('last_seen_at', '<', before).execute());
  await db.deleteFrom('local_messages').where('created_at', '<', before).execute();
  await db.deleteFrom('local_runs').where('created_at', '<', before).execute();
  await db
    .deleteFrom('local_threads')
    .where('created_at', '<', before)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('local_messages').select('local_messages.id').whereRef('local_messages.thread_id', '=', 'local_threads.id'))))
    .execute();
  return { messages, sessions };
}

/**
 * Removes client IP addresses recorded before `before` from every row that
 * holds one: the address columns are cleared, and rows whose key is the
 * address itself (per-address rate-limit windows, sign-in throttle keys, the
 * set behind the unique-address count) are deleted. Returns the rows touched.
 */
export async function removeOldClientIps(db: Db, before: string): Promise<number> {
  let touched = 0;
  touched += changed(await db.updateTable('public_chat_sessions').set({ client_ip: null }).where('last_seen_at', '<', before).where('client_ip', 'is not', null).execute());
  touched += changed(await db.updateTable('public_chat_messages').set({ client_ip: null }).where('created_at', '<', before).where('client_ip', 'is not', null).execute());
  touched += changed(await db.updateTable('public_chat_feedback').set({ client_ip: null }).where('created_at', '<', before).where('client_ip', 'is not', null).execute());
  for (const table of PROVIDER_LOG_TABLES) {
    touched += changed(await db.updateTable(table).set({ client_ip: null }).where('created_at', '<', before).where('client_ip', 'is not', null).execute());
  }
  touched += changed(
    await db
      .deleteFrom('public_chat_rate_limits')
      .where('window_end', '<', before)
      .where((eb) => eb.or([eb('identifier', 'like', 'ip:%'), eb('identifier', 'like', 'verify:%')]))
      .execute(),
  );
  touched += changed(await db.updateTable('public_chat_rate_limits').set({ client_ip: null }).where('window_end', '<', before).where('client_ip', 'is not', null).execute());
  touched += changed(await db.deleteFrom('public_chat_client_ips').where('created_at', '<', before).execute());
  touched += changed(await db.updateTable('admin_sessions').set({ client_ip: null }).where('created_at', '<', before).where('client_ip', 'is not', null).execute());
  touched += changed(await db.deleteFrom('login_throttle').where('window_start', '<', before).execute());
  return touched;
}

/** Clears the request and response bodies (and headers) of provider calls made before `before`; timings and errors stay. */
export async function removeOldCallBodies(db: Db, before: string): Promise<number> {
  let touched = 0;
  for (const table of PROVIDER_LOG_TABLES) {
    touched += changed(
      await db
        .updateTable(table)
        .set({ request_body: null, response_body: null, response_headers: null })
        .where('created_at', '<', before)
        .where((eb) => eb.or([eb('request_body', 'is not', null), eb('response_body', 'is not', null), eb('response_headers', 'is not', null)]))
        .execute(),
    );
  }
  return touched;
}

/**
 * Deletes the events of every crawler run older than the newest `keep`
 * runs, except the last good run's (the schedule the assistant knows and
 * the next run is compared with). The runs themselves stay.
 */
export async function deleteOldCrawlerEvents(db: Db, keep: number): Promise<number> {
  const newest = await db.selectFrom('crawler_runs').select('id').orderBy('id', 'desc').offset(keep - 1).limit(1).executeTakeFirst();
  if (!newest) return 0;
  const lastGood = await db.selectFrom('crawler_runs').select('id').where('error', 'is', null).orderBy('id', 'desc').limit(1).executeTakeFirst();
  return changed(
    await db
      .deleteFrom('crawler_events')
      .where('crawler_run_id', '<', newest.id)
      .$if(lastGood !== undefined, (qb) => qb.where('crawler_run_id', '!=', lastGood!.id))
      .execute(),
  );
}
