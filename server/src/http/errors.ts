import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DATABASE_UNAVAILABLE, databaseUnreachable, isAppError } from '../errors.ts';
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
