import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthService } from '../auth/auth.service.ts';
import { unauthorized } from '../errors.ts';
import { adminToken } from '../http/security.ts';
import type { Metrics } from './metrics.ts';

export interface MetricsRouteDeps {
  metrics: Metrics;
  auth: AuthService;
  /** METRICS_TOKEN: lets Prometheus scrape without an admin session. */
  metricsToken: string | undefined;
}

/** Label for requests no route matched, so stray URLs cannot grow the label set. */
const UNMATCHED = 'unmatched';

/** Request counting and latency for every route, and GET /metrics for Prometheus. */
export function registerMetricsRoutes(app: FastifyInstance, deps: MetricsRouteDeps): void {
  app.addHook('onResponse', async (request, reply) => {
    deps.metrics.observeRequest(request.method, request.routeOptions.url ?? UNMATCHED, reply.statusCode, reply.elapsedTime);
  });

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['monitoring'],
        summary: 'Prometheus metrics (text exposition format)',
        description: 'With `Authorization: Bearer <METRICS_TOKEN>`, or an admin session cookie.',
      },
    },
    async (request, reply) => {
      await authorize(request, deps);
      const { contentType, body } = await deps.metrics.render();
      return reply.type(contentType).send(body);
    },
  );
}

async function authorize(request: FastifyRequest, deps: MetricsRouteDeps): Promise<void> {
  const bearer = request.headers.authorization?.replace(/^Bearer\s+/i, '');
  if (deps.metricsToken && bearer && safeEqual(bearer, deps.metricsToken)) return;
  const token = adminToken(request);
  if (token && (await deps.auth.authenticate(token))) return;
  throw unauthorized();
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
