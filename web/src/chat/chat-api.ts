import type { ChatCancelReply, ChatExchange, ChatHistoryReply, ChatReply, FeedbackType, Source } from '@concierge/contract';

/** A reply as the server sends it (JSON, or an event stream's `done`); a stopped answer says so, its partial answer in `response`. */
type Reply = ChatReply;
import { CHAT_STREAM_EVENTS } from '@concierge/contract/chat-constants';
import { createParser } from 'eventsource-parser';
import { ApiError, api, readJson } from '../api/client.ts';

/** SPEC §9 time limits of the public chat's calls. */
export const TIMEOUTS = { send: 120_000, verify: 10_000, enabled: 5_000, feedback: 10_000, history: 10_000, lastRefresh: 10_000, cancel: 10_000, newConversation: 10_000 } as const;

/** SPEC §8's texts for the public chat. */
export const CHAT_TEXT = {
  sendFailed: 'Failed to get response from assistant',
  timeout:
    'The request timed out. The AI assistant may be taking longer than usual to respond. Please try again with a shorter message or wait a moment.',
  interrupted: 'Connection was interrupted while processing your request. This may be due to a server timeout. Please try again.',
  rateLimited: "You've reached the rate limit. Please wait a moment before sending another message.",
  inFlight: 'Another request is already in progress. Please wait for it to complete before sending a new message.',
  verificationFailed: 'Security verification failed. Please refresh the page to verify again.',
  unavailable: 'The chat service is currently unavailable. Please try again later.',
  serverError: 'Server error occurred. Please try again in a moment.',
  unknown: 'Sorry, I encountered an error processing your request. Please try again.',
  verifyFirst: 'Please complete the security verification before sending a message.',
  noSession: 'Session not initialized. Please refresh the page.',
  invalidToken: 'Invalid verification token',
  tooManyVerifications: 'Too many verification attempts. Please try again later.',
  verifyTimeout: 'Verification timeout. Please try again.',
  verifyOther: 'Verification failed. Please try again.',
  refreshHint: 'Please refresh the page to try again.',
  verificationExpired: 'Verification expired. Please verify again.',
  disabled: 'Public chat is currently disabled',
  enabledCheckFailed: 'Failed to check turnstile status',
  feedbackInvalid: 'Invalid feedback data',
  feedbackSession: 'No valid session. Please refresh the page.',
  feedbackNotFound: 'Message not found or does not belong to your session',
  feedbackTimeout: 'Request timeout. Please try again.',
  feedbackOther: 'Failed to submit feedback. Please try again.',
  earlierFailed: 'Could not load earlier messages. Please try again.',
} as const;

export type SendOutcome =
  | { ok: true; response: string; feedbackId: number | null; sources: Source[] }
  /**
   * `operatorWording`: the text is the operator's markdown (the paused message), not one of SPEC's plain texts.
   * `stopped`: the visitor pressed Stop; `partial` is what had arrived.
   */
  | { ok: false; error: string; operatorWording?: boolean; stopped?: boolean; partial?: string };

/** While the bot is paused the server answers 503 with the operator's paused message (DESIGN §9). */
const pausedMessage = (error: unknown) =>
  error instanceof ApiError && error.status === 503 && error.code === 'paused' && error.serverMessage ? error.serverMessage : null;

/**
 * The server's own words when it refused a request as cross-site: it names
 * the origin it saw, which is what an operator needs to fix a proxy that
 * drops the port, and a visitor's "Verification failed" would hide it.
 */
const crossSiteRefusal = (error: ApiError) => (error.code === 'cross_site_request' && error.serverMessage ? error.serverMessage : null);

/** How a failed send reads to the visitor (SPEC §8 "Chat send"). */
export function sendErrorText(error: unknown): string {
  if (!(error instanceof ApiError)) return CHAT_TEXT.unknown;
  const refusal = crossSiteRefusal(error);
  if (refusal) return refusal;
  if (error.kind === 'timeout') return CHAT_TEXT.timeout;
  if (error.kind === 'network') return CHAT_TEXT.interrupted;
  switch (error.status) {
    case 429:
      return CHAT_TEXT.rateLimited;
    case 409:
      return CHAT_TEXT.inFlight;
    case 403:
      return CHAT_TEXT.verificationFailed;
    case 503:
      return CHAT_TEXT.unavailable;
  }
  if (error.status >= 500) return CHAT_TEXT.serverError;
  return CHAT_TEXT.unknown;
}

