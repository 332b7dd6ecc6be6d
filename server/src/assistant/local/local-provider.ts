import { randomBytes } from 'node:crypto';
import type { Clock } from '../../clock.ts';
import { rememberedSetting } from '../../db/app-settings.ts';
import type { Database } from '../../db/database.ts';
import {
  estimateTokens,
  ProviderError,
  type Answer,
  type AssistantProvider,
  type ProviderCall,
  type RunSettings,
  type RunState,
  type RunStatus,
  type StoredFile,
  type VectorStoreInfo,
} from '../provider.ts';
import { composeAnswer } from './compose-answer.ts';
import { KnowledgeIndex } from './knowledge-index.ts';
import * as queries from './local.queries.ts';

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const STORE_SETTING = 'local_vector_store_id';

/**
 * The offline assistant, the default when no OpenAI key is set. It follows
 * the same steps as OpenAI (thread, message, run, retrieve, list) with its
 * threads and runs in the database, and answers from the files in its
 * "vector store" — kept in the database and indexed for full-text search —
 * by quoting the best-matching passages. The run is worked on when it is
 * first retrieved, as a provider's worker would.
 */
export class LocalProvider implements AssistantProvider {
  readonly kind = 'local' as const;
  readonly acceptedFileTypes = ['.txt', '.md', '.markdown', '.json', '.csv', '.html', '.htm'] as const;

  readonly #database: Database;
  readonly #clock: Clock;
  readonly #timeZone: () => string;
  #index: { signature: string; index: KnowledgeIndex } | undefined;

  constructor(options: { database: Database; clock: Clock; timeZone: () => string }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#timeZone = options.timeZone;
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
    const content = file.data.toString('utf8');
    if (content.includes('\u0000') || content.includes('\uFFFD')) {
      throw new ProviderError('The offline assistant reads text files only (UTF-8 text, Markdown, JSON, CSV or HTML).', { status: 400 });
    }
    const stored = { id: newId('file'), vector_store_id: storeId, filename: file.filename, bytes: file.data.length, created_at: this.#now() };
    await queries.insertFile(this.#db, { ...stored, content });
    call.response(stored);
    return stored;
  }

  async deleteFile(call: ProviderCall, fileId: string): Promise<void> {
    const storeId = await this.#storeId();
    call.request({ vector_store_id: storeId, file_id: fileId });
    const result = await queries.deleteFile(this.#db, storeId, fileId);
    if (Number(result.numDeletedRows) === 0) throw new ProviderError(`No file ${fileId} in the vector store`, { status: 404 });
    call.response({ id: fileId, deleted: true });
  }

  /** Answers the thread's newest question and completes the run (once, even if polled twice at the same moment). */
  async #work(threadId: string, runId: string): Promise<void> {
    const question = await queries.latestUserMessage(this.#db, threadId);
    const index = await this.#knowledge();
    const { text, sources } = question
      ? composeAnswer(question.content, index, this.#clock.now(), this.#timeZone())
      : { text: 'There is no question on this thread yet.', sources: [] };
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

  /** The search index over the store's files, rebuilt when the files change. */
  async #knowledge(): Promise<KnowledgeIndex> {
    const storeId = await this.#storeId();
    const files = await queries.listFiles(this.#db, storeId);
    const signature = files.map((file) => file.id).join(',');
    if (this.#index?.signature !== signature) {
      const contents = await queries.filesWithContent(this.#db, storeId);
      this.#index = { signature, index: new KnowledgeIndex(contents, this.#timeZone()) };
    }
    return this.#index.index;
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

function runStateOf(run: queries.RunRow): RunState {
  return {
    id: run.id,
    status: run.status as RunStatus,
    error: run.error,
    usage: { prompt_tokens: run.prompt_tokens, completion_tokens: run.completion_tokens, total_tokens: run.prompt_tokens + run.completion_tokens },
  };
}
