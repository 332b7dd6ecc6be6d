import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { AdminSession, AuthService } from '../auth/auth.service.ts';
import { forbidden, unauthorized } from '../errors.ts';

export const ADMIN_COOKIE = 'concierge_admin';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Who may call a route, declared by the route (never read from its URL):
 * `admin` — a signed-in admin session (every route registered through
 * `registerAdminRoutes`); `watch_token` — a single-use Watch token (GET /ws);
 * `public` — anyone (the API description, declared on the route). Routes
 * that declare nothing are public pages and the public chat.
 */
export type RouteAccess = 'admin' | 'watch_token' | 'public';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in admin, set on every route that requires one. */
    admin: AdminSession | null;
  }
  interface FastifyContextConfig {
    /** Who may call the route (see RouteAccess); set by the scope or the route itself. */
    access?: RouteAccess;
  }
}

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
 * The admin rule: an `onRequest` hook, so it runs before the body is read
 * and before anything else of the route (an anonymous request gets 401,
 * never a 400 or a 403). Renews the session's cookie when it slid.
 */
export function requireAdmin(auth: AuthService): onRequestAsyncHookHandler {
  return async (request, reply) => {
    const token = adminToken(request);
    const session = token ? await auth.authenticate(token) : null;
    if (!session) throw unauthorized();
    request.admin = session;
    if (session.renewed && token) setAdminCookie(request, reply, token, session.expiresAt);
  };
}

/**
 * Registers admin routes: every route that `register` adds to the scope it
 * is given declares `access: 'admin'` and runs `requireAdmin` first. Hooks
 * added inside stay inside (Fastify's encapsulation); app-wide hooks belong
 * on the app.
 */
export async function registerAdminRoutes(app: FastifyInstance, auth: AuthService, register: (admin: FastifyInstance) => void | Promise<void>): Promise<void> {
  await app.register(async (admin) => {
    admin.addHook('onRoute', (route) => {
      route.config = Object.assign(route.config ?? {}, { access: 'admin' satisfies RouteAccess });
    });
    admin.addHook('onRequest', requireAdmin(auth));
    await register(admin);
  });
}

/**
 * The cross-site check on every state-changing request. It runs once the
 * route's own rule has run (preParsing comes after every onRequest hook),
 * so an anonymous request to an admin route gets 401 whatever its origin.
 */
export function registerSecurityHooks(app: FastifyInstance): void {
  app.decorateRequest('admin', null);
  app.addHook('preParsing', async (request) => {
    if (!SAFE_METHODS.has(request.method)) checkSameOrigin(request);
  });
}
