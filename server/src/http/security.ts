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
  interface FastifyContextConfig {
    /** A route under /api/ that anyone may read (the API description); declared on the route itself. */
    public?: boolean;
  }
}

/** Every path under /api/ needs an admin session, matched route or not, unless its route is declared public. */
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

/** The admin signed in on this browser (renewing the session as /api requests do), or null; for pages that show it. */
export async function signedInAdmin(auth: AuthService, request: FastifyRequest, reply: FastifyReply): Promise<{ username: string } | null> {
  const token = adminToken(request);
  const session = token ? await auth.authenticate(token) : null;
  if (!session || !token) return null;
  if (session.renewed) setAdminCookie(request, reply, token, session.expiresAt);
  return { username: session.username };
}

/**
 * A state-changing request from a browser carries Origin (or at least
 * Referer); when it names another site the request is refused. Requests with
 * neither header come from non-browser clients and pass. The site is scheme,
 * host and port: `https://host` is another origin than the plain-HTTP server
 * at `http://host` (behind a proxy trusted by TRUST_PROXY, the scheme is its
 * X-Forwarded-Proto). The refusal names the origin it saw and the site the
 * server believes it is, because the usual cause is not an attack but a
 * reverse proxy that drops the port from Host or does not say it took HTTPS.
 */
function checkSameOrigin(request: FastifyRequest): void {
  const header = request.headers.origin !== undefined ? 'Origin' : 'Referer';
  const source = request.headers.origin ?? request.headers.referer;
  if (source === undefined) return;
  const site = `${request.protocol}://${request.host}`;
  let origin: string | null = null;
  try {
    origin = new URL(source).origin; // lower-cased, default port dropped
  } catch {
    // An unparseable Origin ("null" from a sandboxed frame) is never this site.
  }
  if (origin !== null && origin !== 'null' && origin === siteOrigin(site)) return;
  const seen = origin && origin !== 'null' ? origin : source.slice(0, 200);
  request.log.warn({ header, origin: seen, site, method: request.method, route: request.routeOptions.url }, 'cross-site request refused');
  throw forbidden(
    `Request refused: it comes from ${seen} (${header} header), which is not this site (${site}). ` +
      'Behind a reverse proxy, forward the Host header with its port and the scheme ' +
      '(nginx: proxy_set_header Host $http_host; proxy_set_header X-Forwarded-Proto $scheme) and set TRUST_PROXY.',
    'cross_site_request',
  );
}

/** The site's origin as a browser writes it (lower case, default port dropped); an unparseable Host matches nothing. */
function siteOrigin(site: string): string | null {
  try {
    return new URL(site).origin;
  } catch {
    return null;
  }
}

/**
 * Admin session check on /api/* (first, so an anonymous request gets 401),
 * then the cross-site check on every state-changing request.
 */
export function registerSecurityHooks(app: FastifyInstance, auth: AuthService): void {
  app.decorateRequest('admin', null);
  app.addHook('onRequest', async (request, reply) => {
    if (isAdminPath(request.routeOptions.url ?? request.url) && !request.routeOptions.config.public) {
      const token = adminToken(request);
      const session = token ? await auth.authenticate(token) : null;
      if (!session) throw unauthorized();
      request.admin = session;
      if (session.renewed && token) setAdminCookie(request, reply, token, session.expiresAt);
    }
    if (!SAFE_METHODS.has(request.method)) checkSameOrigin(request);
  });
}
