import type { Kysely } from 'kysely';
import { idRefType, notNull, timestampType, withId, withTimestamps } from '../columns.ts';
import type { Dialect } from '../database.ts';

/** Schedule crawler runs (SPEC §3 "Crawler run") and the events each run found ("Crawler event"). */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = timestampType(dialect);

  await withTimestamps(withId(db.schema.createTable('crawler_runs'), dialect), dialect)
    .addColumn('url', 'text', notNull)
    .addColumn('hash', 'text')
    .addColumn('file', 'text')
    .addColumn('tracks', 'text')
    .addColumn('error', 'text')
    .addColumn('event_count', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('speaker_count', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('forced', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('format', 'text')
    .addColumn('time_zone', 'text')
    // JSON array of changes since the previous successful run.
    .addColumn('changes', 'text')
    // Provider id of the knowledge document uploaded for this run.
    .addColumn('file_id', 'text')
    .addColumn('etag', 'text')
    .addColumn('last_modified', 'text')
    .addColumn('duration_ms', 'integer')
    .execute();
  await db.schema.createIndex('crawler_runs_created_at_idx').on('crawler_runs').column('created_at').execute();

  await withTimestamps(withId(db.schema.createTable('crawler_events'), dialect), dialect)
    .addColumn('crawler_run_id', idRefType(dialect), (column) => column.notNull().references('crawler_runs.id').onDelete('cascade'))
    .addColumn('uid', 'text', notNull)
    .addColumn('track', 'text')
    .addColumn('what', 'text', notNull)
    .addColumn('duration', 'integer')
    .addColumn('when', 'text')
    .addColumn('where', 'text')
    .addColumn('speakers', 'text')
    .addColumn('start_at', ts, notNull)
    .addColumn('end_at', ts)
    .addColumn('date', 'text')
    .addColumn('description', 'text')
    .addColumn('status', 'text', notNull)
    .execute();
  await db.schema.createIndex('crawler_events_run_start_idx').on('crawler_events').columns(['crawler_run_id', 'start_at']).execute();
  await db.schema.createIndex('crawler_events_start_idx').on('crawler_events').column('start_at').execute();
}
