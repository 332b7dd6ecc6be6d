import type { Logger } from 'pino';
import type { ScheduleChange } from './crawler/parse/diff.ts';
import type { Db } from './db/database.ts';

/**
 * One answered (or failed) question, from any front, as the Watch feed and
 * metrics see it. Public chat questions carry their session and message;
 * ask commands their id and the Discord user.
 */
export interface AnswerEvent {
  source: 'public_chat' | 'admin_chat' | 'discord';
  session_id: string | null;
  message_id: number | null;
  ask_command_id: number | null;
  user_id: string | null;
  username: string | null;
  global_name: string | null;
  interaction_id: string | null;
  context: string | null;
  /** A whisper: operators see it, public channels never do. */
  private: boolean;
  prompt: string;
  response: string | null;
  error: string | null;
  state: string;
  /** The last step the question reached (DESIGN §6); absent from an older process's events during a rolling upgrade. */
  step?: string | null;
  run_id: string | null;
  run_status: string | null;
  thread_id: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  processing_duration_ms: number;
  created_at: string;
}

/** How one provider call went, for the latency histograms. */
export interface ProviderCallTiming {
  duration_ms: number;
  failed: boolean;
}

/** One schedule check by the crawler. */
export interface CrawlerRunEvent {
  outcome: 'stored' | 'skipped' | 'held' | 'failed';
  duration_ms: number;
  /** What a stored run changed since the last good one (the bot announces moves and cancellations). */
  changes?: ScheduleChange[];
}

/** The day's token budget was found spent (published once per day, by one process). */
export interface BudgetExhaustedEvent {
  day: string;
  spent: number;
  budget: number;
  action: 'offline' | 'pause';
}

/** An admin session ended (signed out): its Watch connections close, in every process. */
export interface AdminSessionEndedEvent {
  /** admin_sessions.id: the hash of the cookie token, never the token. */
  session_id: string;
}

/** The runtime configuration row changed (in another process: read it again). */
export interface ConfigChangedEvent {
  hash: string;
}

interface Events {
  answer: [AnswerEvent];
  budget_exhausted: [BudgetExhaustedEvent];
  /** One call to the assistant provider, by SPEC step (create_thread, create_message, …). */
  provider_call: [step: string, timing: ProviderCallTiming];
  crawler_run: [CrawlerRunEvent];
  config_changed: [ConfigChangedEvent];
  admin_session_ended: [AdminSessionEndedEvent];
  /** An ask command joined the queue: the leader's worker looks at once. */
  ask_command_queued: [Record<string, never>];
}

export type EventName = keyof Events;

/**
 * Events every process hears (with several processes on PostgreSQL): an
 * answer reaches the Watch feed of every process, a spent budget the
 * leader's Discord bot, a queued command the leader's worker, a changed
 * configuration every process, a crawler run (a forced refresh runs where
 * it was pressed) the leader's bot and every process's time zone, an ended
 * admin session every process's Watch connections of it. Their
 * payload is one JSON value. Provider calls stay in their process (its
 * metrics).
 */
export const CLUSTER_EVENTS: ReadonlySet<EventName> = new Set<EventName>(['answer', 'budget_exhausted', 'config_changed', 'ask_command_queued', 'crawler_run', 'admin_session_ended']);

/** One event as it travels between processes. */
export interface TransportMessage {
  event: string;
  payload: unknown;
}

/** Who hears the other processes' events through a transport. */
export interface TransportReceiver {
  message(message: TransportMessage): void;
  /** The connection was lost and found again: events may have been missed meanwhile. */
  resync?(): void;
}

/**
 * Carries events to and from the other processes (PostgreSQL's
 * LISTEN/NOTIFY: cluster/pg-notify.ts). Generic: any JSON payload under any
 * name, for any number of receivers (the event bus, the Watch feed's
 * shared events: cluster/cluster-channel.ts).
 */
