import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import { deleteParts, readParts, writeParts } from '../db/content-parts.queries.ts';
import type { Database } from '../db/database.ts';
import { notFound } from '../errors.ts';
import type { AssistantService, CallContext } from './assistant.service.ts';
import { knowledgeTitle, SCHEDULE_TITLE } from './knowledge-format.ts';
import * as queries from './knowledge.queries.ts';
import { ProviderError, type StoredFile } from './provider.ts';

export type KnowledgeDocument = Awaited<ReturnType<typeof queries.listDocuments>>[number];

/**
 * The documents the assistant knows — the crawler's schedule and operators'
 * uploads — kept in the database whatever the provider, with where each is
 * in the provider's vector store. A new upload replaces the document of the
 * same name (the schedule replaces the previous schedule) once it is in;
 * on start, any document the current provider or vector store does not
 * have (the provider was switched, the store changed) is uploaded again.
 */
export class KnowledgeService {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #assistant: AssistantService;
  #syncing: Promise<void> | undefined;

  constructor(options: { database: Database; clock: Clock; logger: Logger; assistant: AssistantService }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#assistant = options.assistant;
  }

  get #db() {
    return this.#database.db;
  }

  get providerKind() {
    return this.#assistant.provider.kind;
  }

  list(): Promise<KnowledgeDocument[]> {
    return queries.listDocuments(this.#db);
  }

  async download(id: number): Promise<{ filename: string; content: Buffer }> {
    const document = await queries.findDocument(this.#db, id);
    if (!document) throw notFound(`No knowledge document ${id}`, 'document_not_found');
    return { filename: document.filename, content: await readParts(this.#db, queries.documentContent(id)) };
  }

  /**
   * Stores a document and adds it to the provider's vector store, replacing
   * the documents it supersedes only once it is in. A provider failure
   * leaves nothing half-stored and is thrown.
   */
  async add(
    document: { kind: 'schedule' | 'upload'; filename: string; data: Buffer },
    context: CallContext = {},
  ): Promise<StoredFile & { vector_store_id: string; replaced: string[]; document_id: number }> {
    await this.#syncing;
    const now = this.#clock.now().toISOString();
    const id = await queries.insertDocument(this.#db, {
      kind: document.kind,
      title: document.kind === 'schedule' ? SCHEDULE_TITLE : knowledgeTitle(document.filename),
      filename: document.filename,
      bytes: document.data.length,
      provider: this.providerKind,
      provider_status: 'pending',
      created_at: now,
      updated_at: now,
    });
    await writeParts(this.#db, queries.documentContent(id), document.data);
    const superseded = await queries.replacedBy(this.#db, { id, kind: document.kind, filename: document.filename });
    const supersededFiles = new Set(superseded.map((old) => old.provider_file_id).filter(Boolean));
    let stored: Awaited<ReturnType<AssistantService['uploadFile']>>;
    try {
      stored = await this.#assistant.uploadFile(
        { filename: document.filename, data: document.data },
        { context, replaces: (existing) => supersededFiles.has(existing.id) || existing.filename === document.filename },
      );
    } catch (error) {
      await this.#remove(id);
      throw error;
    }
    const done = this.#clock.now().toISOString();
    await queries.updateDocument(this.#db, id, { provider_file_id: stored.id, provider_status: 'ready', provider_error: null, synced_at: done, updated_at: done });
    for (const old of superseded) await this.#remove(old.id);
    return { ...stored, document_id: id };
  }

  /** Removes a document from the knowledge and the provider's vector store. */
  async delete(id: number, context: CallContext = {}): Promise<KnowledgeDocument> {
    const document = (await queries.listDocuments(this.#db)).find((candidate) => candidate.id === id);
    if (!document) throw notFound(`No knowledge document ${id}`, 'document_not_found');
    if (document.provider === this.providerKind && document.provider_file_id) {
      try {
        await this.#assistant.deleteFile(document.provider_file_id, context);
      } catch (error) {
        // Already gone from the store is fine; anything else is the operator's to hear about.
        if (!(error instanceof ProviderError && error.status === 404)) throw error;
      }
    }
    await this.#remove(id);
    return document;
  }

  async #remove(id: number): Promise<void> {
    await deleteParts(this.#db, queries.documentContent(id));
    await queries.deleteDocument(this.#db, id);
  }

  /**
   * Keeps another assistant's store (the offline fallback of the spending
   * cap) holding the same documents: uploads what changed since the last
   * call and removes what is gone. Cheap when nothing changed.
   */
  async mirrorTo(target: AssistantService, last: { signature: string | null }): Promise<void> {
    const documents = await queries.listDocuments(this.#db);
    const signature = documents.map((document) => `${document.id}@${document.updated_at}`).join(',');
    if (signature === last.signature) return;
    const present = await target.listFiles();
    const wanted = new Set(documents.map((document) => document.filename));
    for (const document of documents) {
      const data = await readParts(this.#db, queries.documentContent(document.id));
      if (present.some((file) => file.filename === document.filename && file.bytes === data.length)) continue;
      await target.uploadFile({ filename: document.filename, data });
    }
    for (const file of present) if (!wanted.has(file.filename)) await target.deleteFile(file.id);
    last.signature = signature;
  }

  /** Resolves once no sync is running (for shutdown). */
  async settled(): Promise<void> {
    await this.#syncing;
  }

  /** Uploads again every document the current provider's vector store does not hold. Never throws. */
  sync(): Promise<void> {
    this.#syncing ??= this.#sync().finally(() => {
      this.#syncing = undefined;
    });
    return this.#syncing;
  }

  async #sync(): Promise<void> {
    let present: Set<string>;
    try {
      present = new Set((await this.#assistant.listFiles()).map((file) => file.id));
    } catch (error) {
      this.#logger.error({ err: error }, 'could not list the vector store; knowledge not checked');
      return;
    }
    for (const document of await queries.listDocuments(this.#db)) {
      if (document.provider === this.providerKind && document.provider_file_id && present.has(document.provider_file_id)) continue;
      try {
        const data = await readParts(this.#db, queries.documentContent(document.id));
        const stored = await this.#assistant.uploadFile(
          { filename: document.filename, data },
          { replaces: (existing) => existing.filename === document.filename },
        );
        const now = this.#clock.now().toISOString();
        await queries.updateDocument(this.#db, document.id, {
          provider: this.providerKind,
          provider_file_id: stored.id,
          provider_status: 'ready',
          provider_error: null,
          synced_at: now,
          updated_at: now,
        });
        this.#logger.info({ document: document.filename, provider: this.providerKind }, 'knowledge document uploaded to the current provider');
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        await queries.updateDocument(this.#db, document.id, {
          provider: this.providerKind,
          provider_status: 'failed',
          provider_error: message,
          updated_at: this.#clock.now().toISOString(),
        });
        this.#logger.error({ err: error, document: document.filename }, 'could not upload a knowledge document to the current provider');
      }
    }
  }
}
