import { createHash, randomBytes } from 'node:crypto';
import type { ChatExchange, ChatReply, ChatSendRequest, FeedbackRequest, Source } from '@concierge/contract';
import { storedSource } from '../assistant/knowledge-format.ts';
import type { Logger } from 'pino';
import type { AssistantService } from '../assistant/assistant.service.ts';
import { ProviderError } from '../assistant/provider.ts';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database } from '../db/database.ts';
import { AppError, conflict, forbidden, notFound, serviceUnavailable, tooManyRequests, unauthorized } from '../errors.ts';
import type { AnswerEvent, EventBus } from '../events.ts';
import * as queries from './chat.queries.ts';
import { verifyTurnstileToken } from './turnstile.ts';

export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
  referer: string | null;
}

export type ChatSource = 'public_chat' | 'admin_chat';

export interface ChatServiceOptions {
  database: Database;
  clock: Clock;
  logger: Logger;
  config: ConfigService;
  assistant: AssistantService;
  events: EventBus;
  /** Cloudflare Turnstile, when both keys are configured. */
  turnstile: { secretKey: string; verifyUrl: string } | null;
  /** Assistant runs in flight at once in this process; beyond it, a clear 503. */
  maxConcurrentRuns: number;
  /** Longest wait for one answer (below the browser's 120 s). */
  answerCeilingMs?: number;
  fetch?: typeof fetch;
}

/** A visitor's session lives this long after it was last used. */
export const SESSION_IDLE_MS = 24 * 3_600_000;
/** A request "in flight" this long is assumed lost (e.g. the process restarted). */
const IN_FLIGHT_STALE_MS = 130_000;
const ANSWER_CEILING_MS = 110_000;
const WINDOW_MS = 60_000;
/** The per-IP limit is this many times the per-session one: a whole venue can share one NAT address (DESIGN §7). */
export const IP_LIMIT_FACTOR = 10;
/** Verification attempts per address per minute: generous, since a venue's visitors share one address. */
export const VERIFY_ATTEMPTS_PER_MINUTE = 120;
const REPLAY_WAIT_POLL_MS = 500;
/** Turnstile tokens are good for 300 s; a spent one is remembered well past that. */
const SPENT_TOKEN_RETENTION_MS = 60 * 60_000;
/** Rate-limit windows stay on the console's Rate Limits screen this long. */
const RATE_LIMIT_RETENTION_MS = 30 * 24 * 60 * 60_000;
const HISTORY_LIMIT = 100;

export const CHAT_ERRORS = {
  disabled: 'Public chat is currently disabled',
  paused: 'The concierge is taking a break. Please try again in a little while.',
  noSession: 'Session not initialized. Please refresh the page.',
  notVerified: 'Please complete the security verification before sending a message.',
  rateLimited: "You've reached the rate limit. Please wait a moment before sending another message.",
  inFlight: 'Another request is already in progress. Please wait for it to complete before sending a new message.',
  busy: 'The concierge is very busy right now. Please try again in a moment.',
  invalidToken: 'Invalid verification token',
  tooManyVerifications: 'Too many verification attempts. Please try again later.',
  verificationUnavailable: 'Verification failed. Please try again.',
  feedbackSession: 'No valid session. Please refresh the page.',
  feedbackNotFound: 'Message not found or does not belong to your session',
} as const;

/**
 * The public chat: anonymous sessions, human verification, rate limits, one
 * question in flight per session, asking the assistant, feedback, history.
 */
export class ChatService {
  readonly #options: ChatServiceOptions;
  readonly #logger: Logger;
  #running = 0;

  constructor(options: ChatServiceOptions) {
    this.#options = options;
    this.#logger = options.logger;
  }

