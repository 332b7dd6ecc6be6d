import { parseDuration, type RuntimeConfig } from '@concierge/contract';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import type { ProviderStep } from '../db/schema/assistant.ts';
import type { EventBus } from '../events.ts';
import { TurnPacer } from '../turn-pacer.ts';
import { insertProviderLog } from './assistant.queries.ts';
import {
  FINAL_RUN_STATUSES,
  ProviderError,
  StreamUnavailableError,
  type Answer,
  type AssistantProvider,
  type ProviderCall,
  type RunOverrides,
  type RunSettings,
  type RunState,
  type StoredFile,
  type TokenUsage,
  type VectorStoreInfo,
} from './provider.ts';
import { ProviderLogWriter } from './provider-log-writer.ts';
import { RateGate, sharedSlots } from './rate-gate.ts';
import { RunPoller } from './run-poller.ts';

/** Who a provider call is made for; written on every log row. */
export interface CallContext {
  sessionId?: string | null;
  messageId?: number | null;
  askCommandId?: number | null;
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

/** The pipeline steps of DESIGN §6 that talk to the provider. */
export type ProviderAskStep = 'creating_thread' | 'creating_message' | 'creating_run' | 'polling_run' | 'list_message';

/**
 * The provider ids an ask has reached. Stored by the caller as each arrives,
 * so a restart resumes from them: a stored run is only waited for, a stored
 * question is not asked twice, a stored thread is kept.
 */
export interface AskProgress {
  threadId: string | null;
  /** The provider's id of the question in the thread. */
  messageId: string | null;
  runId: string | null;
}

/** Called as an ask moves on, so the caller can store each step and id before the next one starts. */
export interface AskHooks {
  step?(step: ProviderAskStep): void | Promise<void>;
  threadCreated?(threadId: string): void | Promise<void>;
  messageCreated?(messageId: string): void | Promise<void>;
  runCreated?(run: RunState): void | Promise<void>;
}

export interface FinishOptions {
  signal?: AbortSignal;
  hooks?: AskHooks;
  settings?: RunSettings;
  onText?: (delta: string) => void;
  /** The question's message in the thread (`start`'s messageId): its answer is the assistant message after it. */
  questionId?: string | null;
}

export interface StartedRun {
  threadId: string;
  messageId: string;
  run: RunState;
}

/** The steps of an answer, whose call logs are written in batches (ProviderLogWriter); other calls are written at once. */
const BATCHED_STEPS: ReadonlySet<ProviderStep> = new Set(['create_thread', 'create_message', 'create_run', 'retrieve_run', 'list_messages']);

const DEFAULT_POLL_MS = 3000;
/**
 * Once a turn of the event loop has run LONG_TURN_MS, at most this many
 * provider requests start in it; the others wait for the turns after
 * (TurnPacer). In the 10,000-question burst on the fake at zero latency the
 * main port's /healthz p99 was 37–43 ms on SQLite and PostgreSQL (8 a
 * turn: 26–44 ms on both engines) against 36–50 ms unpaced; the chat
 * bench's rounds could not tell them apart from unpaced (bench/RESULTS.md,
 * 2026-12-02).
 */
const PROVIDER_REQUESTS_PER_TURN = 24;
const LONG_TURN_MS = 10;
const MAX_BODY_CHARS = 100_000;
const NO_USAGE: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/**
 * Runs questions through the assistant provider step by step (thread,
 * message, run, poll, answer), logging every provider call to its table,
 * and manages the vector store the assistant searches.
 *
 * An ask is two halves keyed by stored ids, so no provider state lives only
 * in memory: `start` (thread, question, run) and `finish` (wait for the run,
 * read its answer). A process that dies between them leaves a run that
 * another can `finish`.
 */
export class AssistantService {
  readonly provider: AssistantProvider;
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #config: () => RuntimeConfig;
  readonly #runGate: RateGate;
  readonly #poller: RunPoller;
  readonly #events: EventBus | undefined;
  readonly #logs: ProviderLogWriter;
  /** Null for the offline assistant: it makes no requests. */
  readonly #requests: TurnPacer | null;

