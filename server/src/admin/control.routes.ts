import type { FastifyInstance } from 'fastify';
import type { DiscordBot } from '../discord/discord-bot.ts';
import type { StatusService } from './status.service.ts';

export interface ControlDeps {
  status: StatusService;
  /** The Discord bot's connection and command registration (503 while Discord is not configured). */
  discord: Pick<DiscordBot, 'connect' | 'disconnect' | 'registerCommands'>;
  /** Graceful shutdown of the whole process (main.ts provides it). */
  requestShutdown: () => void;
}

/** Requests per endpoint, by route pattern (not raw URL), for the Status screen: every route of the app. */
export function countRequests(app: FastifyInstance, status: StatusService): void {
  app.addHook('onResponse', async (request) => {
    const route = request.routeOptions.url;
    if (route && !route.startsWith('/ui')) status.countRequest(`${request.method} ${route}`);
  });
}

/** Status and the control panel's actions (SPEC §7); admin routes. */
export function registerControlRoutes(app: FastifyInstance, deps: ControlDeps): void {
  const tags = ['control'];

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
  const discordTags = ['discord'];
  app.post('/api/discord/register_commands', { schema: { tags: discordTags } }, () => deps.discord.registerCommands());
  app.post('/api/discord/connect', { schema: { tags: discordTags } }, () => deps.discord.connect());
  app.post('/api/discord/disconnect', { schema: { tags: discordTags } }, () => deps.discord.disconnect());
}
