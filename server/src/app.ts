import { randomUUID } from 'node:crypto';
import { examplePromptList, withProductName } from '@concierge/contract';
import { readFileSync } from 'node:fs';
import fastifyCompress from '@fastify/compress';
import fastifyCookie from '@fastify/cookie';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type RouteOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { countRequests, registerControlRoutes } from './admin/control.routes.ts';
import { registerMonitoringRoutes } from './admin/monitoring.routes.ts';
import { registerAssistantRoutes, registerKnowledgeRoutes } from './assistant/assistant.routes.ts';
import { registerAuthRoutes, registerSignedInRoute } from './auth/auth.routes.ts';
import { registerChatRoutes, registerOperatorChatRoute } from './chat/chat.routes.ts';
import { registerCrawlerRoutes, registerScheduleFileRoute } from './crawler/crawler.routes.ts';
import { registerConfigRoutes } from './config/config.routes.ts';
import type { TrustProxy } from './config/env.ts';
import type { Deps } from './deps.ts';
import { registerHealthRoutes } from './health/health.routes.ts';
import { registerAskRoutes } from './ask/ask.routes.ts';
import { registerUserRoutes } from './users/users.routes.ts';
import { registerMetricsRoutes } from './metrics/metrics.routes.ts';
import { registerErrorHandler } from './http/errors.ts';
import { RequestLog } from './http/request-log.ts';
import { jsonDepthExceeds, refuseBodiesOnBodylessRoutes, tooDeepError } from './http/request-body.ts';
import { registerOpenApi } from './http/openapi.ts';
import { markdownToSafeHtml } from './http/markdown-html.ts';
import { registerAdminRoutes, registerSecurityHooks, signedInAdmin, type RouteAccess } from './http/security.ts';
import { registerSecurityHeaders } from './http/security-headers.ts';
import { refuseUnstorableText } from './http/text-input.ts';
import { registerWebApp } from './http/web-app.ts';
import { registerWatchSocketRoute, registerWatchTokenRoute } from './watch/watch.routes.ts';

const TURNSTILE_ORIGIN = 'https://challenges.cloudflare.com';

/**
 * Longest a client may take to send a whole request, headers and body
 * (Node's own default, which Fastify turns off). A client that stops
 * half-way through its body gets a 408 and its connection closed instead of
 * holding it for good; 5 minutes still lets the largest upload (20 MB) come
 * over a link of 0.6 Mbit/s. Once the request is read it no longer applies:
 * an answer streamed for minutes and the Watch socket are not cut.
 */
export const REQUEST_TIMEOUT_MS = 300_000;

export interface AppOptions {
  /** REQUEST_TIMEOUT_MS unless set (tests). */
  requestTimeoutMs?: number;
  /** How often Node looks for requests past their time (its default, 30 s, unless set). */
  requestTimeoutCheckMs?: number;
}

export interface RouteSummary {
  method: string;
  url: string;
  /** Who may call it, as the route declares (registered in the admin scope, or in its own config); undefined: anyone. */
  access: RouteAccess | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered so far (method and path pattern). */
    listRoutes(): RouteSummary[];
  }
}

/**
 * Builds the Fastify app from its dependencies without listening, so tests
 * drive it with `inject()` and main.ts decides how to serve it.
 */
export async function buildApp(deps: Deps, options: AppOptions = {}): Promise<FastifyInstance> {
  const { env } = deps;
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  // Node's time for the headers (60 s) must not exceed the whole request's, or it enforces neither.
  const serverOptions = {
    requestTimeout,
    headersTimeout: Math.min(60_000, requestTimeout),
    ...(options.requestTimeoutCheckMs ? { connectionsCheckingInterval: options.requestTimeoutCheckMs } : {}),
  };
  const https = env.TLS_CERT_FILE && env.TLS_KEY_FILE ? { ...serverOptions, cert: readFileSync(env.TLS_CERT_FILE), key: readFileSync(env.TLS_KEY_FILE) } : null;
  const requestLog = new RequestLog(deps.loggers.get('api'));
  const app = Fastify({
    loggerInstance: deps.loggers.get('api'),
    logController: requestLog,
    genReqId: () => randomUUID(),
    trustProxy: trustProxyOption(env.TRUST_PROXY),
    bodyLimit: 256 * 1024,
    // Given here as well as to Node's server: Fastify sets the server's requestTimeout from its own option after
    // creating it, and its default (0) would turn the limit off. Node checks headersTimeout against it at creation.
    requestTimeout,
    ...(https ? { https } : { http: serverOptions }),
  }) as unknown as FastifyInstance;

  // Kept as registered and read when listed: a scope's own onRoute hook (the admin scope's access) runs after this one.
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void routes.push(route));
  app.decorate('listRoutes', () => routes.flatMap((route) => [route.method].flat().map((method) => ({ method, url: route.url, access: route.config?.access }))));

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandler(app);
  // The refusals not summed up yet are written as the app closes.
  app.addHook('onClose', async () => requestLog.flush());
  acceptEmptyJsonBodies(app);
  refuseUnstorableText(app);
  refuseBodiesOnBodylessRoutes(app);
  endConnectionsWhileClosing(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  registerSecurityHeaders(app, {
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

  registerSecurityHooks(app);
  countRequests(app, deps.status);

  // Anyone: health, setup and sign-in, the public chat, an event's calendar file.
  registerHealthRoutes(app, deps);
  registerAuthRoutes(app, deps.auth);
  const chatOptions = { clock: deps.clock, embeddable: env.EMBED_ORIGINS.length > 0 };
  registerChatRoutes(app, deps.chat, deps.lastRefresh, chatOptions);
  registerScheduleFileRoute(app, deps);
  // Prometheus: the metrics token or an admin session (its own rule, in the route).
  registerMetricsRoutes(app, { metrics: deps.metrics, auth: deps.auth, metricsToken: env.METRICS_TOKEN });
  // The Watch websocket: a single-use token (its own rule, in the route).
  registerWatchSocketRoute(app, { tokens: deps.watchTokens, hub: deps.watch });

  // A signed-in admin: every route registered here.
  await registerAdminRoutes(app, deps.auth, async (admin) => {
    registerSignedInRoute(admin);
    registerConfigRoutes(admin, deps.config);
    registerOperatorChatRoute(admin, deps.chat, chatOptions);
    await registerAssistantRoutes(admin, deps.assistant, deps.knowledge);
    registerKnowledgeRoutes(admin, deps.knowledge);
    registerMonitoringRoutes(admin, deps);
    registerCrawlerRoutes(admin, deps);
    registerUserRoutes(admin, deps.users);
    registerAskRoutes(admin, { askCommands: deps.askCommands, timeZone: deps.timeZone });
    registerControlRoutes(admin, { status: deps.status, discord: deps.discord, requestShutdown: () => deps.requestShutdown() });
    registerWatchTokenRoute(admin, { tokens: deps.watchTokens });
  });

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
 * JSON content type: an empty JSON body parses as "no body". A document
 * nested deeper than MAX_JSON_DEPTH is refused before parsing.
 */
function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    if (jsonDepthExceeds(body as string)) return done(tooDeepError(), undefined);
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
