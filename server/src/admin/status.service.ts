import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { AskCommandService } from '../ask/ask-commands.service.ts';
import type { CrawlerService } from '../crawler/crawler.service.ts';
import type { UsersService } from '../users/users.service.ts';
import type { TokenBudget } from '../ask/token-budget.ts';
import type { DiscordFigures } from '../discord/discord-bot.ts';
import type { Database } from '../db/database.ts';
import { conflict } from '../errors.ts';
import type { EventBus } from '../events.ts';
import type { RetentionStatus } from '../housekeeping/housekeeping.ts';
import { instantOf, zonedParts } from '../time-zone.ts';
import * as queries from './status.queries.ts';

/** Provider call counts and token totals since the process started (SPEC §3 "Bot status" → openai). */
export interface ProviderCounters {
  create_thread: number;
  create_message: number;
  create_run: number;
  retrieve_run: number;
  list_message: number;
  run_status: Record<string, number>;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface StatusOptions {
  database: Database;
  clock: Clock;
  config: ConfigService;
  crawler: CrawlerService;
  users: UsersService;
  askCommands: AskCommandService;
  budget: TokenBudget;
  /** The Discord bot's figures (kept in the database, so every process shows the same). */
  discord?: { figures(): Promise<DiscordFigures> };
  /** The retention in force and the last clean-up (the housekeeping). */
  retention: { retentionStatus(): Promise<RetentionStatus> };
  timeZone: () => string;
  /** Set-up problems the Status screen shows as warnings. */
  warnings?: string[];
}

/**
 * The bot's state and figures for the Status screen and /metrics: pause and
 * resume, counters kept since start (API requests, provider calls, answers)
 * and the public chat figures from the database.
 */
export class StatusService {
  readonly #options: StatusOptions;
  readonly #startedAt: number;
  readonly apiRequests = new Map<string, number>();
  readonly provider: ProviderCounters = {
    create_thread: 0,
    create_message: 0,
    create_run: 0,
    retrieve_run: 0,
    list_message: 0,
    run_status: {},
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
  };
  #pauseCount = 0;
  #resumeCount = 0;

  constructor(options: StatusOptions, events: EventBus) {
    this.#options = options;
    this.#startedAt = options.clock.now().getTime();
    events.subscribe('answer', (answer) => {
      if (answer.run_status) this.provider.run_status[answer.run_status] = (this.provider.run_status[answer.run_status] ?? 0) + 1;
      this.provider.prompt_tokens += answer.prompt_tokens;
      this.provider.completion_tokens += answer.completion_tokens;
      this.provider.total_tokens += answer.total_tokens;
    });
    events.subscribe('provider_call', (step) => {
      const key = step === 'list_messages' ? 'list_message' : step;
      if (key in this.provider && key !== 'run_status') (this.provider as unknown as Record<string, number>)[key]! += 1;
    });
  }

  countRequest(route: string): void {
    this.apiRequests.set(route, (this.apiRequests.get(route) ?? 0) + 1);
  }

  /** SPEC §4: pausing a paused bot is a 409, as is resuming a running one. */
  async pause(): Promise<void> {
    if (this.#options.config.get().paused) throw conflict('bot already paused', 'already_paused');
    await this.#options.config.update({ paused: true });
    this.#pauseCount++;
  }

  async resume(): Promise<void> {
    if (!this.#options.config.get().paused) throw conflict('bot already running', 'already_running');
    await this.#options.config.update({ paused: false });
    this.#resumeCount++;
  }

  async clearThreads(): Promise<number> {
    const result = await queries.clearThreads(this.#options.database, this.#options.clock.now().toISOString());
    return Number(result.numUpdatedRows);
  }

  uptimeText(): string {
    let seconds = Math.floor((this.#options.clock.now().getTime() - this.#startedAt) / 1000);
    const days = Math.floor(seconds / 86_400);
    seconds -= days * 86_400;
    const hours = Math.floor(seconds / 3600);
    seconds -= hours * 3600;
    const minutes = Math.floor(seconds / 60);
    seconds -= minutes * 60;
    return `${days ? `${days}d` : ''}${hours ? `${hours}h` : ''}${minutes ? `${minutes}m` : ''}${seconds}s`;
  }

  async status() {
    const { clock, config, crawler, timeZone } = this.#options;
    const now = clock.now();
    const zone = timeZone();
    const today = zonedParts(now, zone);
    const todayStart = instantOf({ year: today.year, month: today.month, day: today.day }, zone).toISOString();
    const [crawlerCounters, usersSeen, queued, reports, discord] = await Promise.all([
      crawler.counters(true),
      this.#options.users.count(),
      this.#options.askCommands.queued(),
      this.#options.users.reportsByType(),
      this.#options.discord?.figures() ?? null,
      this.#options.budget.refresh(),
    ]);
    const warnings = [...(this.#options.warnings ?? [])];
    if (discord?.configured && discord.state === 'failed' && discord.reason) warnings.push(`Discord bot: ${discord.reason}`);
    return {
      paused: config.get().paused,
      warnings,
      pause_count: this.#pauseCount,
      resume_count: this.#resumeCount,
      discord: discord ?? { messages_handled: 0, connects: 0, disconnects: 0, configured: false, connected: false, state: 'off', reason: null, connected_at: null },
      openai: { ...this.provider, run_status: { ...this.provider.run_status } },
      api_requests: Object.fromEntries([...this.apiRequests.entries()].sort(([a], [b]) => a.localeCompare(b))),
      current_requests_queued: queued,
      uptime: this.uptimeText(),
      reports,
      token_budget: this.#options.budget.state(),
      users_seen: usersSeen,
      crawler: {
        enabled: crawlerCounters.enabled,
        last_run: crawlerCounters.last_run,
        runs_triggered: crawlerCounters.runs_triggered,
        last_success_at: crawlerCounters.last_success_at,
        last_failure_at: crawlerCounters.last_failure_at,
        consecutive_failures: crawlerCounters.consecutive_failures,
        last_error: crawlerCounters.last_error,
        held_run: crawlerCounters.held_run,
      },
      public_chat: await queries.publicChatFigures(this.#options.database, now.toISOString(), todayStart),
      retention: await this.#options.retention.retentionStatus(),
    };
  }
}

export type BotStatus = Awaited<ReturnType<StatusService['status']>>;
