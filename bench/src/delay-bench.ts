import OpenAI from 'openai';
import { parseDuration } from '@concierge/contract';
import { startFakeOpenAI, type FakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';
import { postForEvents } from '@concierge/server/src/test-support/event-stream-client.ts';
import type { Engine } from './engines.ts';
import type { BenchResult } from './report.ts';

/**
 * How late an answer reaches the visitor after the provider finished it, at
 * 2 s and at 60 s of provider latency (the run's duration at the fake
 * OpenAI, in real time: a 60 s run takes 60 s here):
 *
 * - streamed: from the fake sending `response.completed` to the `done`
 *   event reaching the client (target: 100 ms), against a bare `openai` SDK
 *   client reading the same kind of stream straight from the fake;
 * - polled (the fallback when a stream cannot be opened: the fake refuses
 *   those runs' streams): from the run finishing to the JSON reply (target:
 *   `assistant_poll_interval`), against a bare client polling its run at
 *   that interval with a timer of its own. A bare client backing off ×1.5 up
 *   to `assistant_max_poll_interval` (how runs were polled before the shared
 *   poller) is reported beside it.
 *
 * Questions start a fraction of the interval apart, so the runs finish at
 * every phase of the polling.
 */
export interface DelayBenchOptions {
  /** Provider latencies measured, in ms. */
  latencies: number[];
  /** Questions of each kind per latency. */
  questions: number;
}

export const DELAY_BENCH_DEFAULTS: DelayBenchOptions = { latencies: [2000, 60_000], questions: 6 };

/** `quick`: the 2 s latency only. */
export function delayBenchOptions(args: string[]): DelayBenchOptions {
  return args.includes('quick') ? { ...DELAY_BENCH_DEFAULTS, latencies: [2000] } : DELAY_BENCH_DEFAULTS;
}

const STREAM_TARGET_MS = 100;
const BACKOFF = 1.5;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function benchDelay(engine: Engine, report: (result: BenchResult) => void, options: DelayBenchOptions = DELAY_BENCH_DEFAULTS): Promise<void> {
  const fake = await startFakeOpenAI();
  try {
    const product = await engine.serve({ OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_MODEL: 'gpt-5-mini', TRUST_PROXY: 'loopback' });
    try {
      const { deps, url } = product.server;
      const config = await deps.config.update({ public_chat_requests_per_minute: 60, openai_max_requests_per_second: 100 });
      const intervalMs = parseDuration(config.assistant_poll_interval)!;
      const maxIntervalMs = parseDuration(config.assistant_max_poll_interval)!;
      const bare = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.url, maxRetries: 0, timeout: 10 * 60_000 });
      const store = await bare.vectorStores.create({ name: 'Bare client' });
      const runOf = async (feedbackId: number) =>
        (await deps.database.db.selectFrom('public_chat_messages').select('run_id').where('id', '=', feedbackId).executeTakeFirstOrThrow()).run_id!;
      const lateness = (runId: string, arrivedAt: number) => arrivedAt - finishedAt(fake, runId);

      let visitor = 0;
      const session = async () => {
        const address = `198.51.100.${(visitor++ % 250) + 1}`;
        const verified = await fetch(`${url}/public/chat/turnstile/verify`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': address }, body: '{"token":""}' });
        return { cookie: verified.headers.getSetCookie().map((cookie) => cookie.split(';')[0]).join('; '), address };
      };

      // One answer of each kind first, untimed (the JIT, connections, the vector store).
      fake.configure({ runDurationMs: 50 });
      for (const accept of ['text/event-stream', 'application/json']) {
        const { cookie, address } = await session();
        await (await fetch(`${url}/public/chat/send`, { method: 'POST', headers: { 'content-type': 'application/json', accept, cookie, 'x-forwarded-for': address }, body: '{"message":"Warm-up: where is Hall B?"}' })).text();
      }
      await bareStream(bare, store.id, 'Warm-up');

      for (const latencyMs of options.latencies) {
        fake.configure({ runDurationMs: latencyMs });
        const n = options.questions;
        const stagger = intervalMs / n;
        const question = (index: number) => `Question ${index} at ${latencyMs} ms: when is the costume contest?`;

        // Polled first: the fake refuses exactly that many streams, so these runs are created plainly and polled.
        fake.configure({ failures: [{ method: 'POST', path: '/v1/responses', status: 400, stream: true, count: n }] });
        const polled: Promise<number>[] = [];
        for (let index = 0; index < n; index++) {
          const { cookie, address } = await session();
          polled.push(
            fetch(`${url}/public/chat/send`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, 'x-forwarded-for': address }, body: JSON.stringify({ message: question(index) }) }).then(
              async (reply) => {
                const arrivedAt = Date.now();
                const body = (await reply.json()) as { success: boolean; feedback_id: number; error: string | null };
                if (!body.success) throw new Error(`a polled question failed: ${body.error}`);
                return lateness(await runOf(body.feedback_id), arrivedAt);
              },
            ),
          );
          await sleep(stagger);
        }
        while (fake.knobs.failures.length > 0) await sleep(20);

        const streamed: Promise<number>[] = [];
        const bareStreamed: Promise<number>[] = [];
        const barePolled: Promise<number>[] = [];
        const bareBackoff: Promise<number>[] = [];
        for (let index = 0; index < n; index++) {
          const { cookie, address } = await session();
          streamed.push(
            postForEvents(`${url}/public/chat/send`, { message: question(n + index) }, { cookie, 'x-forwarded-for': address }).then(async (reply) => {
              const done = await reply.waitFor((entry) => entry.kind === 'event' && entry.event === 'done', latencyMs + 60_000);
              const data = (done as { data: { success: boolean; feedback_id: number; error: string | null } }).data;
              if (!data.success) throw new Error(`a streamed question failed: ${data.error}`);
              return lateness(await runOf(data.feedback_id), done.at);
            }),
          );
          bareStreamed.push(bareStream(bare, store.id, question(2 * n + index)).then(({ runId, at }) => lateness(runId, at)));
          barePolled.push(barePoll(bare, store.id, question(3 * n + index), intervalMs, intervalMs).then(({ runId, at }) => lateness(runId, at)));
          bareBackoff.push(barePoll(bare, store.id, question(4 * n + index), intervalMs, maxIntervalMs).then(({ runId, at }) => lateness(runId, at)));
          await sleep(stagger);
        }
        const [p, s, bs, bp, bb] = await Promise.all([Promise.all(polled), Promise.all(streamed), Promise.all(bareStreamed), Promise.all(barePolled), Promise.all(bareBackoff)]);
        const label = `${latencyMs / 1000} s`;
        const describe = (values: number[]) => `median ${median(values)} ms, max ${Math.max(...values)} ms (${values.join(', ')})`;
        report({
          name: `delay: streamed answer at ${label} provider latency (${engine.name})`,
          measure: `longest time from the provider's completion event to the visitor's done event, ${n} questions`,
          value: Math.max(...s),
          baseline: Math.max(...bs),
          baselineMeasure: 'a bare openai SDK client reading the response stream from the fake',
          unit: 'ms',
          ratio: Math.max(...s) / Math.max(1, Math.max(...bs)),
          maxValue: STREAM_TARGET_MS,
          notes: [`product: ${describe(s)}`, `bare: ${describe(bs)}`],
        });
        report({
          name: `delay: polled answer at ${label} provider latency (${engine.name})`,
          measure: `longest time from the run finishing to the visitor's reply, streams refused so the run is polled, ${n} questions started ${Math.round(stagger)} ms apart`,
          value: Math.max(...p),
          baseline: Math.max(...bp),
          baselineMeasure: `a bare client polling its run every ${intervalMs} ms (a timer per run) and reading the answer`,
          unit: 'ms',
          ratio: Math.max(...p) / Math.max(1, Math.max(...bp)),
          maxValue: intervalMs,
          notes: [
            `product: ${describe(p)}`,
            `bare, every ${intervalMs} ms: ${describe(bp)}`,
            `bare, backing off ×${BACKOFF} from ${intervalMs} to ${maxIntervalMs} ms (the product's polling before the shared poller): ${describe(bb)}`,
          ],
        });
      }
    } finally {
      await product.cleanup();
    }
  } finally {
    await fake.close();
  }
}

