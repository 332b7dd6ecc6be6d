import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AdminSession, AuthService } from '../auth/auth.service.ts';
import { forbidden, unauthorized } from '../errors.ts';

export const ADMIN_COOKIE = 'concierge_admin';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in admin, set for every /api/* request. */
    admin: AdminSession | null;
  }
}

/** Every path under /api/ needs an admin session, matched route or not. */
export const isAdminPath = (path: string) => path.startsWith('/api/');

export function setAdminCookie(request: FastifyRequest, reply: FastifyReply, token: string, expiresAt: Date): void {
  reply.setCookie(ADMIN_COOKIE, token, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    secure: request.protocol === 'https',
    path: '/',
    expires: expiresAt,
  });
}

export function clearAdminCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.clearCookie(ADMIN_COOKIE, { httpOnly: true, sameSite: 'lax', secure: request.protocol === 'https', path: '/' });
}

/** The session token from the signed admin cookie, or undefined. */
export function adminToken(request: FastifyRequest): string | undefined {
  const raw = request.cookies[ADMIN_COOKIE];
  if (!raw) return undefined;
  const unsigned = request.unsignCookie(raw);
  return unsigned.valid && unsigned.value ? unsigned.value : undefined;
}

/**
 * A state-changing request from a browser carries Origin (or at least
 * Referer); when it names another site the request is refused. Requests with
 * neither header come from non-browser clients and pass.
 */
function checkSameOrigin(request: FastifyRequest): void {
  const source = request.headers.origin ?? request.headers.referer;
  if (source === undefined) return;
  let host: string;
  try {
    host = new URL(source).host; // lower-cased, default port dropped
  } catch {
    throw forbidden('Cross-site request refused', 'cross_site_request');
  }
  if (host !== new URL(`${request.protocol}://${request.host}`).host) throw forbidden('Cross-site request refused', 'cross_site_request');
}

/**
 * Admin session check on /api/* (first, so an anonymous request gets 401),
 * then the cross-site check on every state-changing request.
 */
export function registerSecurityHooks(app: FastifyInstance, auth: AuthService): void {
  app.decorateRequest('admin', null);
  app.addHook('onRequest', async (request, reply) => {
    if (isAdminPath(request.routeOptions.url ?? request.url)) {
      const token = adminToken(request);
      const session = token ? await auth.authenticate(token) : null;
      if (!session) throw unauthorized();
      request.admin = session;
      if (session.renewed && token) setAdminCookie(request, reply, token, session.expiresAt);
    }
    if (!SAFE_METHODS.has(request.method)) checkSameOrigin(request);
  });
}
