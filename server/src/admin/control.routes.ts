import type { FastifyInstance } from 'fastify';
import { serviceUnavailable } from '../errors.ts';
import type { StatusService } from './status.service.ts';

export interface ControlDeps {
  status: StatusService;
  /** Graceful shutdown of the whole process (main.ts provides it). */
  requestShutdown: () => void;
}

/** Status and the control panel's actions (SPEC §7). */
export function registerControlRoutes(app: FastifyInstance, deps: ControlDeps): void {
  const tags = ['control'];

  // Requests per endpoint, by route pattern (not raw URL), for the Status screen.
  app.addHook('onResponse', async (request) => {
    const route = request.routeOptions.url;
    if (route && !route.startsWith('/ui')) deps.status.countRequest(`${request.method} ${route}`);
  });

  app.get('/api/status', { schema: { tags } }, () => deps.status.status());

  app.post('/api/pause', { schema: { tags } }, async () => {
    await deps.status.pause();
    return { success: true, paused: true };
  });
  app.post('/api/resume', { schema: { tags } }, async () => {
    await deps.status.resume();
    return { success: true, paused: false };
  });
  app.post('/api/clear_threads', { schema: { tags } }, async () => ({ success: true, cleared: await deps.status.clearThreads() }));
  app.post('/api/quit', { schema: { tags } }, async (request, reply) => {
    request.log.warn({ admin: request.admin?.username }, 'shutdown requested from the console');
    reply.raw.once('finish', () => setImmediate(deps.requestShutdown));
    return { success: true, message: 'Shutting down' };
  });
  for (const action of ['register_commands', 'connect', 'disconnect']) {
    app.post(`/api/discord/${action}`, { schema: { tags } }, async () => {
      throw serviceUnavailable('Discord is not configured', 'discord_not_configured');
    });
  }
}
