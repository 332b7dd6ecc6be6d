import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database, Db } from '../db/database.ts';
import type { EventTransport, TransportMessage, TransportReceiver } from '../events.ts';
import { TurnBatch } from '../turn-batch.ts';
import * as queries from './cluster.queries.ts';
import { closeSession, openSession, pingSession, queryWithin } from './pg-session.ts';

/**
 * NOTIFY payloads must stay under 8000 bytes; a bigger event (a long answer)
 * is stored in cluster_event_payloads and the notification carries its id.
 */
export const MAX_NOTIFY_BYTES = 7900;
const tooBig = (text: string) => Buffer.byteLength(text) > MAX_NOTIFY_BYTES;
/** Stored payloads are read within moments; anything older is gone. */
const PAYLOAD_KEPT_MS = 10 * 60_000;
const CHECK_MS = 5000;
const CHECK_TIMEOUT_MS = 5000;
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5000;

/** A notification as it travels: the sending process, the event, its payload or the id of its stored payload. */
interface Wire {
  o: string;
  e: string;
  p?: unknown;
  r?: number;
}

/**
 * Events between processes over PostgreSQL's LISTEN/NOTIFY. Sending is a
 * `pg_notify` on the query thread's pool (the notifications sent in one
 * turn of the event loop in one statement), or inside the caller's
 * transaction (delivered only if it commits). Hearing is a LISTEN on a
 * session of its own, checked every few seconds; when it drops, the
 * transport reconnects with back-off, listens again and asks for a resync
 * (what was sent meanwhile is lost). A process ignores its own
 * notifications: it delivered them already.
 *
 * Hand-written rather than pg-listen: that package's reconnect never runs
 * its LISTEN again and gives up after 3 s of outage.
 */
export class PgNotifyTransport implements EventTransport {
  /** This process's id in notifications. */
  readonly origin = randomBytes(8).toString('hex');
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #channel: string;
  readonly #checkMs: number;
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #session: pg.Client | undefined;
  readonly #receivers = new Set<TransportReceiver>();
  /** Deliveries in the order notifications came (a stored payload is read first). */
  #delivery: Promise<void> = Promise.resolve();
  /** Notifications sent outside a transaction: one statement per turn of the event loop (under load, many answers end in one). */
  readonly #outgoing = new TurnBatch<TransportMessage>((messages) => this.#sendTurn(messages));
  /** How every notification this process sends begins (#text): its own come back to it, and are dropped unread. */
  readonly #ownPrefix = `{"o":${JSON.stringify(this.origin)},`;

  constructor(options: { database: Database; clock: Clock; logger: Logger; checkMs?: number }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#checkMs = options.checkMs ?? CHECK_MS;
    // Notifications are per database; each schema (an installation, a test suite) gets its channel.
    const schema = options.database.sharedAs?.schema;
    const channel = schema ? `concierge_events_${schema}` : 'concierge_events';
    // A channel name is an identifier: at most 63 bytes.
    this.#channel = channel.length <= 63 ? channel : `concierge_events_${createHash('sha256').update(schema!).digest('hex').slice(0, 40)}`;
  }

  send(message: TransportMessage, db?: Db): Promise<void> {
    return db ? this.#sendWithin(db, [message]) : this.#outgoing.add(message);
  }

  /** A turn's notifications: on the query thread (sendNotifications), unless one must be stored first. */
  async #sendTurn(messages: TransportMessage[]): Promise<void> {
    const texts = messages.map((message) => this.#text(message));
    if (texts.some(tooBig)) return this.#sendWithin(this.#database.db, messages, texts);
    await queries.sendNotifications(this.#database, { channel: this.#channel, payloads: texts });
  }

  /** Sends messages in order; one too big for a notification is stored first and sent as its id. */
  async #sendWithin(db: Db, messages: TransportMessage[], texts = messages.map((message) => this.#text(message))): Promise<void> {
    const sent: string[] = [];
    for (const [index, message] of messages.entries()) {
      let text = texts[index]!;
      if (tooBig(text)) {
        const now = this.#clock.now();
        const id = await queries.insertEventPayload(db, JSON.stringify(message.payload ?? null), now.toISOString());
        await queries.deleteEventPayloadsBefore(db, new Date(now.getTime() - PAYLOAD_KEPT_MS).toISOString());
        text = JSON.stringify({ o: this.origin, e: message.event, r: id } satisfies Wire);
      }
      sent.push(text);
    }
    await queries.notifyAll(db, this.#channel, sent);
  }

  /** A message as a notification's text: its origin first, so that this process can tell its own without parsing them (#received). */
  #text(message: TransportMessage): string {
    return JSON.stringify({ o: this.origin, e: message.event, p: message.payload } satisfies Wire);
  }

