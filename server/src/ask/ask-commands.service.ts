import type { AskCommand, DiscordMessage } from '@concierge/contract';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database, Db } from '../db/database.ts';
import type { ListPage } from '../admin/list-query.ts';
import type { Quota, SeenUser, UsersService } from '../users/users.service.ts';
import type { AskPipeline } from './ask-pipeline.ts';
import * as queries from './ask-commands.queries.ts';

/** A question from a front other than the public chat (a Discord /ask or /whisper). */
export interface AskCommandRequest {
  user: SeenUser;
  prompt: string;
  /** Only the asker sees the answer. */
  whisper: boolean;
  /** The command's name (ask, whisper). */
  type: string;
  /** The platform interaction it answers, when there is one. */
  interaction?: {
    id: string;
    token: string;
    /** When the token stops working (ISO); Discord's last 15 minutes. */
    expiresAt: string;
    applicationId: string | null;
    guildId: string | null;
    channelId: string | null;
    /** Where it was asked (guild, dm, …). */
    context: string | null;
    content?: string | null;
  };
  /** The front already acknowledged the interaction. */
  acknowledged?: boolean;
}

/**
 * What became of a submitted command; `message` is what to tell the asker
 * when it was not queued; `userCreated` says the asker was seen for the first time.
 */
export type SubmitOutcome = (
  | { status: 'queued'; command: queries.AskCommandRow }
  | { status: 'ignored'; command: queries.AskCommandRow }
  | { status: 'paused'; command: queries.AskCommandRow; message: string }
  | { status: 'in_flight'; command: queries.AskCommandRow; message: string }
  | { status: 'limited'; command: queries.AskCommandRow; message: string; quota: Quota }
) & { userCreated?: boolean };

/** The fields a front records about an answer it delivered. */
export type DeliveryChanges = Partial<
  Pick<
    queries.AskCommandChanges,
    | 'discord_message_id'
    | 'step'
    | 'custom_id'
    | 'show_good'
    | 'show_outdated'
    | 'show_hallucinated'
    | 'show_other'
    | 'show_undo'
    | 'disable_good'
    | 'disable_outdated'
    | 'disable_hallucinated'
    | 'disable_other'
  >
>;

export const ASK_COMMAND_ERRORS = {
  limited: (quota: Quota, at: (iso: string) => string) =>
    `You have asked ${quota.used6h >= quota.limit6h ? `${quota.limit6h} questions in the last 6 hours` : `${quota.limit24h} questions in the last 24 hours`}, the most allowed.` +
    (quota.availableAt ? ` You can ask again at ${at(quota.availableAt)}.` : ''),
} as const;

/**
 * Ask commands: questions from Discord (or any front but the public chat)
 * stored as work rows (SPEC §3 "Ask command record") and answered by the
 * AskWorker through the pipeline. Submitting applies the rules in order:
 * ignored users get nothing, while paused only priority users get through,
 * one command at a time per user, then the 6 h and 24 h limits.
 */
export class AskCommandService {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #config: ConfigService;
  readonly #users: UsersService;
  readonly #pipeline: AskPipeline;
  readonly #formatTime: (iso: string) => string;
  /** Called when a command joins the queue, so the worker need not wait for its next look. */
  onQueued: () => void = () => {};

  constructor(options: { database: Database; clock: Clock; config: ConfigService; users: UsersService; pipeline: AskPipeline; formatTime: (iso: string) => string }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#config = options.config;
    this.#users = options.users;
    this.#pipeline = options.pipeline;
    this.#formatTime = options.formatTime;
  }

