/**
 * Typed errors with a stable code. Services throw these; the one error handler
 * in http/errors.ts turns them into `{error, code}` replies.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  /** The request field at fault, for validation errors. */
  readonly field: string | undefined;
  /** Extra headers for the reply (e.g. Retry-After). */
  readonly headers: Record<string, string>;
  /**
   * A refusal the service gives by design under load or by the operator's
   * choice (busy, paused): a 5xx that is not a fault, so it is not logged as
   * an error once per request (a burst would write thousands of lines).
   */
  readonly expected: boolean;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { field?: string; headers?: Record<string, string>; cause?: unknown; expected?: boolean } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.field = options.field;
    this.headers = options.headers ?? {};
    this.expected = options.expected ?? status < 500;
  }
}

export const badRequest = (message: string, code = 'bad_request') => new AppError(400, code, message);

/** A bad value in one field; the message names the field. */
export const invalidField = (field: string, message: string) =>
  new AppError(400, 'validation_error', `${field}: ${message}`, { field });

export const unauthorized = (message = 'Unauthorized', code = 'unauthorized') => new AppError(401, code, message);
export const forbidden = (message = 'Forbidden', code = 'forbidden') => new AppError(403, code, message);
export const notFound = (message = 'Not found', code = 'not_found') => new AppError(404, code, message);
export const conflict = (message: string, code = 'conflict') => new AppError(409, code, message);

export const tooManyRequests = (message: string, retryAfterSeconds: number, code = 'rate_limited') =>
  new AppError(429, code, message, { headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) } });

export const serviceUnavailable = (message: string, code = 'unavailable') => new AppError(503, code, message);

/**
 * A 503 the service gives by design (busy, paused, switched off): marked
 * expected, so it is not logged as a fault, and made without a stack trace,
 * which nobody reads and which cost 6 % of the server's CPU while it
 * refused a crowd of 10,000 (bench/RESULTS.md).
 */
export function refusal(code: string, message: string, headers: Record<string, string> = {}): AppError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new AppError(503, code, message, { headers, expected: true });
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export const isAppError = (error: unknown): error is AppError => error instanceof AppError;

export const DATABASE_UNAVAILABLE = 'The service cannot reach its database right now. Please try again in a moment.';

/** Network codes of a database server that is down or went away. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * PostgreSQL gone (restarting, shut down, unreachable): its "cannot connect
 * now" / "admin shutdown" codes (class 57P), connection exceptions (class
 * 08), a refused or reset socket, or pg's "Connection terminated". A 503 the
 * client may retry, not a 500.
 */
export function databaseUnreachable(error: unknown): boolean {
  for (let cause: unknown = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const { code, message } = cause as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (/^57P0[1-3]$/.test(code) || /^08/.test(code) || NETWORK_CODES.has(code))) return true;
    if (typeof message === 'string' && /^Connection terminated|timeout exceeded when trying to connect/.test(message)) return true;
  }
  return false;
}
