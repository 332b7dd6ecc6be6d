/**
 * The chat benchmark's other side, run in a worker thread so that the server
 * under test (the product or the bare route, on the main thread) has an event
 * loop to itself: the fake OpenAI server both of them call, and the virtual
 * users who ask them questions over keep-alive connections (undici).
 *
 * The main thread sends `round` requests and gets a `RoundResult` back for
 * each; the same code drives the product and the bare route.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';
import { startFakeOpenAI, type JournalEntry } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';

export interface LoadSetup {
  /** How long the fake keeps a background response queued (0: done at once, so nobody polls). */
  runDurationMs: number;
}

export interface RoundRequest {
  type: 'round';
  /** Origin of the server under test, e.g. http://127.0.0.1:41234 */
  target: string;
  /** Virtual users asking at once; each starts a session (verify → cookie, a client address of its own). */
  sessions: number;
  /** Questions each user asks in its session, one after another; the round ends when all are answered. */
  questionsPerSession: number;
  questions: string[];
  /** Ask for the answer as an event stream (DESIGN §9, what the chat page does); else the JSON reply. */
  stream: boolean;
}

export interface RoundResult {
  /** Client-side time (ms) of every answered question (200 with an answer). */
  latencies: number[];
  /** From the first request to the last reply. */
  elapsedMs: number;
  sessionsStarted: number;
  /** Requests made: verifications and questions. */
  requests: number;
  /** Replies other than an answer, by "route status" ("send error" for a failed connection). */
  failures: Record<string, number>;
  /** The first few of them, to show. */
  failureSamples: string[];
  /** Requests the fake OpenAI server received during the round, by call. */
  providerCalls: Record<string, number>;
  /** Share of the round this worker's event loop was busy (near 1: the load side, not the server, limits the round). */
  loadUtilization: number;
}

export type ToLoad = RoundRequest | { type: 'close' };
export type FromLoad = { type: 'ready'; url: string; apiKey: string } | { type: 'result'; result: RoundResult } | { type: 'closed' };

/** The SDK call a request to the fake stands for. */
function callName(entry: JournalEntry): string {
  const parts = entry.path.split('/').filter(Boolean); // ['v1', resource, id?, sub?]
  const [, resource, id, sub] = parts;
  if (resource === 'conversations' && !id && entry.method === 'POST') return 'conversations.create';
  if (resource === 'conversations' && sub === 'items') return entry.method === 'POST' ? 'conversations.items.create' : 'conversations.items.list';
  if (resource === 'responses' && !id && entry.method === 'POST') return 'responses.create';
  if (resource === 'responses' && id && !sub && entry.method === 'GET') return 'responses.retrieve';
  return `${entry.method} /${[resource, id ? ':id' : '', sub ?? ''].filter(Boolean).join('/')}`;
}

/** The reply of a send: the JSON body, or the data of an event stream's `done` (its deltas put together must be the answer). */
function answerOf(text: string, stream: boolean): { success?: boolean; response?: unknown } | null {
  if (!stream) return JSON.parse(text) as { success?: boolean; response?: unknown };
  let deltas = '';
  let done: { success?: boolean; response?: unknown } | null = null;
  for (const block of text.split('\n\n')) {
    const name = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (!name || data === undefined) continue;
    if (name === 'delta') deltas += (JSON.parse(data) as { text: string }).text;
    if (name === 'done') done = JSON.parse(data) as { success?: boolean; response?: unknown };
  }
  if (done?.success === true && done.response !== deltas) return { success: false, response: `deltas do not make the answer: ${deltas.slice(0, 80)}` };
  return done;
}

const port = parentPort;
if (!port) throw new Error('chat-load.ts runs as a worker thread of the chat benchmark');
const setup = workerData as LoadSetup;
const fake = await startFakeOpenAI({ knobs: { latencyMs: 0, runDurationMs: setup.runDurationMs } });
const pools = new Map<string, Pool>();
/** Every session gets an address of its own (10.x.y.z), so no per-address limit is reached. */
let addressCount = 0;
const nextAddress = () => {
  addressCount++;
  return `10.${(addressCount >> 16) & 255}.${(addressCount >> 8) & 255}.${addressCount & 255}`;
};

async function round(request: RoundRequest): Promise<RoundResult> {
  const key = `${request.target} ${request.sessions}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = new Pool(request.target, { connections: request.sessions });
    pools.set(key, pool);
  }
  const client = pool;
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  const failureSamples: string[] = [];
  let sessionsStarted = 0;
  let requests = 0;
  let asked = 0;
  const fail = (what: string, detail: string) => {
    failures[what] = (failures[what] ?? 0) + 1;
    if (failureSamples.length < 5) failureSamples.push(`${what}: ${detail.slice(0, 200)}`);
  };
  const post = async (path: string, body: unknown, headers: Record<string, string>) => {
    requests++;
    const reply = await client.request({ path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: reply.statusCode, headers: reply.headers, text: await reply.body.text() };
  };

  const start = performance.now();
  const loopBefore = performance.eventLoopUtilization();
  const user = async () => {
    const address = nextAddress();
    let cookie: string | undefined;
    for (let attempt = 0; !cookie && attempt < 3; attempt++) {
      try {
        const verify = await post('/public/chat/turnstile/verify', { token: '' }, { 'x-forwarded-for': address });
        const setCookie = verify.headers['set-cookie'];
        cookie = verify.status === 200 ? (Array.isArray(setCookie) ? setCookie[0] : setCookie)?.split(';')[0] : undefined;
        if (!cookie) fail(`verify ${verify.status}`, verify.text);
      } catch (error) {
        fail('verify error', String(error));
      }
      if (!cookie) await sleep(100);
    }
    if (!cookie) return;
    sessionsStarted++;
    for (let i = 0; i < request.questionsPerSession; i++) {
      const question = request.questions[asked++ % request.questions.length]!;
      const sent = performance.now();
      try {
        const reply = await post('/public/chat/send', { message: question }, { cookie, 'x-forwarded-for': address, ...(request.stream ? { accept: 'text/event-stream' } : {}) });
        const took = performance.now() - sent;
        const answer = reply.status === 200 ? answerOf(reply.text, request.stream) : null;
        if (answer?.success === true && typeof answer.response === 'string' && answer.response) latencies.push(took);
        // A stream's end says why (its start is only keep-alives).
        else fail(`send ${reply.status}`, request.stream ? reply.text.slice(-300) : reply.text);
      } catch (error) {
        fail('send error', String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: request.sessions }, user));
  const elapsedMs = performance.now() - start;
  const loadUtilization = performance.eventLoopUtilization(loopBefore).utilization;

  const providerCalls: Record<string, number> = {};
  for (const entry of fake.journal) providerCalls[callName(entry)] = (providerCalls[callName(entry)] ?? 0) + 1;
  // Nothing is in flight now: forget the round's conversations and responses so the fake stays small.
  fake.journal.length = 0;
  fake.state.conversations.clear();
  fake.state.responses.clear();
  return { latencies, elapsedMs, sessionsStarted, requests, failures, failureSamples, providerCalls, loadUtilization };
}

port.on('message', (message: ToLoad) => {
  if (message.type === 'round') {
    void round(message).then((result) => port.postMessage({ type: 'result', result } satisfies FromLoad));
  } else {
    void (async () => {
      await Promise.all([...pools.values()].map((pool) => pool.close()));
      await fake.close();
      port.postMessage({ type: 'closed' } satisfies FromLoad);
    })();
  }
});
port.postMessage({ type: 'ready', url: fake.url, apiKey: fake.apiKey } satisfies FromLoad);
