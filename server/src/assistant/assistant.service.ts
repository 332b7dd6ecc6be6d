import { parseDuration, type RuntimeConfig } from '@concierge/contract';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import type { ProviderStep } from '../db/schema/assistant.ts';
import type { EventBus } from '../events.ts';
import { insertProviderLog } from './assistant.queries.ts';
import {
  FINAL_RUN_STATUSES,
  ProviderError,
  type Answer,
  type AssistantProvider,
  type ProviderCall,
  type RunSettings,
  type RunState,
  type StoredFile,
  type TokenUsage,
  type VectorStoreInfo,
} from './provider.ts';
import { RateGate } from './rate-gate.ts';

/** Who a provider call is made for; written on every log row. */
export interface CallContext {
  sessionId?: string | null;
  messageId?: number | null;
  clientIp?: string | null;
  userAgent?: string | null;
}

export interface AskResult {
  threadId: string;
  runId: string;
  runStatus: string;
  answer: Answer;
  usage: TokenUsage;
}

/** Progress of one ask, for callers that record it as it happens. */
export interface AskProgress {
  threadCreated?(threadId: string): void | Promise<void>;
  runCreated?(run: RunState): void | Promise<void>;
}

const BACKOFF_FACTOR = 1.5;
const DEFAULT_POLL_MS = 3000;
const MAX_BODY_CHARS = 100_000;

/**
 * Runs questions through the assistant provider step by step (thread,
 * message, run, poll, answer), logging every provider call to its table,
 * and manages the vector store the assistant searches.
 */
export class AssistantService {
  readonly provider: AssistantProvider;
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #config: () => RuntimeConfig;
  readonly #runGate: RateGate;
  readonly #events: EventBus | undefined;

  constructor(options: {
    provider: AssistantProvider;
    database: Database;
    clock: Clock;
    logger: Logger;
    config: () => RuntimeConfig;
    events?: EventBus;
  }) {
    this.provider = options.provider;
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#config = options.config;
    this.#events = options.events;
    this.#runGate = new RateGate(() => this.#config().openai_max_requests_per_second, options.clock);
  }

  /** The run settings of the current runtime configuration. */
  runSettings(extraInstructions = ''): RunSettings {
    const config = this.#config();
    const instructions = [config.assistant_instructions, config.assistant_additional_instructions, extraInstructions]
      .map((part) => part.trim())
      .filter(Boolean)
      .join('\n\n');
    return {
      instructions,
      maxOutputTokens: config.openai_max_completion_tokens,
      maxPromptTokens: config.openai_max_prompt_tokens,
      truncation:
        config.openai_truncation_strategy_type === 'last_messages'
          ? { type: 'last_messages', lastMessages: config.openai_truncation_strategy_last_messages }
          : { type: 'auto' },
    };
  }

  /**
   * Asks `text` on the thread (creating one when `threadId` is null) and
   * waits for the answer. Throws ProviderError when a step fails or the run
   * ends without completing; `signal` bounds the whole wait.
   */
  async ask(
    context: CallContext,
    threadId: string | null,
    text: string,
    options: { signal?: AbortSignal; progress?: AskProgress; settings?: RunSettings } = {},
  ): Promise<AskResult> {
    const { signal, progress } = options;
    const settings = options.settings ?? this.runSettings();
    let thread = threadId;
    if (!thread) {
      thread = await this.#logged('create_thread', context, (call) => this.provider.createThread(call));
      await progress?.threadCreated?.(thread);
    }
    const threadIdFinal = thread;
    signal?.throwIfAborted();
    await this.#logged('create_message', context, (call) => this.provider.createMessage(call, threadIdFinal, text));

    await this.#runGate.wait(signal);
    let run = await this.#logged('create_run', context, (call) => this.provider.createRun(call, threadIdFinal, settings));
    await progress?.runCreated?.(run);

    const config = this.#config();
    let delay = parseDuration(config.assistant_poll_interval) ?? DEFAULT_POLL_MS;
    const maxDelay = Math.max(delay, parseDuration(config.assistant_max_poll_interval) ?? delay);
    // The first look is immediate (a fast run is answered at once), then the wait grows to the maximum.
    for (let polls = 0; !FINAL_RUN_STATUSES.has(run.status); polls++) {
      if (polls > 0) {
        await this.#clock.sleep(delay, signal);
        delay = Math.min(maxDelay, Math.round(delay * BACKOFF_FACTOR));
      }
      signal?.throwIfAborted();
      const runId = run.id;
      run = await this.#logged('retrieve_run', context, (call) => this.provider.retrieveRun(call, threadIdFinal, runId));
    }
    if (run.status !== 'completed') {
      throw new ProviderError(run.error ?? `The assistant's run ended with status ${run.status}`, { runStatus: run.status });
    }
    const runId = run.id;
    const answer = await this.#logged('list_messages', context, (call) => this.provider.listMessages(call, threadIdFinal, runId));
    return {
      threadId: threadIdFinal,
      runId: run.id,
      runStatus: run.status,
      answer,
      usage: run.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    };
  }

