import OpenAI, { APIConnectionTimeoutError, APIError, toFile } from 'openai';
import type { Clock } from '../../clock.ts';
import { rememberedSetting } from '../../db/app-settings.ts';
import type { Database } from '../../db/database.ts';
import { fileSource } from '../knowledge-format.ts';
import {
  estimateTokens,
  FINAL_RUN_STATUSES,
  ProviderError,
  StreamUnavailableError,
  type Answer,
  type FollowOptions,
  type OpenRunStream,
  type AssistantProvider,
  type ProviderCall,
  type RunSettings,
  type RunState,
  type RunStatus,
  type Source,
  type StoredFile,
  type VectorStoreInfo,
} from '../provider.ts';

type ConversationItem = OpenAI.Conversations.ConversationItem;
type ResponseObject = OpenAI.Responses.Response;
type StreamEvent = OpenAI.Responses.ResponseStreamEvent;

export interface OpenAIProviderOptions {
  apiKey: string;
  baseURL?: string;
  model: string;
  /** A vector store to use; without one, a store is created on first use and remembered in the database. */
  vectorStoreId?: string;
  productName: string;
  database: Database;
  clock: Clock;
  /** Per-request time limit; the SDK retries 408/409/429/5xx and timeouts with bounded back-off. */
  timeoutMs?: number;
  maxRetries?: number;
}

const STORE_SETTING = 'openai_vector_store_id';
const FILE_READY_TIMEOUT_MS = 120_000;
const FILE_POLL_MS = 1000;
/** Conversation items read when looking for the answer (after its question, or the newest). */
const ANSWER_LOOKBACK = 10;
/** A dropped stream is picked up again this many times before the run is polled instead. */
const MAX_STREAM_RESUMES = 5;
const TERMINAL_EVENTS = new Set(['response.completed', 'response.failed', 'response.incomplete']);
/** Why we close a response stream ourselves (given, so that aborting does not build a DOMException and its stack for every answer). */
const STREAM_CLOSED = 'closed by the concierge';
const ENDED: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * A background response's event stream, open since it was created with
 * `stream: true`: read one event at a time, remembering the last sequence
 * number so a dropped stream resumes right after it.
 */
class ResponseEventStream implements OpenRunStream {
  readonly responseId: string;
  lastSequence: number;
  readonly #iterator: AsyncIterator<StreamEvent>;
  readonly #abort: () => void;
  #closed = false;

  constructor(responseId: string, lastSequence: number, iterator: AsyncIterator<StreamEvent>, abort: () => void) {
    this.responseId = responseId;
    this.lastSequence = lastSequence;
    this.#iterator = iterator;
    this.#abort = abort;
  }

  /**
   * The SDK's next step: an event, or `done` once the stream has ended (with
   * or without a final event). The caller keeps the sequence number
   * (`lastSequence`) of each event it takes. Handed on as it is, without an
   * async frame of its own: an answer has a score of events, and at the peak
   * each frame's promise is garbage the event loop pays to collect.
   */
  next(): Promise<IteratorResult<StreamEvent>> {
    return this.#closed ? Promise.resolve(ENDED) : this.#iterator.next();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort();
    void this.#iterator.return?.().catch(() => {});
  }
}

/**
 * The assistant on OpenAI's current API (DESIGN §2): a Conversation is the
 * thread, a background Response with file_search over our vector store is the
 * run, polled until it ends; the answer is the newest assistant item.
 */
export class OpenAIProvider implements AssistantProvider {
  readonly kind = 'openai' as const;
  readonly acceptedFileTypes = ['.txt', '.md', '.markdown', '.json', '.html', '.htm', '.pdf', '.docx', '.pptx', '.tex'] as const;

  readonly #client: OpenAI;
  readonly #options: OpenAIProviderOptions;

