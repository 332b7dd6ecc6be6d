import { LIMIT_24H_FACTOR, type HistoryItem, type User, type UserPatch, type UserStats, type WindowUsage } from '@concierge/contract';
import type { RunOverrides } from '../assistant/provider.ts';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database } from '../db/database.ts';
import { invalidField, notFound } from '../errors.ts';
import { quotaState, slidingWindow } from '../limits/limits.ts';
import * as queries from './users.queries.ts';

export const WINDOW_6H_MS = 6 * 3_600_000;
export const WINDOW_24H_MS = 24 * 3_600_000;

/** Someone seen on Discord, as the bot reports them. */
export interface SeenUser {
  id: string;
  username: string;
  global_name: string | null;
  bot?: boolean;
  /** Has the donor role (config donated_role_id). */
  donated?: boolean;
}

/** Where a user stands against their limits right now. */
export interface Quota {
  limit6h: number;
  limit24h: number;
  /** Commands that count against each window (billable, plus those still pending). */
  used6h: number;
  used24h: number;
  available: number;
  /** When the next command frees up, while none is available (ISO). */
  availableAt: string | null;
}

const EMPTY_WINDOW: queries.WindowFigures = {
  attempted: 0,
  billable: 0,
  pending: 0,
  oldest_counted: null,
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  whisper_count: 0,
  thread_count: 0,
  state_counts: {},
};

/**
 * The Discord side's users (SPEC §3 "User"): created on first sight, their
 * flags and per-user settings edited by operators, and their usage against
 * the 6 h and 24 h limits, computed for a whole page in one grouped query.
 */
export class UsersService {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #config: ConfigService;

  constructor(options: { database: Database; clock: Clock; config: ConfigService }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#config = options.config;
  }

