import { randomUUID } from 'node:crypto';
import { examplePromptList, withProductName } from '@concierge/contract';
import { readFileSync } from 'node:fs';
import fastifyCompress from '@fastify/compress';
import fastifyCookie from '@fastify/cookie';
import fastifyHelmet from '@fastify/helmet';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { registerControlRoutes } from './admin/control.routes.ts';
import { registerMonitoringRoutes } from './admin/monitoring.routes.ts';
import { registerAssistantRoutes, registerKnowledgeRoutes } from './assistant/assistant.routes.ts';
import { registerAuthRoutes } from './auth/auth.routes.ts';
import { registerChatRoutes } from './chat/chat.routes.ts';
import { registerCrawlerRoutes } from './crawler/crawler.routes.ts';
import { registerConfigRoutes } from './config/config.routes.ts';
import type { TrustProxy } from './config/env.ts';
import type { Deps } from './deps.ts';
import { registerHealthRoutes } from './health/health.routes.ts';
import { registerAskRoutes } from './ask/ask.routes.ts';
import { registerUserRoutes } from './users/users.routes.ts';
import { registerMetricsRoutes } from './metrics/metrics.routes.ts';
import { registerErrorHandler } from './http/errors.ts';
import { registerOpenApi } from './http/openapi.ts';
import { markdownToSafeHtml } from './http/markdown-html.ts';
import { registerSecurityHooks, signedInAdmin } from './http/security.ts';
import { registerWebApp } from './http/web-app.ts';
import { registerWatchSocketRoute, registerWatchTokenRoute } from './watch/watch.routes.ts';

const TURNSTILE_ORIGIN = 'https://challenges.cloudflare.com';

export interface RouteSummary {
  method: string;
  url: string;
  /** Declared public on the route (config.public): no admin session needed even under /api/. */
  public: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered so far (method and path pattern). */
    listRoutes(): RouteSummary[];
  }
}

/** One log line per request, written when it completes, with the route pattern rather than the raw URL. */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0],
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime),
    };
    if (error) request.log.error({ ...line, err: error }, 'request failed');
    else request.log.info(line, 'request completed');
  }
}

/**
 * Builds the Fastify app from its dependencies without listening, so tests
 * drive it with `inject()` and main.ts decides how to serve it.
 */
export async function buildApp(deps: Deps): Promise<FastifyInstance> {
  const { env } = deps;
  const https = env.TLS_CERT_FILE && env.TLS_KEY_FILE ? { cert: readFileSync(env.TLS_CERT_FILE), key: readFileSync(env.TLS_KEY_FILE) } : null;
  const app = Fastify({
    loggerInstance: deps.loggers.get('api'),
    logController: new OneLinePerRequest(),
    genReqId: () => randomUUID(),
    trustProxy: trustProxyOption(env.TRUST_PROXY),
    bodyLimit: 256 * 1024,
    ...(https ? { https } : {}),
  }) as unknown as FastifyInstance;

  const routes: RouteSummary[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, public: route.config?.public === true });
  });
  app.decorate('listRoutes', () => [...routes]);

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandler(app);
  acceptEmptyJsonBodies(app);
  endConnectionsWhileClosing(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: true,
      directives: {
        'script-src': ["'self'", TURNSTILE_ORIGIN],
        'frame-src': ["'self'", TURNSTILE_ORIGIN],
        'style-src': ["'self'", "'unsafe-inline'"],
        'img-src': ["'self'", 'data:'],
        'connect-src': ["'self'"],
        'upgrade-insecure-requests': https ? [] : null,
      },
    },
    strictTransportSecurity: https ? undefined : false,
  });
  await app.register(fastifyCookie, { secret: deps.sessionSecret });
  // DESIGN §9: replies over 1 KB compressed (br, else gzip) when the client takes it; text/event-stream never is
  // (the plugin's default types leave it out), built assets come precompressed. Request bodies are not inflated.
  await app.register(fastifyCompress, { threshold: 1024, encodings: ['br', 'gzip'], globalDecompression: false });
  await registerOpenApi(app, { title: `${env.PRODUCT_NAME} API`, version: deps.version });
  // The Watch feed's websocket. Clients only listen: what they send is capped small and ignored.
  await app.register(fastifyWebsocket, {
    options: { maxPayload: 4096 },
    preClose(done) {
      // Closing: every Watch connection is told the server is going away (1001) rather than left to time out.
      deps.watch.close();
      this.websocketServer.close(() => done());
    },
  });

  registerSecurityHooks(app, deps.auth);
  registerHealthRoutes(app, deps);
  registerAuthRoutes(app, deps.auth);
  registerConfigRoutes(app, deps.config);
  registerChatRoutes(app, deps.chat, deps.lastRefresh, { clock: deps.clock, embeddable: env.EMBED_ORIGINS.length > 0 });
  await registerAssistantRoutes(app, deps.assistant, deps.knowledge);
  registerKnowledgeRoutes(app, deps.knowledge);
  registerMonitoringRoutes(app, deps);
  registerCrawlerRoutes(app, deps);
  registerUserRoutes(app, deps.users);
  registerAskRoutes(app, { askCommands: deps.askCommands, timeZone: deps.timeZone });
  registerControlRoutes(app, { status: deps.status, discord: deps.discord, requestShutdown: () => deps.requestShutdown() });
  registerMetricsRoutes(app, { metrics: deps.metrics, auth: deps.auth, metricsToken: env.METRICS_TOKEN });
  registerWatchTokenRoute(app, { tokens: deps.watchTokens });
  registerWatchSocketRoute(app, { tokens: deps.watchTokens, hub: deps.watch });

  await registerWebApp(app, {
    distDir: env.WEB_DIST_DIR,
    admin: (request, reply) => signedInAdmin(deps.auth, request, reply),
    embedOrigins: env.EMBED_ORIGINS,
    values: () => {
      const config = deps.config.get();
      const named = (text: string) => withProductName(text, env.PRODUCT_NAME);
      return {
        productName: env.PRODUCT_NAME,
        turnstileSiteKey: env.TURNSTILE_SITE_KEY ?? null,
        communityUrl: env.COMMUNITY_URL ?? null,
        conventionUrl: env.CONVENTION_URL ?? null,
        version: deps.version,
        timeZone: deps.timeZone(),
        chat: {
          welcomeMessage: named(config.public_chat_welcome_message),
          welcomeHtml: markdownToSafeHtml(named(config.public_chat_welcome_message)),
          examplePrompts: examplePromptList(config.public_chat_example_prompts),
          aboutText: named(config.public_chat_about_text),
        },
      };
    },
  });
  return app;
}

/**
 * Body-less POSTs (/api/pause, /logout, …) are accepted with or without a
 * JSON content type: an empty JSON body parses as "no body".
 */
function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    parseJson(request, body as string, done);
  });
}

/**
 * Once the app is closing (SIGTERM, Kill), every response still being
 * written asks the client to close its connection. Closing waits for every
 * connection to end, and a keep-alive connection of an answer that finishes
 * after the close began would otherwise stay open for the whole keep-alive
 * timeout (72 s) before the process can exit.
 */
function endConnectionsWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
}

/** Fastify takes a hop count as a function of the hop index. */
function trustProxyOption(value: TrustProxy | undefined) {
  if (typeof value === 'number') return (_address: string, hop: number) => hop < value;
  return value ?? false;
}