/** The reply (JSON, or an event stream's `done`) as the visitor sees it. */
function outcomeOf(reply: Reply | '' | null): SendOutcome {
  if (!reply || typeof reply !== 'object') return { ok: false, error: CHAT_TEXT.interrupted };
  // Stopped (DESIGN §9 cancel, from this page or another of the session's).
  if (reply.stopped) return { ok: false, error: '', stopped: true, partial: reply.response };
  if (!reply.success) return { ok: false, error: reply.error ? `Error: ${reply.error}` : CHAT_TEXT.sendFailed };
  if (!reply.response) return { ok: false, error: CHAT_TEXT.interrupted };
  return { ok: true, response: reply.response, feedbackId: reply.feedback_id, sources: reply.sources ?? [] };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits before re-sending after a dropped connection (flaky convention Wi-Fi). */
const RETRY_DELAYS_MS = [1500, 4000];

export interface SendOptions {
  /** Each chunk of the answer as it streams (DESIGN §9 `event: delta`). */
  onDelta?: (text: string) => void;
  /** The connection dropped and the question is being asked again under the same id: the server replays or follows the answer from its start. */
  onRestart?: () => void;
  /** Aborted when the visitor presses Stop. */
  signal?: AbortSignal;
}

class StreamDropped extends Error {}

/**
 * Reads DESIGN §9's event stream: `delta` chunks, then one `done` carrying
 * the usual reply. A stream that ends without `done` dropped on the way.
 */
async function readEventStream(body: ReadableStream<Uint8Array>, onDelta: (text: string) => void): Promise<Reply> {
  let done: Reply | null = null;
  const parser = createParser({
    onEvent(event) {
      if (event.event === CHAT_STREAM_EVENTS.delta) {
        const chunk = (JSON.parse(event.data) as { text?: unknown }).text;
        if (typeof chunk === 'string' && chunk) onDelta(chunk);
      } else if (event.event === CHAT_STREAM_EVENTS.done) {
        done = JSON.parse(event.data) as Reply;
      }
    },
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  parser.feed(decoder.decode());
  if (!done) throw new StreamDropped('The answer stream ended before its last event');
  return done;
}

/**
 * Sends one question and streams its answer (DESIGN §9): with `Accept:
 * text/event-stream` the server answers chunk by chunk; a server that
 * answers JSON instead is read as before. A refusal keeps its HTTP status
 * and JSON body. A dropped connection is retried with the same
 * client_message_id, so the server answers it once and a retry gets the
 * stored answer (or follows the one in flight).
 */
export async function sendMessage(message: string, token: string, clientMessageId: string, options: SendOptions = {}): Promise<SendOutcome> {
  const deadline = AbortSignal.timeout(TIMEOUTS.send);
  const signals = [deadline, ...(options.signal ? [options.signal] : [])];
  const signal = AbortSignal.any(signals);
  const stopped = () => options.signal?.aborted === true;
  for (let attempt = 0; ; attempt++) {
    try {
      if (attempt > 0) options.onRestart?.();
      let response: Response;
      try {
        response = await fetch('/public/chat/send', {
          method: 'POST',
          headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
          body: JSON.stringify({ message, token, client_message_id: clientMessageId }),
          credentials: 'same-origin',
          signal,
        });
      } catch (error) {
        throw signal.aborted ? error : new ApiError('network', 0, error instanceof Error ? error.message : 'Network error');
      }
      const type = response.headers.get('content-type') ?? '';
      if (response.ok && type.includes('text/event-stream') && response.body) {
        try {
          return outcomeOf(await readEventStream(response.body, (text) => options.onDelta?.(text)));
        } catch (error) {
          if (signal.aborted) throw error;
          throw new ApiError('network', 0, error instanceof Error ? error.message : 'The answer stream dropped');
        }
      }
      return outcomeOf(await readJson<Reply | ''>(response));
    } catch (error) {
      if (stopped()) return { ok: false, error: '', stopped: true };
      if (deadline.aborted) return { ok: false, error: CHAT_TEXT.timeout };
      const delay = RETRY_DELAYS_MS[attempt];
      if (error instanceof ApiError && error.kind === 'network' && delay !== undefined) {
        await sleep(delay);
        if (stopped()) return { ok: false, error: '', stopped: true };
        continue;
      }
      const paused = pausedMessage(error);
      if (paused) return { ok: false, error: paused, operatorWording: true };
      return { ok: false, error: sendErrorText(error) };
    }
  }
}

/**
 * Stops an answer in flight (DESIGN §9): the run is cancelled and the
 * session may ask again at once. Resolves to how the question ended (its
 * partial answer when stopped; the whole answer if it finished first), or
 * null when the server could not say.
 */
export async function cancelAnswer(clientMessageId: string): Promise<ChatCancelReply | null> {
  try {
    return await api.post<ChatCancelReply>('/public/chat/cancel', { body: { client_message_id: clientMessageId }, timeoutMs: TIMEOUTS.cancel });
  } catch {
    // Nothing to tell the visitor: the answer is stopped on their side either way.
    return null;
  }
}

/** A new conversation (DESIGN §9): the session's next question starts a new thread. Resolves to an error text or null. */
export async function startNewConversation(): Promise<string | null> {
  try {
    await api.post('/public/chat/new_conversation', { timeoutMs: TIMEOUTS.newConversation });
    return null;
  } catch (error) {
    return sendErrorText(error);
  }
}

export type EnabledOutcome = { kind: 'enabled' } | { kind: 'not_required' } | { kind: 'disabled' } | { kind: 'check_failed' };

/** SPEC §8: 503 → disabled; any other failure → "Failed to check turnstile status" with verification on. */
export async function checkVerificationEnabled(): Promise<EnabledOutcome> {
  try {
    const reply = await api.get<{ enabled: boolean }>('/public/chat/turnstile/enabled', { timeoutMs: TIMEOUTS.enabled });
    return reply.enabled ? { kind: 'enabled' } : { kind: 'not_required' };
  } catch (error) {
    if (error instanceof ApiError && error.status === 503) return { kind: 'disabled' };
    return { kind: 'check_failed' };
  }
}

/** Presents a Turnstile token (or '' when verification is off); resolves to an error text or null. */
export async function verifyToken(token: string): Promise<string | null> {
  try {
    await api.post('/public/chat/turnstile/verify', { body: { token }, timeoutMs: TIMEOUTS.verify });
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) return CHAT_TEXT.verifyOther;
    if (error.kind === 'timeout') return CHAT_TEXT.verifyTimeout;
    const refusal = crossSiteRefusal(error);
    if (refusal) return refusal;
    if (error.status === 400) return CHAT_TEXT.invalidToken;
    if (error.status === 429) return CHAT_TEXT.tooManyVerifications;
    if (error.status === 503) return CHAT_TEXT.disabled;
    return CHAT_TEXT.verifyOther;
  }
}

/** One page of the restored conversation: its exchanges oldest first, and how many older ones the server still has. */
export interface HistoryPage {
  exchanges: ChatExchange[];
  /** Exchanges older than the first one here, not fetched yet (0: this page starts the conversation). */
  earlierCount: number;
}

/**
 * A page of the session's conversation: the newest `limit` exchanges, or
 * those older than the exchange `before`. Null when it could not be had
 * (the page then shows what it has).
 */
export async function loadHistory(page: { limit: number; before?: number }): Promise<HistoryPage | null> {
  try {
    const reply = await api.get<ChatHistoryReply>('/public/chat/history', { query: page, timeoutMs: TIMEOUTS.history });
    return { exchanges: reply.exchanges, earlierCount: reply.has_more ? reply.earlier_count : 0 };
  } catch {
    return null;
  }
}

/** Resolves to null on success, else the text to show (SPEC §8 "Feedback submit"). */
export async function submitFeedback(feedbackId: number, type: FeedbackType, description: string): Promise<string | null> {
  try {
    const trimmed = description.trim();
    await api.post('/public/chat/feedback', {
      body: { feedback_id: feedbackId, type, ...(trimmed ? { description: trimmed } : {}), detail: navigator.userAgent.slice(0, 200) },
      timeoutMs: TIMEOUTS.feedback,
    });
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) return 'An unexpected error occurred';
    if (error.kind === 'timeout') return CHAT_TEXT.feedbackTimeout;
    switch (error.status) {
      case 400:
        return CHAT_TEXT.feedbackInvalid;
      case 401:
        return CHAT_TEXT.feedbackSession;
      case 404:
        return CHAT_TEXT.feedbackNotFound;
    }
    return CHAT_TEXT.feedbackOther;
  }
}
