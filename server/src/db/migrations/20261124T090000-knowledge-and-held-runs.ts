import { sql, type Kysely } from 'kysely';
import { notNull, timestampType, withId, withTimestamps } from '../columns.ts';
import type { Dialect } from '../database.ts';

/**
 * Crawler runs that are held (their event count fell by more than half: the
 * previous schedule stays live until an operator forces it), and the
 * documents the assistant knows — the crawler's schedule and operators'
 * uploads — kept here whatever the provider, so a new provider or vector
 * store gets them again on start.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('crawler_runs').addColumn('held', 'boolean', (column) => column.notNull().defaultTo(false)).execute();
  await db.schema.alterTable('crawler_runs').addColumn('warning', 'text').execute();
  await db.schema.createIndex('crawler_runs_url_idx').on('crawler_runs').columns(['url', 'id']).execute();

  await withTimestamps(withId(db.schema.createTable('knowledge_documents'), dialect), dialect)
    // 'schedule' (the crawler's document, one at a time) or 'upload'.
    .addColumn('kind', 'text', notNull)
    .addColumn('title', 'text', notNull)
    .addColumn('filename', 'text', notNull)
    .addColumn('bytes', 'integer', notNull)
    // Where it is now: the provider ('local', 'openai'), its file id, 'ready' or 'failed' (with the error).
    .addColumn('provider', 'text')
    .addColumn('provider_file_id', 'text')
    .addColumn('provider_status', 'text', (column) => column.notNull().defaultTo('pending'))
    .addColumn('provider_error', 'text')
    .addColumn('synced_at', timestampType(dialect))
    .execute();
  await db.schema.createIndex('knowledge_documents_filename_idx').on('knowledge_documents').column('filename').execute();

  // File contents in parts of a few hundred kilobytes ('document:<id>', 'local_file:<id>'): writing a
  // 20 MB schedule as one value would hold the main thread (node:sqlite is synchronous) for a long moment.
  await db.schema
    .createTable('content_parts')
    .addColumn('owner', 'text', notNull)
    .addColumn('part', 'integer', notNull)
    .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', notNull)
    .addPrimaryKeyConstraint('content_parts_pk', ['owner', 'part'])
    .execute();

  // What the offline assistant already holds becomes known documents (their content in one part each).
  await sql`
    insert into knowledge_documents (kind, title, filename, bytes, provider, provider_file_id, provider_status, synced_at, created_at, updated_at)
    select case when filename like 'schedule-%Z.md' then 'schedule' else 'upload' end,
           case when filename like 'schedule-%Z.md' then 'Convention schedule' else filename end,
           filename, bytes, 'local', id, 'ready', created_at, created_at, created_at
    from local_files`.execute(db);
  const content = dialect === 'postgres' ? sql`convert_to(file.content, 'UTF8')` : sql`cast(file.content as blob)`;
  await sql`
    insert into content_parts (owner, part, data)
    select 'document:' || document.id, 0, ${content}
    from knowledge_documents document join local_files file on file.id = document.provider_file_id`.execute(db);
}
