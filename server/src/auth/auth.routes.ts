import { LoginRequestSchema, OkReplySchema, SetupRequestSchema, SetupStatusSchema, UsernameReplySchema } from '@concierge/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { adminToken, clearAdminCookie, setAdminCookie } from '../http/security.ts';
import { THROTTLE_POLICY, type AuthService } from './auth.service.ts';

/** The known-device cookie (THROTTLE_POLICY): signed, sent only to /login. */
const DEVICE_COOKIE = 'concierge_device';

function deviceCookie(request: FastifyRequest): string | undefined {
  const raw = request.cookies[DEVICE_COOKIE];
  if (!raw) return undefined;
  const unsigned = request.unsignCookie(raw);
  return unsigned.valid && unsigned.value ? unsigned.value : undefined;
}

function setDeviceCookie(request: FastifyRequest, reply: FastifyReply, value: string): void {
  reply.setCookie(DEVICE_COOKIE, value, {
    signed: true,
    httpOnly: true,
    sameSite: 'strict',
    secure: request.protocol === 'https',
    path: '/login',
    maxAge: THROTTLE_POLICY.deviceTrustMs / 1000,
  });
}

/** First-time setup, sign in and out (public). */
export function registerAuthRoutes(instance: FastifyInstance, auth: AuthService): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const tags = ['auth'];

  app.get('/setup/status', { schema: { tags, response: { 200: SetupStatusSchema } } }, async () => ({
    required: await auth.setupRequired(),
  }));

  app.post('/setup', { schema: { tags, body: SetupRequestSchema, response: { 200: UsernameReplySchema } } }, (request) =>
    auth.createFirstAdmin(request.body),
  );

  app.post('/login', { schema: { tags, body: LoginRequestSchema, response: { 200: UsernameReplySchema } } }, async (request, reply) => {
    const session = await auth.login(request.body, { ip: request.ip, userAgent: request.headers['user-agent'], device: deviceCookie(request) });
    setAdminCookie(request, reply, session.token, session.expiresAt);
    setDeviceCookie(request, reply, session.device);
    return { username: session.username };
  });

  app.post('/logout', { schema: { tags, response: { 200: OkReplySchema } } }, async (request, reply) => {
    const token = adminToken(request);
    if (token) await auth.logout(token);
    clearAdminCookie(request, reply);
    return { success: true as const };
  });
}

/** Who is signed in (an admin route: register it in the admin scope). */
export function registerSignedInRoute(instance: FastifyInstance): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  app.get('/api/logged_in', { schema: { tags: ['auth'], response: { 200: UsernameReplySchema } } }, (request) => ({
    username: request.admin!.username,
  }));
}
