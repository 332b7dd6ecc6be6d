import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** New connections read at once, at most (README "Sizing"). */
export const NEW_CONNECTIONS_READ_AT_ONCE = 16;
/**
 * How long a new connection keeps its place without sending a request (a
 * browser's preconnect, a slow client). A client sends its request as its
 * connection opens, so in a crowd the place comes back within a turn or two;
 * one that sends nothing is read as any other after this, so the hold is
 * short: connections that send nothing (slowloris) could otherwise keep
 * every place taken with a few dozen new connections a second.
 */
export const FIRST_REQUEST_WAIT_MS = 100;

/**
 * Lets at most `places` new connections be read at once; the others wait,
 * accepted but unread, their turn coming as places free. A connection
 * gives its place back with its first request, when it closes, or after
 * `holdMs` without a request; from then on it is read as any other (its
 * next requests, a kept-alive health check's included, are never held).
 *
 * Why: in a crowd of thousands of new connections (the opening ceremony's
 * burst), each sends its question as soon as it is open. As long as
 * `epoll_wait` keeps returning full batches of ready sockets, libuv keeps
 * reading them in one turn of the event loop, and that turn lasted up to
 * 1.5 s in the 10,000-question burst. A request that became readable in it
 * (a load balancer's `/healthz` on its kept-alive connection) waited behind
 * every socket ready before it. With the crowd let in 16 at a time, a
 * turn reads a few dozen requests at most, and the worst check took 64–203
 * ms in the same burst (bench/RESULTS.md).
 *
 * Plain HTTP only: behind TLS the connection event brings the raw socket,
 * whose first request is never seen here.
 */
export function gateNewConnections(server: Server, options: { places?: number; holdMs?: number } = {}): void {
  const places = options.places ?? NEW_CONNECTIONS_READ_AT_ONCE;
  const holdMs = options.holdMs ?? FIRST_REQUEST_WAIT_MS;
  // net.Server reads this as it accepts each connection (the `pauseOnConnect` option of net.createServer, which
  // http.createServer does not pass on): the socket comes paused, and is not read until it is resumed.
  (server as Server & { pauseOnConnect: boolean }).pauseOnConnect = true;
  // The HTTP server sets a connection up (its parser, its timeouts, its place among the connections it closes as
  // it stops) in its own 'connection' listener. A connection is handed to it only when it gets a place, so that a
  // crowd waiting costs a bare socket each: in the 10,000-question burst, set up as they came, they raised the
  // process's peak RSS past 512 MB.
  const setUp = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  // The connections waiting for a place, oldest first (from `head` on; compacted as it grows).
  let waiting: Socket[] = [];
  let head = 0;
  /** The connections being read for their first request, and the timer that takes their place back. */
  const holding = new Map<Socket, NodeJS.Timeout>();

  const admit = () => {
    while (holding.size < places && head < waiting.length) {
      const socket = waiting[head++]!;
      if (socket.destroyed) continue;
      for (const listener of setUp) listener.call(server, socket);
      const timer = setTimeout(() => release(socket), holdMs);
      timer.unref();
      holding.set(socket, timer);
      socket.resume();
    }
    if (head > 1024 && head * 2 > waiting.length) {
      waiting = waiting.slice(head);
      head = 0;
    }
  };
  const release = (socket: Socket) => {
    const timer = holding.get(socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    holding.delete(socket);
    admit();
  };

  server.on('connection', (socket: Socket) => {
    waiting.push(socket);
    socket.once('close', () => release(socket));
    admit();
  });
  server.on('request', (request) => release(request.socket));
  // The connections still waiting are not the HTTP server's yet, so its closeIdleConnections() does not see them:
  // they are closed as it stops listening (their questions unread, as a connection refused).
  const close = server.close.bind(server);
  server.close = (callback?: (error?: Error) => void) => {
    for (const socket of waiting.slice(head)) socket.destroy();
    waiting = [];
    head = 0;
    return close(callback);
  };
}
