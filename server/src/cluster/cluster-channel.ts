import type { Logger } from 'pino';
import type { EventTransport } from '../events.ts';

/**
 * Publish and subscribe of JSON payloads by topic, heard by every process:
 * this process's subscribers at once and in order, the other processes'
 * through the transport (PostgreSQL's LISTEN/NOTIFY). Without a transport
 * (SQLite, one process) it is an in-process channel. Its shape is that of
 * the Watch feed's shared events (publish, subscribe, close), so they are
 * backed by PostgreSQL by constructing this instead of the in-process one.
 *
 * Topics travel as `<namespace>:<topic>`, apart from the event bus's
 * events and other channels on the same transport. The transport is
 * started and stopped with the event bus (`deps.events`).
 */
export class ClusterChannel<M extends { [topic: string]: unknown }> {
  readonly #namespace: string;
  readonly #transport: EventTransport | undefined;
  readonly #logger: Logger | undefined;
  readonly #listeners = new Map<string, Set<(payload: never) => void>>();
  readonly #stopReceiving: () => void;

  constructor(options: { namespace: string; transport?: EventTransport; logger?: Logger }) {
    this.#namespace = options.namespace;
    this.#transport = options.transport;
    this.#logger = options.logger;
    const prefix = `${this.#namespace}:`;
    this.#stopReceiving =
      this.#transport?.receive({
        message: ({ event, payload }) => {
          if (event.startsWith(prefix)) this.#deliver(event.slice(prefix.length), payload);
        },
      }) ?? (() => {});
  }

  publish<K extends keyof M & string>(topic: K, payload: M[K]): void {
    this.#deliver(topic, payload);
    this.#transport
      ?.send({ event: `${this.#namespace}:${topic}`, payload })
      .catch((error: unknown) => this.#logger?.error({ err: error, topic }, 'could not send an event to the other processes'));
  }

  /** Returns the unsubscribe function. */
  subscribe<K extends keyof M & string>(topic: K, listener: (payload: M[K]) => void): () => void {
    let listeners = this.#listeners.get(topic);
    if (!listeners) this.#listeners.set(topic, (listeners = new Set()));
    listeners.add(listener as (payload: never) => void);
    return () => listeners.delete(listener as (payload: never) => void);
  }

  async close(): Promise<void> {
    this.#stopReceiving();
    this.#listeners.clear();
  }

  #deliver(topic: string, payload: unknown): void {
    for (const listener of this.#listeners.get(topic) ?? []) {
      try {
        (listener as (payload: unknown) => void)(payload);
      } catch (error) {
        // A subscriber's failure is its own; the publisher carries on.
        this.#logger?.error({ err: error, topic }, 'event listener failed');
      }
    }
  }
}
