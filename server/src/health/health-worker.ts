/**
 * The health port's thread (HEALTH_PORT, README "Health checks"): a plain
 * HTTP server answering `GET /healthz` from the last figures the main thread
 * posted. It shares no event loop with the product, so a crowd of thousands
 * of connections on the main port cannot delay its answer; and it holds no
 * database connection, so it cannot make an outage worse.
 *
 * The main thread posts its figures every second (health-port.ts). When none
 * has come for longer than the stall limit, the main thread's event loop has
 * stopped turning, and the check fails.
 */
import { createServer, type ServerResponse } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

export interface HealthWorkerData {
  host: string;
  port: number;
  /** How long the main thread may stay silent before the check fails. */
  stallLimitMs: number;
}

/** The health record (SPEC §3 "Health") and whether the database answered the last ping. */
export interface HealthFigures {
  paused: boolean;
  queue_size: number;
  discord_gateway_connected: boolean;
  database_reachable: boolean;
}

export type ToHealthWorker = { kind: 'figures'; figures: HealthFigures } | { kind: 'draining' };
export type FromHealthWorker = { kind: 'listening'; port: number } | { kind: 'failed'; message: string };

const { host, port, stallLimitMs } = workerData as HealthWorkerData;
const parent = parentPort!;

let figures: HealthFigures | undefined;
let receivedAt = 0;
let draining = false;

parent.on('message', (message: ToHealthWorker) => {
  if (message.kind === 'draining') {
    draining = true;
    return;
  }
  figures = message.figures;
  receivedAt = Date.now();
});

function reply(response: ServerResponse, status: number, body: unknown, head: boolean, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(head ? undefined : text);
}

const server = createServer((request, response) => {
  const path = (request.url ?? '/').split('?')[0];
  const head = request.method === 'HEAD';
  if (path !== '/healthz') return reply(response, 404, { error: 'Not found', code: 'not_found' }, head);
  if (request.method !== 'GET' && !head) {
    return reply(response, 405, { error: 'Only GET and HEAD are allowed here', code: 'method_not_allowed' }, false, { allow: 'GET, HEAD' });
  }
  if (draining) return reply(response, 503, { error: 'Shutting down', code: 'shutting_down' }, head);
  if (!figures) return reply(response, 503, { error: 'Starting', code: 'starting' }, head);
  const silentMs = Date.now() - receivedAt;
  if (silentMs > stallLimitMs) {
    return reply(response, 503, { error: `Event loop stalled for ${Math.round(silentMs / 1000)} s`, code: 'event_loop_stalled' }, head);
  }
  if (!figures.database_reachable) return reply(response, 503, { error: 'Database unreachable', code: 'database_unreachable' }, head);
  const { paused, queue_size, discord_gateway_connected } = figures;
  return reply(response, 200, { paused, queue_size, discord_gateway_connected }, head);
});

server.on('error', (error: Error) => parent.postMessage({ kind: 'failed', message: error.message } satisfies FromHealthWorker));
server.listen({ host, port }, () => {
  const address = server.address();
  parent.postMessage({ kind: 'listening', port: typeof address === 'object' && address ? address.port : port } satisfies FromHealthWorker);
});
