import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isAppError } from '../errors.ts';
import { markRefusal } from './request-log.ts';

/** Public chat replies carry `success: false` on errors, as SPEC's chat reply does. */
const withSuccessFlag = (request: FastifyRequest) => request.url.startsWith('/public/');

/** Sends `{error, code}` (plus `success: false` on public chat routes). */
export function sendError(request: FastifyRequest, reply: FastifyReply, status: number, body: { error: string; code: string; field?: string }) {
  return reply.status(status).send(withSuccessFlag(request) ? { success: false, ...body } : body);
}

/** Turns a validation failure into one readable sentence that names the field. */
function describeValidation(error: FastifyError & { validation: { instancePath: string; message?: string }[] }) {
  const first = error.validation[0];
  const field = first?.instancePath.replace(/^\//, '').replaceAll('/', '.') ?? '';
  const message = first?.message ?? 'is invalid';
  const location = error.validationContext === 'querystring' ? 'query' : error.validationContext;
  if (field) return { error: `${field}: ${message}`, field };
  if (location === 'body' && /expected object|received undefined|expected an object/i.test(message)) {
    return { error: 'Request body must be a JSON object' };
  }
  return { error: message };
}

export const DATABASE_UNAVAILABLE = 'The service cannot reach its database right now. Please try again in a moment.';

/** Network codes of a database server that is down or went away. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * PostgreSQL gone (restarting, shut down, unreachable): its "cannot connect
 * now" / "admin shutdown" codes (class 57P), connection exceptions (class
 * 08), a refused or reset socket, or pg's "Connection terminated". A 503 the
 * client may retry, not a 500.
 */
function databaseUnreachable(error: unknown): boolean {
  for (let cause: unknown = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const { code, message } = cause as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (/^57P0[1-3]$/.test(code) || /^08/.test(code) || NETWORK_CODES.has(code))) return true;
    if (typeof message === 'string' && /^Connection terminated|timeout exceeded when trying to connect/.test(message)) return true;
  }
  return false;
}

/**
 * The one error handler: typed errors keep their status and code, validation
 * errors name the field, client errors raised by Fastify (bad JSON, wrong
 * content type, body too large) keep their 4xx, everything else is a 500 whose
 * details stay in the log.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (isAppError(error)) {
      reply.headers(error.headers);
      if (!error.expected) request.log.error({ err: error }, error.message);
      else if (error.status >= 500) markRefusal(request, error.code);
      return sendError(request, reply, error.status, { error: error.message, code: error.code, ...(error.field ? { field: error.field } : {}) });
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      return sendError(request, reply, 400, { ...describeValidation(error), code: 'validation_error' });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = (error.code ?? 'bad_request').toLowerCase();
      const message = error instanceof SyntaxError || code === 'fst_err_ctp_invalid_json_body' ? 'Request body is not valid JSON' : error.message;
      return sendError(request, reply, status, { error: message, code });
    }
    if (databaseUnreachable(error)) {
      request.log.error({ err: error }, 'the database is not reachable');
      reply.header('retry-after', '5');
      return sendError(request, reply, 503, { error: DATABASE_UNAVAILABLE, code: 'database_unavailable' });
    }
    request.log.error({ err: error }, 'request failed');
    return sendError(request, reply, 500, { error: 'Internal server error', code: 'internal_error' });
  });
}
