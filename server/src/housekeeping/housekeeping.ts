import type { Logger } from 'pino';
import type { AuthService } from '../auth/auth.service.ts';
import type { ChatService } from '../chat/chat.service.ts';

const HOUR = 60 * 60_000;

/**
 * Hourly clean-up of rows nobody needs any more: expired admin sessions,
 * stale sign-in throttle windows, spent verification tokens and rate-limit
 * windows past their retention. Chat sessions, messages and call logs are
 * the console's record and are kept. Safe to run in several processes at
 * once (each pass only deletes what is past its cut-off).
 */
export class Housekeeping {
  readonly #auth: AuthService;
  readonly #chat: ChatService;
  readonly #logger: Logger;
  readonly #everyMs: number;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<void> | undefined;

  constructor(options: { auth: AuthService; chat: ChatService; logger: Logger; everyMs?: number }) {
    this.#auth = options.auth;
    this.#chat = options.chat;
    this.#logger = options.logger;
    this.#everyMs = options.everyMs ?? HOUR;
  }

  /** Runs a pass now and then every hour. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.runOnce(), this.#everyMs);
    this.#timer.unref();
    void this.runOnce();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#pass;
  }

  /** One pass; errors are logged, never thrown (the next pass tries again). */
  runOnce(): Promise<void> {
    this.#pass ??= (async () => {
      try {
        await this.#auth.cleanup();
        const removed = await this.#chat.cleanup();
        this.#logger.debug(removed, 'housekeeping pass done');
      } catch (error) {
        this.#logger.error({ err: error }, 'housekeeping pass failed');
      } finally {
        this.#pass = undefined;
      }
    })();
    return this.#pass;
  }
}
