import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK_ERRORS } from '../ask/ask-pipeline.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { cookieFrom, createTestContext, signIn, type TestContext } from '../test-support/test-context.ts';

/**
 * The provider down for a while (issue 18): OpenAI answering 429, then 500,
 * then not at all, for OUTAGE_MS each (the minute of the issue, shortened;
 * FAULT_OUTAGE_MS=60000 runs the real one). Every visitor gets SPEC's clear
 * text, never a 500; each call is retried a bounded number of times with
 * growing gaps; questions beyond the concurrency cap get 503 busy instead of
 * piling up; the first question after the outage is answered.
 */
const OUTAGE_MS = Number(process.env.FAULT_OUTAGE_MS ?? 4_000);
const CAP = 3;
const TIMEOUT_MS = 500;
/** Three phases of OUTAGE_MS, a burst waiting out the busy wait (5 s), and the set-up. */
const BUDGET_MS = 3 * OUTAGE_MS + 90_000;

/** What a visitor may read while the provider is down (SPEC §8, DESIGN §9). */
const CLEAR_REPLIES: Record<number, string[]> = {
  502: [ASK_ERRORS.providerError],
  503: [ASK_ERRORS.busy],
  504: [ASK_ERRORS.timeout],
};

describe('the provider down for a while', () => {
  let fake: FakeOpenAI;
  let ctx: TestContext;
  let asked = 0;

  beforeAll(async () => {
    fake = await startFakeOpenAI({ knobs: { runDurationMs: 20 } });
    ctx = await createTestContext({
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_TIMEOUT_MS: String(TIMEOUT_MS), MAX_CONCURRENT_RUNS: String(CAP) },
    });
    await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '50ms', assistant_max_poll_interval: '100ms', public_chat_requests_per_minute: 1000 });
  });
  afterAll(async () => {
    await ctx?.close();
    await fake?.close();
  });

  /** A question from a visitor of its own (the session's limits stay out of the way). */
  async function ask(): Promise<{ status: number; body: { success: boolean; error?: string | null; code?: string; response?: string | null }; retryAfter?: string }> {
    asked += 1;
    const remoteAddress = `192.0.2.${asked % 250}`;
    const visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress }));
    const reply = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie: visitor }, payload: { message: `Where is room ${asked}?` }, remoteAddress });
    return { status: reply.statusCode, body: reply.json(), retryAfter: reply.headers['retry-after'] as string | undefined };
  }

  /** Asks one question after another for OUTAGE_MS; every reply must be one of SPEC's clear texts. */
  async function throughTheOutage(): Promise<number> {
    const until = Date.now() + OUTAGE_MS;
    let replies = 0;
    do {
      const reply = await ask();
      replies += 1;
      expect(Object.keys(CLEAR_REPLIES).map(Number), JSON.stringify(reply.body)).toContain(reply.status);
      expect(CLEAR_REPLIES[reply.status]).toContain(reply.body.error);
      expect(reply.body.success).toBe(false);
    } while (Date.now() < until);
    return replies;
  }

  /** The gaps between the attempts of the last retried call: the SDK's back-off makes them grow. */
  function lastRetryGaps(since: number): number[] {
    const attempts = fake.journal.filter((entry) => entry.at >= since && entry.method === 'POST');
    const path = attempts.at(-1)?.path;
    const same = attempts.filter((entry) => entry.path === path).slice(-4);
    return same.slice(1).map((entry, index) => entry.at - same[index]!.at);
  }

  it(
    `answers every question during ${OUTAGE_MS / 1000} s of 429, of 500 and of silence with a clear text, busy beyond the cap, and answers again once the provider is back`,
    async () => {
      // Before: answered.
      expect((await ask()).status).toBe(200);

      // 429 on every call.
      let since = Date.now();
      fake.configure({ failures: [{ path: '/v1/', status: 429, count: 1_000_000 }] });
      const during429 = await throughTheOutage();
      // The SDK waits as long as the 429 says (the fake asks for 20 ms), and tries a bounded number of times.
      const hinted = lastRetryGaps(since);
      expect(hinted.length, 'a call is retried').toBeGreaterThanOrEqual(2);
      for (const gap of hinted) expect(gap).toBeGreaterThanOrEqual(15);
      const callsPerQuestion = fake.journal.filter((entry) => entry.at >= since && entry.method === 'POST').length / during429;
      expect(callsPerQuestion, 'retries are bounded (the SDK tries 4 times)').toBeLessThanOrEqual(8);

      // 500 on every call.
      since = Date.now();
      fake.configure({ failures: [{ path: '/v1/', status: 500, count: 1_000_000, retryAfterMs: null }] });
      const during500 = await throughTheOutage();
      // Without a hint, exponential back-off: each wait at least the last one's (jitter takes at most a quarter off).
      const gaps = lastRetryGaps(since);
      expect(gaps.length, 'a call is retried').toBe(3);
      expect(gaps[1]!, `back-off grows: ${gaps.join(', ')} ms`).toBeGreaterThan(gaps[0]!);
      expect(gaps[2]!, `back-off grows: ${gaps.join(', ')} ms`).toBeGreaterThan(gaps[1]!);

      // No answer at all: every call outlasts its time limit.
      fake.configure({ failures: [], latencyMs: TIMEOUT_MS * 4 });
      const duringSilence = await throughTheOutage();

      // While it is silent, a crowd: CAP answers at once (a place freed during the bounded wait may take one more
      // round), the rest refused busy with Retry-After rather than queued without end.
      const crowd = await Promise.all(Array.from({ length: 4 * CAP }, () => ask()));
      const busy = crowd.filter((reply) => reply.status === 503);
      expect(crowd.length - busy.length, crowd.map((reply) => reply.status).join(' ')).toBeLessThanOrEqual(2 * CAP);
      for (const reply of busy) {
        expect(reply.body).toMatchObject({ code: 'busy', error: ASK_ERRORS.busy });
        expect(Number(reply.retryAfter)).toBeGreaterThan(0);
      }
      for (const reply of crowd) expect(CLEAR_REPLIES[reply.status], JSON.stringify(reply.body)).toContain(reply.body.error);

      // Back: the next question is answered.
      fake.configure({ latencyMs: 0 });
      const after = await ask();
      expect(after.status, JSON.stringify(after.body)).toBe(200);
      expect(after.body.response).toBeTruthy();
      console.log(
        `provider outage: ${during429} questions during 429, ${during500} during 500, ${duringSilence} during silence (${OUTAGE_MS / 1000} s each), ` +
          `${busy.length} of ${crowd.length} refused busy, answered again after; back-off gaps ${gaps.join(', ')} ms`,
      );
    },
    BUDGET_MS,
  );
});
