import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../clock.ts';
import { rememberedSetting } from '../../db/app-settings.ts';
import { deleteParts, readParts, writeParts } from '../../db/content-parts.queries.ts';
import type { Database } from '../../db/database.ts';
import {
  estimateTokens,
  ProviderError,
  type Answer,
  type AssistantProvider,
  type FollowOptions,
  type ProviderCall,
  type RunSettings,
  type RunState,
  type RunStatus,
  type StoredFile,
  type VectorStoreInfo,
} from '../provider.ts';
import { KnowledgeHost } from './knowledge-host.ts';
import * as queries from './local.queries.ts';

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const STORE_SETTING = 'local_vector_store_id';

/**
 * The offline assistant, the default when no OpenAI key is set. It follows
 * the same steps as OpenAI (thread, message, run, retrieve, list) with its
 * threads and runs in the database, and answers from the files in its
 * "vector store" — kept in the database and indexed for full-text search —
 * by quoting the best-matching passages. The run is worked on when it is
 * first retrieved, as a provider's worker would. The index and the answers
 * live in a worker thread (knowledge-host.ts), kept up to date as files come
 * and go, so a big schedule never holds the main thread.
 */
export class LocalProvider implements AssistantProvider {
  readonly kind = 'local' as const;
  readonly acceptedFileTypes = ['.txt', '.md', '.markdown', '.json', '.csv', '.html', '.htm'] as const;

  readonly #database: Database;
  readonly #clock: Clock;
  readonly #timeZone: () => string;
  readonly #host: KnowledgeHost;
  /** One load of the files into the worker at a time. */
  #loading: Promise<void> | undefined;

  constructor(options: { database: Database; clock: Clock; timeZone: () => string }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#timeZone = options.timeZone;
    this.#host = new KnowledgeHost({ timeZone: options.timeZone });
  }

  /** Ends the index worker. */
  close(): Promise<void> {
    return this.#host.close();
  }

