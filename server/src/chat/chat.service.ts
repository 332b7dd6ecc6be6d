import { createHash, randomBytes } from 'node:crypto';
import { ANSWER_STOPPED_MESSAGE, capAnswer, type ChatCancelReply, type ChatHistoryQuery, type ChatHistoryReply, type ChatReply, type ChatSendRequest, type FeedbackRequest, type Source } from '@concierge/contract';
import { storedSource } from '../assistant/knowledge-format.ts';
import type { Logger } from 'pino';
import { ANSWER_CEILING_MS, ASK_ERRORS, AskStoppedError, busy, type AskOrigin, type AskPipeline, type Slot } from '../ask/ask-pipeline.ts';
import type { LeasedWork } from '../ask/lease-keeper.ts';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database } from '../db/database.ts';
import { AppError, conflict, forbidden, isAppError, notFound, refusal, tooManyRequests, unauthorized } from '../errors.ts';
import { WindowCounter, type WindowCount } from '../limits/limits.ts';
import type { AssistantService } from '../assistant/assistant.service.ts';
import { TurnBatch } from '../turn-batch.ts';
import { PublicChatRecorder } from './chat-recorder.ts';
import * as queries from './chat.queries.ts';
import { LiveAnswer } from './live-answer.ts';
import { verifyTurnstileToken } from './turnstile.ts';

export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
  referer: string | null;
}

export type ChatSource = Extract<AskOrigin, 'public_chat' | 'admin_chat'>;

export interface ChatServiceOptions {
  database: Database;
  clock: Clock;
  logger: Logger;
  config: ConfigService;
  /** Turns questions into answers (paused policy, concurrency cap, ceiling, provider, answer event). */
  pipeline: AskPipeline;
  /** Cancels the provider run of a question another process is answering (Stop). */
  assistant: AssistantService;
  /** Cloudflare Turnstile, when both keys are configured. */
  turnstile: { secretKey: string; verifyUrl: string } | null;
  /** Longest wait for one answer (below the browser's 120 s). */
  answerCeilingMs?: number;
  /** Longest wait for a place under the concurrency cap before a 503 busy (default BUSY_WAIT_MS). */
  busyWaitMs?: number;
  fetch?: typeof fetch;
}

/** A visitor's session lives this long after it was last used. */
export const SESSION_IDLE_MS = 24 * 3_600_000;
/** A request "in flight" this long is assumed lost (a last resort: recovery frees the sessions of a stopped process). */
const IN_FLIGHT_STALE_MS = 130_000;
const WINDOW_MS = 60_000;
/** A question interrupted by a stopped process is asked again at most this many times when it never reached a run. */
const MAX_QUESTION_ATTEMPTS = 2;
/** Abandoned questions taken over per recovery pass. */
const RECOVERY_BATCH = 50;
/** The per-IP limit is this many times the per-session one: a whole venue can share one NAT address (DESIGN §7). */
export const IP_LIMIT_FACTOR = 10;
/** Verification attempts per address per minute: generous, since a venue's visitors share one address. */
export const VERIFY_ATTEMPTS_PER_MINUTE = 120;
const REPLAY_WAIT_POLL_MS = 500;
/** How long Stop waits for the answer to end before replying (it ends once the provider's run is cancelled). */
const STOP_WAIT_MS = 10_000;
const STOP_POLL_MS = 250;
/** Turnstile tokens are good for 300 s; a spent one is remembered well past that. */
const SPENT_TOKEN_RETENTION_MS = 60 * 60_000;
/** Rate-limit windows stay on the console's Rate Limits screen this long. */
const RATE_LIMIT_RETENTION_MS = 30 * 24 * 60 * 60_000;

