import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ASK_ERRORS } from '@concierge/server/src/ask/ask-pipeline.ts';
import { LISTEN_BACKLOG } from '@concierge/server/src/server.ts';

/**
 * The burst benchmark's floor: a plain `node:http` server (no Fastify, no
 * database, no product code) that gives every question DESIGN §9's busy
 * 503, as the product does past its cap (`Retry-After`, the connection
 * closed), and answers /healthz. Whatever its /healthz takes during a burst
 * is what Node's own accepting, parsing and replying cost on this machine:
 * no server on one event loop refuses a crowd for less.
 */
export async function startRefusingServer(): Promise<{ url: string; close(): Promise<void> }> {
  const busy = JSON.stringify({ success: false, error: ASK_ERRORS.busy, code: 'busy' });
  const server = createServer((request, response) => {
    if (request.url === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end('{"status":"ok"}');
    } else if (request.url === '/public/chat/turnstile/verify') {
      const cookie = `refused=${randomBytes(24).toString('base64url')}; Path=/; HttpOnly; SameSite=Lax`;
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'set-cookie': cookie }).end('{"success":true,"error":null}');
    } else {
      response.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '5', connection: 'close' }).end(busy);
    }
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: LISTEN_BACKLOG }, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
