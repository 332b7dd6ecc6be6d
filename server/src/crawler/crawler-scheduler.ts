import { Cron } from 'croner';
import type { Logger } from 'pino';
import type { ConfigService } from '../config/config.service.ts';
import type { CrawlerService } from './crawler.service.ts';

/**
 * Runs the crawler on the runtime configuration's `crawler_schedule` (cron
 * text) and re-schedules at once when that field is edited. `start()` also
 * runs it once, so a fresh start has the schedule without waiting for the
 * first tick (an unchanged schedule is skipped cheaply).
 */
export class CrawlerScheduler {
  readonly #crawler: CrawlerService;
  readonly #config: ConfigService;
  readonly #logger: Logger;
  #job: Cron | undefined;
  #pattern: string | undefined;
  #unsubscribe: (() => void) | undefined;
  #initialRun: Promise<void> | undefined;

  constructor(options: { crawler: CrawlerService; config: ConfigService; logger: Logger }) {
    this.#crawler = options.crawler;
    this.#config = options.config;
    this.#logger = options.logger;
  }

  start(options: { runNow?: boolean } = {}): void {
    this.#schedule(this.#config.get().crawler_schedule);
    this.#unsubscribe = this.#config.onChange(({ config }) => this.#schedule(config.crawler_schedule));
    if (options.runNow ?? true) this.#initialRun = this.#crawler.runScheduled();
  }

  /** When the next scheduled run is, for the Status screen. */
  nextRun(): Date | null {
    return this.#job?.nextRun() ?? null;
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    this.#job?.stop();
    this.#job = undefined;
    await this.#initialRun;
  }

  #schedule(pattern: string): void {
    if (pattern === this.#pattern && this.#job) return;
    this.#job?.stop();
    this.#pattern = pattern;
    try {
      this.#job = new Cron(pattern, { protect: true, catch: (error) => this.#logger.error({ err: error }, 'crawler tick failed') }, () =>
        this.#crawler.runScheduled(),
      );
      this.#logger.info({ pattern, next: this.#job.nextRun()?.toISOString() }, 'schedule crawler scheduled');
    } catch (error) {
      // The config service validates the pattern; this guards against a row edited by hand.
      this.#job = undefined;
      this.#logger.error({ err: error, pattern }, 'invalid crawler_schedule; the crawler runs only when triggered');
    }
  }
}
