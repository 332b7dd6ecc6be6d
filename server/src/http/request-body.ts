import type { FastifyInstance, FastifyRequest, preValidationHookHandler } from 'fastify';
import { AppError, badRequest } from '../errors.ts';

/**
 * JSON nested deeper than this is refused before it is parsed. Every request
 * body the API takes is a flat object or an object of lists; the limit only
 * has to stop a hostile document (a 30,000-deep array fits in the body limit)
 * from reaching a parser, a validator or a handler.
 */
export const MAX_JSON_DEPTH = 32;

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * How deep `text` nests arrays and objects, stopping as soon as it passes
 * `limit`; brackets inside strings do not count. One pass, no recursion.
 */
export function jsonDepthExceeds(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c /* \ */) index++;
      else if (char === 0x22 /* " */) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b /* [ */ || char === 0x7b /* { */) {
      if (++depth > limit) return true;
    } else if (char === 0x5d /* ] */ || char === 0x7d /* } */) depth--;
  }
  return false;
}

/** The 400 for a document nested too deeply (raised by the JSON parser). */
export const tooDeepError = () => new AppError(400, 'json_too_deep', `Request body is nested too deeply (more than ${MAX_JSON_DEPTH} levels)`);

/** No body, an empty one, or an empty JSON object: what an action without parameters accepts. */
const isEmptyBody = (body: unknown) =>
  body === undefined ||
  body === null ||
  body === '' ||
  (typeof body === 'object' && !Array.isArray(body) && Object.getPrototypeOf(body) === Object.prototype && Object.keys(body).length === 0);

const refuseBody: preValidationHookHandler = async (request: FastifyRequest) => {
  if (!isEmptyBody(request.body)) throw badRequest('This action takes no request body (send none, or {})', 'unexpected_body');
};

/**
 * A state-changing route that declares no body schema (pause, resume, quit,
 * clear threads, refresh, logout…) refuses any body other than none, empty
 * or `{}`, so stray or hostile input never reaches its handler. Routes that
 * read their body themselves (the multipart upload, the chat's own parsing)
 * say so with `config.ownBody`. Must run before the routes are added.
 */
export function refuseBodiesOnBodylessRoutes(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    if (!methods.some((method) => UNSAFE_METHODS.has(method))) return;
    if (route.schema?.body || route.config?.ownBody) return;
    const existing = route.preValidation ? [route.preValidation].flat() : [];
    route.preValidation = [refuseBody, ...existing];
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route parses its body itself (multipart, or a schema applied in the handler), so no body schema is declared. */
    ownBody?: boolean;
  }
}
