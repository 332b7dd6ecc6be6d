import { randomUUID } from 'node:crypto';

/** Cloudflare's siteverify answer (the fields we read). */
interface SiteverifyReply {
  success: boolean;
  'error-codes'?: string[];
  hostname?: string;
  challenge_ts?: string;
}

export type VerifyOutcome = { ok: true } | { ok: false; reason: 'invalid' | 'unavailable'; detail: string };

const VERIFY_TIMEOUT_MS = 8000;

/**
 * Asks Cloudflare Turnstile's siteverify whether a widget token is genuine:
 * the secret, the token, the visitor's address and an idempotency key (so a
 * retried call is not counted as a second use of the token).
 */
export async function verifyTurnstileToken(options: {
  url: string;
  secret: string;
  token: string;
  remoteIp: string | null;
  fetch?: typeof fetch;
}): Promise<VerifyOutcome> {
  const body = new URLSearchParams({ secret: options.secret, response: options.token, idempotency_key: randomUUID() });
  if (options.remoteIp) body.set('remoteip', options.remoteIp);
  let reply: SiteverifyReply;
  try {
    const response = await (options.fetch ?? fetch)(options.url, {
      method: 'POST',
      body,
      signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
    });
    if (!response.ok) return { ok: false, reason: 'unavailable', detail: `siteverify answered ${response.status}` };
    reply = (await response.json()) as SiteverifyReply;
  } catch (error) {
    return { ok: false, reason: 'unavailable', detail: error instanceof Error ? error.message : String(error) };
  }
  if (reply.success) return { ok: true };
  const codes = reply['error-codes'] ?? [];
  // Our own secret being wrong is our fault, not the visitor's.
  if (codes.some((code) => code === 'missing-input-secret' || code === 'invalid-input-secret')) {
    return { ok: false, reason: 'unavailable', detail: `siteverify: ${codes.join(', ')}` };
  }
  return { ok: false, reason: 'invalid', detail: codes.join(', ') || 'rejected' };
}
