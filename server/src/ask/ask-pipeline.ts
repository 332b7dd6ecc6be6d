import { randomBytes } from 'node:crypto';
import { ANSWER_MAX_LENGTH, answerKeptLength, capAnswer, withProductName } from '@concierge/contract';
import type { Logger } from 'pino';
import type { AskHooks, AskProgress, AssistantService, CallContext, ProviderAskStep } from '../assistant/assistant.service.ts';
import type { OfflineFallback } from '../assistant/offline-fallback.ts';
import { ProviderError, type Answer, type RunOverrides, type RunSettings, type RunState, type TokenUsage } from '../assistant/provider.ts';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import { AppError, DATABASE_UNAVAILABLE, databaseUnreachable, refusal } from '../errors.ts';
import type { AnswerEvent, EventBus } from '../events.ts';
import type { TokenBudget } from './token-budget.ts';

/** Where a question came from. */
export type AskOrigin = 'public_chat' | 'admin_chat' | 'discord';

/** The steps of DESIGN §6 a question goes through. */
export type AskStep = 'enqueue' | ProviderAskStep | 'feedback_open' | 'feedback_closed';

/** The longest wait for one answer: below the browser's 120 s timeout, so the visitor gets a clear error first (DESIGN §7). */
export const ANSWER_CEILING_MS = 110_000;
/** How long a question waits for a place under the concurrency cap before it is refused as busy (DESIGN §9 "Busy"). */
export const BUSY_WAIT_MS = 5_000;
/** A row being answered is held this long after its owner last renewed it (DESIGN §9). */
export const LEASE_MS = 15_000;
/** How often an owner renews its leases and looks for abandoned rows (DESIGN §9). */
export const LEASE_RENEW_MS = 5_000;

export const ASK_ERRORS = {
  /** SPEC §8's unavailable text (DESIGN §9 "Busy"). */
  busy: 'The chat service is currently unavailable. Please try again later.',
  timeout: 'The assistant took too long to answer. Please try again with a shorter question or wait a moment.',
  providerError: 'The assistant could not answer right now. Please try again in a moment.',
  /** Stored on a question whose process stopped while answering it and that could not be resumed. */
  interrupted: 'The answer was interrupted by a server restart. Please ask again.',
} as const;

/** Who asked, as the answer event (and the Watch feed) tells it. */
export interface Asker {
  origin: AskOrigin;
  sessionId?: string | null;
  messageId?: number | null;
  askCommandId?: number | null;
  userId?: string | null;
  username?: string | null;
  globalName?: string | null;
  interactionId?: string | null;
  context?: string | null;
  /** A whisper: only the asker sees the answer. */
  private?: boolean;
}

/** One question for the pipeline. */
export interface AskJob {
  asker: Asker;
  prompt: string;
  /** Provider ids stored so far: a resumed question continues from them. */
  progress: AskProgress;
  settings: RunSettings;
  /** Who the provider calls are logged for. */
  log: CallContext;
  /** How long the answer may take from now (default ANSWER_CEILING_MS). */
  ceilingMs?: number;
  /**
   * Hands the answer's text on as the provider produces it (a front that
   * streams, DESIGN §9). The pieces put together are the answer; the run is
   * then created with its stream open and followed rather than polled.
   */
  onText?: (delta: string) => void;
  /** Stops the answer (the visitor pressed Stop): the run is cancelled and the question ends `aborted`, its partial answer kept. */
  signal?: AbortSignal;
}

/** An answer stopped before it was finished (DESIGN §9 cancel). */
export interface AnswerStopped {
  /** The text handed on before the stop. */
  partial: string;
  threadId: string | null;
  runId: string | null;
  runStatus: string | null;
  usage: TokenUsage;
  processingMs: number;
  finishedAt: Date;
}

export interface AnswerOutcome {
  threadId: string;
  runId: string;
  runStatus: string;
  answer: Answer;
  usage: TokenUsage;
  processingMs: number;
  finishedAt: Date;
}