export const CHAT_ERRORS = {
  disabled: 'Public chat is currently disabled',
  noSession: 'Session not initialized. Please refresh the page.',
  notVerified: 'Please complete the security verification before sending a message.',
  rateLimited: "You've reached the rate limit. Please wait a moment before sending another message.",
  inFlight: 'Another request is already in progress. Please wait for it to complete before sending a new message.',
  busy: ASK_ERRORS.busy,
  invalidToken: 'Invalid verification token',
  tooManyVerifications: 'Too many verification attempts. Please try again later.',
  verificationUnavailable: 'Verification failed. Please try again.',
  feedbackSession: 'No valid session. Please refresh the page.',
  feedbackNotFound: 'Message not found or does not belong to your session',
  feedbackRateLimited: "You've sent a lot of feedback in a short time. Please wait a moment before sending more.",
  questionNotFound: 'No question with this client_message_id in your session',
  stopped: ANSWER_STOPPED_MESSAGE,
} as const;

/**
 * A question accepted for an answer (or a retry of one asked before): the
 * reply, and the answer's text as it is produced.
 */
export interface ChatAnswer {
  sessionId: string;
  /**
   * Follows the answer: `onText` gets the text so far as one piece, then
   * each new piece as the provider produces it. Resolves with the reply (a
   * stopped answer's has `success: false`, `stopped: true`); rejects with
   * the AppError a JSON reply carries when no answer came.
   */
  follow(onText?: (delta: string) => void): Promise<ChatReply>;
}

/** An answer this process is producing: its work, its followers, and its Stop. */
interface Answering {
  work: Promise<unknown>;
  live?: LiveAnswer;
  stop?: AbortController;
}

/**
 * The public chat: anonymous sessions, human verification, rate limits, one
 * question in flight per session, feedback and history. Questions are
 * answered by the ask pipeline, with a PublicChatRecorder storing them;
 * questions a stopped process left behind are taken over (`recover`).
 */
export class ChatService implements LeasedWork {
  readonly #options: ChatServiceOptions;
  readonly #logger: Logger;
  readonly #windows: WindowCounter;
  /** The questions' progress marks (DESIGN §6), those of one event-loop turn in one write. */
  readonly #marks: TurnBatch<queries.ProgressMark>;
  /** Questions this process is answering now (asked here or taken over), so a retry can follow the answer itself and Stop can stop it. */
  readonly #answering = new Map<number, Answering>();