  constructor(options: OpenAIProviderOptions) {
    this.#options = options;
    this.#client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      timeout: options.timeoutMs ?? 30_000,
      maxRetries: options.maxRetries ?? 3,
    });
  }

  async createThread(call: ProviderCall): Promise<string> {
    const body = { metadata: { source: 'con-concierge' } };
    call.request(body);
    const { data, response } = await wrap(() => this.#client.conversations.create(body).withResponse());
    call.response(data, response.headers);
    return data.id;
  }

  async createMessage(call: ProviderCall, threadId: string, text: string): Promise<string> {
    const body = { items: [{ type: 'message' as const, role: 'user' as const, content: text }] };
    call.request({ conversation_id: threadId, ...body });
    const { data, response } = await wrap(() => this.#client.conversations.items.create(threadId, body).withResponse());
    call.response(data, response.headers);
    return data.data[0]?.id ?? '';
  }

  async createRun(call: ProviderCall, threadId: string, settings: RunSettings, options: { stream?: boolean } = {}): Promise<RunState> {
    const vectorStoreId = await this.#vectorStoreId();
    const common = {
      model: this.#options.model,
      background: true,
      store: true,
      instructions: settings.instructions,
      tools: [{ type: 'file_search' as const, vector_store_ids: [vectorStoreId] }],
      truncation: 'auto' as const,
      ...(settings.maxOutputTokens > 0 ? { max_output_tokens: settings.maxOutputTokens } : {}),
    };
    let body: OpenAI.Responses.ResponseCreateParamsNonStreaming;
    if (settings.truncation.type === 'last_messages') {
      // The run sees only the last N messages; the conversation itself stays whole.
      body = { ...common, input: await this.#lastMessages(threadId, settings.truncation.lastMessages, settings.maxPromptTokens) };
    } else {
      body = { ...common, conversation: threadId };
    }
    if (options.stream) {
      const streamed = await this.#createStreaming(call, body);
      if (streamed) return streamed;
    }
    call.request(body);
    const { data, response } = await wrap(() => this.#client.responses.create(body).withResponse());
    call.response(data, response.headers);
    return runState(data);
  }

  /**
   * The background response created with `stream: true` (DESIGN §9), read up
   * to its `response.created` event: the run, with its stream open for
   * `followRun`. Null when the API refuses to stream it (a 4xx: nothing was
   * created), so the run is created plainly and polled.
   */
  async #createStreaming(call: ProviderCall, body: OpenAI.Responses.ResponseCreateParamsNonStreaming): Promise<RunState | null> {
    const streaming = { ...body, stream: true as const };
    call.request(streaming);
    let opened;
    try {
      opened = await wrap(() => this.#client.responses.create(streaming).withResponse());
    } catch (error) {
      if (error instanceof ProviderError && error.status !== undefined && error.status >= 400 && error.status < 500 && error.status !== 429) return null;
      throw error;
    }
    const { data: stream, response } = opened;
    const iterator = stream[Symbol.asyncIterator]();
    const first = await wrap(() => iterator.next());
    if (first.done || first.value.type !== 'response.created') {
      stream.controller.abort();
      throw new ProviderError(`OpenAI's response stream began without response.created (${first.done ? 'it ended' : first.value.type})`);
    }
    call.response(first.value, response.headers);
    const created = first.value.response;
    return { ...runState(created), stream: new ResponseEventStream(created.id, first.value.sequence_number, iterator, () => stream.controller.abort(STREAM_CLOSED)) };
  }

  /**
   * Follows a background response through its events (DESIGN §9): text
   * deltas to `onText`, the final event's state returned. A stream that
   * drops is resumed after the last event seen
   * (`GET /v1/responses/{id}?stream=true&starting_after=N`); one that cannot
   * be opened or keeps dropping gives StreamUnavailableError, and the run is
   * polled. The call log's request lists the resumptions, its response is
   * the final event.
   */
  async followRun(call: ProviderCall, _threadId: string, run: RunState, options: FollowOptions): Promise<RunState> {
    const { onText, signal } = options;
    let stream = run.stream instanceof ResponseEventStream ? run.stream : null;
    let lastSequence = stream?.lastSequence ?? -1;
    const resumedAfter: number[] = [];
    const describe = () => ({ response_id: run.id, stream: true, ...(resumedAfter.length ? { resumed_after: resumedAfter } : {}) });
    const stop = () => stream?.close();
    signal?.addEventListener('abort', stop, { once: true });
    try {
      for (let attempt = 0; ; attempt++) {
        signal?.throwIfAborted();
        if (!stream) {
          resumedAfter.push(lastSequence);
          stream = await this.#resume(run.id, lastSequence, signal);
        }
        try {
          for (let step = await stream.next(); !step.done; step = await stream.next()) {
            const event = step.value;
            lastSequence = stream.lastSequence = event.sequence_number;
            if (event.type === 'response.output_text.delta') onText(event.delta);
            else if (TERMINAL_EVENTS.has(event.type) && 'response' in event) {
              call.request(describe());
              call.response(event);
              return runState(event.response);
            }
          }
        } catch {
          // A dropped connection (or an error event): look at the run, then pick the stream up again.
          if (signal?.aborted) throw signal.reason;
        } finally {
          stream.close();
          stream = null;
        }
        signal?.throwIfAborted();
        // The stream ended without a final event (dropped, or the run was cancelled): where is the run?
        const current = await wrap(() => this.#client.responses.retrieve(run.id, {}, { signal }));
        if (FINAL_RUN_STATUSES.has(runState(current).status)) {
          call.request(describe());
          call.response(current);
          return runState(current);
        }
        if (attempt >= MAX_STREAM_RESUMES) throw new StreamUnavailableError(`The response stream of ${run.id} dropped ${attempt + 1} times`);
      }
    } finally {
      signal?.removeEventListener('abort', stop);
      stream?.close();
    }
  }

  /** Opens the response's stream again after `lastSequence` (from its start when -1); StreamUnavailableError when it cannot be. */
  async #resume(responseId: string, lastSequence: number, signal: AbortSignal | undefined): Promise<ResponseEventStream> {
    const query = { stream: true as const, ...(lastSequence >= 0 ? { starting_after: lastSequence } : {}) };
    try {
      const stream = await this.#client.responses.retrieve(responseId, query, { signal });
      return new ResponseEventStream(responseId, lastSequence, stream[Symbol.asyncIterator](), () => stream.controller.abort(STREAM_CLOSED));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new StreamUnavailableError(`Could not open the response stream of ${responseId}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  async retrieveRun(call: ProviderCall, _threadId: string, runId: string): Promise<RunState> {
    call.request({ response_id: runId });
    const { data, response } = await wrap(() => this.#client.responses.retrieve(runId).withResponse());
    call.response(data, response.headers);
    return runState(data);
  }

  async cancelRun(call: ProviderCall, _threadId: string, runId: string): Promise<RunState> {
    call.request({ response_id: runId, action: 'cancel' });
    const { data, response } = await wrap(() => this.#client.responses.cancel(runId).withResponse());
    call.response(data, response.headers);
    return runState(data);
  }

  async listMessages(call: ProviderCall, threadId: string, run: RunState, questionId?: string | null): Promise<Answer> {
    if (run.output) {
      // A run on the last N messages answered outside the conversation: the answer joins it here, so the thread stays whole.
      const answer = run.output;
      const body = { items: [{ type: 'message' as const, role: 'assistant' as const, content: answer.text }] };
      call.request({ conversation_id: threadId, ...body });
      const { data, response } = await wrap(() => this.#client.conversations.items.create(threadId, body).withResponse());
      call.response(data, response.headers);
      return { ...answer, sources: await this.#withFilenames(answer.sources) };
    }
    // The items after the question, oldest first: the run's own, not the earlier conversation's (nor a later question's answer).
    // Without the question's id (a run recovered from a row stored without it), the newest items.
    const query = questionId ? { after: questionId, limit: ANSWER_LOOKBACK, order: 'asc' as const } : { limit: ANSWER_LOOKBACK, order: 'desc' as const };
    call.request({ conversation_id: threadId, ...query });
    const { data, response } = await wrap(() => this.#client.conversations.items.list(threadId, query).withResponse());
    call.response(listing(data), response.headers);
    const message = data.data.find((item): item is Extract<ConversationItem, { type: 'message' }> => item.type === 'message' && item.role === 'assistant');
    if (!message) throw new ProviderError('The assistant finished without an answer');
    const answer = answerFromContent(message.id, message.content);
    return { ...answer, sources: await this.#withFilenames(answer.sources) };
  }

  async listVectorStores(call: ProviderCall): Promise<VectorStoreInfo[]> {
    call.request({ limit: 100 });
    const { data, response } = await wrap(() => this.#client.vectorStores.list({ limit: 100 }).withResponse());
    call.response(listing(data), response.headers);
    return data.data.map((store) => ({
      id: store.id,
      name: store.name,
      file_count: store.file_counts.total,
      created_at: new Date(store.created_at * 1000).toISOString(),
    }));
  }

  async listFiles(call: ProviderCall): Promise<StoredFile[]> {
    const vectorStoreId = await this.#vectorStoreId();
    call.request({ vector_store_id: vectorStoreId, limit: 100 });
    const { data, response } = await wrap(() => this.#client.vectorStores.files.list(vectorStoreId, { limit: 100 }).withResponse());
    call.response(listing(data), response.headers);
    const names = await this.#filenames(data.data.map((file) => file.id));
    return data.data.map((file) => ({
      id: file.id,
      filename: names.get(file.id) ?? file.id,
      bytes: file.usage_bytes,
      created_at: new Date(file.created_at * 1000).toISOString(),
    }));
  }

  async uploadFile(call: ProviderCall, file: { filename: string; data: Buffer }): Promise<StoredFile & { vector_store_id: string }> {
    const vectorStoreId = await this.#vectorStoreId();
    call.request({ vector_store_id: vectorStoreId, filename: file.filename, bytes: file.data.length, purpose: 'assistants' });
    const uploaded = await wrap(async () => this.#client.files.create({ file: await toFile(file.data, file.filename), purpose: 'assistants' }));
    let attached = await wrap(() => this.#client.vectorStores.files.create(vectorStoreId, { file_id: uploaded.id }));
    const clock = this.#options.clock;
    const deadline = clock.now().getTime() + FILE_READY_TIMEOUT_MS;
    while (attached.status === 'in_progress' && clock.now().getTime() < deadline) {
      await clock.sleep(FILE_POLL_MS);
      attached = await wrap(() => this.#client.vectorStores.files.retrieve(uploaded.id, { vector_store_id: vectorStoreId }));
    }
    call.response({ file: uploaded, vector_store_file: attached });
    if (attached.status !== 'completed') {
      throw new ProviderError(attached.last_error?.message ?? `The vector store could not index ${file.filename} (status ${attached.status})`);
    }
    return {
      id: uploaded.id,
      filename: uploaded.filename,
      bytes: uploaded.bytes,
      created_at: new Date(uploaded.created_at * 1000).toISOString(),
      vector_store_id: vectorStoreId,
    };
  }

  async deleteFile(call: ProviderCall, fileId: string): Promise<void> {
    const vectorStoreId = await this.#vectorStoreId();
    call.request({ vector_store_id: vectorStoreId, file_id: fileId });
    const detached = await wrap(() => this.#client.vectorStores.files.delete(fileId, { vector_store_id: vectorStoreId }));
    // The stored file itself goes too; it may already be gone.
    const deleted = await wrap(() => this.#client.files.delete(fileId)).catch((error: unknown) => {
      if (error instanceof ProviderError && error.status === 404) return null;
      throw error;
    });
    call.response({ vector_store_file: detached, file: deleted });
  }

  /** The last `count` messages of the conversation as run input, oldest dropped until the token estimate fits. */
  async #lastMessages(threadId: string, count: number, maxPromptTokens: number): Promise<OpenAI.Responses.EasyInputMessage[]> {
    const page = await wrap(() => this.#client.conversations.items.list(threadId, { limit: Math.min(100, Math.max(count * 2, count)), order: 'desc' }));
    const messages = page.data
      .filter((item): item is Extract<ConversationItem, { type: 'message' }> => item.type === 'message' && (item.role === 'user' || item.role === 'assistant'))
      .slice(0, count)
      .reverse()
      .map((item) => ({ role: item.role as 'user' | 'assistant', content: textOf(item.content) }));
    if (maxPromptTokens > 0) {
      while (messages.length > 1 && messages.reduce((total, message) => total + estimateTokens(message.content), 0) > maxPromptTokens) {
        messages.shift();
      }
    }
    return messages;
  }

  async #vectorStoreId(): Promise<string> {
    if (this.#options.vectorStoreId) return this.#options.vectorStoreId;
    const id = await rememberedSetting(this.#options.database.db, STORE_SETTING, this.#options.clock.now().toISOString(), async () => {
      const store = await wrap(() => this.#client.vectorStores.create({ name: `${this.#options.productName} knowledge` }));
      return store.id;
    });
    this.#options.vectorStoreId = id;
    return id;
  }

  async #filenames(fileIds: string[]): Promise<Map<string, string>> {
    const names = new Map<string, string>();
    if (fileIds.length === 0) return names;
    const files = await wrap(() => this.#client.files.list({ purpose: 'assistants', limit: 10_000 }));
    for (const file of files.data) names.set(file.id, file.filename);
    return names;
  }

  async #withFilenames(sources: Source[]): Promise<Source[]> {
    const missing = sources.filter((source) => !source.filename).map((source) => source.file_id ?? '');
    if (missing.length === 0) return sources;
    const names = await this.#filenames(missing).catch(() => new Map<string, string>());
    return sources.map((source) => (source.filename ? source : fileSource(source.file_id ?? '', names.get(source.file_id ?? '') || source.file_id || '')));
  }
}

/** SDK errors as ProviderErrors with a message fit for the logs and the message row. */
async function wrap<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof APIConnectionTimeoutError) throw new ProviderError('OpenAI did not answer in time', { cause: error });
    if (error instanceof APIError) {
      const detail = error.error && typeof error.error === 'object' && 'message' in error.error ? String(error.error.message) : error.message;
      throw new ProviderError(`OpenAI ${error.status ?? 'connection'} error: ${detail}`, { status: error.status, cause: error });
    }
    throw error;
  }
}