  get #db() {
    return this.#database.db;
  }

  #now = () => this.#clock.now().toISOString();

  async createThread(call: ProviderCall): Promise<string> {
    const id = newId('thread');
    call.request({});
    await queries.insertThread(this.#db, id, this.#now());
    call.response({ id, object: 'thread' });
    return id;
  }

  async createMessage(call: ProviderCall, threadId: string, text: string): Promise<string> {
    call.request({ thread_id: threadId, role: 'user', content: text });
    await this.#requireThread(threadId);
    const id = newId('msg');
    await queries.insertMessage(this.#db, { id, thread_id: threadId, run_id: null, role: 'user', content: text, sources: null, created_at: this.#now() });
    call.response({ id, object: 'message', role: 'user' });
    return id;
  }

  async createRun(call: ProviderCall, threadId: string, settings: RunSettings): Promise<RunState> {
    call.request({ thread_id: threadId, instructions: settings.instructions, truncation: settings.truncation, max_output_tokens: settings.maxOutputTokens });
    await this.#requireThread(threadId);
    const id = newId('run');
    await queries.insertRun(this.#db, { id, thread_id: threadId, status: 'queued', created_at: this.#now() });
    const state: RunState = { id, status: 'queued', error: null, usage: null };
    call.response(state);
    return state;
  }

  async retrieveRun(call: ProviderCall, threadId: string, runId: string): Promise<RunState> {
    call.request({ thread_id: threadId, run_id: runId });
    let run = await queries.findRun(this.#db, threadId, runId);
    if (!run) throw new ProviderError(`No run ${runId} on thread ${threadId}`, { status: 404 });
    if (run.status === 'queued') {
      await this.#work(threadId, runId);
      run = (await queries.findRun(this.#db, threadId, runId))!;
    }
    const state = runStateOf(run);
    call.response(state);
    return state;
  }

  /**
   * Works the run as a retrieve would, then hands its answer on in chunks of
   * a few words (DESIGN §9: the offline assistant streams too), each in a
   * turn of its own so each leaves as an event of its own.
   */
  async followRun(call: ProviderCall, threadId: string, run: RunState, options: FollowOptions): Promise<RunState> {
    const { onText, signal } = options;
    const state = await this.retrieveRun(call, threadId, run.id);
    if (state.status !== 'completed') return state;
    const answer = await queries.answerOfRun(this.#db, threadId, run.id);
    for (const chunk of textChunks(answer?.content ?? '')) {
      signal?.throwIfAborted();
      onText(chunk);
      await new Promise((resolve) => setImmediate(resolve));
    }
    signal?.throwIfAborted();
    return state;
  }

  async cancelRun(call: ProviderCall, threadId: string, runId: string): Promise<RunState> {
    call.request({ thread_id: threadId, run_id: runId });
    await queries.cancelRun(this.#db, runId);
    const run = await queries.findRun(this.#db, threadId, runId);
    if (!run) throw new ProviderError(`No run ${runId} on thread ${threadId}`, { status: 404 });
    const state = runStateOf(run);
    call.response(state);
    return state;
  }

  async listMessages(call: ProviderCall, threadId: string, run: RunState): Promise<Answer> {
    const runId = run.id;
    call.request({ thread_id: threadId, run_id: runId, role: 'assistant' });
    const message = await queries.answerOfRun(this.#db, threadId, runId);
    if (!message) throw new ProviderError(`Run ${runId} has no answer`, { status: 404 });
    const answer: Answer = { messageId: message.id, text: message.content, sources: message.sources ? JSON.parse(message.sources) : [] };
    call.response({ id: message.id, role: 'assistant', content: answer.text, sources: answer.sources });
    return answer;
  }

  async listVectorStores(call: ProviderCall): Promise<VectorStoreInfo[]> {
    call.request({});
    await this.#storeId();
    const stores = (await queries.listVectorStores(this.#db)).map((store) => ({ ...store, file_count: Number(store.file_count) }));
    call.response(stores);
    return stores;
  }

  async listFiles(call: ProviderCall): Promise<StoredFile[]> {
    const storeId = await this.#storeId();
    call.request({ vector_store_id: storeId });
    const files = await queries.listFiles(this.#db, storeId);
    call.response(files);
    return files;
  }

  async uploadFile(call: ProviderCall, file: { filename: string; data: Buffer }): Promise<StoredFile & { vector_store_id: string }> {
    const storeId = await this.#storeId();
    call.request({ vector_store_id: storeId, filename: file.filename, bytes: file.data.length });
    if (file.data.includes(0) || !isUtf8(file.data)) {
      throw new ProviderError('The offline assistant reads text files only (UTF-8 text, Markdown, JSON, CSV or HTML).', { status: 400 });
    }
    const stored = { id: newId('file'), vector_store_id: storeId, filename: file.filename, bytes: file.data.length, created_at: this.#now() };
    // The content goes in parts (a schedule can be 20 MB), and to the index worker as bytes it decodes itself.
    await writeParts(this.#db, queries.fileContent(stored.id), file.data);
    await queries.insertFile(this.#db, { ...stored, content: '' });
    // Searchable before the upload returns, as OpenAI's file batches are.
    await this.#host.add({ id: stored.id, filename: stored.filename, content: file.data });
    call.response(stored);
    return stored;
  }

  async deleteFile(call: ProviderCall, fileId: string): Promise<void> {
    const storeId = await this.#storeId();
    call.request({ vector_store_id: storeId, file_id: fileId });
    const result = await queries.deleteFile(this.#db, storeId, fileId);
    if (Number(result.numDeletedRows) === 0) throw new ProviderError(`No file ${fileId} in the vector store`, { status: 404 });
    await deleteParts(this.#db, queries.fileContent(fileId));
    await this.#host.remove(fileId);
    call.response({ id: fileId, deleted: true });
  }

  /** Answers the thread's newest question and completes the run (once, even if polled twice at the same moment). */
  async #work(threadId: string, runId: string): Promise<void> {
    const question = await queries.latestMessage(this.#db, threadId, 'user');
    let answer = { text: 'There is no question on this thread yet.', sources: [] as Answer['sources'] };
    if (question) {
      await this.#current();
      // The event the thread's last answer was about, for a follow-up that says "it".
      const previous = await queries.latestMessage(this.#db, threadId, 'assistant');
      const first = previous?.sources ? (JSON.parse(previous.sources) as Answer['sources'])[0] : undefined;
      answer = await this.#host.answer(question.content, this.#clock.now(), this.#timeZone(), first?.kind === 'event' ? first : null);
    }
    const { text, sources } = answer;
    await this.#database.transaction(async (trx) => {
      const usage = { prompt_tokens: estimateTokens(question?.content ?? ''), completion_tokens: estimateTokens(text) };
      const claimed = await queries.completeRun(trx, runId, usage);
      if (Number(claimed.numUpdatedRows) === 0) return;
      await queries.insertMessage(trx, {
        id: newId('msg'),
        thread_id: threadId,
        run_id: runId,
        role: 'assistant',
        content: text,
        sources: JSON.stringify(sources),
        created_at: this.#now(),
      });
    });
  }

  /**
   * Makes sure the worker holds the store's current files: loaded in full on
   * first use, and again when another process changed them.
   */
  async #current(): Promise<void> {
    const storeId = await this.#storeId();
    const ids = (await queries.listFiles(this.#db, storeId)).map((file) => file.id);
    const known = this.#host.fileIds;
    if (known && ids.length === known.size && ids.every((id) => known.has(id))) return;
    this.#loading ??= (async () => {
      const files = await queries.filesWithContent(this.#db, storeId);
      // Files stored before contents went in parts keep theirs inline.
      const contents = await Promise.all(
        files.map(async (file) => ({ id: file.id, filename: file.filename, content: file.content || (await readParts(this.#db, queries.fileContent(file.id))) })),
      );
      await this.#host.load(contents);
    })().finally(() => {
      this.#loading = undefined;
    });
    await this.#loading;
  }

  #storeId(): Promise<string> {
    return rememberedSetting(this.#db, STORE_SETTING, this.#now(), async () => {
      const id = newId('vs');
      await queries.insertVectorStore(this.#db, { id, name: 'Convention knowledge (offline)', created_at: this.#now() });
      return id;
    });
  }

  async #requireThread(threadId: string): Promise<void> {
    if (!(await queries.findThread(this.#db, threadId))) throw new ProviderError(`No thread ${threadId}`, { status: 404 });
  }
}

/** An answer in pieces of a few words, spaces kept, so the pieces put together are the answer. */
export function textChunks(text: string, wordsPerChunk = 4): string[] {
  const words = text.match(/\s*\S+/g) ?? [];
  const chunks: string[] = [];
  for (let at = 0; at < words.length; at += wordsPerChunk) chunks.push(words.slice(at, at + wordsPerChunk).join(''));
  const trailing = text.slice(chunks.join('').length);
  if (trailing) chunks.length ? (chunks[chunks.length - 1] += trailing) : chunks.push(trailing);
  return chunks;
}

function runStateOf(run: queries.RunRow): RunState {
  return {
    id: run.id,
    status: run.status as RunStatus,
    error: run.error,
    usage: { prompt_tokens: run.prompt_tokens, completion_tokens: run.completion_tokens, total_tokens: run.prompt_tokens + run.completion_tokens },
  };
}
