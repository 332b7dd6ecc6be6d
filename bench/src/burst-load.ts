/**
 * The burst benchmark's other side, run as a child process so the server
 * under test's memory (RSS) is its own: the fake OpenAI server at zero
 * latency, sessions made ahead, then N questions sent at once, each on a
 * connection of its own, while the health checks are asked every 10 ms
 * from another thread, each on a connection of its own.
 */
import { Agent, request } from 'undici';
import { startFakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';
import { startHealthProber, type HealthChecks } from './health-prober.ts';

export interface BurstRequest {
  type: 'burst';
  target: string;
  questions: number;
  question: string;
  /** The health checks to ask throughout, each on a connection of its own, from a thread of its own (full URLs). */
  healthUrls: string[];
}

export interface BurstResult {
  /** Replies by kind: "200 answer", "503 busy", "send ECONNRESET", … */
  outcomes: Record<string, number>;
  samples: string[];
  health: HealthChecks[];
  /** From the first question sent to the last reply. */
  elapsedMs: number;
  /** How long making the sessions took (not part of the burst). */
  setUpMs: number;
}

export type ToBurst = BurstRequest | { type: 'close' };
export type FromBurst = { type: 'ready'; url: string; apiKey: string } | { type: 'result'; result: BurstResult };

const send = (message: FromBurst) => process.send!(message);
const fake = await startFakeOpenAI({ knobs: { latencyMs: 0, runDurationMs: 0 } });

async function burst(job: BurstRequest): Promise<BurstResult> {
  const setUpStarted = performance.now();
  // Sessions first, 200 at a time, each from an address of its own (X-Forwarded-For on loopback).
  const setUp = new Agent({ connections: 200 });
  const sessions: { address: string; cookie: string }[] = [];
  for (let next = 0; next < job.questions; ) {
    const batch = Array.from({ length: Math.min(200, job.questions - next) }, () => next++);
    sessions.push(
      ...(await Promise.all(
        batch.map(async (i) => {
          const address = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
          for (;;) {
            const reply = await request(`${job.target}/public/chat/turnstile/verify`, {
              method: 'POST',
              dispatcher: setUp,
              headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
              body: '{"token":""}',
            });
            await reply.body.text();
            const cookie = [reply.headers['set-cookie'] ?? []].flat()[0]?.split(';')[0];
            if (reply.statusCode === 200 && cookie) return { address, cookie };
          }
        }),
      )),
    );
  }
  await setUp.close();
  const setUpMs = performance.now() - setUpStarted;

  const outcomes: Record<string, number> = {};
  const samples: string[] = [];
  const note = (kind: string, detail: string) => {
    outcomes[kind] = (outcomes[kind] ?? 0) + 1;
    if (!kind.startsWith('200') && !kind.startsWith('503 busy') && samples.length < 5) samples.push(`${kind}: ${detail.slice(0, 200)}`);
  };
  const prober = startHealthProber(job.healthUrls, 10);
  // Every question on a connection of its own, all sent at once.
  const crowd = new Agent({ connections: null, connectTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
  const started = performance.now();
  await Promise.all(
    sessions.map(async ({ address, cookie }) => {
      try {
        const reply = await request(`${job.target}/public/chat/send`, {
          method: 'POST',
          dispatcher: crowd,
          headers: { 'content-type': 'application/json', cookie, 'x-forwarded-for': address },
          body: JSON.stringify({ message: job.question }),
        });
        const text = await reply.body.text();
        const body = JSON.parse(text) as { success?: boolean; code?: string };
        if (reply.statusCode === 200 && body.success) note('200 answer', text);
        else if (reply.statusCode === 503 && body.code === 'busy' && reply.headers['retry-after']) note('503 busy', text);
        else note(`${reply.statusCode} ${body.code ?? ''}`.trim(), text);
      } catch (error) {
        const code = (error as { code?: string }).code ?? (error as Error).name;
        note(`send ${code}`, String(error));
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  const health = await prober.stop();
  await crowd.close();
  fake.state.conversations.clear();
  fake.state.responses.clear();
  fake.journal.length = 0;
  return { outcomes, samples, health, elapsedMs, setUpMs };
}

process.on('message', (message: ToBurst) => {
  if (message.type === 'burst') void burst(message).then((result) => send({ type: 'result', result }));
  else void fake.close().then(() => process.exit(0));
});
send({ type: 'ready', url: fake.url, apiKey: fake.apiKey });
