import {
  FeedbackQuerySchema,
  FeedbackReplySchema,
  PROVIDER_LOG_KINDS,
  ProviderLogsQuerySchema,
  ProviderLogsReplySchema,
  PublicChatMessagesQuerySchema,
  PublicChatMessagesReplySchema,
  PublicChatRateLimitsQuerySchema,
  PublicChatSessionsQuerySchema,
  PublicChatSessionsReplySchema,
  RateLimitsReplySchema,
  type FeedbackItem,
  type ProviderLogKind,
} from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import { dateRange } from './list-query.ts';
import * as queries from './monitoring.queries.ts';

/** The public chat monitoring lists (SPEC §2, §7): messages, feedback, sessions, rate limits and the five AI call logs. */
export function registerMonitoringRoutes(
  instance: FastifyInstance,
  deps: { database: Database; clock: Clock; timeZone: () => string },
): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const db = () => deps.database.db;
  const tags = ['monitoring'];

  app.get(
    '/api/public_chat_messages',
    { schema: { tags, querystring: PublicChatMessagesQuerySchema, response: { 200: PublicChatMessagesReplySchema } } },
    async (request) => {
      const { query } = request;
      const rows = await queries.listMessages(db(), { ...query, range: dateRange(query, deps.timeZone()) });
      const userIds = rows.filter((row) => row.role === 'user').map((row) => row.id);
      const feedback = userIds.length
        ? await queries.listFeedback(db(), { message_ids: userIds, range: {}, order: 'asc', limit: 10_000, offset: 0 })
        : [];
      const byMessage = new Map<number, FeedbackItem[]>();
      for (const item of feedback) byMessage.set(item.public_chat_message_id, [...(byMessage.get(item.public_chat_message_id) ?? []), item]);
      const messages = rows.map((row) => {
        const items = byMessage.get(row.id) ?? [];
        return { ...row, feedback_count: items.length, feedback: items };
      });
      return { messages, returned_count: messages.length };
    },
  );

  app.get('/api/public/chat/feedback', { schema: { tags, querystring: FeedbackQuerySchema, response: { 200: FeedbackReplySchema } } }, async (request) => {
    const { query } = request;
    const feedback = await queries.listFeedback(db(), { ...query, range: dateRange(query, deps.timeZone()) });
    return { feedback, returned_count: feedback.length };
  });

  app.get(
    '/api/public_chat_sessions',
    { schema: { tags, querystring: PublicChatSessionsQuerySchema, response: { 200: PublicChatSessionsReplySchema } } },
    async (request) => {
      const { query } = request;
      const rows = await queries.listSessions(db(), deps.clock.now().toISOString(), { ...query, range: dateRange(query, deps.timeZone()) });
      const sessions = rows.map((row) => ({ ...row, active: Boolean(row.active), verified: Boolean(row.verified) }));
      return { sessions, returned_count: sessions.length };
    },
  );

  app.get(
    '/api/public_chat_rate_limits',
    { schema: { tags, querystring: PublicChatRateLimitsQuerySchema, response: { 200: RateLimitsReplySchema } } },
    async (request) => {
      const { query } = request;
      const rateLimits = await queries.listRateLimits(db(), { ...query, range: dateRange(query, deps.timeZone()) });
      return { rate_limits: rateLimits, returned_count: rateLimits.length };
    },
  );

  for (const kind of Object.keys(PROVIDER_LOG_KINDS) as ProviderLogKind[]) {
    app.get(
      `/api/public_chat_openai_${kind}`,
      { schema: { tags, querystring: ProviderLogsQuerySchema, response: { 200: ProviderLogsReplySchema } } },
      async (request) => {
        const { query } = request;
        const logs = await queries.listProviderLogs(db(), kind, {
          ...query,
          message_id: query.public_chat_message_id ?? query.message_id,
          // An ask command id asks for that command's calls; otherwise the public chat's unless told.
          origin: query.origin ?? (query.ask_command_id !== undefined ? 'ask_command' : 'public_chat'),
          range: dateRange(query, deps.timeZone()),
        });
        return { logs, returned_count: logs.length };
      },
    );
  }
}
