/**
 * The one HTTP client of the app: same-origin cookies, JSON, a time limit per
 * call, and errors as ApiError carrying the status and the server's text, so
 * screens can map them to SPEC §8's messages.
 */

export type ApiErrorKind = 'http' | 'timeout' | 'network';

export class ApiError extends Error {
  readonly kind: ApiErrorKind;
  readonly status: number;
  /** The server's stable error code, when it sent one. */
  readonly code: string | null;
  /** The server's `error` text, when it sent one. */
  readonly serverMessage: string | null;
  /** The raw body, parsed when it was JSON. */
  readonly body: unknown;

  constructor(kind: ApiErrorKind, status: number, message: string, details: { code?: string | null; serverMessage?: string | null; body?: unknown } = {}) {
    super(message);
    this.name = 'ApiError';
    this.kind = kind;
    this.status = status;
    this.code = details.code ?? null;
    this.serverMessage = details.serverMessage ?? null;
    this.body = details.body;
  }
}

export interface RequestOptions {
  body?: unknown;
  /** Multipart upload instead of JSON. */
  form?: FormData;
  timeoutMs?: number;
  query?: Record<string, string | number | boolean | undefined | null>;
}

const DEFAULT_TIMEOUT_MS = 30_000;

let unauthorizedHandler: (() => void) | undefined;

/** What to do when an admin call answers 401 (DESIGN §7: go to the login screen). */
export function onUnauthorized(handler: () => void): void {
  unauthorizedHandler = handler;
}

/** Query string from the defined, non-empty values only (SPEC §2: empty filters are omitted). */
export function queryString(query: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null || value === '') continue;
    params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

export async function apiRequest<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  return readJson<T>(await send(method, path, options), path);
}

/**
 * A GET whose reply also carries the list's true total in `X-Total-Count`
 * (DESIGN §7: the Users list, ask commands, Discord messages); total is null
 * when the server did not send one.
 */
export async function getCounted<T>(path: string, options: RequestOptions = {}): Promise<{ body: T; total: number | null }> {
  const response = await send('GET', path, options);
  const body = await readJson<T>(response, path);
  const header = response.headers.get('x-total-count');
  const total = header === null ? null : Number(header);
  return { body, total: total !== null && Number.isFinite(total) ? total : null };
}

async function send(method: string, path: string, options: RequestOptions): Promise<Response> {
  const controller = new AbortController();
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const headers: Record<string, string> = { accept: 'application/json' };
  let body: BodyInit | undefined;
  if (options.form) body = options.form;
  else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(`${path}${queryString(options.query)}`, { method, headers, body, credentials: 'same-origin', signal: controller.signal });
  } catch (error) {
    if (controller.signal.aborted) throw new ApiError('timeout', 0, `No answer within ${Math.round(timeoutMs / 1000)} s`);
    throw new ApiError('network', 0, error instanceof Error ? error.message : 'Network error');
  } finally {
    clearTimeout(timer);
  }
  return response;
}

/** A response's JSON body, or ApiError with its status and the server's text when it is not 2xx. */
export async function readJson<T>(response: Response, path = new URL(response.url || '/', 'http://x').pathname): Promise<T> {
  const text = await response.text().catch(() => '');
  let parsed: unknown = text;
  if (text && (response.headers.get('content-type') ?? '').includes('json')) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!response.ok) {
    const errorBody = typeof parsed === 'object' && parsed !== null ? (parsed as { error?: unknown; code?: unknown }) : {};
    const serverMessage = typeof errorBody.error === 'string' ? errorBody.error : null;
    if (response.status === 401 && path.startsWith('/api/')) unauthorizedHandler?.();
    throw new ApiError('http', response.status, serverMessage ?? `${response.status} ${response.statusText}`, {
      code: typeof errorBody.code === 'string' ? errorBody.code : null,
      serverMessage,
      body: parsed,
    });
  }
  return parsed as T;
}

export const api = {
  get: <T>(path: string, options?: RequestOptions) => apiRequest<T>('GET', path, options),
  post: <T>(path: string, options?: RequestOptions) => apiRequest<T>('POST', path, options),
  patch: <T>(path: string, options?: RequestOptions) => apiRequest<T>('PATCH', path, options),
  delete: <T>(path: string, options?: RequestOptions) => apiRequest<T>('DELETE', path, options),
};

/** "status: body" as SPEC §8 shows it for some admin errors. */
export function describeHttpError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.kind !== 'http') return error.message;
    const body = typeof error.body === 'string' ? error.body : JSON.stringify(error.body);
    return `${error.status}: ${body}`;
  }
  return error instanceof Error ? error.message : String(error);
}