export interface AnswerFailure {
  /** HTTP status and stable code for fronts that answer over HTTP. */
  status: number;
  code: string;
  /** What the person asking is told. */
  userMessage: string;
  /** What is stored on the row and logged. */
  logMessage: string;
  threadId: string | null;
  runId: string | null;
  runStatus: string | null;
  usage: TokenUsage;
  processingMs: number;
  finishedAt: Date;
}

/**
 * Stores a question's progress and outcome: each front (public chat,
 * Discord) supplies its own. Every call happens before the pipeline moves
 * on, so what is stored is always where the question is.
 */
export interface AskRecorder {
  step(step: AskStep): Promise<void>;
  threadCreated(threadId: string): Promise<void>;
  messageCreated(messageId: string): Promise<void>;
  runCreated(run: RunState): Promise<void>;
  completed(outcome: AnswerOutcome): Promise<void>;
  failed(failure: AnswerFailure): Promise<void>;
  /** The answer was stopped (DESIGN §9 cancel); a front without it stores the stop as a failure. */
  stopped?(stop: AnswerStopped): Promise<void>;
}

/** Thrown by `answer` when the question could not be answered; carries what was stored. */
export class AskFailedError extends AppError {
  readonly failure: AnswerFailure;
  constructor(failure: AnswerFailure, cause: unknown) {
    super(failure.status, failure.code, failure.userMessage, { cause });
    this.failure = failure;
  }
}

export const STOPPED_MESSAGE = 'The answer was stopped.';

/** Thrown by `answer` when the answer was stopped (already stored as such); carries the partial answer. */
export class AskStoppedError extends AskFailedError {
  readonly stop: AnswerStopped;
  constructor(stop: AnswerStopped, failure: AnswerFailure, cause: unknown) {
    super(failure, cause);
    this.stop = stop;
  }
}

/** A place under the concurrency cap, held while one question is answered. */
export interface Slot {
  release(): void;
}

export interface AskPipelineOptions {
  assistant: AssistantService;
  clock: Clock;
  config: ConfigService;
  events: EventBus;
  logger: Logger;
  /** Questions answered at once in this process; beyond it, `acquire` refuses. */
  maxConcurrentRuns: number;
  /**
   * Questions that may wait for a place at once (`acquireWithin`); beyond
   * them a question is refused busy at once, so a burst far over the cap
   * costs a refusal each, not a waiter each (default: as many as the cap).
   */
  maxWaiting?: number;
  /** PRODUCT_NAME, for `{product}` in the operator's paused message. */
  productName: string;
  /** The spending cap; without one, nothing is counted. */
  budget?: TokenBudget;
  /** The offline assistant that answers once the day's budget is spent (with OpenAI as the provider). */
  fallback?: OfflineFallback;
}

/** Added to an answer the offline fallback gave, so the person asking knows why it reads differently. */
export const OFFLINE_FALLBACK_NOTE = '_Answered from the schedule by the offline assistant._';

const NO_USAGE: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/**
 * The one way a question becomes an answer, whichever front it came from
 * (public chat, an operator's test question, Discord): the paused policy,
 * the concurrency cap, the answer ceiling, the provider call in two
 * resumable halves, what a failure means to the person asking, and the
 * answer event. Storage is the front's, through its AskRecorder.
 */
export class AskPipeline {
  /** This process's identity as the owner of the rows it answers (DESIGN §9); new at every start. */
  readonly owner = `proc_${randomBytes(9).toString('base64url')}`;
  readonly #options: AskPipelineOptions;
  #running = 0;
  /** Questions let in (`admit`) that have neither a place yet nor been refused: being read, counted, or waiting for a place. */
  #admitted = 0;
  /** Questions waiting for a place (acquire with a wait), woken in turn as places free up. */
  readonly #waiting: (() => void)[] = [];

  constructor(options: AskPipelineOptions) {
    this.#options = options;
  }

  /** The run settings of the current configuration, with a user's overrides where set. */
  runSettings(overrides?: RunOverrides): RunSettings {
    return this.#options.assistant.runSettings(overrides);
  }

