import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Registry, Gauge } from 'prom-client';
import type { AuthService } from '../auth/auth.service.ts';
import { serviceUnavailable, unauthorized } from '../errors.ts';
import { adminToken } from '../http/security.ts';
import type { StatusService } from './status.service.ts';

export interface ControlDeps {
  status: StatusService;
  auth: AuthService;
  metricsToken: string | undefined;
  /** Graceful shutdown of the whole process (main.ts provides it). */
  requestShutdown: () => void;
}

/** Status, the control panel's actions (SPEC §7) and Prometheus metrics. */
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
  // Users arrive with the Discord bot; until then the list is empty.
  app.post('/api/users/reload', { schema: { tags } }, async () => []);
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

  const registry = new Registry();
  const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: [registry] });
  const metrics = {
    paused: gauge('concierge_paused', '1 while the bot is paused'),
    uptime: gauge('concierge_uptime_seconds', 'Seconds since the process started'),
    apiRequests: gauge('concierge_api_requests_total', 'HTTP requests answered since start, by route', ['route']),
    providerCalls: gauge('concierge_assistant_calls_total', 'Assistant provider calls since start, by step', ['step']),
    providerTokens: gauge('concierge_assistant_tokens_total', 'Assistant tokens since start, by kind', ['kind']),
    sessions: gauge('concierge_public_chat_sessions', 'Public chat sessions', ['state']),
    messages: gauge('concierge_public_chat_messages', 'Public chat messages, by state', ['state']),
    feedback: gauge('concierge_public_chat_feedback', 'Public chat feedback, by type', ['type']),
    tokens: gauge('concierge_public_chat_tokens', 'Public chat tokens stored, by kind', ['kind']),
    rateLimited: gauge('concierge_public_chat_rate_limited_sessions', 'Sessions that hit the rate limit'),
    processing: gauge('concierge_public_chat_average_processing_milliseconds', 'Average time to answer a question'),
    crawlerRuns: gauge('concierge_crawler_runs_triggered_total', 'Schedule refreshes triggered since start'),
    crawlerHeld: gauge('concierge_crawler_run_held', '1 while the newest schedule run is held (its events fell by more than half) until an operator forces a refresh'),
  };

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const bearer = request.headers.authorization?.replace(/^Bearer\s+/i, '');
    const tokenOk = Boolean(deps.metricsToken && bearer && safeEqual(bearer, deps.metricsToken));
    if (!tokenOk) {
      const token = adminToken(request);
      if (!token || !(await deps.auth.authenticate(token))) throw unauthorized();
    }
    const status = await deps.status.status();
    registry.resetMetrics();
    metrics.paused.set(status.paused ? 1 : 0);
    metrics.uptime.set(Math.round(process.uptime()));
    for (const [route, count] of Object.entries(status.api_requests)) metrics.apiRequests.set({ route }, count);
    for (const step of ['create_thread', 'create_message', 'create_run', 'retrieve_run', 'list_message'] as const) {
      metrics.providerCalls.set({ step }, status.openai[step]);
    }
    for (const kind of ['prompt', 'completion', 'total'] as const) metrics.providerTokens.set({ kind }, status.openai[`${kind}_tokens`]);
    const chat = status.public_chat;
    metrics.sessions.set({ state: 'all' }, chat.session_count);
    metrics.sessions.set({ state: 'active' }, chat.active_session_count);
    for (const [state, count] of Object.entries(chat.message_state_counts)) metrics.messages.set({ state }, count);
    for (const [type, count] of Object.entries(chat.feedback_type_counts)) metrics.feedback.set({ type }, count);
    metrics.tokens.set({ kind: 'prompt' }, chat.total_prompt_tokens);
    metrics.tokens.set({ kind: 'completion' }, chat.total_completion_tokens);
    metrics.tokens.set({ kind: 'total' }, chat.total_tokens);
    metrics.rateLimited.set(chat.rate_limit_exceeded_count);
    metrics.processing.set(chat.average_processing_time_ms);
    metrics.crawlerRuns.set(status.crawler.runs_triggered);
    metrics.crawlerHeld.set(status.crawler.held_run ? 1 : 0);
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
