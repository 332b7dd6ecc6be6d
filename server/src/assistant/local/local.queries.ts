import type { Db } from '../../db/database.ts';

export const insertThread = (db: Db, id: string, now: string) => db.insertInto('local_threads').values({ id, created_at: now }).execute();

export const findThread = (db: Db, id: string) => db.selectFrom('local_threads').select('id').where('id', '=', id).executeTakeFirst();

export const insertMessage = (
  db: Db,
  message: { id: string; thread_id: string; run_id: string | null; role: 'user' | 'assistant'; content: string; sources: string | null; created_at: string },
) => db.insertInto('local_messages').values(message).execute();

/**
 * The thread's latest message from one side: the question a run answers
 * (`user`), or the answer before it, whose sources say what "it" means in a
 * follow-up ("how long is it?").
 */
export const latestMessage = (db: Db, threadId: string, role: 'user' | 'assistant') =>
  db
    .selectFrom('local_messages')
    .select(['id', 'content', 'sources'])
    .where('thread_id', '=', threadId)
    .where('role', '=', role)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();

export const answerOfRun = (db: Db, threadId: string, runId: string) =>
  db
    .selectFrom('local_messages')
    .select(['id', 'content', 'sources'])
    .where('thread_id', '=', threadId)
    .where('run_id', '=', runId)
    .where('role', '=', 'assistant')
    .executeTakeFirst();

export const insertRun = (db: Db, run: { id: string; thread_id: string; status: string; created_at: string }) =>
  db.insertInto('local_runs').values({ ...run, prompt_tokens: 0, completion_tokens: 0, error: null }).execute();

export const findRun = (db: Db, threadId: string, runId: string) =>
  db.selectFrom('local_runs').selectAll().where('id', '=', runId).where('thread_id', '=', threadId).executeTakeFirst();

export type RunRow = NonNullable<Awaited<ReturnType<typeof findRun>>>;

/** Stops a run that has not been answered yet. */
export const cancelRun = (db: Db, runId: string) =>
  db.updateTable('local_runs').set({ status: 'cancelled', error: 'The assistant run was cancelled' }).where('id', '=', runId).where('status', '=', 'queued').executeTakeFirst();

export const completeRun = (db: Db, runId: string, usage: { prompt_tokens: number; completion_tokens: number }) =>
  db.updateTable('local_runs').set({ status: 'completed', ...usage }).where('id', '=', runId).where('status', '=', 'queued').executeTakeFirst();

export const insertVectorStore = (db: Db, store: { id: string; name: string; created_at: string }) =>
  db.insertInto('local_vector_stores').values(store).onConflict((conflict) => conflict.column('id').doNothing()).execute();

export const listVectorStores = (db: Db) =>
  db
    .selectFrom('local_vector_stores as store')
    .leftJoin('local_files as file', 'file.vector_store_id', 'store.id')
    .select(['store.id', 'store.name', 'store.created_at'])
    .select((eb) => eb.fn.count<number>('file.id').as('file_count'))
    .groupBy(['store.id', 'store.name', 'store.created_at'])
    .orderBy('store.created_at')
    .execute();

export const listFiles = (db: Db, vectorStoreId: string) =>
  db
    .selectFrom('local_files')
    .select(['id', 'filename', 'bytes', 'created_at'])
    .where('vector_store_id', '=', vectorStoreId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();

/** The store's files with their inline content (older files), oldest first: the newest schedule document is the schedule. */
export const filesWithContent = (db: Db, vectorStoreId: string) =>
  db.selectFrom('local_files').select(['id', 'filename', 'content']).where('vector_store_id', '=', vectorStoreId).orderBy('created_at').orderBy('id').execute();

export const insertFile = (db: Db, file: { id: string; vector_store_id: string; filename: string; bytes: number; content: string; created_at: string }) =>
  db.insertInto('local_files').values(file).execute();

export const deleteFile = (db: Db, vectorStoreId: string, fileId: string) =>
  db.deleteFrom('local_files').where('vector_store_id', '=', vectorStoreId).where('id', '=', fileId).executeTakeFirst();

/** Where a file's content is (db/content-parts.queries.ts). */
export const fileContent = (id: string) => `local_file:${id}`;