  /** Questions being answered now in this process. */
  get running(): number {
    return this.#running;
  }

  get capacity(): number {
    return this.#options.maxConcurrentRuns;
  }

  /** Questions waiting for a place now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Questions let in and not yet given a place (see `admit`). */
  get admitted(): number {
    return this.#admitted;
  }

  /**
   * Every place is taken and as many questions as the wait queue holds are
   * already let in: a new question would be refused busy, so it can be at
   * once, before any work.
   */
  get saturated(): boolean {
    return this.#running + this.#admitted >= this.#options.maxConcurrentRuns + this.#maxWaiting;
  }

  /**
   * Lets a question in on its way to a place, or refuses it busy when the
   * pipeline is saturated. Taken before the question's first database read
   * and given back once it has its place (or was refused), so that however
   * many arrive at once, at most the free places and the wait queue's length
   * get as far as the database: with PostgreSQL those reads wait on the
   * pool, and a crowd let through would queue thousands of them.
   */
  admit(): Slot {
    if (this.saturated) throw busy();
    this.#admitted++;
    return releasedOnce(() => this.#admitted--);
  }

  get #maxWaiting(): number {
    return this.#options.maxWaiting ?? this.#options.maxConcurrentRuns;
  }

  /** When a lease taken or renewed now runs out (ISO). */
  leaseUntil(): string {
    return new Date(this.#options.clock.now().getTime() + LEASE_MS).toISOString();
  }

  /**
   * Refuses with 503 while paused; priority users (a Discord flag) are let
   * through, since operators pause to keep a quiet bot for a chosen few.
   */
  checkOpen(options: { priority?: boolean } = {}): void {
    if (this.budgetPaused()) throw refusal('budget_spent', this.pausedMessage());
    if (!this.isOpen(options)) throw refusal('paused', this.pausedMessage());
  }

  /** The day's token budget is spent and the operator chose to pause until midnight: nobody is answered. */
  budgetPaused(): boolean {
    const state = this.#options.budget?.state();
    return Boolean(state?.exhausted && state.action === 'pause');
  }

  /** A new question is answered by the offline fallback: the day's budget is spent and the operator chose that. */
  #answersOffline(job: AskJob): boolean {
    if (!this.#options.fallback || job.progress.runId) return false;
    const state = this.#options.budget?.state();
    return Boolean(state?.exhausted && state.action === 'offline');
  }

  /** What people are told while paused: the operator's wording (DESIGN §9), with the product's name filled in. */
  pausedMessage(): string {
    return withProductName(this.#options.config.get().public_chat_paused_message, this.#options.productName);
  }

  /** False while paused, except for priority users. */
  isOpen(options: { priority?: boolean } = {}): boolean {
    if (this.budgetPaused()) return false;
    return !this.#options.config.get().paused || Boolean(options.priority);
  }

  /** A place under the concurrency cap, or null when every place is taken. */
  tryAcquire(): Slot | null {
    if (this.#running >= this.#options.maxConcurrentRuns) return null;
    this.#running++;
    return releasedOnce(() => {
      this.#running--;
      this.#waiting.shift()?.();
    });
  }

  /** A place under the concurrency cap, or a 503 `busy` (DESIGN §9 "Busy"). */
  acquire(): Slot {
    const slot = this.tryAcquire();
    if (!slot) throw busy();
    return slot;
  }

  /**
   * A place under the concurrency cap, waiting up to `waitMs` (this
   * pipeline's clock) for one to free up; past it, a 503 `busy` with
   * Retry-After (DESIGN §9 "Busy").
   */
  async acquireWithin(waitMs: number = BUSY_WAIT_MS): Promise<Slot> {
    const now = this.tryAcquire();
    if (now) return now;
    if (this.#waiting.length >= this.#maxWaiting) throw busy();
    const deadline = this.#options.clock.deadline(waitMs);
    try {
      while (!deadline.signal.aborted) {
        await new Promise<void>((resolve) => {
          const wake = () => {
            deadline.signal.removeEventListener('abort', giveUp);
            resolve();
          };
          const giveUp = () => {
            const at = this.#waiting.indexOf(wake);
            if (at >= 0) this.#waiting.splice(at, 1);
            resolve();
          };
          this.#waiting.push(wake);
          deadline.signal.addEventListener('abort', giveUp, { once: true });
        });
        const slot = this.tryAcquire();
        if (slot) return slot;
      }
    } finally {
      deadline.clear();
    }
    throw busy();
  }

  /**
   * Answers the job within its ceiling, storing every step and the outcome
   * through `recorder`, then publishes the answer event. The slot is
   * released when it ends. Throws AskFailedError (already stored) when no
   * answer came.
   */
  async answer(slot: Slot, job: AskJob, recorder: AskRecorder): Promise<AnswerOutcome> {
    const { clock } = this.#options;
    const started = clock.now().getTime();
    const ceiling = clock.deadline(job.ceilingMs ?? ANSWER_CEILING_MS);
    // Past the day's budget, a new question goes to the offline assistant: a thread of its own, nothing of it
    // stored as the conversation's (the conversation carries on with OpenAI tomorrow).
    const offline = this.#answersOffline(job);
    const assistant = offline ? this.#options.fallback!.assistant : this.#options.assistant;
    const progress: AskProgress = offline ? { threadId: null, messageId: null, runId: null } : { ...job.progress };
    let run: RunState | null = null;
    /** The last step reached, for the answer event (a failure tells where it stopped). */
    let lastStep: AskStep | null = null;
    // The call that gave an id is logged before the id is stored (the log writer would otherwise hold it up to 100 ms):
    // whenever the process dies, a stored step has its call's log.
    const storedHooks: AskHooks = {
      step: (step: ProviderAskStep) => {
        lastStep = step;
        return recorder.step(step);
      },
      threadCreated: async (threadId: string) => {
        progress.threadId = threadId;
        await assistant.flushLogs();
        await recorder.threadCreated(threadId);
      },
      messageCreated: async (messageId: string) => {
        progress.messageId = messageId;
        await assistant.flushLogs();
        await recorder.messageCreated(messageId);
      },
      runCreated: async (created: RunState) => {
        run = created;
        progress.runId = created.id;
        await assistant.flushLogs();
        await recorder.runCreated(created);
      },
    };
    const hooks: AskHooks = offline ? { step: storedHooks.step, runCreated: async (created) => void (run = created) } : storedHooks;
    const signal = job.signal ? AbortSignal.any([ceiling.signal, job.signal]) : ceiling.signal;
    const options = { signal, hooks, settings: job.settings };
    /** What the provider has written so far (past the answer's cap, the capped answer). */
    let written = '';
    /** How much of `written` a streaming front has been handed so far. */
    let handedOn = 0;
    let capped = false;
    const handOn = (piece: string) => {
      if (!piece) return;
      handedOn += piece.length;
      job.onText!(piece);
    };
    /** The text handed on so far (a streaming front's partial answer). */
    const handedText = () => written.slice(0, handedOn);
    // The pieces handed on always put together the stored answer: up to the cut as they come, the rest (or, past
    // ANSWER_MAX_LENGTH, the truncation mark) once the end is known; nothing more once the answer is cut.
    const onText = job.onText
      ? (delta: string) => {
          if (!delta || capped) return;
          written += delta;
          if (written.length > ANSWER_MAX_LENGTH) {
            capped = true;
            written = capAnswer(written);
            handOn(written.slice(handedOn));
            return;
          }
          const kept = answerKeptLength(written);
          // Short of the cut (nearly always), the delta itself: slicing the text written so far would copy it whole for every delta.
          handOn(kept === written.length && handedOn === kept - delta.length ? delta : written.slice(handedOn, kept));
        }
      : undefined;
    try {
      if (offline) await this.#options.fallback!.ready();
      let threadId = progress.threadId;
      let questionId = progress.messageId;
      let target: RunState | string;
      if (progress.runId && threadId) {
        target = progress.runId;
      } else {
        const startedRun = await assistant.start(job.log, job.prompt, progress, { ...options, stream: Boolean(onText) });
        threadId = startedRun.threadId;
        questionId = startedRun.messageId;
        target = startedRun.run;
      }
      const result = await assistant.finish(job.log, threadId!, target, { ...options, onText, questionId });
      const finishedAt = clock.now();
      const outcome: AnswerOutcome = offline
        ? {
            ...result,
            threadId: job.progress.threadId ?? result.threadId,
            answer: { ...result.answer, text: `${result.answer.text}\n\n${OFFLINE_FALLBACK_NOTE}` },
            processingMs: finishedAt.getTime() - started,
            finishedAt,
          }
        : { ...result, processingMs: finishedAt.getTime() - started, finishedAt };
      // An answer past ANSWER_MAX_LENGTH is stored, served and announced cut, with its mark.
      outcome.answer = { ...outcome.answer, text: capAnswer(outcome.answer.text) };
      // What the provider did not hand on as it went (the whole answer of a polled run, the fallback's note, the end
      // held back under the cut) goes now, so the pieces always put together the answer.
      const text = outcome.answer.text;
      const handed = handedText();
      if (job.onText && text.length > handed.length && text.startsWith(handed)) {
        written = text;
        handOn(text.slice(handed.length));
      }
      // The answer's call logs are written before it (in one batch for every answer ending now), its tokens beside it;
      // a failed or stopped answer's logs likewise before its outcome.
      await Promise.all([assistant.flushLogs().then(() => recorder.completed(outcome)), offline ? undefined : this.#spent(assistant, result.usage)]);
      this.#publish(job, { state: 'completed', step: 'list_message', response: outcome.answer.text, error: null, threadId: outcome.threadId, runId: outcome.runId, runStatus: outcome.runStatus, usage: outcome.usage, processingMs: outcome.processingMs, at: finishedAt });
      return outcome;
    } catch (error) {
      const finishedAt = clock.now();
      const lastRun = run as RunState | null;
      const cancelledRun = error instanceof ProviderError && error.runStatus === 'cancelled';
      if ((job.signal?.aborted && !ceiling.signal.aborted) || cancelledRun) {
        // Stopped by the visitor (here, or in another process that cancelled the run): the run ends, the partial answer stays.
        const runId = lastRun?.id ?? progress.runId;
        if (runId && progress.threadId && !cancelledRun) {
          await assistant.cancelRun(job.log, progress.threadId, runId).catch((cancelError: unknown) => {
            this.#options.logger.warn({ err: cancelError, runId }, 'could not cancel a stopped run');
          });
        }
        const stop: AnswerStopped = {
          partial: handedText(),
          threadId: progress.threadId,
          runId,
          runStatus: runId ? 'cancelled' : null,
          usage: error instanceof ProviderError && error.usage ? error.usage : NO_USAGE,
          processingMs: finishedAt.getTime() - started,
          finishedAt,
        };
        const failure: AnswerFailure = { ...stop, status: 499, code: 'stopped', userMessage: STOPPED_MESSAGE, logMessage: STOPPED_MESSAGE };
        if (!offline) await this.#spent(assistant, stop.usage);
        await assistant.flushLogs();
        await (recorder.stopped ? recorder.stopped(stop) : recorder.failed(failure));
        this.#publish(job, { state: 'aborted', step: lastStep as AskStep | null, response: stop.partial || null, error: null, threadId: stop.threadId, runId: stop.runId, runStatus: stop.runStatus, usage: stop.usage, processingMs: stop.processingMs, at: finishedAt });
        throw new AskStoppedError(stop, failure, error);
      }
      const failure: AnswerFailure = {
        ...describeFailure(error, ceiling.signal, job.ceilingMs ?? ANSWER_CEILING_MS),
        threadId: progress.threadId,
        runId: lastRun?.id ?? progress.runId,
        runStatus: error instanceof ProviderError && error.runStatus ? error.runStatus : (lastRun?.status ?? null),
        usage: error instanceof ProviderError && error.usage ? error.usage : NO_USAGE,
        processingMs: finishedAt.getTime() - started,
        finishedAt,
      };
      if (!offline) await this.#spent(assistant, failure.usage);
      this.#options.logger.warn({ err: error, origin: job.asker.origin, sessionId: job.asker.sessionId, askCommandId: job.asker.askCommandId }, 'answer failed');
      await assistant.flushLogs();
      await recorder.failed(failure);
      this.#publish(job, { state: 'failed', step: lastStep as AskStep | null, response: null, error: failure.logMessage, threadId: failure.threadId, runId: failure.runId, runStatus: failure.runStatus, usage: failure.usage, processingMs: failure.processingMs, at: finishedAt });
      throw new AskFailedError(failure, error);
    } finally {
      ceiling.clear();
      slot.release();
    }
  }

  /** Counts the tokens a paid provider used against the day's budget. */
  async #spent(assistant: AssistantService, usage: TokenUsage): Promise<void> {
    if (assistant.provider.kind === 'openai') await this.#options.budget?.record(usage.total_tokens);
  }

  #publish(
    job: AskJob,
    result: { state: string; step: AskStep | null; response: string | null; error: string | null; threadId: string | null; runId: string | null; runStatus: string | null; usage: TokenUsage; processingMs: number; at: Date },
  ): void {
    const { asker } = job;
    const event: AnswerEvent = {
      source: asker.origin,
      session_id: asker.sessionId ?? null,
      message_id: asker.messageId ?? null,
      ask_command_id: asker.askCommandId ?? null,
      user_id: asker.userId ?? null,
      username: asker.username ?? null,
      global_name: asker.globalName ?? null,
      interaction_id: asker.interactionId ?? null,
      context: asker.context ?? null,
      private: asker.private ?? false,
      prompt: job.prompt,
      response: result.response,
      error: result.error,
      state: result.state,
      step: result.step,
      run_id: result.runId,
      run_status: result.runStatus,
      thread_id: result.threadId,
      prompt_tokens: result.usage.prompt_tokens,
      completion_tokens: result.usage.completion_tokens,
      total_tokens: result.usage.total_tokens,
      processing_duration_ms: result.processingMs,
      created_at: result.at.toISOString(),
    };
    this.#options.events.publish('answer', event);
  }
}

/** Something held until `release`, which gives it back once however often it is called. */
function releasedOnce(giveBack: () => void): Slot {
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      giveBack();
    },
  };
}

/**
 * DESIGN §9's busy refusal: 503, code `busy`, Retry-After, SPEC §8's
 * unavailable text. The connection is closed after it, so a crowd far over
 * the cap does not keep thousands of idle sockets (and their memory) open
 * until it comes back.
 */
export const busy = () => refusal('busy', ASK_ERRORS.busy, { 'retry-after': '5', connection: 'close' });

/**
 * What the person asking is told, and what is stored, when an answer fails.
 * The database going away while it answers (PostgreSQL restarting, its
 * connections refused) is the database's 503, as any request meeting it
 * gets, not the assistant's fault; a provider's own errors (ProviderError,
 * whose causes carry network codes too) stay the provider's.
 */
export function describeFailure(error: unknown, ceiling: AbortSignal, ceilingMs: number): { status: number; code: string; userMessage: string; logMessage: string } {
  if (ceiling.aborted) {
    return { status: 504, code: 'answer_timeout', userMessage: ASK_ERRORS.timeout, logMessage: `No answer within ${Math.round(ceilingMs / 1000)} s` };
  }
  const detail = error instanceof Error ? error.message : String(error);
  if (!(error instanceof ProviderError) && databaseUnreachable(error)) {
    return { status: 503, code: 'database_unavailable', userMessage: DATABASE_UNAVAILABLE, logMessage: detail };
  }
  return { status: 502, code: 'provider_error', userMessage: ASK_ERRORS.providerError, logMessage: detail };
}
