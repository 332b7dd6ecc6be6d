import { EventEmitter } from 'node:events';
import type { ScheduleChange } from './crawler/parse/diff.ts';

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

interface Events {
  answer: [AnswerEvent];
  budget_exhausted: [BudgetExhaustedEvent];
  /** One call to the assistant provider, by SPEC step (create_thread, create_message, …). */
  provider_call: [step: string, timing: ProviderCallTiming];
  crawler_run: [CrawlerRunEvent];
}

/**
 * The in-process event bus: services publish what happened, other parts
 * (the Watch feed, metrics) subscribe. A listener that throws is logged by
 * the publisher's caller, never breaks the publisher.
 */
export class EventBus {
  readonly #emitter = new EventEmitter<Events>();

  constructor() {
    this.#emitter.setMaxListeners(100);
  }

  publish<K extends keyof Events>(event: K, ...payload: Events[K]): void {
    for (const listener of this.#emitter.listeners(event)) {
      try {
        (listener as (...args: Events[K]) => void)(...payload);
      } catch {
        // A subscriber's failure is its own; the publisher carries on.
      }
    }
  }

  subscribe<K extends keyof Events>(event: K, listener: (...payload: Events[K]) => void): () => void {
    this.#emitter.on(event, listener as never);
    return () => this.#emitter.off(event, listener as never);
  }
}
