import type { Logger } from 'pino';
import type { RunState } from '../assistant/provider.ts';
import type { AnswerFailure, AnswerOutcome, AnswerStopped, AskRecorder, AskStep } from '../ask/ask-pipeline.ts';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import type { TurnBatch } from '../turn-batch.ts';
import * as queries from './chat.queries.ts';

export interface QuestionRef {
  /** The question's row (role user); its answer is stored on it and as an assistant row. */
  messageId: number;
  sessionId: string;
  clientIp: string | null;
  userAgent: string | null;
  /** When the visitor's request arrived, for the response latency. */
  receivedAt: number;
}

/**
 * Stores a public chat question's progress and outcome for the ask
 * pipeline: the ids it reaches (so a restart can resume it), then the answer
 * on the question's row and as an assistant row, the session's totals and
 * the Status counters — all in one transaction, and only while this
 * process still owns the question.
 */
export class PublicChatRecorder implements AskRecorder {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #owner: string;
  readonly #question: QuestionRef;
  readonly #marks: TurnBatch<queries.ProgressMark>;
  /** The outcome was stored, and with it the session's in-flight hold released. */
  released = false;

  /** `marks` stores the progress marks of every question of the process, those of one event-loop turn together. */
  constructor(options: { database: Database; clock: Clock; logger: Logger; owner: string; question: QuestionRef; marks: TurnBatch<queries.ProgressMark> }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#owner = options.owner;
    this.#question = options.question;
    this.#marks = options.marks;
  }

  #now = () => this.#clock.now().toISOString();

  /** Steps are stored with the ids that end them (fewer writes on the hot path); nothing to store at their start. */
  async step(_step: AskStep): Promise<void> {}

  async threadCreated(threadId: string): Promise<void> {
    const { sessionId, messageId } = this.#question;
    await queries.storeThread(this.#database, { sessionId, messageId, owner: this.#owner, threadId, now: this.#now() });
  }

  async messageCreated(messageId: string): Promise<void> {
    await this.#marks.add({ messageId: this.#question.messageId, owner: this.#owner, changes: { provider_message_id: messageId, step: 'creating_run', updated_at: this.#now() } });
  }

  async runCreated(run: RunState): Promise<void> {
    await this.#marks.add({ messageId: this.#question.messageId, owner: this.#owner, changes: { run_id: run.id, run_status: run.status, step: 'polling_run', updated_at: this.#now() } });
  }

  async completed(outcome: AnswerOutcome): Promise<void> {
    const { sessionId, clientIp, userAgent } = this.#question;
    const finishedAt = outcome.finishedAt.toISOString();
    const usage = outcome.usage;
    const common = {
      run_id: outcome.runId,
      run_status: outcome.runStatus,
      ...usage,
      processing_duration_ms: outcome.processingMs,
      response_latency_ms: outcome.finishedAt.getTime() - this.#question.receivedAt,
      sources: JSON.stringify(outcome.answer.sources),
    };
    await this.#store({
      changes: { ...common, response: outcome.answer.text, state: 'completed', step: 'list_message', owner: null, lease_expires_at: null, updated_at: finishedAt },
      answer: {
        session_id: sessionId,
        role: 'assistant',
        content: outcome.answer.text,
        state: 'completed',
        client_ip: clientIp,
        user_agent: userAgent,
        openai_message_id: outcome.answer.messageId,
        ...common,
        now: finishedAt,
      },
      exchange: { ...usage, error: null },
      now: finishedAt,
      counters: {
        message_count: 1,
        'state:processing': -1,
        'state:completed': 2,
        [`run_status:${outcome.runStatus}`]: 1,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
        processing_ms_sum: outcome.processingMs,
        processing_count: 1,
      },
    });
  }

  async failed(failure: AnswerFailure): Promise<void> {
    const finishedAt = failure.finishedAt.toISOString();
    await this.#store({
      changes: {
        state: 'failed',
        error: failure.logMessage,
        run_id: failure.runId,
        run_status: failure.runStatus,
        ...failure.usage,
        processing_duration_ms: failure.processingMs,
        response_latency_ms: failure.finishedAt.getTime() - this.#question.receivedAt,
        owner: null,
        lease_expires_at: null,
        updated_at: finishedAt,
      },
      answer: null,
      exchange: { ...failure.usage, error: failure.logMessage },
      now: finishedAt,
      counters: {
        'state:processing': -1,
        'state:failed': 1,
        ...(failure.runStatus ? { [`run_status:${failure.runStatus}`]: 1 } : {}),
        prompt_tokens: failure.usage.prompt_tokens,
        completion_tokens: failure.usage.completion_tokens,
        total_tokens: failure.usage.total_tokens,
      },
    });
  }

  /**
   * The visitor stopped the answer: the question ends `aborted` with the
   * text produced so far as its response (and an assistant row with it, when
   * there was any), no error.
   */
  async stopped(stop: AnswerStopped): Promise<void> {
    const { sessionId, clientIp, userAgent } = this.#question;
    const finishedAt = stop.finishedAt.toISOString();
    const common = {
      run_id: stop.runId,
      run_status: stop.runStatus,
      ...stop.usage,
      processing_duration_ms: stop.processingMs,
      response_latency_ms: stop.finishedAt.getTime() - this.#question.receivedAt,
    };
    await this.#store({
      changes: { ...common, response: stop.partial, state: 'aborted', owner: null, lease_expires_at: null, updated_at: finishedAt },
      answer: stop.partial
        ? { session_id: sessionId, role: 'assistant', content: stop.partial, state: 'aborted', client_ip: clientIp, user_agent: userAgent, ...common, now: finishedAt }
        : null,
      exchange: { ...stop.usage, error: null },
      now: finishedAt,
      counters: {
        ...(stop.partial ? { message_count: 1 } : {}),
        'state:processing': -1,
        'state:aborted': stop.partial ? 2 : 1,
        ...(stop.runStatus ? { [`run_status:${stop.runStatus}`]: 1 } : {}),
        prompt_tokens: stop.usage.prompt_tokens,
        completion_tokens: stop.usage.completion_tokens,
        total_tokens: stop.usage.total_tokens,
      },
    });
  }

  /**
   * Stores an outcome in one write (queries.storeOutcome), only while this
   * process still owns the question; storing it releases the session's
   * in-flight hold.
   */
  async #store(outcome: Omit<Parameters<typeof queries.storeOutcome>[1], 'messageId' | 'owner' | 'sessionId'>): Promise<void> {
    const { messageId, sessionId } = this.#question;
    const owned = await queries.storeOutcome(this.#database, { ...outcome, messageId, owner: this.#owner, sessionId });
    if (!owned) this.#logger.warn({ messageId }, 'another process took this question over; its outcome is not stored twice');
    this.released = owned;
  }
}
