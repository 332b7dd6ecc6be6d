import helmet, { type HelmetOptions } from 'helmet';
import type { FastifyInstance } from 'fastify';

/**
 * Helmet's security headers (CSP, HSTS, X-Content-Type-Options, …) on every
 * reply, set on the raw response as the request arrives, where later hooks
 * can read and adjust them (the embed snippet's frame-ancestors).
 *
 * Helmet's middleware is built once here. @fastify/helmet built it again for
 * every request, parsing the Content-Security-Policy each time: a twentieth
 * of the CPU of refusing one request of a 10,000-question burst, and half a
 * percent of every answer.
 */
export function registerSecurityHeaders(app: FastifyInstance, options: HelmetOptions): void {
  const applyHeaders = helmet(options);
  app.addHook('onRequest', (request, reply, done) => {
    applyHeaders(request.raw, reply.raw, (error?: unknown) => done(error instanceof Error ? error : undefined));
  });
}