/** When the fake finished a run: its final event went out, or (not streamed) its status turned final. */
function finishedAt(fake: FakeOpenAI, runId: string): number {
  const stored = fake.state.responses.get(runId);
  if (!stored) throw new Error(`the fake knows no run ${runId}`);
  return stored.finishAt;
}

async function bareStart(client: OpenAI, storeId: string, text: string) {
  const conversation = await client.conversations.create({});
  await client.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: text }] });
  return {
    conversation,
    body: { model: 'gpt-5-mini', background: true, store: true, conversation: conversation.id, tools: [{ type: 'file_search' as const, vector_store_ids: [storeId] }] },
  };
}

/** A background response created with its stream open, read to its final event. */
async function bareStream(client: OpenAI, storeId: string, text: string): Promise<{ runId: string; at: number }> {
  const { body } = await bareStart(client, storeId, text);
  const stream = await client.responses.create({ ...body, stream: true });
  let runId = '';
  for await (const event of stream) {
    if (event.type === 'response.created') runId = event.response.id;
    if (event.type === 'response.completed') return { runId, at: Date.now() };
  }
  throw new Error('the bare stream ended without response.completed');
}

/** A background response polled from `firstMs`, the wait growing ×1.5 up to `maxMs`, then its answer read. */
async function barePoll(client: OpenAI, storeId: string, text: string, firstMs: number, maxMs: number): Promise<{ runId: string; at: number }> {
  const { conversation, body } = await bareStart(client, storeId, text);
  const created = await client.responses.create(body);
  let delay = firstMs;
  for (let state = created; state.status !== 'completed'; ) {
    if (state.status === 'failed' || state.status === 'cancelled' || state.status === 'incomplete') throw new Error(`the bare run ended ${state.status}`);
    await sleep(delay);
    delay = Math.min(maxMs, Math.round(delay * BACKOFF));
    state = await client.responses.retrieve(created.id);
  }
  await client.conversations.items.list(conversation.id, { limit: 10, order: 'desc' });
  return { runId: created.id, at: Date.now() };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
