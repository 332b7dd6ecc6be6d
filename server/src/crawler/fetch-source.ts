import { lookup } from 'node:dns/promises';
import { open, stat } from 'node:fs/promises';
import { BlockList, isIP } from 'node:net';
import path from 'node:path';

export interface FetchOptions {
  /** Validators from the last successful fetch, for a conditional GET. */
  etag?: string | null;
  lastModified?: string | null;
  timeoutMs: number;
  maxBytes: number;
  fetch?: typeof fetch;
  /** Resolves a host name to its addresses, for the redirect check (tests give names of their own). */
  resolve?: (hostname: string) => Promise<string[]>;
}

/** Redirects followed at most before the fetch gives up. */
export const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Addresses a redirect from a public source may not lead to: loopback,
 * unspecified, private (RFC 1918), shared (CGNAT), link-local (cloud
 * metadata at 169.254.169.254), IPv6 unique-local and link-local.
 */
const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv6');
}

/** Whether an IP address is loopback, private, link-local or unique-local (IPv4-mapped IPv6 judged as its IPv4). */
export function isInternalAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  if (mapped) return INTERNAL.check(mapped, 'ipv4');
  const family = isIP(bare);
  if (family === 4) return INTERNAL.check(bare, 'ipv4');
  if (family === 6) return INTERNAL.check(bare, 'ipv6');
  return false;
}

const systemResolve = async (hostname: string) => (await lookup(hostname, { all: true })).map((entry) => entry.address);

/** The host's addresses: the literal itself, or what the name resolves to (nothing when it does not resolve). */
async function addressesOf(url: URL, resolve: (hostname: string) => Promise<string[]>): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return [host];
  try {
    return await resolve(host);
  } catch {
    return [];
  }
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
  const response = await followRedirects(url, headers, signal, options);
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

/**
 * Fetches `url`, following redirects one hop at a time. When the configured
 * source is on the public network, a hop into loopback, private,
 * link-local or unique-local addresses (an IP literal, or a name that
 * resolves there) is refused, so a public schedule host cannot turn the
 * crawler against the server's own network. A source configured on such an
 * address (an intranet feed, a local file server) may redirect within it.
 */
async function followRedirects(source: string, headers: Record<string, string>, signal: AbortSignal, options: FetchOptions): Promise<Response> {
  const resolve = options.resolve ?? systemResolve;
  const sourceIsInternal = (await addressesOf(new URL(source), resolve)).some(isInternalAddress);
  let url = source;
  for (let hop = 0; ; hop++) {
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(url, { headers, signal, redirect: 'manual' });
    } catch (error) {
      if (signal.aborted) throw new FetchError(`No answer from ${url} within ${options.timeoutMs / 1000} s`, { cause: error });
      throw new FetchError(`Could not reach ${url}: ${causeOf(error)}`, { cause: error });
    }
    const location = response.headers.get('location');
    if (!REDIRECTS.has(response.status) || !location) return response;
    await response.body?.cancel();
    if (hop >= MAX_REDIRECTS) throw new FetchError(`Too many redirects from ${source} (more than ${MAX_REDIRECTS})`);
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new FetchError(`${url} redirects to an address that is not a URL: ${location.slice(0, 200)}`);
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new FetchError(`${url} redirects to ${next.protocol} (only http and https are followed)`);
    if (!sourceIsInternal) {
      const internal = (await addressesOf(next, resolve)).find(isInternalAddress);
      if (internal) {
        throw new FetchError(
          `Refused the redirect from ${url} to ${next.href}: it leads into a private or local network (${internal}), and the configured source is public`,
        );
      }
    }
    url = next.href;
  }
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