  constructor(options: {
    provider: AssistantProvider;
    database: Database;
    clock: Clock;
    logger: Logger;
    config: () => RuntimeConfig;
    events?: EventBus;
    /** Where the answers' call logs wait to be written; shared by the services of one process (one is made when none is given). */
    logs?: ProviderLogWriter;
  }) {
    this.provider = options.provider;
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#config = options.config;
    this.#events = options.events;
    this.#logs = options.logs ?? new ProviderLogWriter({ database: options.database, logger: options.logger });
    // A crowd of answers moving in step sends its requests a few at a time, so the loop reads its sockets in between.
    this.#requests = this.provider.kind === 'local' ? null : new TurnPacer(PROVIDER_REQUESTS_PER_TURN, { longTurnMs: LONG_TURN_MS });
    // One budget for every process: N processes must not make N × openai_max_requests_per_second.
    this.#runGate = new RateGate(() => this.#config().openai_max_requests_per_second, options.clock, sharedSlots(options.database, 'provider_create_run'));
    // Runs that are not streamed are looked at by one poller spending one budget of status checks (shared like the run rate).
    this.#poller = new RunPoller({
      clock: options.clock,
      logger: options.logger,
      // The offline assistant answers at once and costs nothing: no budget.
      perSecond: () => (this.provider.kind === 'local' ? 0 : this.#config().openai_max_polls_per_second),
      slots: sharedSlots(options.database, 'provider_retrieve_run'),
    });
  }

  /** Runs waiting for the poller (not streamed). */
  get polledRuns(): number {
    return this.#poller.size;
  }

  /** Writes the answers' call logs made so far (the pipeline does it before it stores an id a call gave, and before the answer). Never throws. */
  flushLogs(): Promise<void> {
    return this.#logs.flush();
  }

  /** The run settings of the current runtime configuration, with a user's overrides where set. */
  runSettings(overrides: RunOverrides = {}): RunSettings {
    const config = this.#config();
    const instructions = [config.assistant_instructions, config.assistant_additional_instructions, overrides.additionalInstructions ?? '']
      .map((part) => part.trim())
      .filter(Boolean)
      .join('\n\n');
    const truncationType = overrides.truncationType ?? config.openai_truncation_strategy_type;
    const pollMs = parseDuration(overrides.pollInterval ?? config.assistant_poll_interval) ?? DEFAULT_POLL_MS;
    return {
      instructions,
      maxOutputTokens: overrides.maxCompletionTokens ?? config.openai_max_completion_tokens,
      maxPromptTokens: overrides.maxPromptTokens ?? config.openai_max_prompt_tokens,
      truncation:
        truncationType === 'last_messages'
          ? { type: 'last_messages', lastMessages: overrides.truncationLastMessages ?? config.openai_truncation_strategy_last_messages }
          : { type: 'auto' },
      pollIntervalMs: pollMs,
    };
  }

  /**
   * Asks `text` on the thread (creating one when `threadId` is null) and
   * waits for the answer: `start` then `finish`. Throws ProviderError when a
   * step fails or the run ends without completing; `signal` bounds the wait.
   * Its call logs are written when it ends.
   */
  async ask(
    context: CallContext,
    threadId: string | null,
    text: string,
    options: { signal?: AbortSignal; hooks?: AskHooks; settings?: RunSettings } = {},
  ): Promise<AskResult> {
    const settings = options.settings ?? this.runSettings();
    try {
      const started = await this.start(context, text, { threadId, messageId: null, runId: null }, { ...options, settings });
      return await this.finish(context, started.threadId, started.run, { ...options, settings, questionId: started.messageId });
    } finally {
      await this.flushLogs();
    }
  }

