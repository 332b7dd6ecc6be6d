import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for the parts of OpenAI's API the assistant provider uses
 * (DESIGN §2): Conversations and their items, background Responses with
 * file_search, Files and Vector Stores. Request checks, object shapes and
 * error bodies follow OpenAI's API reference, so the real `openai` SDK talks
 * to it unchanged. Tests (or `npm run fake-openai`) tune it with knobs:
 * latency, injected failures, how long runs take and how they end.
 *
 * A background response created with `stream: true` streams its events as
 * the real API does (`event: <type>` / `data: <json>` with a
 * `sequence_number` each: response.created, response.in_progress, the
 * file_search call's events, response.output_item.added,
 * response.content_part.added, response.output_text.delta…,
 * response.output_text.done, response.content_part.done,
 * response.output_item.done, then response.completed / .failed /
 * .incomplete), and can be followed again from any point with
 * `GET /v1/responses/{id}?stream=true&starting_after=N`. Knobs add a delay
 * between deltas and drop a stream mid-way.
 */

export type FinalStatus = 'completed' | 'failed' | 'incomplete' | 'cancelled';

export interface InjectedFailure {
  /** Method to match (any when absent). */
  method?: string;
  /** Path prefix to match, e.g. "/v1/responses". */
  path: string;
  status: 400 | 429 | 500 | 502 | 503;
  /** How many matching requests fail (default 1). */
  count?: number;
  /** Match only requests that ask for a stream (true) or only those that do not (false). */
  stream?: boolean;
  /** The `retry-after-ms` hint sent with a 429 or 5xx (20 unless set; null sends none, leaving the client to its own back-off). */
  retryAfterMs?: number | null;
}

/** Cuts streams off mid-way, as a dropped connection would. */
export interface StreamDrop {
  /** Events a stream sends before its connection is destroyed. */
  afterEvents: number;
  /** How many streams are dropped (default 1). */
  times?: number;
}

export interface AnswerContext {
  question: string;
  instructions: string | null;
  files: { id: string; filename: string; text: string }[];
}

export interface Knobs {
  /** Delay before every answer. */
  latencyMs: number;
  /** How long a background response stays queued/in progress. */
  runDurationMs: number;
  finalStatus: FinalStatus;
  failures: InjectedFailure[];
  /** Replaces the built-in answer (which quotes matching lines of the attached files). */
  answer?: (context: AnswerContext) => string;
  /** Delay before each `response.output_text.delta` of a streamed response. */
  deltaDelayMs: number;
  /** Drops streams mid-way; cleared once used up. */
  dropStream?: StreamDrop;
  /**
   * Plays every duration above this many times faster (default 1), so a
   * test can have a 60 s run (`runDurationMs: 60_000`) finish in a second
   * with `timeScale: 60`, against a server on a clock sped up as much.
   */
  timeScale: number;
}

export interface JournalEntry {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  authorization: string | null;
  /** When the request arrived (ms since the epoch), for rate checks. */
  at: number;
}

export interface FakeOpenAI {
  /** Base URL for the SDK (`…/v1`). */
  url: string;
  apiKey: string;
  knobs: Knobs;
  journal: JournalEntry[];
  state: State;
  /** Sets knobs (also available over HTTP: POST /__control with a JSON body). */
  configure(changes: Partial<Knobs>): void;
  failNext(failure: InjectedFailure): void;
  reset(): void;
  close(): Promise<void>;
}

interface MessageItem {
  type: 'message';
  id: string;
  status: 'completed';
  role: 'user' | 'assistant' | 'system' | 'developer';
  content: { type: 'input_text' | 'output_text'; text: string; annotations?: Annotation[] }[];
}
interface Annotation {
  type: 'file_citation';
  file_id: string;
  filename: string;
  index: number;
}
interface Conversation {
  id: string;
  object: 'conversation';
  created_at: number;
  metadata: Record<string, string>;
  items: MessageItem[];
}
interface StreamEvent {
  type: string;
  sequence_number: number;
  [key: string]: unknown;
}
interface StoredResponse {
  body: Record<string, unknown> & { id: string; status: string };
  conversationId: string | null;
  input: MessageItem[];
  vectorStoreIds: string[];
  /** When it finishes (ms since the epoch); a streamed one: when its final event went out. */
  finishAt: number;
  finalStatus: FinalStatus;
  /** Created with `stream: true`: its events, as sent so far, and the streams waiting for more. */
  stream?: { events: StreamEvent[]; over: boolean; listeners: Set<() => void> };
}
interface StoredFile {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
  content: Buffer;
}
interface VectorStore {
  id: string;
  name: string;
  created_at: number;
  files: Map<string, { created_at: number }>;
}
export interface State {
  conversations: Map<string, Conversation>;
  responses: Map<string, StoredResponse>;
  files: Map<string, StoredFile>;
  vectorStores: Map<string, VectorStore>;
}