  get #db() {
    return this.#options.database.db;
  }

  #now = () => this.#options.clock.now();

  /**
   * Forgets spent verification tokens and old rate-limit windows. The Status
   * figures do not move: they come from counters (and the set of limited
   * sessions), not from these rows.
   */
  async cleanup(): Promise<{ spentTokens: number; rateLimitWindows: number }> {
    const now = this.#now().getTime();
    return queries.deleteOldChatRecords(this.#db, {
      spentTokensBefore: new Date(now - SPENT_TOKEN_RETENTION_MS).toISOString(),
      rateLimitWindowsBefore: new Date(now - RATE_LIMIT_RETENTION_MS).toISOString(),
    });
  }

  /** Human verification is on: enabled in the configuration and both Turnstile keys are set. */
  verificationRequired(): boolean {
    return Boolean(this.#options.turnstile) && this.#options.config.get().public_chat_turnstile_validation_enabled;
  }

  /** Throws 503 when the public chat is switched off. */
  ensureEnabled(): void {
    if (!this.#options.config.get().public_chat_enabled) throw serviceUnavailable(CHAT_ERRORS.disabled, 'chat_disabled');
  }

  /**
   * Readies the visitor's session: with verification on, only a genuine,
   * never-used Turnstile token does; with it off, an empty token is enough.
   * Returns the session id (new when the visitor had none).
   */
  async verify(sessionId: string | undefined, token: string, client: ClientInfo): Promise<string> {
    this.ensureEnabled();
    await this.#limit(`verify:${client.ip ?? 'unknown'}`, client.ip, VERIFY_ATTEMPTS_PER_MINUTE, () =>
      tooManyRequests(CHAT_ERRORS.tooManyVerifications, 60, 'too_many_verifications'),
    );
    const turnstile = this.#options.turnstile;
    if (!this.verificationRequired() || !turnstile) return (await this.#session(sessionId, client)).session_id;

    const trimmed = token.trim();
    if (!trimmed) throw new AppError(400, 'invalid_token', CHAT_ERRORS.invalidToken);
    const tokenHash = createHash('sha256').update(trimmed).digest('hex');
    if (!(await queries.spendToken(this.#db, tokenHash, this.#now().toISOString()))) {
      throw new AppError(400, 'invalid_token', CHAT_ERRORS.invalidToken);
    }
    const outcome = await verifyTurnstileToken({
      url: turnstile.verifyUrl,
      secret: turnstile.secretKey,
      token: trimmed,
      remoteIp: client.ip,
      fetch: this.#options.fetch,
    });
    if (!outcome.ok) {
      this.#logger.info({ reason: outcome.reason, detail: outcome.detail }, 'verification refused');
      if (outcome.reason === 'invalid') throw new AppError(400, 'invalid_token', CHAT_ERRORS.invalidToken);
      throw new AppError(502, 'verification_unavailable', CHAT_ERRORS.verificationUnavailable);
    }
    const session = await this.#session(sessionId, client);
    const now = this.#now();
    await queries.markVerified(this.#db, session.session_id, now.toISOString(), new Date(now.getTime() + SESSION_IDLE_MS).toISOString());
    return session.session_id;
  }

  /** A live session by id, or undefined when unknown or expired. */
  async findSession(sessionId: string | undefined): Promise<queries.SessionRow | undefined> {
    if (!sessionId) return undefined;
    const session = await queries.findSession(this.#db, sessionId);
    if (!session || session.expires_at <= this.#now().toISOString()) return undefined;
    return session;
  }

  /**
   * Asks the assistant one question for the session and stores the exchange.
   * Public visitors need a ready (and, with verification on, verified)
   * session; an operator's test question (`admin_chat`) gets one made.
   */
  async send(
    sessionId: string | undefined,
    request: ChatSendRequest,
    client: ClientInfo,
    source: ChatSource = 'public_chat',
  ): Promise<{ sessionId: string; reply: ChatReply }> {
    const receivedAt = this.#now().getTime();
    this.ensureEnabled();
    if (this.#options.config.get().paused) throw serviceUnavailable(CHAT_ERRORS.paused, 'paused');

    let session = await this.findSession(sessionId);
    if (source === 'admin_chat') session ??= await this.#session(undefined, client);
    if (!session) {
      if (this.verificationRequired()) throw forbidden(CHAT_ERRORS.notVerified, 'verification_required');
      throw unauthorized(CHAT_ERRORS.noSession, 'session_required');
    }
    if (source === 'public_chat' && this.verificationRequired() && !session.verified) {
      throw forbidden(CHAT_ERRORS.notVerified, 'verification_required');
    }

    if (request.client_message_id) {
      const earlier = await queries.findMessageByClientId(this.#db, session.session_id, request.client_message_id);
      if (earlier) return { sessionId: session.session_id, reply: await this.#replay(earlier) };
    }

    const perMinute = this.#options.config.get().public_chat_requests_per_minute;
    await this.#limit(`session:${session.session_id}`, client.ip, perMinute, () => tooManyRequests(CHAT_ERRORS.rateLimited, this.#secondsLeftInWindow()));
    if (client.ip) {
      await this.#limit(`ip:${client.ip}`, client.ip, perMinute * IP_LIMIT_FACTOR, () =>
        tooManyRequests(CHAT_ERRORS.rateLimited, this.#secondsLeftInWindow()),
      );
    }

    const now = this.#now();
    const staleBefore = new Date(now.getTime() - IN_FLIGHT_STALE_MS).toISOString();
    if (!(await queries.claimInFlight(this.#db, session.session_id, now.toISOString(), staleBefore))) {
      throw conflict(CHAT_ERRORS.inFlight, 'request_in_flight');
    }
    try {
      if (this.#running >= this.#options.maxConcurrentRuns) throw serviceUnavailable(CHAT_ERRORS.busy, 'busy');
      this.#running++;
      try {
        const reply = await this.#answer(session, request, client, source, receivedAt);
        return { sessionId: session.session_id, reply };
      } finally {
        this.#running--;
      }
    } finally {
      await queries.releaseInFlight(this.#db, session.session_id);
    }
  }

  /** The session's recent exchanges, oldest first, to restore the conversation after a reload. */
  async history(sessionId: string | undefined): Promise<ChatExchange[]> {
    const session = await this.findSession(sessionId);
    if (!session) return [];
    const rows = await queries.sessionExchanges(this.#db, session.session_id, HISTORY_LIMIT);
    return rows.reverse().map((row) => ({
      feedback_id: row.id,
      question: row.content,
      answer: row.response,
      error: row.error,
      state: row.state,
      sources: parseSources(row.sources),
      feedback_submitted: Boolean(row.feedback_submitted),
      created_at: row.created_at,
    }));
  }

  async feedback(sessionId: string | undefined, request: FeedbackRequest, client: ClientInfo): Promise<void> {
    const session = await this.findSession(sessionId);
    if (!session) throw unauthorized(CHAT_ERRORS.feedbackSession, 'session_required');
    const message = await queries.findMessage(this.#db, request.feedback_id);
    if (!message || message.session_id !== session.session_id || message.role !== 'user') {
      throw notFound(CHAT_ERRORS.feedbackNotFound, 'message_not_found');
    }
    await this.#options.database.transaction(async (trx) => {
      await queries.bumpCounters(trx, { [`feedback:${request.type}`]: 1 });
      await queries.insertFeedback(trx, {
        public_chat_message_id: message.id,
        session_id: session.session_id,
        type: request.type,
        description: request.description ?? null,
        detail: request.detail?.trim() || null,
        client_ip: client.ip,
        user_agent: client.userAgent,
        now: this.#now().toISOString(),
      });
    });
  }

  async #answer(session: queries.SessionRow, request: ChatSendRequest, client: ClientInfo, source: ChatSource, receivedAt: number): Promise<ChatReply> {
    const db = this.#db;
    const startedAt = this.#now();
    const messageId = await this.#options.database.transaction(async (trx) => {
      const id = await queries.insertMessage(trx, {
        session_id: session.session_id,
        role: 'user',
        content: request.message,
        state: 'processing',
        client_ip: client.ip,
        user_agent: client.userAgent,
        client_message_id: request.client_message_id ?? null,
        now: startedAt.toISOString(),
      });
      await queries.bumpCounters(trx, { message_count: 1, 'state:processing': 1 });
      return id;
    });
    await this.#touch(session, client, startedAt);

    let threadId = session.thread_id;
    let run: { id: string; status: string } | null = null;
    const ceiling = AbortSignal.timeout(this.#options.answerCeilingMs ?? ANSWER_CEILING_MS);
    const processingStart = this.#now().getTime();
    try {
      const result = await this.#options.assistant.ask(
        { sessionId: session.session_id, messageId, clientIp: client.ip, userAgent: client.userAgent },
        threadId,
        request.message,
        {
          signal: ceiling,
          progress: {
            threadCreated: async (id) => {
              threadId = id;
              await this.#options.database.transaction(async (trx) => {
                await queries.setThread(trx, session.session_id, id, this.#now().toISOString());
                await queries.bumpCounters(trx, { thread_count: 1 });
              });
            },
            runCreated: (created) => {
              run = created;
            },
          },
        },
      );
      const finishedAt = this.#now().toISOString();
      const processing = this.#now().getTime() - processingStart;
      const latency = this.#now().getTime() - receivedAt;
      const sources = JSON.stringify(result.answer.sources);
      const outcome = {
        prompt_tokens: result.usage.prompt_tokens,
        completion_tokens: result.usage.completion_tokens,
        total_tokens: result.usage.total_tokens,
      };
      await this.#options.database.transaction(async (trx) => {
        await queries.updateMessage(trx, messageId, {
          response: result.answer.text,
          state: 'completed',
          ...outcome,
          run_id: result.runId,
          run_status: result.runStatus,
          processing_duration_ms: processing,
          response_latency_ms: latency,
          sources,
          updated_at: finishedAt,
        });
        await queries.insertMessage(trx, {
          session_id: session.session_id,
          role: 'assistant',
          content: result.answer.text,
          state: 'completed',
          client_ip: client.ip,
          user_agent: client.userAgent,
          now: finishedAt,
        }).then((assistantId) =>
          queries.updateMessage(trx, assistantId, {
            openai_message_id: result.answer.messageId,
            run_id: result.runId,
            run_status: result.runStatus,
            ...outcome,
            processing_duration_ms: processing,
            response_latency_ms: latency,
            sources,
            updated_at: finishedAt,
          }),
        );
        await queries.recordExchangeOnSession(trx, session.session_id, { ...outcome, error: null }, finishedAt);
        await queries.bumpCounters(trx, {
          message_count: 1,
          'state:processing': -1,
          'state:completed': 2,
          [`run_status:${result.runStatus}`]: 1,
          prompt_tokens: outcome.prompt_tokens,
          completion_tokens: outcome.completion_tokens,
          total_tokens: outcome.total_tokens,
          processing_ms_sum: processing,
          processing_count: 1,
        });
      });
      this.#publish({
        source,
        session_id: session.session_id,
        message_id: messageId,
        prompt: request.message,
        response: result.answer.text,
        error: null,
        state: 'completed',
        run_id: result.runId,
        run_status: result.runStatus,
        thread_id: threadId,
        ...outcome,
        processing_duration_ms: processing,
      });
      return { success: true, response: result.answer.text, feedback_id: messageId, error: null, sources: result.answer.sources };
    } catch (error) {
      const failure = describeFailure(error, ceiling);
      const finishedAt = this.#now().toISOString();
      const processing = this.#now().getTime() - processingStart;
      const lastRun = run as { id: string; status: string } | null;
      const runStatus = error instanceof ProviderError && error.runStatus ? error.runStatus : (lastRun?.status ?? null);
      await this.#options.database.transaction(async (trx) => {
        await queries.updateMessage(trx, messageId, {
          state: 'failed',
          error: failure.logMessage,
          run_id: lastRun?.id ?? null,
          run_status: runStatus,
          processing_duration_ms: processing,
          response_latency_ms: this.#now().getTime() - receivedAt,
          updated_at: finishedAt,
        });
        await queries.recordExchangeOnSession(trx, session.session_id, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, error: failure.logMessage }, finishedAt);
        await queries.bumpCounters(trx, { 'state:processing': -1, 'state:failed': 1, ...(runStatus ? { [`run_status:${runStatus}`]: 1 } : {}) });
      });
      this.#logger.warn({ err: error, sessionId: session.session_id, messageId }, 'public chat answer failed');
      this.#publish({
        source,
        session_id: session.session_id,
        message_id: messageId,
        prompt: request.message,
        response: null,
        error: failure.logMessage,
        state: 'failed',
        run_id: lastRun?.id ?? null,
        run_status: runStatus,
        thread_id: threadId,
        prompt_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        processing_duration_ms: processing,
      });
      throw new AppError(failure.status, failure.code, failure.userMessage, { cause: error });
    }
  }

  /** The stored outcome of a question asked before (a retry), waiting while it is still being answered. */
  async #replay(earlier: queries.MessageRow): Promise<ChatReply> {
    let row: queries.MessageRow | undefined = earlier;
    const deadline = this.#now().getTime() + (this.#options.answerCeilingMs ?? ANSWER_CEILING_MS);
    while (row && row.state === 'processing' && this.#now().getTime() < deadline) {
      await this.#options.clock.sleep(REPLAY_WAIT_POLL_MS);
      row = await queries.findMessage(this.#db, earlier.id);
    }
    if (!row || row.state === 'processing') throw new AppError(504, 'answer_timeout', 'The assistant is still working on this question. Please try again in a moment.');
    if (row.state !== 'completed') throw new AppError(502, 'provider_error', 'The assistant could not answer this question. Please try again.');
    return { success: true, response: row.response ?? '', feedback_id: row.id, error: null, sources: parseSources(row.sources) };
  }

  /** Counts one request against the identifier's window and throws `refusal()` when over the limit. */
  async #limit(identifier: string, clientIp: string | null, max: number, refusal: () => AppError): Promise<void> {
    const now = this.#now();
    const windowStart = Math.floor(now.getTime() / WINDOW_MS) * WINDOW_MS;
    const { request_count } = await queries.countRequest(this.#db, {
      identifier,
      client_ip: clientIp,
      window_start: new Date(windowStart).toISOString(),
      window_end: new Date(windowStart + WINDOW_MS).toISOString(),
      max_requests: max,
      now: now.toISOString(),
    });
    if (request_count > max) {
      if (identifier.startsWith('session:')) await queries.noteLimited(this.#db, identifier, now.toISOString());
      throw refusal();
    }
  }

  #secondsLeftInWindow(): number {
    const now = this.#now().getTime();
    return (WINDOW_MS - (now % WINDOW_MS)) / 1000;
  }

  /** The visitor's live session, or a new one. */
  async #session(sessionId: string | undefined, client: ClientInfo): Promise<queries.SessionRow> {
    const existing = await this.findSession(sessionId);
    const now = this.#now();
    const expiresAt = new Date(now.getTime() + SESSION_IDLE_MS).toISOString();
    if (existing) {
      await this.#touch(existing, client, now);
      return existing;
    }
    const id = randomBytes(24).toString('base64url');
    await this.#options.database.transaction(async (trx) => {
      await queries.insertSession(trx, {
        session_id: id,
        client_ip: client.ip,
        user_agent: client.userAgent,
        referer: client.referer,
        verified: false,
        now: now.toISOString(),
        expires_at: expiresAt,
      });
      await queries.bumpCounters(trx, { session_count: 1 });
      await queries.noteClientIp(trx, client.ip, now.toISOString());
    });
    return (await queries.findSession(this.#db, id))!;
  }

  /** Marks the session used now (extending its life) and keeps the session-duration total in step. */
  async #touch(session: queries.SessionRow, client: ClientInfo, now: Date): Promise<void> {
    const expiresAt = new Date(now.getTime() + SESSION_IDLE_MS).toISOString();
    const added = Math.max(0, now.getTime() - Date.parse(session.last_seen_at));
    await this.#options.database.transaction(async (trx) => {
      await queries.touchSession(trx, session.session_id, { client_ip: client.ip, user_agent: client.userAgent }, now.toISOString(), expiresAt);
      await queries.bumpCounters(trx, { session_duration_ms_sum: added });
      await queries.noteClientIp(trx, client.ip, now.toISOString());
    });
  }

  #publish(event: Omit<AnswerEvent, 'created_at'>): void {
    this.#options.events.publish('answer', { ...event, created_at: this.#now().toISOString() });
  }
}

function parseSources(text: string | null): Source[] {
  if (!text) return [];
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? parsed.flatMap(storedSource) : [];
  } catch {
    return [];
  }
}

/** What the visitor is told, and what is stored on the message, when an answer fails. */
function describeFailure(error: unknown, ceiling: AbortSignal): { status: number; code: string; userMessage: string; logMessage: string } {
  if (ceiling.aborted) {
    return {
      status: 504,
      code: 'answer_timeout',
      userMessage: 'The assistant took too long to answer. Please try again with a shorter question or wait a moment.',
      logMessage: `No answer within ${ANSWER_CEILING_MS / 1000} s`,
    };
  }
  const detail = error instanceof Error ? error.message : String(error);
  return {
    status: 502,
    code: 'provider_error',
    userMessage: 'The assistant could not answer right now. Please try again in a moment.',
    logMessage: detail,
  };
}
