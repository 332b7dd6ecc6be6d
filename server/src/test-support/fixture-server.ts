import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FixtureRoute {
  status?: number;
  body?: string | Buffer;
  contentType?: string;
  /** Sent as ETag; a request whose If-None-Match matches gets 304. */
  etag?: string;
  /** Streams this many bytes of filler without a Content-Length (a server that never stops). */
  streamBytes?: number;
  /** Waits this long before answering. */
  delayMs?: number;
  /** A redirect: answered with this Location (and `status`, 302 by default). */
  location?: string;
}

export interface FixtureServer {
  url: string;
  /** Sets what a path answers from now on. */
  route(path: string, route: FixtureRoute): void;
  /** Requests seen, in order. */
  requests: { path: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

/** A local HTTP server answering fixed fixtures, for the crawler's fetch tests. */
export async function startFixtureServer(): Promise<FixtureServer> {
  const routes = new Map<string, FixtureRoute>();
  const requests: FixtureServer['requests'] = [];
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]!;
    requests.push({ path, headers: request.headers });
    const route = routes.get(path);
    if (!route) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    setTimeout(() => answer(request, response, route), route.delayMs ?? 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    route: (path, route) => routes.set(path, route),
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function answer(request: IncomingMessage, response: ServerResponse, route: FixtureRoute): void {
  if (route.etag && request.headers['if-none-match'] === route.etag) {
    response.writeHead(304, { etag: route.etag }).end();
    return;
  }
  const headers: Record<string, string> = { 'content-type': route.contentType ?? 'text/plain' };
  if (route.etag) headers.etag = route.etag;
  if (route.location) {
    response.writeHead(route.status ?? 302, { ...headers, location: route.location }).end('moved');
    return;
  }
  if (route.streamBytes) {
    response.writeHead(route.status ?? 200, headers);
    const chunk = Buffer.alloc(64 * 1024, 'A');
    let sent = 0;
    const pump = () => {
      while (sent < route.streamBytes!) {
        sent += chunk.length;
        if (!response.write(chunk)) return void response.once('drain', pump);
      }
      response.end();
    };
    response.on('error', () => {});
    pump();
    return;
  }
  response.writeHead(route.status ?? 200, headers).end(route.body ?? '');
}