const DEFAULT_KNOBS: Knobs = { latencyMs: 0, runDurationMs: 50, finalStatus: 'completed', failures: [], deltaDelayMs: 0, timeScale: 1 };

class HttpError extends Error {
  readonly status: number;
  readonly body: { error: { message: string; type: string; param: string | null; code: string | null } };
  readonly headers: Record<string, string>;
  constructor(status: number, message: string, options: { type?: string; param?: string | null; code?: string | null; headers?: Record<string, string> } = {}) {
    super(message);
    this.status = status;
    this.headers = options.headers ?? {};
    this.body = { error: { message, type: options.type ?? 'invalid_request_error', param: options.param ?? null, code: options.code ?? null } };
  }
}

const id = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);
const notFound = (what: string, value: string) => new HttpError(404, `No ${what} found with id '${value}'.`, { code: null, param: null });

export async function startFakeOpenAI(options: { port?: number; apiKey?: string; knobs?: Partial<Knobs> } = {}): Promise<FakeOpenAI> {
  const apiKey = options.apiKey ?? 'sk-test-fake-openai';
  const knobs: Knobs = { ...DEFAULT_KNOBS, failures: [], ...options.knobs };
  const journal: JournalEntry[] = [];
  const state: State = { conversations: new Map(), responses: new Map(), files: new Map(), vectorStores: new Map() };
  /** A knob's duration in real milliseconds. */
  const scaled = (ms: number) => ms / (knobs.timeScale > 0 ? knobs.timeScale : 1);

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      const failure = error instanceof HttpError ? error : new HttpError(500, 'The server had an error while processing your request.', { type: 'server_error' });
      if (!(error instanceof HttpError)) console.error('fake-openai:', error);
      send(response, failure.status, failure.body, failure.headers);
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const raw = await readBody(request);
    const method = request.method ?? 'GET';

    if (url.pathname === '/__control') {
      if (method === 'POST') configure(JSON.parse(raw.toString('utf8') || '{}') as Partial<Knobs>);
      return send(response, 200, { knobs: { ...knobs, answer: undefined }, requests: journal.length });
    }

    const body = await parseBody(request, raw);
    journal.push({
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body: body instanceof FormData ? '[multipart]' : body,
      authorization: request.headers.authorization ?? null,
      at: Date.now(),
    });
    if (knobs.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, scaled(knobs.latencyMs)));

    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      throw new HttpError(401, 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.', {
        code: 'invalid_api_key',
      });
    }
    const wantsStream = url.searchParams.get('stream') === 'true' || (typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === true);
    const failure = knobs.failures.find(
      (candidate) =>
        (!candidate.method || candidate.method === method) &&
        url.pathname.startsWith(candidate.path) &&
        (candidate.stream === undefined || candidate.stream === wantsStream),
    );
    if (failure) {
      failure.count = (failure.count ?? 1) - 1;
      if (failure.count <= 0) knobs.failures.splice(knobs.failures.indexOf(failure), 1);
      throw injected(failure.status, failure.retryAfterMs === undefined ? 20 : failure.retryAfterMs);
    }

    const result = await route(method, url, body);
    if (result instanceof EventFeed) return streamEvents(result.stored, result.startingAfter, response);
    send(response, 200, result);
  }

  function route(method: string, url: URL, body: unknown): unknown {
    const parts = url.pathname.split('/').filter(Boolean); // ['v1', ...]
    if (parts[0] !== 'v1') throw new HttpError(404, `Invalid URL (${method} ${url.pathname})`);
    const [, resource, first, sub, second, action] = parts;
    const json = (body ?? {}) as Record<string, unknown>;

    if (resource === 'conversations') {
      if (!first && method === 'POST') return createConversation(json);
      const conversation = state.conversations.get(first ?? '');
      if (!conversation) throw notFound('conversation', first ?? '');
      if (!sub && method === 'GET') return conversationBody(conversation);
      if (sub === 'items' && !second && method === 'POST') return addItems(conversation, json);
      if (sub === 'items' && !second && method === 'GET') return listItems(conversation, url.searchParams);
    }
    if (resource === 'responses') {
      if (!first && method === 'POST') {
        const created = createResponse(json);
        return json.stream === true ? new EventFeed(created, -1) : settle(created);
      }
      const stored = state.responses.get(first ?? '');
      if (!stored) throw notFound('response', first ?? '');
      if (!sub && method === 'GET' && url.searchParams.get('stream') === 'true') return followResponse(stored, url.searchParams);
      if (!sub && method === 'GET') return settle(stored);
      if (sub === 'cancel' && method === 'POST') return cancel(stored);
    }
    if (resource === 'files') {
      if (!first && method === 'POST') return createFile(body);
      if (!first && method === 'GET') return list([...state.files.values()].filter((file) => !url.searchParams.get('purpose') || file.purpose === url.searchParams.get('purpose')).map(fileBody));
      const file = state.files.get(first ?? '');
      if (!file) throw notFound('file', first ?? '');
      if (!sub && method === 'GET') return fileBody(file);
      if (!sub && method === 'DELETE') {
        state.files.delete(file.id);
        for (const store of state.vectorStores.values()) store.files.delete(file.id);
        return { id: file.id, object: 'file', deleted: true };
      }
      if (sub === 'content' && method === 'GET') return file.content.toString('utf8');
    }
    if (resource === 'vector_stores') {
      if (!first && method === 'POST') return createVectorStore(json);
      if (!first && method === 'GET') return list([...state.vectorStores.values()].map(vectorStoreBody));
      const store = state.vectorStores.get(first ?? '');
      if (!store) throw notFound('vector store', first ?? '');
      if (!sub && method === 'GET') return vectorStoreBody(store);
      if (!sub && method === 'DELETE') {
        state.vectorStores.delete(store.id);
        return { id: store.id, object: 'vector_store.deleted', deleted: true };
      }
      if (sub === 'files' && !second && method === 'POST') return attachFile(store, json);
      if (sub === 'files' && !second && method === 'GET') return list([...store.files.keys()].map((fileId) => vectorStoreFileBody(store, fileId)));
      if (sub === 'files' && second && !action) {
        if (!store.files.has(second)) throw notFound('file', second);
        if (method === 'GET') return vectorStoreFileBody(store, second);
        if (method === 'DELETE') {
          store.files.delete(second);
          return { id: second, object: 'vector_store.file.deleted', deleted: true };
        }
      }
    }
    throw new HttpError(404, `Invalid URL (${method} ${url.pathname})`);
  }

  function createConversation(json: Record<string, unknown>) {
    const conversation: Conversation = {
      id: id('conv_'),
      object: 'conversation',
      created_at: now(),
      metadata: (json.metadata as Record<string, string>) ?? {},
      items: [],
    };
    if (Array.isArray(json.items)) conversation.items.push(...json.items.map((item, index) => toMessage(item, `items[${index}]`)));
    state.conversations.set(conversation.id, conversation);
    return conversationBody(conversation);
  }

  function addItems(conversation: Conversation, json: Record<string, unknown>) {
    if (!Array.isArray(json.items) || json.items.length === 0) throw new HttpError(400, "Missing required parameter: 'items'.", { param: 'items', code: 'missing_required_parameter' });
    if (json.items.length > 20) throw new HttpError(400, "Invalid 'items': array too long. Expected an array with maximum length 20.", { param: 'items' });
    const added = json.items.map((item, index) => toMessage(item, `items[${index}]`));
    conversation.items.push(...added);
    return list(added);
  }

  function listItems(conversation: Conversation, query: URLSearchParams) {
    const limit = Math.min(100, Number(query.get('limit') ?? 20));
    const ordered = query.get('order') === 'asc' ? [...conversation.items] : [...conversation.items].reverse();
    const after = query.get('after');
    const start = after ? ordered.findIndex((item) => item.id === after) + 1 : 0;
    const page = ordered.slice(start, start + limit);
    return { ...list(page), has_more: start + limit < ordered.length };
  }

  function createResponse(json: Record<string, unknown>) {
    if (typeof json.model !== 'string' || !json.model) throw new HttpError(400, "Missing required parameter: 'model'.", { param: 'model', code: 'missing_required_parameter' });
    if (json.background === true && json.store === false) {
      throw new HttpError(400, 'Background mode requires `store` to be true.', { param: 'store', code: 'invalid_value' });
    }
    const conversationId = typeof json.conversation === 'string' ? json.conversation : ((json.conversation as { id?: string } | undefined)?.id ?? null);
    if (conversationId && !state.conversations.has(conversationId)) throw notFound('conversation', conversationId);
    if (conversationId && json.previous_response_id) {
      throw new HttpError(400, "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.", { param: 'conversation' });
    }
    const input = json.input === undefined ? [] : typeof json.input === 'string' ? [toMessage({ role: 'user', content: json.input }, 'input')] : Array.isArray(json.input) ? json.input.map((item, index) => toMessage(item, `input[${index}]`)) : null;
    if (input === null) throw new HttpError(400, "Invalid type for 'input': expected a string or an array of input items.", { param: 'input' });
    if (!conversationId && input.length === 0) throw new HttpError(400, "Missing required parameter: 'input'.", { param: 'input', code: 'missing_required_parameter' });
    const tools = Array.isArray(json.tools) ? (json.tools as { type: string; vector_store_ids?: string[] }[]) : [];
    const vectorStoreIds = tools.filter((tool) => tool.type === 'file_search').flatMap((tool) => tool.vector_store_ids ?? []);
    for (const storeId of vectorStoreIds) if (!state.vectorStores.has(storeId)) throw notFound('vector store', storeId);
    if (json.truncation !== undefined && json.truncation !== 'auto' && json.truncation !== 'disabled') {
      throw new HttpError(400, "Invalid value for 'truncation': expected one of 'auto' or 'disabled'.", { param: 'truncation', code: 'invalid_value' });
    }
    if (json.stream === true && json.background !== true) {
      // Only a background response outlives its stream; this fake implements streaming for those alone.
      throw new HttpError(400, 'This fake server streams background responses only: set background to true with stream.', { param: 'stream' });
    }
    const responseId = id('resp_');
    const body = {
      id: responseId,
      object: 'response',
      created_at: now(),
      status: json.background ? 'queued' : 'completed',
      background: json.background === true,
      model: json.model,
      instructions: json.instructions ?? null,
      conversation: conversationId ? { id: conversationId } : null,
      tools,
      truncation: json.truncation ?? 'disabled',
      max_output_tokens: json.max_output_tokens ?? null,
      store: json.store !== false,
      metadata: json.metadata ?? {},
      output: [] as unknown[],
      output_text: '',
      usage: null as unknown,
      error: null as unknown,
      incomplete_details: null as unknown,
      parallel_tool_calls: true,
      temperature: 1,
      top_p: 1,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      reasoning: { effort: null, summary: null },
      previous_response_id: null,
    };
    const stored: StoredResponse = {
      body,
      conversationId,
      input,
      vectorStoreIds,
      finishAt: Date.now() + (json.background ? scaled(knobs.runDurationMs) : 0),
      finalStatus: knobs.finalStatus,
    };
    state.responses.set(responseId, stored);
    if (json.stream === true) {
      stored.stream = { events: [], over: false, listeners: new Set() };
      void produce(stored).catch((error: unknown) => console.error('fake-openai: stream producer failed', error));
    }
    return stored;
  }

  /** Moves a response along: queued → in_progress → its final status once its time is up. */
  function settle(stored: StoredResponse) {
    const { body } = stored;
    // A streamed response moves on with its events, not with the clock.
    if (!stored.stream && (body.status === 'queued' || body.status === 'in_progress')) {
      if (Date.now() < stored.finishAt) {
        body.status = body.status === 'queued' && Date.now() > stored.finishAt - scaled(knobs.runDurationMs) / 2 ? 'in_progress' : body.status;
        return { ...body };
      }
      finish(stored);
    }
    return { ...body };
  }

  /** What the response answers: the question, the attached files' text, the answer and its citations. */
  function compose(stored: StoredResponse) {
    const { body } = stored;
    const conversation = stored.conversationId ? state.conversations.get(stored.conversationId) : undefined;
    const history = [...(conversation?.items ?? []), ...stored.input];
    const question = [...history].reverse().find((item) => item.role === 'user')?.content.map((part) => part.text).join('\n') ?? '';
    const files = stored.vectorStoreIds.flatMap((storeId) =>
      [...(state.vectorStores.get(storeId)?.files.keys() ?? [])]
        .map((fileId) => state.files.get(fileId))
        .filter((file): file is StoredFile => Boolean(file))
        .map((file) => ({ id: file.id, filename: file.filename, text: file.content.toString('utf8') })),
    );
    const promptTokens = Math.ceil((String(body.instructions ?? '').length + history.reduce((total, item) => total + item.content.map((part) => part.text).join('').length, 0)) / 4);
    const { text, annotations } = knobs.answer ? { text: knobs.answer({ question, instructions: body.instructions as string | null, files }), annotations: [] } : defaultAnswer(question, files);
    const finalText = stored.finalStatus === 'incomplete' ? text.slice(0, Math.max(1, Math.floor(text.length / 2))) : text;
    return { question, promptTokens, text: finalText, annotations };
  }

  function finish(stored: StoredResponse, composed = compose(stored), messageId = id('msg_')) {
    const { body } = stored;
    const conversation = stored.conversationId ? state.conversations.get(stored.conversationId) : undefined;
    body.status = stored.finalStatus;
    if (stored.finalStatus === 'failed') {
      body.error = { code: 'server_error', message: 'The model failed to generate a response.' };
      body.usage = usage(composed.promptTokens, 0);
      return;
    }
    if (stored.finalStatus === 'cancelled') return;
    const message: MessageItem = {
      type: 'message',
      id: messageId,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: composed.text, annotations: composed.annotations }],
    };
    body.output = [...searchCalls(stored, composed.question), message];
    body.output_text = composed.text;
    body.usage = usage(composed.promptTokens, Math.ceil(composed.text.length / 4));
    if (stored.finalStatus === 'incomplete') body.incomplete_details = { reason: 'max_output_tokens' };
    else if (conversation) conversation.items.push(...stored.input.filter((item) => !conversation.items.includes(item)), message);
  }

  const searchCalls = (stored: StoredResponse, question: string) =>
    stored.vectorStoreIds.length ? [{ type: 'file_search_call', id: id('fs_'), status: 'completed', queries: [question], results: null }] : [];

  /**
   * Plays a streamed response out as the real API does, event by event:
   * queued, in progress, the file search, the message and its text a word
   * at a time (`deltaDelayMs` apart), then the final event. A cancel stops it.
   */
  async function produce(stored: StoredResponse) {
    const { body } = stored;
    const feed = stored.stream!;
    let sequence = 0;
    const emit = (type: string, fields: Record<string, unknown>) => {
      feed.events.push({ type, sequence_number: sequence++, ...fields });
      for (const listener of feed.listeners) listener();
    };
    const end = () => {
      feed.over = true;
      for (const listener of feed.listeners) listener();
    };
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, scaled(ms))));
    const cancelled = () => body.status === 'cancelled';

    emit('response.created', { response: { ...body } });
    await wait(knobs.runDurationMs / 2);
    if (cancelled()) return end();
    body.status = 'in_progress';
    emit('response.in_progress', { response: { ...body } });
    const composed = compose(stored);
    let outputIndex = 0;
    for (const call of searchCalls(stored, composed.question)) {
      emit('response.output_item.added', { output_index: outputIndex, item: { ...call, status: 'in_progress' } });
      emit('response.file_search_call.in_progress', { output_index: outputIndex, item_id: call.id });
      emit('response.file_search_call.searching', { output_index: outputIndex, item_id: call.id });
      emit('response.file_search_call.completed', { output_index: outputIndex, item_id: call.id });
      emit('response.output_item.done', { output_index: outputIndex, item: call });
      outputIndex++;
    }
    await wait(knobs.runDurationMs / 2);
    if (cancelled()) return end();
    if (stored.finalStatus === 'failed' || stored.finalStatus === 'cancelled') {
      finish(stored, composed);
      if (stored.finalStatus === 'failed') emit('response.failed', { response: { ...body } });
      return end();
    }
    const messageId = id('msg_');
    const item = { type: 'message', id: messageId, status: 'in_progress', role: 'assistant', content: [] };
    emit('response.output_item.added', { output_index: outputIndex, item });
    emit('response.content_part.added', { output_index: outputIndex, item_id: messageId, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    for (const delta of composed.text.match(/\s*\S+\s*/g) ?? [composed.text]) {
      if (knobs.deltaDelayMs > 0) await wait(knobs.deltaDelayMs);
      if (cancelled()) return end();
      emit('response.output_text.delta', { output_index: outputIndex, item_id: messageId, content_index: 0, delta, logprobs: [] });
    }
    const part = { type: 'output_text', text: composed.text, annotations: composed.annotations, logprobs: [] };
    emit('response.output_text.done', { output_index: outputIndex, item_id: messageId, content_index: 0, text: composed.text, logprobs: [] });
    emit('response.content_part.done', { output_index: outputIndex, item_id: messageId, content_index: 0, part });
    emit('response.output_item.done', { output_index: outputIndex, item: { ...item, status: 'completed', content: [part] } });
    finish(stored, composed, messageId);
    stored.finishAt = Date.now();
    emit(stored.finalStatus === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: { ...body } });
    end();
  }

  /** GET /v1/responses/{id}?stream=true[&starting_after=N]: the events after N, then the rest as they come. */
  function followResponse(stored: StoredResponse, query: URLSearchParams) {
    if (!stored.stream) {
      throw new HttpError(400, 'This response was not created with stream=true, so it cannot be streamed.', { param: 'stream' });
    }
    const raw = query.get('starting_after');
    const startingAfter = raw === null ? -1 : Number(raw);
    if (!Number.isInteger(startingAfter) || startingAfter < -1) {
      throw new HttpError(400, "Invalid 'starting_after': expected a non-negative integer.", { param: 'starting_after' });
    }
    return new EventFeed(stored, startingAfter);
  }

  /** Writes a response's events after `startingAfter` as server-sent events, following it to its end (or a knob's drop). */
  function streamEvents(stored: StoredResponse, startingAfter: number, response: ServerResponse) {
    const feed = stored.stream!;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-request-id': `req_${randomBytes(8).toString('hex')}`,
      'openai-processing-ms': '1',
    });
    let next = feed.events.findIndex((event) => event.sequence_number > startingAfter);
    if (next < 0) next = feed.events.length;
    let sent = 0;
    const drop = knobs.dropStream;
    const pump = () => {
      while (next < feed.events.length) {
        const event = feed.events[next++]!;
        const text = `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
        sent++;
        if (drop && sent >= drop.afterEvents) {
          drop.times = (drop.times ?? 1) - 1;
          if (drop.times <= 0 && knobs.dropStream === drop) knobs.dropStream = undefined;
          feed.listeners.delete(pump);
          // The events sent so far arrive; then the connection is cut without an end.
          response.write(text, () => response.socket?.destroy());
          return;
        }
        response.write(text);
      }
      if (feed.over) {
        feed.listeners.delete(pump);
        response.end();
      }
    };
    feed.listeners.add(pump);
    response.on('close', () => feed.listeners.delete(pump));
    pump();
  }

  function cancel(stored: StoredResponse) {
    if (!stored.body.background) throw new HttpError(400, 'Only responses created with background=true can be cancelled.', { param: null });
    if (stored.body.status === 'queued' || stored.body.status === 'in_progress') {
      stored.finalStatus = 'cancelled';
      stored.finishAt = 0;
      if (stored.stream) stored.body.status = 'cancelled';
      else finish(stored);
    }
    return { ...stored.body };
  }

  function createFile(body: unknown) {
    if (!(body instanceof FormData)) throw new HttpError(400, 'Expected multipart/form-data with a file and a purpose.', { param: 'file' });
    const file = body.get('file');
    const purpose = body.get('purpose');
    if (!(file instanceof File)) throw new HttpError(400, "Missing required parameter: 'file'.", { param: 'file', code: 'missing_required_parameter' });
    if (typeof purpose !== 'string' || !purpose) throw new HttpError(400, "Missing required parameter: 'purpose'.", { param: 'purpose', code: 'missing_required_parameter' });
    return file.arrayBuffer().then((buffer) => {
      const stored: StoredFile = {
        id: id('file-'),
        object: 'file',
        bytes: buffer.byteLength,
        created_at: now(),
        filename: file.name,
        purpose,
        status: 'processed',
        content: Buffer.from(buffer),
      };
      state.files.set(stored.id, stored);
      return fileBody(stored);
    });
  }

  function createVectorStore(json: Record<string, unknown>) {
    const store: VectorStore = { id: id('vs_'), name: typeof json.name === 'string' ? json.name : '', created_at: now(), files: new Map() };
    for (const fileId of Array.isArray(json.file_ids) ? (json.file_ids as string[]) : []) {
      if (!state.files.has(fileId)) throw notFound('file', fileId);
      store.files.set(fileId, { created_at: now() });
    }
    state.vectorStores.set(store.id, store);
    return vectorStoreBody(store);
  }

  function attachFile(store: VectorStore, json: Record<string, unknown>) {
    const fileId = json.file_id;
    if (typeof fileId !== 'string') throw new HttpError(400, "Missing required parameter: 'file_id'.", { param: 'file_id', code: 'missing_required_parameter' });
    if (!state.files.has(fileId)) throw notFound('file', fileId);
    store.files.set(fileId, { created_at: now() });
    return vectorStoreFileBody(store, fileId);
  }

  function vectorStoreFileBody(store: VectorStore, fileId: string) {
    return {
      id: fileId,
      object: 'vector_store.file',
      created_at: store.files.get(fileId)?.created_at ?? now(),
      vector_store_id: store.id,
      status: 'completed',
      usage_bytes: state.files.get(fileId)?.bytes ?? 0,
      last_error: null,
      attributes: {},
      chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 } },
    };
  }

  function vectorStoreBody(store: VectorStore) {
    const total = store.files.size;
    return {
      id: store.id,
      object: 'vector_store',
      created_at: store.created_at,
      name: store.name,
      usage_bytes: [...store.files.keys()].reduce((sum, fileId) => sum + (state.files.get(fileId)?.bytes ?? 0), 0),
      file_counts: { in_progress: 0, completed: total, failed: 0, cancelled: 0, total },
      status: 'completed',
      expires_after: null,
      expires_at: null,
      last_active_at: now(),
      metadata: {},
    };
  }

  function configure(changes: Partial<Knobs>) {
    Object.assign(knobs, changes);
    if (changes.failures) knobs.failures = [...changes.failures];
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    apiKey,
    knobs,
    journal,
    state,
    configure,
    failNext: (failure) => knobs.failures.push({ count: 1, ...failure }),
    reset() {
      Object.assign(knobs, { ...DEFAULT_KNOBS, failures: [], answer: undefined, dropStream: undefined });
      journal.length = 0;
      state.conversations.clear();
      state.responses.clear();
      state.files.clear();
      state.vectorStores.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A route's answer that is a stream of a response's events rather than a JSON body. */
class EventFeed {
  readonly stored: StoredResponse;
  readonly startingAfter: number;
  constructor(stored: StoredResponse, startingAfter: number) {
    this.stored = stored;
    this.startingAfter = startingAfter;
  }
}

function injected(status: InjectedFailure['status'], retryAfterMs: number | null): HttpError {
  const hint: Record<string, string> = retryAfterMs === null ? {} : { 'retry-after-ms': String(retryAfterMs) };
  if (status === 400) return new HttpError(400, 'The request was refused (injected).', { param: null });
  if (status === 429) {
    return new HttpError(429, `Rate limit reached for requests. Please try again in ${retryAfterMs ?? 20}ms.`, {
      type: 'requests',
      code: 'rate_limit_exceeded',
      headers: { ...hint, 'x-ratelimit-remaining-requests': '0' },
    });
  }
  return new HttpError(status, 'The server had an error while processing your request. Sorry about that!', {
    type: 'server_error',
    headers: hint,
  });
}

/** An easy input message, a full message item or an output message, as the stored item. */
function toMessage(item: unknown, param: string): MessageItem {
  const value = item as { type?: string; role?: string; content?: unknown };
  if (!value || (value.type !== undefined && value.type !== 'message')) throw new HttpError(400, `Invalid '${param}': only message items are supported here.`, { param });
  if (!['user', 'assistant', 'system', 'developer'].includes(String(value.role))) {
    throw new HttpError(400, `Invalid value for '${param}.role': expected one of 'user', 'assistant', 'system' or 'developer'.`, { param: `${param}.role` });
  }
  const role = value.role as MessageItem['role'];
  const partType = role === 'assistant' ? 'output_text' : 'input_text';
  let content: MessageItem['content'];
  if (typeof value.content === 'string') content = [{ type: partType, text: value.content, ...(role === 'assistant' ? { annotations: [] } : {}) }];
  else if (Array.isArray(value.content)) {
    content = value.content.map((part: { type?: string; text?: unknown; annotations?: Annotation[] }) => {
      if (typeof part.text !== 'string') throw new HttpError(400, `Invalid '${param}.content': expected text parts.`, { param: `${param}.content` });
      return { type: part.type === 'output_text' ? 'output_text' : 'input_text', text: part.text, ...(part.annotations ? { annotations: part.annotations } : {}) };
    });
  } else throw new HttpError(400, `Missing required parameter: '${param}.content'.`, { param: `${param}.content`, code: 'missing_required_parameter' });
  return { type: 'message', id: id('msg_'), status: 'completed', role, content };
}

/** Quotes the lines of the attached files that share words with the question, citing each file. */
function defaultAnswer(question: string, files: AnswerContext['files']): { text: string; annotations: Annotation[] } {
  const words = question.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? [];
  const quotes: { file: AnswerContext['files'][number]; line: string }[] = [];
  for (const file of files) {
    for (const line of file.text.split('\n')) {
      const lower = line.toLowerCase();
      if (line.trim() && words.some((word) => lower.includes(word))) quotes.push({ file, line: line.trim().replace(/^[-*#>\s]+/, '') });
    }
  }
  if (quotes.length === 0) return { text: "I couldn't find that in the convention's files.", annotations: [] };
  let text = '';
  const annotations: Annotation[] = [];
  for (const { file, line } of quotes.slice(0, 3)) {
    text += `${line} `;
    annotations.push({ type: 'file_citation', file_id: file.id, filename: file.filename, index: text.length - 1 });
  }
  return { text: text.trim(), annotations };
}

function usage(input: number, output: number) {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

function list<T extends { id: string }>(data: T[]) {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false };
}

function conversationBody(conversation: Conversation) {
  return { id: conversation.id, object: conversation.object, created_at: conversation.created_at, metadata: conversation.metadata };
}

function fileBody(file: StoredFile) {
  return { id: file.id, object: file.object, bytes: file.bytes, created_at: file.created_at, filename: file.filename, purpose: file.purpose, status: file.status, expires_at: null, status_details: null };
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/** JSON, or the multipart form of a file upload (parsed by the platform's Request). */
async function parseBody(request: IncomingMessage, raw: Buffer): Promise<unknown> {
  const type = request.headers['content-type'] ?? '';
  if (raw.length === 0) return undefined;
  if (type.startsWith('multipart/form-data')) {
    return new Request('http://localhost/', { method: 'POST', headers: { 'content-type': type }, body: new Uint8Array(raw) }).formData();
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HttpError(400, 'We could not parse the JSON body of your request.', { param: null });
  }
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, {
    'content-type': typeof body === 'string' ? 'application/octet-stream' : 'application/json',
    'x-request-id': `req_${randomBytes(8).toString('hex')}`,
    'openai-processing-ms': '1',
    ...headers,
  });
  response.end(text);
}
