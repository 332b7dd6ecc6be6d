import { AskCommandSchema, AskCommandsQuerySchema, DiscordMessageSchema, DiscordMessagesQuerySchema } from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dateRange } from '../admin/list-query.ts';
import type { AskCommandService } from './ask-commands.service.ts';

/** The Ask Commands and Discord Messages lists (SPEC §7): arrays, with the total in X-Total-Count. */
export function registerAskRoutes(instance: FastifyInstance, deps: { askCommands: AskCommandService; timeZone: () => string }): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const tags = ['discord'];

  app.get('/api/ask_commands', { schema: { tags, querystring: AskCommandsQuerySchema, response: { 200: z.array(AskCommandSchema) } } }, async (request, reply) => {
    const { query } = request;
    const { commands, total } = await deps.askCommands.list({ ...query, range: dateRange(query, deps.timeZone()) });
    reply.header('x-total-count', String(total));
    return commands;
  });

  app.get(
    '/api/discord_messages',
    { schema: { tags, querystring: DiscordMessagesQuerySchema, response: { 200: z.array(DiscordMessageSchema) } } },
    async (request, reply) => {
      const { query } = request;
      const { messages, total } = await deps.askCommands.discordMessages({ ...query, range: dateRange(query, deps.timeZone()) });
      reply.header('x-total-count', String(total));
      return messages;
    },
  );
}
