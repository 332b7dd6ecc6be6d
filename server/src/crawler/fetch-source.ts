import { open, stat } from 'node:fs/promises';
import path from 'node:path';

export interface FetchOptions {
  /** Validators from the last successful fetch, for a conditional GET. */
  etag?: string | null;
  lastModified?: string | null;
  timeoutMs: number;
  maxBytes: number;
  fetch?: typeof fetch;
}

export type FetchResult =
  | { kind: 'not_modified' }
  | { kind: 'content'; body: Buffer; contentType: string | null; etag: string | null; lastModified: string | null };

/** A source that could not be read; the message says why, for the run's error. */
export class FetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FetchError';
  }
}

export const isHttpUrl = (source: string) => /^https?:\/\//i.test(source);

/**
 * Reads the schedule from an http(s) URL (timeout, size cap, conditional GET
 * with ETag / Last-Modified) or a local file (size cap).
 */
export async function fetchSource(source: string, options: FetchOptions): Promise<FetchResult> {
  return isHttpUrl(source) ? fetchHttp(source, options) : readLocal(source, options.maxBytes);
}

async function fetchHttp(url: string, options: FetchOptions): Promise<FetchResult> {
  const headers: Record<string, string> = {
    accept: 'text/calendar, application/json;q=0.9, */*;q=0.5',
    'user-agent': 'ConConcierge-Crawler/1.0',
  };
  if (options.etag) headers['if-none-match'] = options.etag;
  if (options.lastModified) headers['if-modified-since'] = options.lastModified;
  const signal = AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, { headers, signal, redirect: 'follow' });
  } catch (error) {
    if (signal.aborted) throw new FetchError(`No answer from ${url} within ${options.timeoutMs / 1000} s`, { cause: error });
    throw new FetchError(`Could not reach ${url}: ${causeOf(error)}`, { cause: error });
  }
  if (response.status === 304) return { kind: 'not_modified' };
  if (!response.ok) {
    await response.body?.cancel();
    throw new FetchError(`${url} answered ${response.status} ${response.statusText}`.trim());
  }
  const declared = Number(response.headers.get('content-length'));
  if (declared > options.maxBytes) {
    await response.body?.cancel();
    throw new FetchError(`The schedule is too large: ${declared} bytes (at most ${options.maxBytes})`);
  }
  const body = await readCapped(response, options.maxBytes, signal, options.timeoutMs);
  return {
    kind: 'content',
    body,
    contentType: response.headers.get('content-type'),
    etag: response.headers.get('etag'),
    lastModified: response.headers.get('last-modified'),
  };
}

/** Reads the body, stopping as soon as it passes the cap (a server may omit or misstate its length). */
async function readCapped(response: Response, maxBytes: number, signal: AbortSignal, timeoutMs: number): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw new FetchError(`The schedule is too large: more than ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof FetchError) throw error;
    if (signal.aborted) throw new FetchError(`The schedule did not arrive within ${timeoutMs / 1000} s`, { cause: error });
    throw new FetchError(`The download broke off: ${causeOf(error)}`, { cause: error });
  }
  return Buffer.concat(chunks);
}

async function readLocal(file: string, maxBytes: number): Promise<FetchResult> {
  const resolved = path.resolve(file.replace(/^file:\/\//, ''));
  let size: number;
  try {
    size = (await stat(resolved)).size;
  } catch (error) {
    throw new FetchError(`Cannot read ${resolved}: ${causeOf(error)}`, { cause: error });
  }
  if (size > maxBytes) throw new FetchError(`The schedule is too large: ${size} bytes (at most ${maxBytes})`);
  const handle = await open(resolved, 'r');
  try {
    const body = await handle.readFile();
    return { kind: 'content', body, contentType: null, etag: null, lastModified: null };
  } finally {
    await handle.close();
  }
}

function causeOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