  receive(receiver: TransportReceiver): () => void {
    this.#receivers.add(receiver);
    return () => this.#receivers.delete(receiver);
  }

  start(): Promise<void> {
    if (this.#loop) return Promise.resolve();
    const stop = new AbortController();
    this.#stop = stop;
    let firstTryDone!: () => void;
    const firstTry = new Promise<void>((resolve) => (firstTryDone = resolve));
    this.#loop = (async () => {
      let delay = RECONNECT_MIN_MS;
      let connectedBefore = false;
      while (!stop.signal.aborted) {
        try {
          const session = await openSession(this.#database, 'concierge events');
          this.#session = session;
          session.on('notification', (notification) => this.#received(notification.payload));
          await queryWithin(session, `listen "${this.#channel}"`, [], CHECK_TIMEOUT_MS);
          delay = RECONNECT_MIN_MS;
          if (connectedBefore) {
            this.#logger.info('listening to the other processes again');
            for (const receiver of this.#receivers) this.#tell(() => receiver.resync?.());
          }
          connectedBefore = true;
          firstTryDone();
          await this.#watch(session, stop.signal);
        } catch (error) {
          if (!stop.signal.aborted) this.#logger.warn({ err: error, retryInMs: delay }, 'lost the connection that hears the other processes; reconnecting');
        } finally {
          if (this.#session) closeSession(this.#session);
          this.#session = undefined;
        }
        firstTryDone();
        await this.#clock.sleep(delay, stop.signal).catch(() => {});
        delay = Math.min(RECONNECT_MAX_MS, delay * 2);
      }
    })();
    return firstTry;
  }

  async stop(): Promise<void> {
    this.#stop?.abort();
    await this.#loop;
    this.#loop = undefined;
    await this.#delivery;
  }

  /** Resolves when stopping; throws when the session fails (an error, its end, or no answer to a check). */
  #watch(session: pg.Client, stop: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (error?: Error) => {
        clearTimeout(timer);
        session.off('error', onError);
        session.off('end', onEnd);
        stop.removeEventListener('abort', onStop);
        if (error) reject(error);
        else resolve();
      };
      const onError = (error: Error) => finish(error);
      const onEnd = () => finish(new Error('the connection ended'));
      const onStop = () => finish();
      const check = () => {
        timer = setTimeout(() => {
          pingSession(session, CHECK_TIMEOUT_MS).then(
            () => {
              if (!stop.aborted) check();
            },
            (error: Error) => finish(error),
          );
        }, this.#checkMs);
        timer.unref();
      };
      session.on('error', onError);
      session.on('end', onEnd);
      stop.addEventListener('abort', onStop, { once: true });
      check();
    });
  }

  #received(text: string | undefined): void {
    if (text?.startsWith(this.#ownPrefix)) return;
    let wire: Wire;
    try {
      wire = JSON.parse(text ?? '') as Wire;
    } catch {
      this.#logger.warn({ text }, 'ignored a notification that is not an event');
      return;
    }
    if (wire.o === this.origin) return;
    this.#delivery = this.#delivery.then(async () => {
      let message: TransportMessage;
      try {
        message = { event: wire.e, payload: wire.r === undefined ? wire.p : await this.#stored(wire.r) };
      } catch (error) {
        this.#logger.error({ err: error, event: wire.e }, 'could not take an event from another process');
        return;
      }
      for (const receiver of this.#receivers) this.#tell(() => receiver.message(message));
    });
  }

  #tell(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.#logger.error({ err: error }, 'a receiver of events from other processes failed');
    }
  }

  async #stored(id: number): Promise<unknown> {
    const text = await queries.findEventPayload(this.#database.db, id);
    if (text === undefined) throw new Error(`the stored payload ${id} is gone`);
    return JSON.parse(text);
  }
}
