import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ForwardingProxy {
  /** The proxy's own address, e.g. http://127.0.0.1:41234 (a non-default port). */
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface ForwardingProxyOptions {
  /** Where requests go, e.g. the product's http://127.0.0.1:8080. */
  target: string;
  /**
   * What the proxy sends as Host, in nginx's terms: `http_host` forwards the
   * client's Host header as it came (with its port), `host` sends the name
   * only (nginx's `$host` drops the port).
   */
  hostHeader: 'http_host' | 'host';
  /** The scheme the proxy says the client used (X-Forwarded-Proto): `https` for a proxy that terminates TLS. */
  forwardedProto?: 'http' | 'https';
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

/**
 * A reverse proxy in the shape of the README's nginx recipe: it forwards
 * every request to the target, appends the address it saw to
 * X-Forwarded-For (`$proxy_add_x_forwarded_for`: whatever the client sent,
 * then ", <client address>"), and sets X-Forwarded-Proto. A real HTTP hop,
 * so tests see what the product sees behind nginx.
 */
export async function startForwardingProxy(options: ForwardingProxyOptions): Promise<ForwardingProxy> {
  const target = new URL(options.target);
  const server = createServer((incoming, outgoing) => {
    const headers: IncomingHttpHeaders = {};
    for (const [name, value] of Object.entries(incoming.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
    const clientHost = incoming.headers.host ?? '';
    headers.host = options.hostHeader === 'http_host' ? clientHost : clientHost.replace(/:\d+$/, '');
    const seen = incoming.socket.remoteAddress ?? '';
    const earlier = incoming.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = earlier ? `${[earlier].flat().join(', ')}, ${seen}` : seen;
    headers['x-forwarded-proto'] = options.forwardedProto ?? 'http';
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', (error) => {
      if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
      outgoing.end(`proxy error: ${error.message}`);
    });
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface PlainResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json<T = Record<string, unknown>>(): T;
}

/**
 * One HTTP request from a chosen local address (127.0.0.2 is a different
 * client than the proxy's 127.0.0.1 on any Linux loopback), so a test can
 * tell the client's real address from the proxy's and from a forged one.
 */
export function requestFrom(
  localAddress: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<PlainResponse> {
  const parsed = new URL(url);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: parsed.hostname,
        port: parsed.port,
        path: `${parsed.pathname}${parsed.search}`,
        method: options.method ?? 'GET',
        localAddress,
        headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...options.headers },
      },
      (answer) => {
        let text = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => (text += chunk));
        answer.on('end', () =>
          resolve({ status: answer.statusCode ?? 0, headers: answer.headers, body: text, json: <T>() => JSON.parse(text) as T }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}