export interface EventTransport {
  /** Sends an event to every other process; inside `db` (an open transaction) when given, so it goes only if that commits. */
  send(message: TransportMessage, db?: Db): Promise<void>;
  /** Adds a receiver of the other processes' events; returns its removal. */
  receive(receiver: TransportReceiver): () => void;
  /** Starts hearing the other processes. Resolves once listening, or after a first failed try (it keeps trying). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface Subscription {
  listener: (...payload: unknown[]) => void;
  /** Only events published by this process. */
  thisProcess: boolean;
}

/**
 * The event bus: services publish what happened, other parts (the Watch
 * feed, metrics, the Discord bot) subscribe. A listener that throws is
 * logged, never breaks the publisher.
 *
 * With a transport (several processes on PostgreSQL), the events of
 * CLUSTER_EVENTS published in one process reach the subscribers of every
 * process: `subscribe()` hears them from everywhere, `subscribe(…,
 * { thisProcess: true })` only this process's own (what a per-process
 * counter wants). `announce()` tells only the other processes, inside the
 * transaction that wrote what the event is about.
 */
export class EventBus {
  readonly #subscriptions = new Map<EventName, Set<Subscription>>();
  readonly #resync = new Set<() => void>();
  readonly #transport: EventTransport | undefined;
  readonly #logger: Logger | undefined;

  constructor(options: { transport?: EventTransport; logger?: Logger } = {}) {
    this.#transport = options.transport;
    this.#logger = options.logger;
    this.#transport?.receive({
      message: ({ event, payload }) => {
        if (!CLUSTER_EVENTS.has(event as EventName)) return; // another channel's, or a newer version's during a rolling upgrade
        this.#deliver(event as EventName, [payload], true);
      },
      resync: () => {
        for (const listener of this.#resync) this.#call(listener, [], 'resync');
      },
    });
  }

  publish<K extends EventName>(event: K, ...payload: Events[K]): void {
    this.#deliver(event, payload, false);
    if (this.#transport && CLUSTER_EVENTS.has(event)) {
      this.#transport.send({ event, payload: payload[0] }).catch((error: unknown) => this.#logger?.error({ err: error, event }, 'could not send an event to the other processes'));
    }
  }

  /** Tells the other processes (not this one's subscribers), inside `db` when it is a transaction. No-op with one process. */
  async announce<K extends EventName>(db: Db, event: K, ...payload: Events[K]): Promise<void> {
    if (!CLUSTER_EVENTS.has(event)) throw new Error(`${event} is not an event other processes hear`);
    await this.#transport?.send({ event, payload: payload[0] }, db);
  }

  subscribe<K extends EventName>(event: K, listener: (...payload: Events[K]) => void, options: { thisProcess?: boolean } = {}): () => void {
    let subscriptions = this.#subscriptions.get(event);
    if (!subscriptions) this.#subscriptions.set(event, (subscriptions = new Set()));
    const subscription: Subscription = { listener: listener as unknown as Subscription['listener'], thisProcess: options.thisProcess ?? false };
    subscriptions.add(subscription);
    return () => subscriptions.delete(subscription);
  }

  /** Called after the connection to the other processes was lost and found again: state they changed meanwhile should be read again. */
  onResync(listener: () => void): () => void {
    this.#resync.add(listener);
    return () => this.#resync.delete(listener);
  }

  /** Starts hearing the other processes, for the bus and every other receiver of its transport (no-op with one process). */
  async start(): Promise<void> {
    await this.#transport?.start();
  }

  async stop(): Promise<void> {
    await this.#transport?.stop();
  }

  #deliver(event: EventName, payload: unknown[], remote: boolean): void {
    for (const subscription of this.#subscriptions.get(event) ?? []) {
      if (remote && subscription.thisProcess) continue;
      this.#call(subscription.listener, payload, event);
    }
  }

  #call(listener: (...args: unknown[]) => void, payload: unknown[], event: string): void {
    try {
      listener(...payload);
    } catch (error) {
      // A subscriber's failure is its own; the publisher carries on.
      this.#logger?.error({ err: error, event }, 'event listener failed');
    }
  }
}
