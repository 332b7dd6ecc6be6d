import { WsTokenReplySchema } from '@concierge/contract';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { unauthorized } from '../errors.ts';
import type { WatchHub } from './watch-hub.ts';
import type { WatchGrant, WatchTokens } from './watch-tokens.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whom the Watch token of a /ws request admits (set by its guard). */
    watchGrant: WatchGrant | null;
  }
}

export interface WatchRouteDeps {
  tokens: WatchTokens;
  hub: WatchHub;
}

/**
 * The /ws rule: a valid Watch token in the query, used up here, before the
 * upgrade (401 otherwise, as an HTTP reply: no websocket is opened).
 */
export function requireWatchToken(tokens: WatchTokens) {
  return async (request: FastifyRequest) => {
    const { token } = request.query as { token?: unknown };
    const grant = typeof token === 'string' ? await tokens.redeem(token) : null;
    if (!grant) throw unauthorized('A valid Watch token is required (POST /api/ws/token gives one, good once for 60 s)', 'invalid_watch_token');
    request.watchGrant = grant;
  };
}

/** The Watch feed (DESIGN §9): a token for the signed-in admin, then the websocket. */
export function registerWatchTokenRoute(instance: FastifyInstance, deps: Pick<WatchRouteDeps, 'tokens'>): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/api/ws/token',
    { schema: { tags: ['watch'], summary: 'A single-use token (60 s) for GET /ws, bound to this admin session', response: { 200: WsTokenReplySchema } } },
    (request) => deps.tokens.issue({ sessionId: request.admin!.sessionId, username: request.admin!.username }),
  );
}

/** GET /ws?token=: the live feed of answers, one JSON Watch message each (needs the websocket plugin registered). */
export function registerWatchSocketRoute(app: FastifyInstance, deps: WatchRouteDeps): void {
  app.decorateRequest('watchGrant', null);
  // The websocket plugin hides its routes from the API description; this one is part of the API (DESIGN §9), so it is listed.
  app.addHook('onRoute', (route) => {
    if (route.url === '/ws' && route.schema) route.schema.hide = false;
  });
  const schema = {
    tags: ['watch'],
    summary: 'The live Watch feed (websocket upgrade)',
    querystring: z.object({ token: z.string().optional().describe('The single-use token from POST /api/ws/token') }),
  };
  app.get('/ws', { websocket: true, config: { access: 'watch_token' }, onRequest: requireWatchToken(deps.tokens), schema }, (socket, request) => {
    deps.hub.attach(socket, request.watchGrant!);
  });
}
