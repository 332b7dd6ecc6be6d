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
import type { StatusCounters } from './status-counters.ts';
import * as queries from './status.queries.ts';

/** Provider call counts and token totals of every process (SPEC §3 "Bot status" → openai). */
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

const PROVIDER_CALLS = ['create_thread', 'create_message', 'create_run', 'retrieve_run', 'list_message'] as const;
const TOKEN_COUNTS = ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const;

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
  /** The shared running totals. */
  counters: StatusCounters;
}

/**
 * The bot's state and figures for the Status screen and /metrics: pause and
 * resume, running totals of every process (API requests, provider calls,
 * answers' tokens, pauses; status_counters) and the public chat figures,
 * all from the database, so every process behind a load balancer shows the
 * same. Only the uptime is this process's.
 */
export class StatusService {
  readonly #options: StatusOptions;
  readonly #startedAt: number;
  readonly #counters: StatusCounters;

  constructor(options: StatusOptions, events: EventBus) {
    this.#options = options;
    this.#counters = options.counters;
    this.#startedAt = options.clock.now().getTime();
    // Each process counts what it did itself; the totals add up in the database.
    events.subscribe(
      'answer',
      (answer) => {
        if (answer.run_status) this.#counters.add(`openai:run_status:${answer.run_status}`);
        for (const name of TOKEN_COUNTS) this.#counters.add(`openai:${name}`, answer[name]);
      },
      { thisProcess: true },
    );
    events.subscribe(
      'provider_call',
      (step) => {
        const key = step === 'list_messages' ? 'list_message' : step;
        if ((PROVIDER_CALLS as readonly string[]).includes(key)) this.#counters.add(`openai:${key}`);
      },
      { thisProcess: true },
    );
  }

  countRequest(route: string): void {
    this.#counters.add(`api:${route}`);
  }

  /** SPEC §4: pausing a paused bot is a 409, as is resuming a running one. */
  async pause(): Promise<void> {
    if (this.#options.config.get().paused) throw conflict('bot already paused', 'already_paused');
    await this.#options.config.update({ paused: true });
    this.#counters.add('pause_count');
  }

  async resume(): Promise<void> {
    if (!this.#options.config.get().paused) throw conflict('bot already running', 'already_running');
    await this.#options.config.update({ paused: false });
    this.#counters.add('resume_count');
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
    const [crawlerCounters, usersSeen, queued, reports, counters, discord] = await Promise.all([
      crawler.counters(true),
      this.#options.users.count(),
      this.#options.askCommands.queued(),
      this.#options.users.reportsByType(),
      this.#counters.read(),
      this.#options.discord?.figures() ?? null,
      this.#options.budget.refresh(),
    ]);
    const counter = (name: string) => counters.get(name) ?? 0;
    const withPrefix = (prefix: string) =>
      Object.fromEntries(
        [...counters]
          .filter(([name, value]) => name.startsWith(prefix) && value !== 0)
          .map(([name, value]) => [name.slice(prefix.length), value] as const)
          .sort(([a], [b]) => a.localeCompare(b)),
      );
    const openai: ProviderCounters = {
      ...(Object.fromEntries(PROVIDER_CALLS.map((name) => [name, counter(`openai:${name}`)])) as Record<(typeof PROVIDER_CALLS)[number], number>),
      run_status: withPrefix('openai:run_status:'),
      ...(Object.fromEntries(TOKEN_COUNTS.map((name) => [name, counter(`openai:${name}`)])) as Record<(typeof TOKEN_COUNTS)[number], number>),
    };
    const warnings = [...(this.#options.warnings ?? [])];
    if (discord?.configured && discord.state === 'failed' && discord.reason) warnings.push(`Discord bot: ${discord.reason}`);
    return {
      paused: config.get().paused,
      warnings,
      pause_count: counter('pause_count'),
      resume_count: counter('resume_count'),
      discord: discord ?? { messages_handled: 0, connects: 0, disconnects: 0, configured: false, connected: false, state: 'off', reason: null, connected_at: null },
      openai,
      api_requests: withPrefix('api:'),
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