  listVectorStores(context: CallContext = {}): Promise<VectorStoreInfo[]> {
    return this.#logged('vector_store', context, (call) => this.provider.listVectorStores(call), 'list_vector_stores');
  }

  listFiles(context: CallContext = {}): Promise<StoredFile[]> {
    return this.#logged('vector_store', context, (call) => this.provider.listFiles(call), 'list_files');
  }

  /**
   * Adds a file to the assistant's knowledge. Files it replaces (by default,
   * any with the same name) are removed only after the new one is in, so the
   * knowledge is never missing and never doubled for long.
   */
  async uploadFile(
    file: { filename: string; data: Buffer },
    options: { context?: CallContext; replaces?: (existing: StoredFile) => boolean } = {},
  ): Promise<StoredFile & { vector_store_id: string; replaced: string[] }> {
    const context = options.context ?? {};
    const replaces = options.replaces ?? ((existing: StoredFile) => existing.filename === file.filename);
    const previous = (await this.listFiles(context)).filter(replaces);
    const stored = await this.#logged('vector_store', context, (call) => this.provider.uploadFile(call, file), 'upload_file');
    const replaced: string[] = [];
    for (const old of previous) {
      if (old.id === stored.id) continue;
      try {
        await this.#logged('vector_store', context, (call) => this.provider.deleteFile(call, old.id), 'delete_file');
        replaced.push(old.id);
      } catch (error) {
        this.#logger.warn({ err: error, fileId: old.id }, 'could not remove a replaced file from the vector store');
      }
    }
    return { ...stored, replaced };
  }

  deleteFile(fileId: string, context: CallContext = {}): Promise<void> {
    return this.#logged('vector_store', context, (call) => this.provider.deleteFile(call, fileId), 'delete_file');
  }

  /** Runs one provider call and writes its log row, whether it succeeds or fails. */
  async #logged<T>(step: ProviderStep, context: CallContext, fn: (call: ProviderCall) => Promise<T>, operation?: string): Promise<T> {
    let requestBody: unknown;
    let responseBody: unknown;
    let responseHeaders: Record<string, string> | undefined;
    const call: ProviderCall = {
      request: (body) => {
        requestBody = body;
      },
      response: (body, headers) => {
        responseBody = body;
        responseHeaders = headers instanceof Headers ? Object.fromEntries(headers.entries()) : headers;
      },
    };
    const startedAt = this.#clock.now();
    const started = startedAt.toISOString();
    let error: unknown;
    try {
      return await fn(call);
    } catch (caught) {
      error = caught;
      throw caught;
    } finally {
      const endedAt = this.#clock.now();
      const row = {
        session_id: context.sessionId ?? null,
        public_chat_message_id: context.messageId ?? null,
        client_ip: context.clientIp ?? null,
        user_agent: context.userAgent ?? null,
        operation: operation ?? null,
        request_started: started,
        request_ended: endedAt.toISOString(),
        request_body: serialize(requestBody),
        response_body: serialize(responseBody),
        response_headers: serialize(responseHeaders),
        error: error === undefined ? null : describeError(error),
      };
      try {
        await insertProviderLog(this.#database.db, step, row);
      } catch (logError) {
        this.#logger.error({ err: logError, step }, 'could not write the provider call log');
      }
      this.#events?.publish('provider_call', step, { duration_ms: endedAt.getTime() - startedAt.getTime(), failed: error !== undefined });
      if (error !== undefined) this.#logger.warn({ step, operation, err: error }, 'assistant provider call failed');
      else this.#logger.debug({ step, operation }, 'assistant provider call');
    }
  }
}

function serialize(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > MAX_BODY_CHARS ? `${text.slice(0, MAX_BODY_CHARS)}… [truncated]` : text;
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
