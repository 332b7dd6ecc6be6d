import fastifySwagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { ADMIN_COOKIE, type RouteAccess } from './security.ts';

/** Where the API description is served, without a session (it is not a secret). */
export const OPENAPI_PATH = '/api/openapi.json';

type Operation = {
  operationId?: string;
  security?: Record<string, string[]>[];
  requestBody?: unknown;
  responses?: Record<string, unknown>;
  [key: string]: unknown;
};
type OpenApiDocument = {
  components?: Record<string, unknown>;
  paths?: Record<string, Record<string, Operation>>;
  [key: string]: unknown;
};

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Request bodies the route schemas cannot state (they are not JSON). */
const REQUEST_BODIES: Record<string, unknown> = {
  'post /api/openai/vector_store/upload': {
    required: true,
    description: 'One file (at most 20 MB) in the form field `file`; a file of the same name replaces the old one.',
    content: {
      'multipart/form-data': {
        schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } },
      },
    },
  },
};

/** Responses the route schemas cannot state (not JSON). */
const RESPONSES: Record<string, Record<string, unknown>> = {
  'get /metrics': {
    200: {
      description: 'Metrics in the Prometheus text exposition format',
      content: { 'text/plain; version=0.0.4': { schema: { type: 'string' } } },
    },
    401: { description: 'Neither the metrics token nor an admin session' },
  },
  'get /ws': {
    101: { description: 'Switching to the websocket: the text `Connection established`, then one JSON Watch message (SPEC §3) per answer' },
    401: { description: 'No valid Watch token (unknown, used, expired, or its admin session ended): refused before the upgrade' },
  },
};

/** The ways in, by the access a route declares (http/security.ts RouteAccess). */
const SECURITY_SCHEMES = {
  adminSession: {
    type: 'apiKey',
    in: 'cookie',
    name: ADMIN_COOKIE,
    description: 'The signed session cookie set by POST /login.',
  },
  metricsToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'METRICS_TOKEN, for Prometheus scraping GET /metrics.',
  },
  watchToken: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'A single-use token from POST /api/ws/token (60 s), for GET /ws.',
  },
};

/** The security requirement of a route that declares its access; `undefined` for the public and for /metrics (two ways in, set below). */
function securityOf(access: RouteAccess | undefined): Record<string, string[]>[] | undefined {
  if (access === 'admin') return [{ adminSession: [] }];
  if (access === 'watch_token') return [{ watchToken: [] }];
  return undefined;
}

/** `getApiPublicChatMessages`, `postApiOpenaiVectorStoreUpload`, `getApiUserByIdHistory`… */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => {
      const param = /^\{(.+)\}$/.exec(segment);
      return param ? ['by', ...param[1]!.split(/[^A-Za-z0-9]+/)] : segment.split(/[^A-Za-z0-9]+/);
    })
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((word) => word[0]!.toUpperCase() + word.slice(1).toLowerCase())].join('');
}

/**
 * Finishes the generated document: the two ways in (the admin session
 * cookie, the metrics bearer token) as security schemes and on every
 * operation that needs one, an operationId on every operation (stated in
 * the route, else derived from method and path; two alike fail start-up),
 * and the bodies that are not JSON.
 */
export function finishDocument(document: OpenApiDocument): OpenApiDocument {
  document.components = { ...document.components, securitySchemes: SECURITY_SCHEMES };
  const seen = new Map<string, string>();
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!HTTP_METHODS.has(method)) continue;
      const key = `${method} ${path}`;
      operation.operationId ??= operationIdOf(method, path);
      const clash = seen.get(operation.operationId);
      if (clash) throw new Error(`OpenAPI: ${key} and ${clash} have the same operationId ${operation.operationId}`);
      seen.set(operation.operationId, key);

      // Each route's own rule came with its schema (registerOpenApi's transform); /metrics takes either of two.
      if (path === '/metrics') operation.security = [{ metricsToken: [] }, { adminSession: [] }];
      else operation.security ??= [];
      if (operation.security.some((requirement) => 'adminSession' in requirement) && path !== '/metrics') {
        operation.responses = { ...operation.responses, 401: { description: 'No valid admin session' } };
      }

      if (REQUEST_BODIES[key]) operation.requestBody = REQUEST_BODIES[key];
      if (RESPONSES[key]) operation.responses = { ...operation.responses, ...RESPONSES[key] };
    }
  }
  return document;
}

/** The OpenAPI description of every route, served at OPENAPI_PATH to anyone. */
export async function registerOpenApi(app: FastifyInstance, info: { title: string; version: string }): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      info: { ...info, description: 'The API of the public chat, the admin console and monitoring. Admin routes (/api/…) need the session cookie from POST /login; the Watch websocket (GET /ws) a token from POST /api/ws/token.' },
      tags: [
        { name: 'public chat', description: 'The anonymous visitor chat' },
        { name: 'auth', description: 'First-time setup and signing in' },
        { name: 'health', description: 'For load balancers and monitors' },
        { name: 'monitoring', description: 'Lists behind the console screens, and Prometheus metrics' },
        { name: 'watch', description: 'The live Watch feed of answers (a websocket)' },
      ],
      // Known while routes are described too (a query parameter that carries a scheme's key is left out of the parameters).
      components: { securitySchemes: SECURITY_SCHEMES as never },
    },
    transform: (input) => {
      const transformed = jsonSchemaTransform(input);
      const security = securityOf(input.route.config?.access);
      return security ? { ...transformed, schema: { ...transformed.schema, security } } : transformed;
    },
    transformObject: (document) => finishDocument(('openapiObject' in document ? document.openapiObject : document.swaggerObject) as OpenApiDocument) as never,
  });
  app.get(
    OPENAPI_PATH,
    { config: { access: 'public' }, schema: { tags: ['docs'], operationId: 'getOpenApiDocument', summary: 'This API description (OpenAPI 3)' } },
    () => app.swagger(),
  );
}
