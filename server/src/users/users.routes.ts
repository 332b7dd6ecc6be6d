import { HistoryItemSchema, UserIdParamsSchema, UserHistoryQuerySchema, UserPatchSchema, UserSchema, UsersQuerySchema } from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { UsersService } from './users.service.ts';

/** The Users screen's endpoints (SPEC §7): the list with a true total, reload, a user's history and edits. */
export function registerUserRoutes(instance: FastifyInstance, users: UsersService): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const tags = ['users'];

  app.get('/api/users', { schema: { tags, querystring: UsersQuerySchema, response: { 200: z.array(UserSchema) } } }, async (request, reply) => {
    const { users: page, total } = await users.list(request.query);
    reply.header('x-total-count', String(total));
    return page;
  });

  // The list read afresh (after edits elsewhere), first page with stats, as the screen shows it.
  app.post('/api/users/reload', { schema: { tags, response: { 200: z.array(UserSchema) } } }, async (_request, reply) => {
    const { users: page, total } = await users.list({ order: 'asc', limit: 25, offset: 0, include_stats: true });
    reply.header('x-total-count', String(total));
    return page;
  });

  app.get(
    '/api/user/:id/history',
    { schema: { tags, params: UserIdParamsSchema, querystring: UserHistoryQuerySchema, response: { 200: z.array(HistoryItemSchema) } } },
    async (request) => users.history(request.params.id, request.query),
  );

  app.patch('/api/user/:id', { schema: { tags, params: UserIdParamsSchema, body: UserPatchSchema, response: { 200: UserSchema } } }, async (request) =>
    users.update(request.params.id, request.body),
  );
}