  /**
   * The first half of an ask: the thread, the question in it and the run,
   * each skipped when `progress` already holds its id, each reported to
   * `hooks` as soon as the provider gives it.
   */
  async start(
    context: CallContext,
    text: string,
    progress: AskProgress,
    options: { signal?: AbortSignal; hooks?: AskHooks; settings: RunSettings; stream?: boolean },
  ): Promise<StartedRun> {
    const { signal, hooks, settings } = options;
    // A run someone will follow as it happens is created with its stream open (DESIGN §9).
    const stream = Boolean(options.stream && this.provider.followRun);
    let threadId = progress.threadId;
    if (!threadId) {
      await hooks?.step?.('creating_thread');
      threadId = await this.#logged('create_thread', context, (call) => this.provider.createThread(call));
      await hooks?.threadCreated?.(threadId);
    }
    const thread = threadId;
    signal?.throwIfAborted();
    let messageId = progress.messageId;
    if (!messageId) {
      await hooks?.step?.('creating_message');
      messageId = await this.#logged('create_message', context, (call) => this.provider.createMessage(call, thread, text));
      await hooks?.messageCreated?.(messageId);
    }
    await hooks?.step?.('creating_run');
    // openai_max_requests_per_second protects a paid API's rate limit; the offline assistant has none.
    if (this.provider.kind !== 'local') await this.#runGate.wait(signal);
    const run = await this.#logged('create_run', context, (call) => this.provider.createRun(call, thread, settings, { stream }));
    try {
      await hooks?.runCreated?.(run);
    } catch (error) {
      run.stream?.close();
      throw error;
    }
    return { threadId: thread, messageId, run };
  }

  /**
   * The second half: waits for the run to end and reads its answer. `run` is
   * the state `start` returned, or a stored run id. With `onText`, the run is
   * followed as it happens and its text handed on as it comes (when the
   * provider can stream; else, or when no stream can be opened, it is
   * polled). Polling looks at once, then every poll interval, through the
   * one poller whose status checks share `openai_max_polls_per_second`.
   */
  async finish(
    context: CallContext,
    threadId: string,
    run: RunState | string,
    options: FinishOptions = {},
  ): Promise<AskResult> {
    try {
      return await this.#finish(context, threadId, run, options);
    } finally {
      if (typeof run !== 'string') run.stream?.close();
    }
  }

  async #finish(
    context: CallContext,
    threadId: string,
    run: RunState | string,
    options: FinishOptions,
  ): Promise<AskResult> {
    const { signal, hooks, onText } = options;
    const settings = options.settings ?? this.runSettings();
    await hooks?.step?.('polling_run');
    let state: RunState | null = typeof run === 'string' ? null : run;
    const runId = typeof run === 'string' ? run : run.id;
    const follow = this.provider.followRun?.bind(this.provider);
    if (onText && follow && (!state || !FINAL_RUN_STATUSES.has(state.status))) {
      const following: RunState = state ?? { id: runId, status: 'queued', error: null, usage: null };
      try {
        state = await this.#logged('retrieve_run', context, (call) => follow(call, threadId, following, { onText, signal }));
      } catch (error) {
        if (!(error instanceof StreamUnavailableError)) throw error;
        this.#logger.warn({ err: error, runId }, 'could not follow the run as it happens; polling it instead');
      }
    }
    if (!state || !FINAL_RUN_STATUSES.has(state.status)) {
      state = await this.#poller.wait(
        () => this.#logged('retrieve_run', context, (call) => this.provider.retrieveRun(call, threadId, runId)),
        settings.pollIntervalMs,
        signal,
      );
    }
    if (state.status !== 'completed') {
      throw new ProviderError(state.error ?? `The assistant's run ended with status ${state.status}`, { runStatus: state.status, usage: state.usage });
    }
    await hooks?.step?.('list_message');
    const finalState = state;
    const answer = await this.#logged('list_messages', context, (call) => this.provider.listMessages(call, threadId, finalState, options.questionId));
    return { threadId, runId: state.id, runStatus: state.status, answer, usage: state.usage ?? NO_USAGE };
  }

  /** Stops a run in flight (a visitor pressed Stop); a run already over is left as it is. */
  async cancelRun(context: CallContext, threadId: string, runId: string): Promise<void> {
    await this.#logged('retrieve_run', context, (call) => this.provider.cancelRun(call, threadId, runId), 'cancel_run');
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
    // Started when asked for (a rate-gated request: at its slot), so the log shows the budget as spent; a turn or two of
    // pacing (below) comes after.
    const startedAt = this.#clock.now();
    const started = startedAt.toISOString();
    const paced = this.#requests?.pace();
    if (paced) await paced;
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
        ask_command_id: context.askCommandId ?? null,
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
      if (BATCHED_STEPS.has(step) && !operation) {
        this.#logs.add(step, row);
      } else {
        try {
          await insertProviderLog(this.#database.db, step, row);
        } catch (logError) {
          this.#logger.error({ err: logError, step }, 'could not write the provider call log');
        }
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
