/**
 * The assistant provider interface: SPEC's steps (create thread, create
 * message, create run, retrieve run, list messages) plus the vector store the
 * assistant searches. Two implementations: `openai` (DESIGN §2) and `local`,
 * the offline default. Providers do not log; the AssistantService wraps every
 * call and writes it to the step's log table, so each provider reports what it
 * sent and received through the ProviderCall it is handed.
 */

/** Lets a provider report the exchange behind one call for the call log. */
export interface ProviderCall {
  request(body: unknown): void;
  response(body: unknown, headers?: Headers | Record<string, string>): void;
}

export type RunStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'incomplete' | 'cancelled' | 'expired';
export const FINAL_RUN_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'incomplete', 'cancelled', 'expired']);

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface RunState {
  id: string;
  status: RunStatus;
  /** Why the run did not complete, in words. */
  error: string | null;
  usage: TokenUsage | null;
  /**
   * The answer, when the run carries it itself rather than adding it to the
   * thread (an OpenAI run made on the last N messages, outside the
   * conversation): `listMessages` then adds it to the thread.
   */
  output?: Answer | null;
  /**
   * The run's progress as it happens, open since the run was created with a
   * stream: handed from `createRun` to `followRun` in the same process, never
   * stored. Closed by whoever stops following it.
   */
  stream?: OpenRunStream;
}

/** A run's open stream of progress (provider-specific inside). */
export interface OpenRunStream {
  close(): void;
}

/** How a run is followed as it happens. */
export interface FollowOptions {
  /** Each piece of the answer's text, in order, as the provider produces it. */
  onText(delta: string): void;
  /** Stops following (the answer's ceiling, or the visitor pressed Stop). */
  signal?: AbortSignal;
}

/**
 * A run could not be followed as it happens (no stream could be opened, or
 * it kept dropping): the caller polls the run instead.
 */
export class StreamUnavailableError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'StreamUnavailableError';
  }
}

export interface RunSettings {
  instructions: string;
  /** 0 = no limit. */
  maxOutputTokens: number;
  /** 0 = no limit. */
  maxPromptTokens: number;
  truncation: { type: 'auto' } | { type: 'last_messages'; lastMessages: number };
  /**
   * How often a run that is not streamed is looked at (within the shared
   * status-check budget). `assistant_max_poll_interval` no longer stretches
   * it: the budget, not a back-off, bounds the checks.
   */
  pollIntervalMs: number;
}

/** A user's own settings (SPEC §3 "User"), each overriding the global one when set. */
export interface RunOverrides {
  additionalInstructions?: string | null;
  truncationType?: 'auto' | 'last_messages' | null;
  truncationLastMessages?: number | null;
  maxCompletionTokens?: number | null;
  maxPromptTokens?: number | null;
  pollInterval?: string | null;
  maxPollInterval?: string | null;
}

/** What an answer cites (DESIGN §9 "Sources"; the contract's SourceSchema). */
export type { Source } from '@concierge/contract';
import type { Source } from '@concierge/contract';

export interface Answer {
  /** The provider's id of the assistant message. */
  messageId: string;
  text: string;
  sources: Source[];
}

export interface VectorStoreInfo {
  id: string;
  name: string;
  file_count: number;
  created_at: string;
}

export interface StoredFile {
  id: string;
  filename: string;
  bytes: number;
  created_at: string;
}

export type ProviderKind = 'openai' | 'local';

export interface AssistantProvider {
  readonly kind: ProviderKind;
  /** File name endings the vector store accepts. */
  readonly acceptedFileTypes: readonly string[];

  createThread(call: ProviderCall): Promise<string>;
  createMessage(call: ProviderCall, threadId: string, text: string): Promise<string>;
  /** With `stream`, a provider that can follow runs (`followRun`) opens the run's stream too, handed on in `RunState.stream`. */
  createRun(call: ProviderCall, threadId: string, settings: RunSettings, options?: { stream?: boolean }): Promise<RunState>;
  retrieveRun(call: ProviderCall, threadId: string, runId: string): Promise<RunState>;
  /**
   * Follows a run to its end, passing its answer's text on as it is produced
   * (DESIGN §9: providers stream); resolves with the run's final state.
   * Throws StreamUnavailableError when the run cannot be followed, so the
   * caller polls it instead. Providers that cannot stream leave it out.
   */
  followRun?(call: ProviderCall, threadId: string, run: RunState, options: FollowOptions): Promise<RunState>;
  /**
   * The answer the run produced, given the run's final state: the first
   * assistant message after `questionId` (the question's message, when it
   * is known), else the newest assistant message of the thread.
   */
  listMessages(call: ProviderCall, threadId: string, run: RunState, questionId?: string | null): Promise<Answer>;
  /** Stops a run in flight; a run already over stays as it is. Returns its state after. */
  cancelRun(call: ProviderCall, threadId: string, runId: string): Promise<RunState>;

  listVectorStores(call: ProviderCall): Promise<VectorStoreInfo[]>;
  /** The files in the assistant's vector store. */
  listFiles(call: ProviderCall): Promise<StoredFile[]>;
  /** Adds a file to the assistant's vector store and waits until it is searchable. */
  uploadFile(call: ProviderCall, file: { filename: string; data: Buffer }): Promise<StoredFile & { vector_store_id: string }>;
  /** Removes a file from the vector store (and the provider's file storage). */
  deleteFile(call: ProviderCall, fileId: string): Promise<void>;
  /** Ends what the provider runs in the background (the offline index worker). */
  close?(): Promise<void>;
}

/** A provider call that failed in a way the user should hear about. */
export class ProviderError extends Error {
  readonly status: number | undefined;
  readonly runStatus: RunStatus | undefined;
  /** Tokens the provider counted for a run that did not complete (they are billed all the same). */
  readonly usage: TokenUsage | null;
  constructor(message: string, options: { status?: number; runStatus?: RunStatus; usage?: TokenUsage | null; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'ProviderError';
    this.status = options.status;
    this.runStatus = options.runStatus;
    this.usage = options.usage ?? null;
  }
}

/** A rough token count (about four characters per token) for limits and the offline provider's usage. */
export const estimateTokens = (text: string) => Math.ceil(text.length / 4);