  get #db() {
    return this.#database.db;
  }

  async submit(request: AskCommandRequest): Promise<SubmitOutcome> {
    const { user, created } = await this.#users.seen(request.user);
    return { ...(await this.#decide(request, user)), userCreated: created };
  }

  async #decide(request: AskCommandRequest, user: Awaited<ReturnType<UsersService['seen']>>['user']): Promise<SubmitOutcome> {
    const interaction = request.interaction;
    const base: queries.NewAskCommand = {
      user_id: user.id,
      prompt: request.prompt,
      whisper: request.whisper,
      type: request.type,
      priority: user.priority,
      step: 'enqueue',
      state: 'received',
      acknowledged: request.acknowledged ?? false,
      interaction_id: interaction?.id ?? null,
      token: interaction?.token ?? null,
      token_expires: interaction?.expiresAt ?? null,
      application_id: interaction?.applicationId ?? null,
      guild_id: interaction?.guildId ?? null,
      channel_id: interaction?.channelId ?? null,
      context: interaction?.context ?? null,
      content: interaction?.content ?? null,
    };
    const now = this.#clock.now().toISOString();
    const store = (state: string, error: string | null = null) =>
      queries.insertCommand(this.#db, { ...base, state, error, finished_at: state === 'queued' ? null : now }, now);

    if (user.ignored) return { status: 'ignored', command: await store('ignored', 'The user is ignored') };
    if (!this.#pipeline.isOpen({ priority: user.priority })) {
      return { status: 'paused', command: await store('aborted', 'The concierge is paused'), message: this.#pipeline.pausedMessage() };
    }
    if ((await queries.pendingCount(this.#db, user.id)) > 0) {
      const message = this.#config.get().discord_rate_limit_message;
      return { status: 'in_flight', command: await store('rate_limited', 'A question of this user is still being answered'), message };
    }
    const quota = await this.#users.quota(user);
    if (quota.available <= 0) {
      const message = ASK_COMMAND_ERRORS.limited(quota, this.#formatTime);
      return { status: 'limited', command: await store('rate_limited', message), message, quota };
    }
    const command = await store('queued');
    this.onQueued();
    return { status: 'queued', command };
  }

  /** The front acknowledged the command's interaction (a deferral made after the command was stored). */
  async markAcknowledged(id: number): Promise<void> {
    await queries.updateCommand(this.#db, id, { acknowledged: true, updated_at: this.#clock.now().toISOString() });
  }

  /** What the front did with the answer: the platform message carrying it and the state of its feedback buttons. */
  async markDelivered(id: number, changes: DeliveryChanges): Promise<void> {
    await queries.updateCommand(this.#db, id, { ...changes, updated_at: this.#clock.now().toISOString() });
  }

  /** Stores a message addressed to the bot (a mention or a reply, SPEC §3); one row per platform message. */
  async recordDiscordMessage(message: Omit<Parameters<typeof queries.insertDiscordMessage>[1], never>): Promise<void> {
    await queries.insertDiscordMessage(this.#db, message, this.#clock.now().toISOString());
  }

  find(id: number): Promise<queries.AskCommandRow | undefined> {
    return queries.findCommand(this.#db, id);
  }

  /** Commands waiting for the assistant (the health record's queue_size); a health check counts them on its own connection (Database.healthDb). */
  queued(db: Db = this.#db): Promise<number> {
    return queries.queuedCount(db);
  }

  async list(filters: queries.AskCommandFilters & ListPage): Promise<{ commands: AskCommand[]; total: number }> {
    const [rows, total] = await Promise.all([queries.listCommands(this.#db, filters), queries.countCommands(this.#db, filters)]);
    const commands = rows.map(({ token: _token, owner: _owner, lease_expires_at: _lease, sources: _sources, username, global_name, ...command }) => ({
      ...command,
      user: { id: command.user_id, username, global_name },
    }));
    return { commands, total };
  }

  async discordMessages(filters: queries.DiscordMessageFilters & ListPage): Promise<{ messages: DiscordMessage[]; total: number }> {
    const [messages, total] = await Promise.all([queries.listDiscordMessages(this.#db, filters), queries.countDiscordMessages(this.#db, filters)]);
    return { messages, total };
  }
}