  constructor(options: ChatServiceOptions) {
    this.#options = options;
    this.#marks = new TurnBatch((marks) => queries.storeProgressMarks(options.database, marks));
    this.#logger = options.logger;
    this.#windows = new WindowCounter({ database: options.database, clock: options.clock, windowMs: WINDOW_MS });
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
    if (!this.#options.config.get().public_chat_enabled) throw refusal('chat_disabled', CHAT_ERRORS.disabled);
  }

  /**
   * Readies the visitor's session: with verification on, only a genuine,
   * never-used Turnstile token does; with it off, an empty token is enough.
   * Returns the session id (new when the visitor had none).
   */
  async verify(sessionId: string | undefined, token: string, client: ClientInfo): Promise<string> {
    this.ensureEnabled();
    await this.#limit(`verify:${client.ip ?? 'unknown'}`, client.ip, VERIFY_ATTEMPTS_PER_MINUTE, CHAT_ERRORS.tooManyVerifications, 'too_many_verifications');
    const turnstile = this.#options.turnstile;
    if (!this.verificationRequired() || !turnstile) return (await this.#session(sessionId, client)).session.session_id;

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
    // A new session is created verified; one the visitor had is marked so.
    const { session, created } = await this.#session(sessionId, client, { verifiedIfNew: true });
    if (!created) {
      const now = this.#now();
      await queries.markVerified(this.#db, session.session_id, now.toISOString(), new Date(now.getTime() + SESSION_IDLE_MS).toISOString());
    }
    return session.session_id;
  }

  /** A live session by id, or undefined when unknown or expired. */
  async findSession(sessionId: string | undefined): Promise<queries.SessionRow | undefined> {
    if (!sessionId) return undefined;
    const session = await queries.findSession(this.#options.database, sessionId);
    if (!session || session.expires_at <= this.#now().toISOString()) return undefined;
    return session;
  }

  /**
   * The refusals a question meets before anything of it is read: the chat
   * switched off, paused, or every place under the cap and in the wait
   * queue taken (busy). The send routes call it as the request arrives,
   * before its body is parsed, so a burst far over the cap costs a refusal
   * each and no database work; `begin` checks again as it lets the question
   * in (AskPipeline.admit).
   */
  refuseIfUnable(): void {
    this.ensureEnabled();
    this.#options.pipeline.checkOpen();
    if (this.#options.pipeline.saturated) throw busy();
  }

  /** Asks one question and waits for the reply (the JSON reply): `begin`, then follow it to its end. */
  async send(
    sessionId: string | undefined,
    request: ChatSendRequest,
    client: ClientInfo,
    source: ChatSource = 'public_chat',
  ): Promise<{ sessionId: string; reply: ChatReply }> {
    const answer = await this.begin(sessionId, request, client, source);
    return { sessionId: answer.sessionId, reply: await answer.follow() };
  }

  /**
   * Accepts one question for the session and starts its answer, stored as it
   * goes; every refusal (400/401/403/409/429/503) is thrown here, before
   * any answer starts. A retry of a question asked before (same
   * `client_message_id`) replays its stored answer or follows the one in
   * flight. Public visitors need a ready (and, with verification on,
   * verified) session; an operator's test question (`admin_chat`) gets one made.
   */
  async begin(sessionId: string | undefined, request: ChatSendRequest, client: ClientInfo, source: ChatSource = 'public_chat'): Promise<ChatAnswer> {
    const receivedAt = this.#now().getTime();
    this.refuseIfUnable();
    const admission = this.#options.pipeline.admit();
    try {
      return await this.#begin(sessionId, request, client, source, receivedAt, admission);
    } finally {
      admission.release();
    }
  }

  async #begin(
    sessionId: string | undefined,
    request: ChatSendRequest,
    client: ClientInfo,
    source: ChatSource,
    receivedAt: number,
    /** This question's admission, given back as soon as it has a place. */
    admission: { release(): void },
  ): Promise<ChatAnswer> {
    let session = await this.findSession(sessionId);
    if (source === 'admin_chat') session ??= (await this.#session(undefined, client)).session;
    if (!session) {
      if (this.verificationRequired()) throw forbidden(CHAT_ERRORS.notVerified, 'verification_required');
      throw unauthorized(CHAT_ERRORS.noSession, 'session_required');
    }
    if (source === 'public_chat' && this.verificationRequired() && !session.verified) {
      throw forbidden(CHAT_ERRORS.notVerified, 'verification_required');
    }

    if (request.client_message_id) {
      const earlier = await queries.findMessageByClientId(this.#options.database, { sessionId: session.session_id, clientMessageId: request.client_message_id });
      if (earlier) return { sessionId: session.session_id, follow: (onText) => this.#replay(earlier, onText) };
    }

    // A question refused as a duplicate (409) or for lack of a place (503) is not counted against the session's
    // and the address's minute: only questions that reach the assistant spend them (README "Reliability").
    const now = this.#now();
    const staleBefore = new Date(now.getTime() - IN_FLIGHT_STALE_MS).toISOString();
    // The in-flight hold lasts as long as the answer (released when it is stored), not as long as this request.
    // With a place free under the cap (the usual case) it is taken with the question's row, in one transaction;
    // at capacity it is taken first, so a second question of the session is refused at once rather than after the wait.
    // A question of the session already in flight as the session was read: refused before anything is counted.
    if (session.in_flight_since && session.in_flight_since >= staleBefore) throw conflict(CHAT_ERRORS.inFlight, 'request_in_flight');
    let slot = this.#options.pipeline.tryAcquire();
    if (slot) admission.release();
    const claimedFirst = !slot;
    if (claimedFirst && !(await queries.claimInFlight(this.#db, session.session_id, now.toISOString(), staleBefore))) {
      throw conflict(CHAT_ERRORS.inFlight, 'request_in_flight');
    }
    let live: LiveAnswer;
    let counted: WindowCount['counted'][] = [];
    try {
      counted = await this.#limitQuestion(session.session_id, client.ip);
      slot ??= await this.#options.pipeline.acquireWithin(this.#options.busyWaitMs);
      admission.release();
      live = await this.#answer(slot, session, request, client, source, receivedAt, claimedFirst ? null : staleBefore);
    } catch (error) {
      // The place goes back (#answer gave it back already when it failed; giving back twice is nothing).
      slot?.release();
      // Refused busy or as a duplicate after the question was counted: the minutes keep no trace of it.
      if (isAppError(error) && (error.status === 503 || error.status === 409)) await Promise.all(counted.map((window) => this.#windows.uncount(window)));
      // A hold this request took is given back; one it found taken (409) belongs to the other request.
      if (claimedFirst) await queries.releaseInFlight(this.#db, session.session_id);
      throw error;
    }
    return { sessionId: session.session_id, follow: (onText) => live.follow(onText) };
  }

  /**
   * A page of the session's current conversation, to restore it after a
   * reload: the newest `limit` exchanges older than `before` (all of them
   * when it is not given), listed oldest first, and how many older ones
   * are left. Only the session's own rows after its last "New
   * conversation" are ever read, whatever `before` says.
   */
  async history(sessionId: string | undefined, page: ChatHistoryQuery): Promise<Omit<ChatHistoryReply, 'success'>> {
    const session = await this.findSession(sessionId);
    if (!session) return { exchanges: [], has_more: false, earlier_count: 0 };
    const afterId = session.conversation_after_id;
    const rows = await queries.sessionExchanges(this.#db, session.session_id, page.limit, { afterId, beforeId: page.before });
    const oldest = rows.at(-1);
    const earlier = oldest && rows.length === page.limit ? await queries.countSessionExchanges(this.#db, session.session_id, { afterId, beforeId: oldest.id }) : 0;
    const exchanges = rows.reverse().map((row) => ({
      feedback_id: row.id,
      question: row.content,
      // Answers stored before the cap came in are served cut too.
      answer: row.response === null ? null : capAnswer(row.response),
      error: row.error,
      state: row.state,
      sources: parseSources(row.sources),
      feedback_submitted: Boolean(row.feedback_submitted),
      created_at: row.created_at,
    }));
    return { exchanges, has_more: earlier > 0, earlier_count: earlier };
  }

  /**
   * Stores the visitor's feedback on one of their answers. Each session has
   * one feedback per type per message (a new one replaces the old) and its
   * own window of `public_chat_requests_per_minute` feedback posts a minute
   * (`feedback:<session>`), apart from its questions'.
   */
  async feedback(sessionId: string | undefined, request: FeedbackRequest, client: ClientInfo): Promise<void> {
    const session = await this.findSession(sessionId);
    if (!session) throw unauthorized(CHAT_ERRORS.feedbackSession, 'session_required');
    const perMinute = this.#options.config.get().public_chat_requests_per_minute;
    await this.#limit(`feedback:${session.session_id}`, client.ip, perMinute, CHAT_ERRORS.feedbackRateLimited);
    const message = await queries.findMessage(this.#db, request.feedback_id);
    if (!message || message.session_id !== session.session_id || message.role !== 'user') {
      throw notFound(CHAT_ERRORS.feedbackNotFound, 'message_not_found');
    }
    await this.#options.database.transaction(async (trx) => {
      const { created } = await queries.saveFeedback(trx, {
        public_chat_message_id: message.id,
        session_id: session.session_id,
        type: request.type,
        description: request.description ?? null,
        detail: request.detail?.trim() || null,
        client_ip: client.ip,
        user_agent: client.userAgent,
        now: this.#now().toISOString(),
      });
      if (created) await queries.bumpCounters(trx, { [`feedback:${request.type}`]: 1 });
    });
  }

  /**
   * Stores the question (owned by this process), then has the pipeline
   * answer it in the background: the answer's text goes to its LiveAnswer as
   * it comes, and the session's in-flight hold is released when it settles.
   */
  async #answer(
    slot: Slot,
    session: queries.SessionRow,
    request: ChatSendRequest,
    client: ClientInfo,
    source: ChatSource,
    receivedAt: number,
    /** Take the session's in-flight hold with the question (a hold older than this is stale); null when it is already held. */
    claimStaleBefore: string | null,
  ): Promise<LiveAnswer> {
    const { pipeline } = this.#options;
    let messageId: number;
    try {
      const startedAt = this.#now();
      const now = startedAt.toISOString();
      // The question's row, the session marked used (and its in-flight hold taken) and the counters, in one write.
      const id = await queries.insertQuestion(this.#options.database, {
        message: {
          session_id: session.session_id,
          role: 'user',
          content: request.message,
          state: 'processing',
          step: 'enqueue',
          attempts: 1,
          thread_id: session.thread_id,
          owner: pipeline.owner,
          lease_expires_at: pipeline.leaseUntil(),
          client_ip: client.ip,
          user_agent: client.userAgent,
          client_message_id: request.client_message_id ?? null,
          now,
        },
        session: { session_id: session.session_id, client_ip: client.ip, user_agent: client.userAgent, now, expires_at: new Date(startedAt.getTime() + SESSION_IDLE_MS).toISOString() },
        claimStaleBefore,
        newClientIp: client.ip !== session.client_ip,
        counters: { message_count: 1, 'state:processing': 1, session_duration_ms_sum: sessionTimeAdded(session, startedAt) },
      });
      // A question of the session already in flight refuses this one (409), and nothing of it is stored.
      if (id === null) throw conflict(CHAT_ERRORS.inFlight, 'request_in_flight');
      messageId = id;
    } catch (error) {
      slot.release();
      throw error;
    }
    const stop = new AbortController();
    let live: LiveAnswer | undefined;
    const answering = (recorder: PublicChatRecorder) => pipeline.answer(
      slot,
      {
        asker: { origin: source, sessionId: session.session_id, messageId },
        prompt: request.message,
        progress: { threadId: session.thread_id, messageId: null, runId: null },
        settings: pipeline.runSettings(),
        log: { sessionId: session.session_id, messageId, clientIp: client.ip, userAgent: client.userAgent },
        ceilingMs: this.#options.answerCeilingMs,
        onText: (delta) => live?.push(delta),
        signal: stop.signal,
      },
      recorder,
    );
    const recorder = this.#recorder({ messageId, sessionId: session.session_id, clientIp: client.ip, userAgent: client.userAgent, receivedAt });
    const reply = answering(recorder)
      .then((outcome): ChatReply => ({ success: true, response: outcome.answer.text, feedback_id: messageId, error: null, sources: outcome.answer.sources }))
      .catch((error: unknown) => {
        if (error instanceof AskStoppedError) return stoppedReply(messageId, error.stop.partial);
        throw error;
      })
      // Storing the outcome released the session's hold; when nothing was stored (another process took it over), it goes here.
      .finally(() => (recorder.released ? undefined : queries.releaseInFlight(this.#db, session.session_id)));
    live = new LiveAnswer(reply);
    void this.#track(messageId, { work: reply, live, stop }).catch(() => {});
    return live;
  }

  /**
   * Stops the session's answer to a question (DESIGN §9): the provider's run
   * is cancelled, the question ends `aborted` with its partial answer, and
   * the session may ask again at once. Answered here, the answer is stopped
   * directly; answered by another process, its run is cancelled, which that
   * process sees. A question already over is left as it is.
   */
  async cancel(sessionId: string | undefined, clientMessageId: string): Promise<ChatCancelReply> {
    const session = await this.findSession(sessionId);
    if (!session) throw unauthorized(CHAT_ERRORS.feedbackSession, 'session_required');
    let row = await queries.findMessageByClientId(this.#options.database, { sessionId: session.session_id, clientMessageId });
    if (!row) throw notFound(CHAT_ERRORS.questionNotFound, 'message_not_found');
    const deadline = this.#options.clock.deadline(STOP_WAIT_MS);
    let cancelledRun: string | null = null;
    try {
      while (row && row.state === 'processing' && !deadline.signal.aborted) {
        const here = this.#answering.get(row.id);
        if (here?.stop) {
          here.stop.abort();
          await Promise.race([here.work.catch(() => {}), new Promise((resolve) => deadline.signal.addEventListener('abort', resolve, { once: true }))]);
        } else {
          // Another process answers it (or a stopped one did): cancel its run, which that process (or recovery) then sees end.
          if (row.run_id && row.thread_id && cancelledRun !== row.run_id) {
            cancelledRun = row.run_id;
            await this.#options.assistant
              .cancelRun({ sessionId: row.session_id, messageId: row.id, clientIp: row.client_ip, userAgent: row.user_agent }, row.thread_id, row.run_id)
              .catch((error: unknown) => this.#logger.warn({ err: error, messageId: row!.id }, 'could not cancel the run of a stopped question'));
          }
          await this.#options.clock.sleep(STOP_POLL_MS, deadline.signal).catch(() => {});
        }
        row = await queries.findMessage(this.#db, row.id);
      }
    } finally {
      deadline.clear();
    }
    if (!row) throw notFound(CHAT_ERRORS.questionNotFound, 'message_not_found');
    if (row.state === 'processing') {
      // Not over yet (a run that had not started when Stop came): the session may ask again all the same.
      await queries.releaseInFlight(this.#db, session.session_id);
    }
    return { success: true, error: null, feedback_id: row.id, state: row.state, response: row.response === null ? null : capAnswer(row.response) };
  }

  /**
   * Starts a new conversation for the session (DESIGN §9): its next
   * question opens a new thread, and the restored history shows only what
   * comes after now. Refused while a question is being answered.
   */
  async newConversation(sessionId: string | undefined): Promise<void> {
    const session = await this.findSession(sessionId);
    if (!session) throw unauthorized(CHAT_ERRORS.noSession, 'session_required');
    if (await queries.hasQuestionInFlight(this.#db, session.session_id)) throw conflict(CHAT_ERRORS.inFlight, 'request_in_flight');
    await queries.startConversation(this.#db, session.session_id, this.#now().toISOString());
  }

  #recorder(question: ConstructorParameters<typeof PublicChatRecorder>[0]['question']): PublicChatRecorder {
    return new PublicChatRecorder({ database: this.#options.database, clock: this.#options.clock, logger: this.#logger, owner: this.#options.pipeline.owner, question, marks: this.#marks });
  }

  /** Keeps this process's claim on the questions it is answering. */
  renew(owner: string, until: string): Promise<number> {
    return queries.renewLeases(this.#options.database, { owner, until });
  }

  /**
   * Takes over questions a stopped process was answering and finishes them:
   * a question with a run waits for that run; one that never reached a run is
   * asked again (once); otherwise it fails with a clear error. Either way its
   * session may ask again afterwards. Returns how many were taken over.
   */
  async recover(scope: { owner: string; now: Date; everyone: boolean }): Promise<number> {
    const now = scope.now.toISOString();
    const candidates = await queries.abandonedQuestions(this.#db, { owner: scope.owner, now, everyone: scope.everyone }, RECOVERY_BATCH);
    let taken = 0;
    for (const { id } of candidates) {
      const slot = this.#options.pipeline.tryAcquire();
      if (!slot) break;
      const row = await queries.claimQuestion(this.#db, id, { owner: scope.owner, now, everyone: scope.everyone, until: this.#options.pipeline.leaseUntil() });
      if (!row) {
        slot.release();
        continue;
      }
      taken++;
      this.#logger.info({ messageId: row.id, sessionId: row.session_id, step: row.step, runId: row.run_id }, 'taking over a question a stopped process was answering');
      void this.#track(row.id, { work: this.#resume(slot, row) }).catch((error: unknown) => this.#logger.error({ err: error, messageId: row.id }, 'could not finish a taken-over question'));
    }
    const heldBefore = scope.everyone ? now : new Date(scope.now.getTime() - IN_FLIGHT_STALE_MS / 4).toISOString();
    await queries.releaseOrphanedInFlight(this.#db, heldBefore);
    return taken;
  }

  /** Remembers an answer in progress until it settles. */
  async #track(messageId: number, answering: Answering): Promise<void> {
    this.#answering.set(messageId, answering);
    try {
      await answering.work;
    } finally {
      if (this.#answering.get(messageId) === answering) this.#answering.delete(messageId);
    }
  }

  async #resume(slot: Slot, row: queries.MessageRow): Promise<void> {
    const { pipeline } = this.#options;
    const recorder = this.#recorder({ messageId: row.id, sessionId: row.session_id, clientIp: row.client_ip, userAgent: row.user_agent, receivedAt: Date.parse(row.created_at) });
    try {
      // A stored run is waited for; a question that never reached one is asked again, both a bounded number of times.
      const exhausted = row.run_id ? row.attempts > MAX_QUESTION_ATTEMPTS + 1 : row.attempts > MAX_QUESTION_ATTEMPTS;
      if (exhausted) {
        await recorder.failed({
          status: 502,
          code: 'interrupted',
          userMessage: ASK_ERRORS.interrupted,
          logMessage: ASK_ERRORS.interrupted,
          threadId: row.thread_id,
          runId: null,
          runStatus: null,
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
          processingMs: 0,
          finishedAt: this.#now(),
        });
        slot.release();
        return;
      }
      await pipeline
        .answer(
          slot,
          {
            asker: { origin: 'public_chat', sessionId: row.session_id, messageId: row.id },
            prompt: row.content,
            progress: { threadId: row.thread_id, messageId: row.provider_message_id, runId: row.run_id },
            settings: pipeline.runSettings(),
            log: { sessionId: row.session_id, messageId: row.id, clientIp: row.client_ip, userAgent: row.user_agent },
            ceilingMs: this.#options.answerCeilingMs,
          },
          recorder,
        )
        .catch(() => {
          // Stored as failed by the recorder; nobody is waiting for the reply.
        });
    } finally {
      await queries.releaseInFlight(this.#db, row.session_id);
    }
  }

  /**
   * The stored outcome of a question asked before (a retry), waiting while it
   * is still being answered: one answered in this process is followed as it
   * is produced (its text so far, then each new piece), one answered
   * elsewhere is waited for and then handed on whole. A question whose
   * process stopped is taken over here and then, so the retry gets its
   * answer without waiting for recovery.
   */
  async #replay(earlier: queries.MessageRow, onText?: (delta: string) => void): Promise<ChatReply> {
    let row: queries.MessageRow | undefined = earlier;
    const ceilingMs = this.#options.answerCeilingMs ?? ANSWER_CEILING_MS;
    const deadline = this.#options.clock.deadline(ceilingMs);
    try {
      while (row && row.state === 'processing' && !deadline.signal.aborted) {
        if (!this.#answering.has(row.id) && row.lease_expires_at && row.lease_expires_at < this.#now().toISOString()) {
          await this.recover({ owner: this.#options.pipeline.owner, now: this.#now(), everyone: false });
        }
        const here = this.#answering.get(row.id);
        // Asked in this process: follow the answer as it comes.
        if (here?.live) return await here.live.follow(onText);
        if (here) {
          // Taken over in this process: wait for the answer itself.
          await Promise.race([here.work.catch(() => {}), new Promise((resolve) => deadline.signal.addEventListener('abort', resolve, { once: true }))]);
        } else {
          // Answered by another process: look again shortly.
          await this.#options.clock.sleep(REPLAY_WAIT_POLL_MS, deadline.signal).catch(() => {});
        }
        row = await queries.findMessage(this.#db, earlier.id);
      }
    } finally {
      deadline.clear();
    }
    if (!row || row.state === 'processing') throw new AppError(504, 'answer_timeout', 'The assistant is still working on this question. Please try again in a moment.');
    if (row.state === 'aborted') {
      const partial = capAnswer(row.response ?? '');
      if (partial) onText?.(partial);
      return stoppedReply(row.id, partial);
    }
    if (row.state !== 'completed') throw new AppError(502, 'provider_error', 'The assistant could not answer this question. Please try again.');
    const response = capAnswer(row.response ?? '');
    if (response) onText?.(response);
    return { success: true, response, feedback_id: row.id, error: null, sources: parseSources(row.sources) };
  }

  /**
   * Counts a question against its session's minute and its address's
   * (IP_LIMIT_FACTOR × as many), both in one statement; returns the windows
   * it was counted in. Over either: 429 with Retry-After, the refusal
   * counted only in the window it went over (so that window shows it
   * limited, and the other keeps no trace of it).
   */
  async #limitQuestion(sessionId: string, clientIp: string | null): Promise<WindowCount['counted'][]> {
    const perMinute = this.#options.config.get().public_chat_requests_per_minute;
    const session = `session:${sessionId}`;
    const limits = [{ identifier: session, max: perMinute }, ...(clientIp ? [{ identifier: `ip:${clientIp}`, max: perMinute * IP_LIMIT_FACTOR }] : [])];
    const counts = await this.#windows.countMany(limits, clientIp);
    const over = counts.findIndex((count) => count.over);
    if (over < 0) return counts.map((count) => count.counted);
    await Promise.all(counts.filter((_, i) => i !== over).map((count) => this.#windows.uncount(count.counted)));
    if (over === 0) await queries.noteLimited(this.#db, session, this.#now().toISOString());
    throw tooManyRequests(CHAT_ERRORS.rateLimited, counts[over]!.retryAfterSeconds);
  }

  /** Counts one request against the identifier's minute; 429 with Retry-After when over its limit (the refusal stays counted, so the window shows it limited). */
  async #limit(identifier: string, clientIp: string | null, max: number, message: string = CHAT_ERRORS.rateLimited, code?: string): Promise<WindowCount['counted']> {
    const counted = await this.#windows.count(identifier, clientIp, max);
    if (!counted.over) return counted.counted;
    if (identifier.startsWith('session:')) await queries.noteLimited(this.#db, identifier, this.#now().toISOString());
    throw tooManyRequests(message, counted.retryAfterSeconds, code);
  }

  /** The visitor's live session, used now, or a new one (counted, with its address; verified when `verifiedIfNew`). */
  async #session(sessionId: string | undefined, client: ClientInfo, options: { verifiedIfNew?: boolean } = {}): Promise<{ session: queries.SessionRow; created: boolean }> {
    const existing = await this.findSession(sessionId);
    const now = this.#now();
    if (existing) {
      await this.#touch(existing, client, now);
      return { session: existing, created: false };
    }
    const session = await queries.createSession(this.#options.database, {
      session_id: randomBytes(24).toString('base64url'),
      client_ip: client.ip,
      user_agent: client.userAgent,
      referer: client.referer,
      verified: options.verifiedIfNew ?? false,
      now: now.toISOString(),
      expires_at: new Date(now.getTime() + SESSION_IDLE_MS).toISOString(),
    });
    return { session, created: true };
  }

  /**
   * Marks the session used now (extending its life) and keeps the
   * session-duration total in step. An address already on the session was
   * noted when it came.
   */
  async #touch(session: queries.SessionRow, client: ClientInfo, now: Date): Promise<void> {
    await this.#options.database.transaction(async (trx) => {
      const expiresAt = new Date(now.getTime() + SESSION_IDLE_MS).toISOString();
      await queries.touchSession(trx, session.session_id, { client_ip: client.ip, user_agent: client.userAgent }, now.toISOString(), expiresAt);
      await queries.bumpCounters(trx, { session_duration_ms_sum: sessionTimeAdded(session, now) });
      if (client.ip !== session.client_ip) await queries.noteClientIp(trx, client.ip, now.toISOString());
    });
  }
}

/** The time a use of the session at `now` adds to the session-duration total: since it was last seen. */
function sessionTimeAdded(session: queries.SessionRow, now: Date): number {
  return Math.max(0, now.getTime() - Date.parse(session.last_seen_at));
}

/** The reply of an answer the visitor stopped: its partial answer, marked stopped. */
function stoppedReply(messageId: number, partial: string): ChatReply {
  return { success: false, response: partial, feedback_id: messageId, error: CHAT_ERRORS.stopped, sources: [], stopped: true, code: 'stopped' };
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
