import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { KnowledgeDocumentTable } from '../db/schema/assistant.ts';

const LISTED = ['id', 'kind', 'title', 'filename', 'bytes', 'provider', 'provider_file_id', 'provider_status', 'provider_error', 'synced_at', 'created_at', 'updated_at'] as const;

export const listDocuments = (db: Db) => db.selectFrom('knowledge_documents').select(LISTED).orderBy('kind').orderBy('created_at').orderBy('id').execute();

export const findDocument = (db: Db, id: number) => db.selectFrom('knowledge_documents').selectAll().where('id', '=', id).executeTakeFirst();

/** Where a document's content is (db/content-parts.queries.ts). */
export const documentContent = (id: number) => `document:${id}`;

export async function insertDocument(db: Db, document: Omit<Insertable<KnowledgeDocumentTable>, 'id'>): Promise<number> {
  const row = await db.insertInto('knowledge_documents').values(document).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

export const updateDocument = (db: Db, id: number, changes: Omit<Updateable<KnowledgeDocumentTable>, 'id'>) =>
  db.updateTable('knowledge_documents').set(changes).where('id', '=', id).execute();

export const deleteDocument = (db: Db, id: number) => db.deleteFrom('knowledge_documents').where('id', '=', id).executeTakeFirst();

/** The documents a new one replaces: the other schedule documents, or uploads of the same name. */
export const replacedBy = (db: Db, document: { id: number; kind: 'schedule' | 'upload'; filename: string }) =>
  db
    .selectFrom('knowledge_documents')
    .select(LISTED)
    .where('id', '!=', document.id)
    .$if(document.kind === 'schedule', (qb) => qb.where('kind', '=', 'schedule'))
    .$if(document.kind === 'upload', (qb) => qb.where('kind', '=', 'upload').where('filename', '=', document.filename))
    .execute();
