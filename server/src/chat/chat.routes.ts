import {
  ChatCancelReplySchema,
  ChatCancelRequestSchema,
  ChatHistoryQuerySchema,
  ChatHistoryReplySchema,
  ChatNewConversationReplySchema,
  ChatReplySchema,
  ChatSendRequestSchema,
  FeedbackRequestSchema,
  LastRefreshReplySchema,
  SuccessReplySchema,
  TurnstileEnabledReplySchema,
  TurnstileVerifyRequestSchema,
} from '@concierge/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Clock } from '../clock.ts';
import { streamAnswer, wantsEventStream } from './answer-stream.ts';
import { SESSION_IDLE_MS, type ChatAnswer, type ChatService, type ClientInfo } from './chat.service.ts';

export const CHAT_COOKIE = 'concierge_chat';

/** Where the time of the last schedule refresh comes from (the crawler, once it runs). */
export interface LastRefreshSource {
  lastRefresh(): Promise<string | null>;
}

const clientOf = (request: FastifyRequest): ClientInfo => ({
  ip: request.ip || null,
  userAgent: request.headers['user-agent']?.slice(0, 500) ?? null,
  referer: request.headers.referer?.slice(0, 500) ?? null,
});

/** The session id each request's cookie carried, once its signature was checked (an HMAC: asked for twice per question). */
const sessionIds = new WeakMap<FastifyRequest, string | undefined>();

function chatSessionId(request: FastifyRequest): string | undefined {
  if (sessionIds.has(request)) return sessionIds.get(request);
  const raw = request.cookies[CHAT_COOKIE];
  const unsigned = raw ? request.unsignCookie(raw) : null;
  const sessionId = unsigned?.valid && unsigned.value ? unsigned.value : undefined;
  sessionIds.set(request, sessionId);
  return sessionId;
}

/**
 * The visitor's session cookie. When the chat may be framed by other sites
 * (EMBED_ORIGINS), it must reach this server from inside their iframe:
 * SameSite=None, Secure (browsers take that over HTTPS, and from localhost),
 * Partitioned (kept per embedding site, as browsers now want third-party
 * cookies).
 */
function setChatCookie(request: FastifyRequest, reply: FastifyReply, sessionId: string, embeddable: boolean): void {
  if (chatSessionId(request) === sessionId) return;
  const site = embeddable ? { sameSite: 'none' as const, secure: true, partitioned: true } : { sameSite: 'lax' as const, secure: request.protocol === 'https' };
  reply.setCookie(CHAT_COOKIE, sessionId, { signed: true, httpOnly: true, ...site, path: '/', maxAge: SESSION_IDLE_MS / 1000 });
}

export interface ChatRouteOptions {
  clock: Clock;
  /** Other sites may frame the chat (EMBED_ORIGINS is set): the session cookie must work in their iframe. */
  embeddable: boolean;
}

const SEND_DESCRIPTION =
  'With `Accept: text/event-stream` the answer streams (DESIGN §9): `event: delta` / `data: {"text": …}` pieces, then one `event: done` ' +
  'carrying this reply; refusals before the answer starts keep their status and JSON body.';

const HISTORY_DESCRIPTION =
  'The current conversation, oldest first: the newest `limit` exchanges (1–100, default 100), older than the exchange `before` (a `feedback_id`) when given. ' +
  '`has_more` / `earlier_count`: older exchanges are left; ask again with `before` set to the first exchange\'s `feedback_id`.';

/** Refuses a question the chat cannot take now (off, paused, busy) as it arrives, before its body is read. */
const refuseEarly = (chat: ChatService) => (_request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
  try {
    chat.refuseIfUnable();
  } catch (error) {
    return done(error as Error);
  }
  done();
};

/** Answers with the JSON reply, or the event stream when the client asked for one; streams end once the app closes. */
function answerReplier(instance: FastifyInstance, options: ChatRouteOptions) {
  const { clock, embeddable } = options;
  let closing = false;
  instance.addHook('preClose', async () => {
    closing = true;
  });
  return (request: FastifyRequest, reply: FastifyReply, answer: ChatAnswer) => {
    setChatCookie(request, reply, answer.sessionId, embeddable);
    return wantsEventStream(request) ? streamAnswer(request, reply, answer, { clock, closing: () => closing }) : answer.follow();
  };
}

/** The public chat (SPEC §7 /public/chat/*). */
export function registerChatRoutes(instance: FastifyInstance, chat: ChatService, lastRefresh: LastRefreshSource, options: ChatRouteOptions): void {
  const { embeddable } = options;
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const tags = ['public chat'];
  const answerWith = answerReplier(instance, options);

  app.get('/public/chat/turnstile/enabled', { schema: { tags, response: { 200: TurnstileEnabledReplySchema } } }, async () => {
    chat.ensureEnabled();
    return { enabled: chat.verificationRequired(), success: true };
  });

  app.post(
    '/public/chat/turnstile/verify',
    { schema: { tags, body: TurnstileVerifyRequestSchema, response: { 200: SuccessReplySchema } } },
    async (request, reply) => {
      const sessionId = await chat.verify(chatSessionId(request), request.body.token, clientOf(request));
      setChatCookie(request, reply, sessionId, embeddable);
      return { success: true, error: null };
    },
  );

  app.post(
    '/public/chat/send',
    { schema: { tags, description: SEND_DESCRIPTION, body: ChatSendRequestSchema, response: { 200: ChatReplySchema } }, onRequest: refuseEarly(chat) },
    async (request, reply) => answerWith(request, reply, await chat.begin(chatSessionId(request), request.body, clientOf(request))),
  );

  app.post('/public/chat/cancel', { schema: { tags, body: ChatCancelRequestSchema, response: { 200: ChatCancelReplySchema } } }, async (request) =>
    chat.cancel(chatSessionId(request), request.body.client_message_id),
  );

  app.post('/public/chat/new_conversation', { schema: { tags, response: { 200: ChatNewConversationReplySchema } } }, async (request) => {
    await chat.newConversation(chatSessionId(request));
    return { success: true as const, error: null };
  });

  app.post('/public/chat/feedback', { schema: { tags, body: FeedbackRequestSchema, response: { 200: SuccessReplySchema } } }, async (request) => {
    await chat.feedback(chatSessionId(request), request.body, clientOf(request));
    return { success: true, error: null };
  });

  app.get(
    '/public/chat/history',
    { schema: { tags, description: HISTORY_DESCRIPTION, querystring: ChatHistoryQuerySchema, response: { 200: ChatHistoryReplySchema } } },
    async (request) => ({ success: true as const, ...(await chat.history(chatSessionId(request), request.query)) }),
  );

  app.get('/public/chat/last_refresh', { schema: { tags, response: { 200: LastRefreshReplySchema } } }, async () => {
    const time = await lastRefresh.lastRefresh();
    return time ? { success: true as const, data: time } : { success: false as const, error: 'The schedule has not been refreshed yet' };
  });
}

/** An operator's test question (/api/chat/send), on the public chat's pipeline under the operator's own chat session; an admin route. */
export function registerOperatorChatRoute(instance: FastifyInstance, chat: ChatService, options: ChatRouteOptions): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const answerWith = answerReplier(instance, options);
  app.post(
    '/api/chat/send',
    { schema: { tags: ['admin'], description: SEND_DESCRIPTION, body: ChatSendRequestSchema, response: { 200: ChatReplySchema } }, onRequest: refuseEarly(chat) },
    async (request, reply) => answerWith(request, reply, await chat.begin(chatSessionId(request), request.body, clientOf(request), 'admin_chat')),
  );
}
