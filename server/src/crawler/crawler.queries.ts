import { sql, type Insertable } from 'kysely';
import { containsText, isPresent, paged, type ListPage } from '../admin/list-query.ts';
import type { Db } from '../db/database.ts';
import type { CrawlerEventTable, CrawlerRunTable } from '../db/schema/crawler.ts';

/** The newest run that completed without an error and was not held: the schedule the assistant knows. */
export const lastSuccessfulRun = (db: Db) =>
  db.selectFrom('crawler_runs').selectAll().where('error', 'is', null).where('held', '=', false).orderBy('id', 'desc').limit(1).executeTakeFirst();

/** The same, for one source: a new CRAWLER_URL starts a history of its own. */
export const lastSuccessfulRunOf = (db: Db, url: string) =>
  db
    .selectFrom('crawler_runs')
    .selectAll()
    .where('url', '=', url)
    .where('error', 'is', null)
    .where('held', '=', false)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();

/** The newest run of a source that stored its events (held or not). */
export const lastStoredRunOf = (db: Db, url: string) =>
  db.selectFrom('crawler_runs').selectAll().where('url', '=', url).where('error', 'is', null).orderBy('id', 'desc').limit(1).executeTakeFirst();

export const lastRun = (db: Db) => db.selectFrom('crawler_runs').selectAll().orderBy('id', 'desc').limit(1).executeTakeFirst();

const HEALTH_ROW = 1;

/** The crawler's health row, or undefined before the first check. */
export const crawlerHealth = (db: Db) =>
  db.selectFrom('crawler_health').select(['last_success_at', 'last_failure_at', 'consecutive_failures', 'last_error']).where('id', '=', HEALTH_ROW).executeTakeFirst();

/** A check that fetched and read the schedule (stored or unchanged): the failure streak ends. */
export const recordCheckSucceeded = (db: Db, now: string) =>
  db
    .insertInto('crawler_health')
    .values({ id: HEALTH_ROW, last_success_at: now, consecutive_failures: 0 })
    .onConflict((conflict) => conflict.column('id').doUpdateSet({ last_success_at: now, consecutive_failures: 0 }))
    .execute();

/** A failed check, counted in one statement so concurrent writers never lose one. */
export const recordCheckFailed = (db: Db, now: string, error: string) =>
  db
    .insertInto('crawler_health')
    .values({ id: HEALTH_ROW, last_failure_at: now, consecutive_failures: 1, last_error: error })
    .onConflict((conflict) =>
      conflict.column('id').doUpdateSet({
        last_failure_at: now,
        last_error: error,
        consecutive_failures: sql<number>`crawler_health.consecutive_failures + 1`,
      }),
    )
    .execute();

/** An event of the live schedule (the newest good run) by the feed's UID, with its run. */
export async function liveEvent(db: Db, uid: string) {
  const run = await lastSuccessfulRun(db);
  if (!run) return undefined;
  const event = await db.selectFrom('crawler_events').selectAll().where('crawler_run_id', '=', run.id).where('uid', '=', uid).limit(1).executeTakeFirst();
  return event ? { run, event } : undefined;
}

export const eventsOfRun = (db: Db, runId: number) =>
  db.selectFrom('crawler_events').selectAll().where('crawler_run_id', '=', runId).orderBy('start_at').orderBy('id').execute();

/** A page of a run's events (what the comparison with the next run needs), after the given id. */
export const eventPageOfRun = (db: Db, runId: number, afterId: number, limit: number) =>
  db
    .selectFrom('crawler_events')
    .select(['id', 'uid', 'what', 'start_at', 'end_at', 'where', 'status'])
    .where('crawler_run_id', '=', runId)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();

export async function insertRun(db: Db, run: Omit<Insertable<CrawlerRunTable>, 'id'>): Promise<number> {
  const row = await db.insertInto('crawler_runs').values(run).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export const updateRun = (db: Db, id: number, changes: Partial<Omit<Insertable<CrawlerRunTable>, 'id'>>) =>
  db.updateTable('crawler_runs').set(changes).where('id', '=', id).execute();

/** Inserts a run's events in batches (SQLite caps the number of bound parameters per statement). */
export async function insertEvents(db: Db, events: Omit<Insertable<CrawlerEventTable>, 'id'>[]): Promise<void> {
  const BATCH = 50;
  for (let i = 0; i < events.length; i += BATCH) {
    await db.insertInto('crawler_events').values(events.slice(i, i + BATCH)).execute();
  }
}

export interface RunFilters extends ListPage {
  url?: string;
  hash?: string;
  has_error?: boolean;
}

export const listRuns = (db: Db, filters: RunFilters) =>
  db
    .selectFrom('crawler_runs')
    .select([
      'id',
      'url',
      'hash',
      'file',
      'tracks',
      'error',
      'event_count',
      'speaker_count',
      'forced',
      'format',
      'time_zone',
      'changes',
      'duration_ms',
      'held',
      'warning',
      'created_at',
      'updated_at',
    ])
    .$if(filters.url !== undefined, (qb) => qb.where(containsText('url', filters.url!)))
    .$if(filters.hash !== undefined, (qb) => qb.where(containsText('hash', filters.hash!)))
    .$if(filters.has_error !== undefined, (qb) => qb.where(isPresent('error', filters.has_error!)))
    .$call(paged(filters, 'created_at'))
    .execute();

export interface EventFilters extends ListPage {
  crawler_run_id?: number;
  track?: string;
  title?: string;
  location?: string;
  speakers?: string;
}

export const listEvents = (db: Db, filters: EventFilters) =>
  db
    .selectFrom('crawler_events')
    .select([
      'id',
      'crawler_run_id',
      'track',
      'what',
      'duration',
      'when',
      'where',
      'speakers',
      'start_at',
      'end_at',
      'date',
      'description',
      'status',
      'created_at',
      'updated_at',
    ])
    .$if(filters.crawler_run_id !== undefined, (qb) => qb.where('crawler_run_id', '=', filters.crawler_run_id!))
    .$if(filters.track !== undefined, (qb) => qb.where(containsText('track', filters.track!)))
    .$if(filters.title !== undefined, (qb) => qb.where(containsText('what', filters.title!)))
    .$if(filters.location !== undefined, (qb) => qb.where(containsText('where', filters.location!)))
    .$if(filters.speakers !== undefined, (qb) => qb.where(containsText('speakers', filters.speakers!)))
    .$call(paged(filters, 'start_at'))
    .execute();
