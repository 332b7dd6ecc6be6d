import { WATCH_CLOSE, WATCH_CONNECTED_TEXT, type WatchMessage } from '@concierge/contract';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import type { EventBus } from '../events.ts';
import { toWatchMessage } from './watch-message.ts';
import type { WatchGrant } from './watch-tokens.ts';

export const WATCH_POLICY = {
  /**
   * A connection with more than this still waiting to be written is a client
   * that stopped reading (or reads far slower than answers come): it is
   * dropped (close 1013) instead of the server buffering for it without
   * bound. A client that reads keeps far below it, even through a burst of
   * a thousand answers.
   */
  maxBufferedBytes: 4 * 1024 * 1024,
  /** Every connection is pinged this often; one that has not answered the previous ping is dropped. */
  pingEveryMs: 30_000,
  /** How often the admin sessions of open connections are read again (a session ended in another process). */
  sessionCheckEveryMs: 5_000,
  /** A connection being closed that has not answered the close by then is cut off. */
  closeGraceMs: 5_000,
};

interface Client {
  socket: WebSocket;
  sessionId: string;
  username: string;
  /** Answered the last ping (or has not been pinged yet). */
  alive: boolean;
}

/**
 * The Watch feed's connections in this process. Every answer event, from
 * this process or (with several processes on PostgreSQL) any other, goes to
 * every connection as one JSON Watch message; nothing here assumes it is
 * the only process. A connection lives as long as the admin session its
 * token was issued for: it closes when that session is signed out (in any
 * process) or is found gone on the periodic check.
 */
export class WatchHub {
  readonly #clients = new Set<Client>();
  readonly #logger: Logger;
  readonly #liveSessions: (ids: readonly string[]) => Promise<Set<string>>;
  readonly #policy: typeof WATCH_POLICY;
  readonly #unsubscribe: (() => void)[];
  #pinger: NodeJS.Timeout | undefined;
  #sessionChecker: NodeJS.Timeout | undefined;
  #checking = false;
  /** Connections dropped for falling behind, since start (for tests and logs). */
  droppedSlow = 0;

  constructor(options: {
    events: EventBus;
    logger: Logger;
    liveSessions: (ids: readonly string[]) => Promise<Set<string>>;
    policy?: Partial<typeof WATCH_POLICY>;
  }) {
    this.#logger = options.logger;
    this.#liveSessions = options.liveSessions;
    this.#policy = { ...WATCH_POLICY, ...options.policy };
    this.#unsubscribe = [
      options.events.subscribe('answer', (event) => this.broadcast(toWatchMessage(event))),
      options.events.subscribe('admin_session_ended', ({ session_id }) => this.endSession(session_id)),
    ];
  }

  /** Open connections. */
  get size(): number {
    return this.#clients.size;
  }

  /** The open connection's socket, by its place in arrival order (tests look at one client's buffer). */
  sockets(): WebSocket[] {
    return [...this.#clients].map((client) => client.socket);
  }

  /** Takes a new connection: greets it and sends it every answer from now on. */
  attach(socket: WebSocket, grant: WatchGrant): void {
    const client: Client = { socket, sessionId: grant.sessionId, username: grant.username, alive: true };
    this.#clients.add(client);
    socket.on('pong', () => (client.alive = true));
    socket.on('close', () => this.#forget(client));
    // The feed only speaks; anything a client sends is ignored (and capped by the server's maxPayload).
    socket.send(WATCH_CONNECTED_TEXT);
    this.#startTimers();
    this.#logger.info({ admin: grant.username, connections: this.#clients.size }, 'watch connection opened');
  }

  /** Sends one message to every connection (serialised once). */
  broadcast(message: WatchMessage): void {
    if (this.#clients.size === 0) return;
    const text = JSON.stringify(message);
    for (const client of this.#clients) this.#send(client, text);
  }

  /** Closes the connections of an admin session that ended. */
  endSession(sessionId: string): void {
    for (const client of this.#clients) {
      if (client.sessionId === sessionId) this.#drop(client, WATCH_CLOSE.sessionEnded, 'Session ended');
    }
  }

  /** Closes every connection (the server is going away) and stops hearing answers. */
  close(): void {
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    for (const client of [...this.#clients]) this.#drop(client, WATCH_CLOSE.goingAway, 'Server shutting down');
    this.#stopTimers();
  }

  /** Reads the open connections' sessions again and closes those whose session is gone. */
  async checkSessions(): Promise<void> {
    if (this.#checking || this.#clients.size === 0) return;
    this.#checking = true;
    try {
      const live = await this.#liveSessions([...this.#clients].map((client) => client.sessionId));
      for (const client of this.#clients) if (!live.has(client.sessionId)) this.#drop(client, WATCH_CLOSE.sessionEnded, 'Session ended');
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not check the sessions of the watch connections');
    } finally {
      this.#checking = false;
    }
  }

  #send(client: Client, text: string): void {
    const { socket } = client;
    if (socket.readyState !== socket.OPEN) return;
    // bufferedAmount: what the socket has accepted and not yet handed to the network (the client is not reading it).
    if (socket.bufferedAmount + Buffer.byteLength(text) > this.#policy.maxBufferedBytes) {
      this.droppedSlow++;
      this.#logger.warn({ admin: client.username, bufferedBytes: socket.bufferedAmount }, 'watch connection dropped: the client is not keeping up');
      this.#drop(client, WATCH_CLOSE.tooSlow, 'Client too slow');
      return;
    }
    socket.send(text);
  }

  /**
   * Forgets the connection at once (nothing more is sent to it) and closes
   * it; a peer that does not answer the close within the grace is cut off,
   * so nothing waits long on a client that stopped reading (what it holds
   * meanwhile is bounded by maxBufferedBytes).
   */
  #drop(client: Client, code: number, reason: string): void {
    if (!this.#clients.has(client)) return;
    this.#forget(client);
    const { socket } = client;
    if (socket.readyState === socket.OPEN) socket.close(code, reason);
    setTimeout(() => socket.terminate(), this.#policy.closeGraceMs).unref();
  }

  #forget(client: Client): void {
    if (!this.#clients.delete(client)) return;
    if (this.#clients.size === 0) this.#stopTimers();
  }

  #startTimers(): void {
    this.#pinger ??= setInterval(() => this.pingNow(), this.#policy.pingEveryMs).unref();
    this.#sessionChecker ??= setInterval(() => void this.checkSessions(), this.#policy.sessionCheckEveryMs).unref();
  }

  #stopTimers(): void {
    clearInterval(this.#pinger);
    clearInterval(this.#sessionChecker);
    this.#pinger = undefined;
    this.#sessionChecker = undefined;
  }

  /** Pings every connection; one that did not answer the previous ping is a dead peer and is cut off. */
  pingNow(): void {
    for (const client of this.#clients) {
      if (!client.alive) {
        this.#logger.info({ admin: client.username }, 'watch connection dropped: no answer to the last ping');
        this.#forget(client);
        client.socket.terminate();
        continue;
      }
      client.alive = false;
      client.socket.ping();
    }
  }
}