/**
 * What a list call's page holds of the provider's reply, for its log row.
 * The SDK's page object also carries its request options and the reply's
 * body beside the parsed items: logged whole, every listing was in it twice,
 * next to the client's internals.
 */
const listing = <Item>(page: { data: Item[]; has_more?: boolean; last_id?: string }) => ({
  object: 'list',
  data: page.data,
  ...(page.last_id === undefined ? {} : { last_id: page.last_id }),
  ...(page.has_more === undefined ? {} : { has_more: page.has_more }),
});

const STATUS: Record<string, RunStatus> = {
  queued: 'queued',
  in_progress: 'in_progress',
  completed: 'completed',
  failed: 'failed',
  incomplete: 'incomplete',
  cancelled: 'cancelled',
};

function runState(response: ResponseObject): RunState {
  const status = STATUS[response.status ?? 'in_progress'] ?? 'in_progress';
  let error: string | null = null;
  if (status === 'failed') error = `The assistant failed: ${response.error?.message ?? 'no reason given'}`;
  if (status === 'incomplete') error = `The answer was cut short (${response.incomplete_details?.reason ?? 'incomplete'})`;
  if (status === 'cancelled') error = 'The assistant run was cancelled';
  const usage = response.usage
    ? { prompt_tokens: response.usage.input_tokens, completion_tokens: response.usage.output_tokens, total_tokens: response.usage.total_tokens }
    : null;
  // A run made without the conversation carries its answer itself (see listMessages).
  const output = status === 'completed' && !response.conversation ? answerFromOutput(response) : null;
  return { id: response.id, status, error, usage, output };
}

type MessageContent = Extract<ConversationItem, { type: 'message' }>['content'];

function textOf(content: MessageContent): string {
  return content
    .map((part) => ('text' in part && typeof part.text === 'string' ? part.text : ''))
    .filter(Boolean)
    .join('\n');
}

function answerFromContent(messageId: string, content: MessageContent): Answer {
  const sources = new Map<string, Source>();
  for (const part of content) {
    if (part.type !== 'output_text') continue;
    for (const annotation of part.annotations) {
      if (annotation.type === 'file_citation') sources.set(annotation.file_id, fileSource(annotation.file_id, annotation.filename));
    }
  }
  return { messageId, text: textOf(content), sources: [...sources.values()] };
}

function answerFromOutput(response: ResponseObject): Answer {
  const message = response.output.find((item): item is OpenAI.Responses.ResponseOutputMessage => item.type === 'message');
  if (!message) throw new ProviderError('The assistant finished without an answer');
  return answerFromContent(message.id, message.content as MessageContent);
}
