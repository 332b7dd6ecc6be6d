import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Cloudflare's documented Turnstile test secrets: with them siteverify always
 * passes, always fails, or answers that the token was already spent.
 * https://developers.cloudflare.com/turnstile/troubleshooting/testing/
 */
export const TURNSTILE_TEST_SECRETS = {
  passes: '1x0000000000000000000000000000000AA',
  fails: '2x0000000000000000000000000000000AA',
  spent: '3x0000000000000000000000000000000AA',
} as const;
export const TURNSTILE_TEST_SITE_KEY = '1x00000000000000000000AA';

export interface SiteverifyCall {
  secret: string | null;
  response: string | null;
  remoteip: string | null;
  idempotency_key: string | null;
}

export interface FakeTurnstile {
  /** The siteverify URL, for TURNSTILE_VERIFY_URL. */
  url: string;
  calls: SiteverifyCall[];
  close(): Promise<void>;
}

/**
 * A local stand-in for Cloudflare's siteverify endpoint speaking its format
 * (form or JSON in; `{success, error-codes, challenge_ts, hostname}` out).
 * With a test secret it behaves as Cloudflare documents; with any other
 * secret a token is valid once, unless it starts with "bad".
 */
export async function startFakeTurnstile(): Promise<FakeTurnstile> {
  const calls: SiteverifyCall[] = [];
  const used = new Set<string>();
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const type = request.headers['content-type'] ?? '';
      const fields = type.includes('application/json') ? (JSON.parse(body || '{}') as Record<string, string>) : Object.fromEntries(new URLSearchParams(body));
      const call: SiteverifyCall = {
        secret: fields.secret ?? null,
        response: fields.response ?? null,
        remoteip: fields.remoteip ?? null,
        idempotency_key: fields.idempotency_key ?? null,
      };
      calls.push(call);
      const reply = (success: boolean, errors: string[] = []) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify(
            success
              ? { success, 'error-codes': [], challenge_ts: new Date().toISOString(), hostname: 'localhost', action: '', cdata: '' }
              : { success, 'error-codes': errors },
          ),
        );
      };
      if (request.method !== 'POST') return reply(false, ['bad-request']);
      if (!call.secret) return reply(false, ['missing-input-secret']);
      if (!call.response) return reply(false, ['missing-input-response']);
      if (call.secret === TURNSTILE_TEST_SECRETS.passes) return reply(true);
      if (call.secret === TURNSTILE_TEST_SECRETS.fails) return reply(false, ['invalid-input-response']);
      if (call.secret === TURNSTILE_TEST_SECRETS.spent) return reply(false, ['timeout-or-duplicate']);
      if (call.response.startsWith('bad')) return reply(false, ['invalid-input-response']);
      if (used.has(call.response)) return reply(false, ['timeout-or-duplicate']);
      used.add(call.response);
      return reply(true);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/turnstile/v0/siteverify`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