  get #db() {
    return this.#database.db;
  }

  /** Records a user seen on Discord; `created` is true the first time. */
  async seen(user: SeenUser): Promise<{ user: queries.UserRow; created: boolean }> {
    return queries.upsertSeenUser(
      this.#db,
      { id: user.id, username: user.username, global_name: user.global_name, bot: user.bot ?? false, donated: user.donated ?? false },
      this.#clock.now().toISOString(),
    );
  }

  /** Feedback on ask command answers, by type (the Status screen's reports). */
  reportsByType(): Promise<Record<string, number>> {
    return queries.reportsByType(this.#db);
  }

  /** Users seen so far (the Status screen's users_seen). */
  count(): Promise<number> {
    return queries.countUsers(this.#db);
  }

  find(id: string): Promise<queries.UserRow | undefined> {
    return queries.findUser(this.#db, id);
  }

  async get(id: string): Promise<queries.UserRow> {
    const user = await this.find(id);
    if (!user) throw notFound(`No user ${id}`, 'user_not_found');
    return user;
  }

  /** A page of users by username, with the total and (by default) their stats. */
  async list(page: { order: 'asc' | 'desc'; limit: number; offset: number; include_stats: boolean }): Promise<{ users: User[]; total: number }> {
    const [rows, total] = await Promise.all([queries.listUsers(this.#db, page), queries.countUsers(this.#db)]);
    return { users: page.include_stats ? await this.#withStats(rows) : rows.map(present), total };
  }

  /** One user with their stats. */
  async one(id: string): Promise<User> {
    const [user] = await this.#withStats([await this.get(id)]);
    return user!;
  }

  /** Applies an operator's edit (only the fields sent); the user with their stats. */
  async update(id: string, patch: UserPatch): Promise<User> {
    const user = await this.get(id);
    const merged = { ...user, ...patch };
    const limit6h = merged.request_limit_6h ?? this.#config.get().user_ask_command_limit_6h;
    if (merged.request_limit_24h !== null && merged.request_limit_24h < limit6h) {
      throw invalidField('request_limit_24h' in patch ? 'request_limit_24h' : 'request_limit_6h', 'request_limit_24h must not be below the 6 h limit');
    }
    if (Object.keys(patch).length > 0) await queries.updateUser(this.#db, id, { ...patch, updated_at: this.#clock.now().toISOString() });
    return this.one(id);
  }

  /** /forget: the user's next question starts a new conversation. */
  async forget(id: string): Promise<void> {
    const updated = await queries.forgetThread(this.#db, id, this.#clock.now().toISOString());
    if (!updated) throw notFound(`No user ${id}`, 'user_not_found');
  }

  async setThread(id: string, threadId: string): Promise<void> {
    await queries.setUserThread(this.#db, id, threadId, this.#clock.now().toISOString());
  }

  /** The user's own settings, to override the global ones on their runs. */
  runOverrides(user: queries.UserRow): RunOverrides {
    return {
      additionalInstructions: user.assistant_additional_instructions,
      truncationType: user.openai_truncation_strategy_type,
      truncationLastMessages: user.openai_truncation_strategy_last_messages,
      maxCompletionTokens: user.openai_max_completion_tokens,
      maxPromptTokens: user.openai_max_prompt_tokens,
      pollInterval: user.assistant_poll_interval,
      maxPollInterval: user.assistant_max_poll_interval,
    };
  }

  /** Where the user stands against their limits now (commands still pending count). */
  async quota(user: queries.UserRow): Promise<Quota> {
    const usage = (await this.#usage([user.id])).get(user.id);
    return this.#quota(user, usage?.short ?? EMPTY_WINDOW, usage?.long ?? EMPTY_WINDOW);
  }

  /** The user's commands (SPEC §3 "History item"), with the votes on each answer. */
  async history(id: string, page: { sort: 'asc' | 'desc'; limit: number; offset: number; include_reports: boolean }): Promise<HistoryItem[]> {
    await this.get(id);
    const rows = await queries.userHistory(this.#db, id, page);
    const votes = await queries.feedbackOn(this.#db, rows.map((row) => row.ask_command_id));
    return rows.map((row) => {
      const mine = votes.filter((vote) => vote.ask_command_id === row.ask_command_id);
      const feedback: Record<string, number> = {};
      for (const vote of mine) feedback[vote.type] = (feedback[vote.type] ?? 0) + 1;
      return {
        ...row,
        feedback,
        ...(page.include_reports ? { reports: mine.map(({ ask_command_id: _, ...vote }) => vote) } : {}),
      };
    });
  }

  #limits(user: queries.UserRow): { limit6h: number; limit24h: number } {
    const limit6h = user.request_limit_6h ?? this.#config.get().user_ask_command_limit_6h;
    return { limit6h, limit24h: user.request_limit_24h ?? LIMIT_24H_FACTOR * limit6h };
  }

  #quota(user: queries.UserRow, short: queries.WindowFigures, long: queries.WindowFigures): Quota {
    const { limit6h, limit24h } = this.#limits(user);
    const windows = [
      quotaState(limit6h, short.billable + short.pending, short.oldest_counted, WINDOW_6H_MS),
      quotaState(limit24h, long.billable + long.pending, long.oldest_counted, WINDOW_24H_MS),
    ];
    const available = Math.min(...windows.map((window) => window.remaining));
    // With none left, the next command frees up once every exhausted window has let one go.
    const freesAt = windows.filter((window) => window.remaining === 0).map((window) => window.frees_at ?? '');
    return {
      limit6h,
      limit24h,
      used6h: windows[0]!.used,
      used24h: windows[1]!.used,
      available,
      availableAt: available > 0 ? null : freesAt.sort().at(-1) || null,
    };
  }

  #usage(userIds: string[]) {
    const now = this.#clock.now();
    return queries.usageByUser(this.#db, userIds, {
      short: slidingWindow(now, WINDOW_6H_MS).start.toISOString(),
      long: slidingWindow(now, WINDOW_24H_MS).start.toISOString(),
    });
  }

  /** Stats for a page of users: one grouped query for usage, one for reports, whatever the page size. */
  async #withStats(rows: queries.UserRow[]): Promise<User[]> {
    const ids = rows.map((row) => row.id);
    const [usage, reports] = await Promise.all([this.#usage(ids), queries.reportsByUser(this.#db, ids)]);
    return rows.map((row) => {
      const short = usage.get(row.id)?.short ?? EMPTY_WINDOW;
      const long = usage.get(row.id)?.long ?? EMPTY_WINDOW;
      const quota = this.#quota(row, short, long);
      const window = (figures: queries.WindowFigures, limit: number): WindowUsage => ({
        limit,
        attempted: figures.attempted,
        billable: figures.billable,
        pending: figures.pending,
        remaining: Math.max(0, limit - figures.billable - figures.pending),
        prompt_tokens: figures.prompt_tokens,
        completion_tokens: figures.completion_tokens,
        total_tokens: figures.total_tokens,
        state_counts: figures.state_counts,
        whisper_count: figures.whisper_count,
        thread_count: figures.thread_count,
      });
      const stats: UserStats = {
        ask_command_usage: {
          '24h': window(long, quota.limit24h),
          '6h': window(short, quota.limit6h),
          commands_available: quota.available,
          commands_available_at: quota.availableAt,
        },
        forget_commands: row.forget_count,
        reports: reports.get(row.id) ?? {},
      };
      return {
        ...present(row),
        stats,
        billable_6h: short.billable,
        attempted_6h: short.attempted,
        limit_6h: quota.limit6h,
        billable_24h: long.billable,
        attempted_24h: long.attempted,
        limit_24h: quota.limit24h,
      };
    });
  }
}

/** A user row as the API shows it. */
function present(row: queries.UserRow): User {
  const { forget_count: _, ...user } = row;
  return user;
}
