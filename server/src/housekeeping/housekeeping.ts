import type { RuntimeConfig } from '@concierge/contract';
import type { Logger } from 'pino';
import type { AuthService } from '../auth/auth.service.ts';
import type { ChatService } from '../chat/chat.service.ts';
import type { Clock } from '../clock.ts';
import { findSetting, saveSetting } from '../db/app-settings.ts';
import type { Database } from '../db/database.ts';
import * as retention from './retention.queries.ts';

const HOUR = 60 * 60_000;
const DAY = 24 * HOUR;
const LAST_PASS_SETTING = 'housekeeping_last_pass';

/** What one retention pass removed, for the Status screen. */
export interface RetentionPass {
  at: string;
  messages_deleted: number;
  sessions_deleted: number;
  client_ip_rows_scrubbed: number;
  call_bodies_cleared: number;
  crawler_events_deleted: number;
}

/** The retention in force and the last pass (any process's), as the Status screen shows them. */
export interface RetentionStatus {
  messages_days: number;
  client_ip_days: number;
  call_bodies_days: number;
  crawler_runs_kept: number;
  last_pass: RetentionPass | null;
}

export interface HousekeepingOptions {
  auth: AuthService;
  chat: ChatService;
  database: Database;
  config: () => RuntimeConfig;
  clock: Clock;
  logger: Logger;
  everyMs?: number;
}

/**
 * Hourly clean-up: expired admin sessions, stale sign-in throttle windows,
 * spent verification tokens and old rate-limit windows; then the retention
 * of the runtime configuration (public chat messages, client IP addresses,
 * provider call bodies, old crawler runs' events). The Status figures are
 * counters and do not move. Safe to run in several processes at once (each
 * pass only deletes or clears what is past its cut-off).
 */
export class Housekeeping {
  readonly #options: HousekeepingOptions;
  readonly #everyMs: number;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<void> | undefined;

  constructor(options: HousekeepingOptions) {
    this.#options = options;
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
      const { auth, chat, logger } = this.#options;
      try {
        await auth.cleanup();
        const removed = await chat.cleanup();
        const kept = await this.#applyRetention();
        logger.debug({ ...removed, ...kept }, 'housekeeping pass done');
      } catch (error) {
        logger.error({ err: error }, 'housekeeping pass failed');
      } finally {
        this.#pass = undefined;
      }
    })();
    return this.#pass;
  }

  /** The retention in force and what the last pass removed. */
  async retentionStatus(): Promise<RetentionStatus> {
    const config = this.#options.config();
    const stored = await findSetting(this.#options.database.db, LAST_PASS_SETTING);
    return {
      messages_days: config.retention_messages_days,
      client_ip_days: config.retention_client_ip_days,
      call_bodies_days: config.retention_call_bodies_days,
      crawler_runs_kept: config.retention_crawler_runs,
      last_pass: stored ? (JSON.parse(stored.value) as RetentionPass) : null,
    };
  }

  async #applyRetention(): Promise<RetentionPass> {
    const { database, clock } = this.#options;
    const config = this.#options.config();
    const db = database.db;
    const now = clock.now();
    const before = (days: number) => new Date(now.getTime() - days * DAY).toISOString();
    const pass: RetentionPass = {
      at: now.toISOString(),
      messages_deleted: 0,
      sessions_deleted: 0,
      client_ip_rows_scrubbed: 0,
      call_bodies_cleared: 0,
      crawler_events_deleted: 0,
    };
    // Statement by statement, no long transaction: each is complete on its own and a pass cut short is
    // finished by the next, while live traffic (recent rows only) never waits on a lock held for the whole pass.
    if (config.retention_messages_days > 0) {
      const removed = await retention.deleteOldMessages(db, before(config.retention_messages_days));
      pass.messages_deleted = removed.messages;
      pass.sessions_deleted = removed.sessions;
    }
    if (config.retention_client_ip_days > 0) pass.client_ip_rows_scrubbed = await retention.removeOldClientIps(db, before(config.retention_client_ip_days));
    if (config.retention_call_bodies_days > 0) pass.call_bodies_cleared = await retention.removeOldCallBodies(db, before(config.retention_call_bodies_days));
    if (config.retention_crawler_runs > 0) pass.crawler_events_deleted = await retention.deleteOldCrawlerEvents(db, config.retention_crawler_runs);
    await saveSetting(db, LAST_PASS_SETTING, JSON.stringify(pass), pass.at);
    return pass;
  }
}
