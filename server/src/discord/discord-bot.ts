import type { RuntimeConfig } from '@concierge/contract';
import {
  ActivityType,
  Client,
  DiscordAPIError,
  DiscordjsError,
  Events,
  GatewayCloseCodes,
  GatewayIntentBits,
  Partials,
  REST,
  Routes,
  type APIApplicationCommand,
  type ClientEvents,
  type Message,
} from 'discord.js';
import type { Logger } from 'pino';
import type { AskCommandRow } from '../ask/ask-commands.queries.ts';
import type { AskCommandService } from '../ask/ask-commands.service.ts';
import type { AskCommandFront, Delivery } from '../ask/ask-worker.ts';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database } from '../db/database.ts';
import { AppError, conflict, serviceUnavailable } from '../errors.ts';
import type { EventBus } from '../events.ts';
import type { UsersService } from '../users/users.service.ts';
import { COMMAND_FIELDS, commandDefinitions, commandsHash } from './commands.ts';
import { AnswerDelivery } from './delivery.ts';
import * as queries from './discord.queries.ts';
import { FeedbackService } from './feedback.ts';
import { InteractionHandler } from './interactions.ts';
import { Notifier } from './notifier.ts';

/** Discord's own API, when DISCORD_API_URL is not set (discord.js appends /v10). */
export const DISCORD_API_DEFAULT = 'https://discord.com/api';
/** The longest wait from login to the gateway's READY and guilds. */
const CONNECT_TIMEOUT_MS = 30_000;
/** Waits between connection attempts after a failure: 5 s, doubling, at most 5 minutes. */
const RETRY_FIRST_MS = 5000;
const RETRY_MAX_MS = 5 * 60_000;
/** Configuration fields the presence depends on. */
const PRESENCE_FIELDS = ['paused', 'discord_custom_status', 'daily_token_budget', 'token_budget_action'] as const;
/** How often the leader's bot looks again (retries, an operator's Connect or Disconnect on another process). */
const TICK_MS = 5000;
/** The Status screen takes the gateway's holder for gone this long after its last look. */
const HEARTBEAT_MS = 15_000;

export const NOT_CONFIGURED = 'Discord is not configured: set DISCORD_TOKEN and DISCORD_APPLICATION_ID.';
export const GATEWAY_REASONS = {
  disabled: 'The gateway is switched off on the Config screen (discord_gateway_enabled).',
  operator: 'Disconnected from the console: press Connect on the Commands screen to connect again.',
  elsewhere: 'Another server process (the leader) runs the Discord bot.',
  stopped: 'The server stopped.',
  reconnecting: 'The gateway connection dropped; reconnecting.',
} as const;

export type GatewayState = 'off' | 'connecting' | 'connected' | 'reconnecting' | 'failed';

/** The Discord figures of the Status screen: every process's, from the database (SPEC §3 "Bot status" → discord). */
export interface DiscordFigures {
  messages_handled: number;
  connects: number;
  disconnects: number;
  configured: boolean;
  connected: boolean;
  state: string;
  /** Why the bot is not connected, in words. */
  reason: string | null;
  connected_at: string | null;
}

export interface DiscordBotOptions {
  token?: string;
  applicationId?: string;
  /** DISCORD_API_URL: the REST base without a version. */
  apiUrl?: string;
  /** This process's identity (the pipeline's owner id): who holds the gateway. */
  owner: string;
  database: Database;
  clock: Clock;
  config: ConfigService;
  logger: Logger;
  /** discordgo_log_level: the gateway's own chatter. */
  gatewayLogger: Logger;
  /** discord_webhook_log_level: notifications. */
  notificationLogger: Logger;
  askCommands: AskCommandService;
  users: UsersService;
  events: EventBus;
  timeZone: () => string;
  productName: string;
  /** The day's token budget is spent and the operator chose to pause (the ask pipeline's own test): Do Not Disturb too. */
  pausedByBudget?: () => boolean;
  /** Reads the day's spending again (another process may have spent the budget). */
  refreshBudget?: () => Promise<void>;
}

class GatewayClosedError extends Error {
  readonly code: number;
  constructor(code: number) {
    super(`the gateway closed the connection with code ${code}`);
    this.code = code;
  }
}

/**
 * The Discord bot: a thin adapter on discord.js. It connects when
 * DISCORD_TOKEN and DISCORD_APPLICATION_ID are set and
 * `discord_gateway_enabled` is on — in the leader only: it is leader work
 * (cluster/leadership.ts), started when this process becomes the leader and
 * stopped when it stops being it, so when the leader dies the next one
 * connects as soon as it takes over — and says why when it cannot. It keeps its counters in
 * the database, follows the configuration at once (presence, Do Not Disturb
 * while paused, the commands' texts), hands interactions to the
 * InteractionHandler and delivers ask command outcomes through the stored
 * interaction tokens (AskCommandFront), so an answer finished after a
 * restart still reaches its asker.
 */
export class DiscordBot implements AskCommandFront {
  readonly #o: DiscordBotOptions;
  readonly #rest: REST | null;
  readonly feedback: FeedbackService;
  readonly notifier: Notifier;
  readonly handler: InteractionHandler;
  readonly #delivery: AnswerDelivery;
  #client: Client | null = null;
  /** Takes our listeners off the current client. */
  #unbind: (() => void)[] = [];
  #opening = false;
  /** The recording of the latest (re)connection, awaited before a connect reports back. */
  #recordingUp: Promise<void> = Promise.resolve();
  #connected = false;
  /** This process runs the bot (it is the leader). */
  #leader = false;
  /** The gateway has been marked as this process's since it became the leader. */
  #taken = false;
  #halted: string | null = null;
  /** The presence this connection last sent (status and text). */
  #presence = '';
  #failures = 0;
  #retryAt = 0;
  #tail: Promise<unknown> = Promise.resolve();
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void)[] = [];

  constructor(options: DiscordBotOptions) {
    this.#o = options;
    this.#rest = options.token && options.applicationId ? new REST({ api: this.apiUrl, version: '10' }).setToken(options.token) : null;
    const config = () => options.config.get();
    this.feedback = new FeedbackService({ database: options.database, clock: options.clock, config: options.config });
    this.notifier = new Notifier({ rest: () => this.#rest, config, logger: options.notificationLogger, timeZone: options.timeZone, productName: options.productName });
    this.handler = new InteractionHandler({
      config,
      logger: options.logger,
      askCommands: options.askCommands,
      users: options.users,
      feedback: this.feedback,
      notifier: this.notifier,
      handled: () => this.#count({ messages_handled: 1 }),
      botUserId: () => this.#client?.user?.id ?? null,
      storeMessage: (message) => this.#storeMessage(message),
      halt: (reason) => this.#halt(reason),
    });
    this.#delivery = new AnswerDelivery({
      rest: () => this.#rest,
      config,
      logger: options.logger,
      askCommands: options.askCommands,
      users: options.users,
      notifier: this.notifier,
      timeZone: options.timeZone,
      pendingAck: (interactionId) => this.handler.pendingAcks.get(interactionId),
    });
  }

  get apiUrl(): string {
    return this.#o.apiUrl ?? DISCORD_API_DEFAULT;
  }

  /** DISCORD_TOKEN and DISCORD_APPLICATION_ID are set. */
  get configured(): boolean {
    return this.#rest !== null;
  }

  /** This process's gateway connection is up (the health record's discord_gateway_connected). */
  get connected(): boolean {
    return this.#connected;
  }

  get #db() {
    return this.#o.database.db;
  }

  /**
   * This process runs the bot (it became the leader): takes the gateway,
   * follows the configuration and connects when it should, checking again
   * every 5 s (retries, an operator's Connect on another process).
   */
  start(): void {
    if (this.#loop) return;
    if (!this.configured) {
      this.#o.logger.info(`Discord bot is off. ${NOT_CONFIGURED}`);
      return;
    }
    this.#leader = true;
    this.#taken = false;
    const { config, events } = this.#o;
    this.#unsubscribe.push(
      config.onChange(({ changed }) => {
        if (changed.includes('discord_gateway_enabled')) void this.tick();
        if (changed.some((field) => (PRESENCE_FIELDS as readonly string[]).includes(field))) void this.#presenceAfterBudget();
        if (changed.some((field) => (COMMAND_FIELDS as readonly string[]).includes(field))) {
          this.registerCommands().catch((error: unknown) => this.#o.logger.error({ err: error }, 'could not register the changed commands'));
        }
      }),
      events.subscribe('crawler_run', (run) => {
        if (run.changes?.length) void this.notifier.scheduleChanges(run.changes);
      }),
      events.subscribe('budget_exhausted', (event) => {
        void this.notifier.budgetSpent(event);
        void this.#presenceAfterBudget();
      }),
    );
    const stop = new AbortController();
    this.#stop = stop;
    this.#loop = (async () => {
      while (!stop.signal.aborted) {
        await this.tick();
        await this.#o.clock.sleep(TICK_MS, stop.signal).catch(() => {});
      }
    })();
  }

  /** Leaves the gateway (this process stopped being the leader, or is stopping). Deliveries keep working (they need no gateway). */
  async stop(): Promise<void> {
    this.#leader = false;
    this.#stop?.abort();
    await this.#loop;
    this.#loop = undefined;
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    if (!this.configured) return;
    await this.#serial(() => this.#close(GATEWAY_REASONS.stopped));
    await queries.releaseGateway(this.#db, this.#o.owner).catch((error: unknown) => this.#o.logger.warn({ err: error }, 'could not release the gateway'));
  }

  /**
   * One look, in the leader: marks the gateway as this process's (its
   * heartbeat for the Status screen), then connects or disconnects as the
   * configuration and the operator want. Elsewhere it only makes sure no
   * connection is left. Never throws.
   */
  tick(): Promise<void> {
    return this.#serial(async () => {
      if (!this.configured) return;
      try {
        if (!this.#leader) {
          if (this.#client) await this.#close(GATEWAY_REASONS.elsewhere);
          return;
        }
        const now = this.#o.clock.now();
        const claim = { owner: this.#o.owner, until: new Date(now.getTime() + HEARTBEAT_MS).toISOString(), now: now.toISOString() };
        if (!this.#taken) {
          await queries.takeGateway(this.#db, claim);
          this.#taken = true;
        } else if (!(await queries.renewGateway(this.#db, claim))) {
          // Another process took the gateway: this one is no longer the leader, whatever it last heard.
          this.#leader = false;
          this.#o.logger.warn('another process took the Discord gateway; leaving it');
          if (this.#client) await this.#close(GATEWAY_REASONS.elsewhere);
          return;
        }
        const row = await queries.gatewayRow(this.#db, now.toISOString());
        const why = this.#whyOff(row);
        if (why) {
          if (this.#client || row.state !== 'off' || row.reason !== why) await this.#close(why);
          return;
        }
        if (!this.#client && now.getTime() >= this.#retryAt) await this.#open().catch(() => {});
        // A budget pause ends at the convention's midnight without an event: each look keeps the presence right.
        this.#applyPresence();
      } catch (error) {
        this.#o.logger.error({ err: error }, 'Discord gateway check failed');
      }
    });
  }

  /** POST /api/discord/connect: clears an operator's disconnect (and a failure's wait) and connects now. */
  async connect(): Promise<{ success: true; connected: boolean; message: string }> {
    this.#requireConfigured();
    if (!this.#o.config.get().discord_gateway_enabled) throw conflict(GATEWAY_REASONS.disabled, 'discord_gateway_disabled');
    await queries.gatewayRow(this.#db, this.#o.clock.now().toISOString());
    await queries.setOperatorDisconnected(this.#db, false, this.#o.clock.now().toISOString());
    this.#halted = null;
    this.#failures = 0;
    this.#retryAt = 0;
    await this.tick();
    if (this.#connected) return { success: true, connected: true, message: 'Connected to Discord' };
    if (!this.#leader) return { success: true, connected: false, message: `${GATEWAY_REASONS.elsewhere} It connects within ${TICK_MS / 1000} s.` };
    const figures = await this.figures();
    throw new AppError(502, 'discord_connect_failed', `Could not connect to Discord: ${figures.reason ?? 'unknown reason'}`);
  }

  /** POST /api/discord/disconnect: leaves the gateway until Connect (every process agrees, through the database). */
  async disconnect(): Promise<{ success: true; connected: false; message: string }> {
    this.#requireConfigured();
    await queries.gatewayRow(this.#db, this.#o.clock.now().toISOString());
    await queries.setOperatorDisconnected(this.#db, true, this.#o.clock.now().toISOString());
    await this.tick();
    return { success: true, connected: false, message: 'Disconnected from Discord' };
  }

  /** Registers /ask, /whisper and /forget with the operator's texts (a bulk overwrite). */
  async registerCommands(): Promise<{ success: true; commands: string[] }> {
    const rest = this.#requireConfigured();
    const definitions = commandDefinitions(this.#o.config.get());
    let registered: APIApplicationCommand[];
    try {
      registered = (await rest.put(Routes.applicationCommands(this.#o.applicationId!), { body: definitions })) as APIApplicationCommand[];
    } catch (error) {
      this.#o.logger.error({ err: error }, 'Discord refused the commands');
      throw new AppError(502, 'discord_error', `Discord refused the commands: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    const now = this.#o.clock.now().toISOString();
    await queries.gatewayRow(this.#db, now);
    await queries.setCommandsHash(this.#db, commandsHash(definitions), now);
    this.#o.logger.info({ commands: registered.map((command) => command.name) }, 'Discord commands registered');
    return { success: true, commands: registered.map((command) => command.name) };
  }

  async figures(): Promise<DiscordFigures> {
    const row = await queries.gatewayRow(this.#db, this.#o.clock.now().toISOString());
    const counters = { messages_handled: row.messages_handled, connects: row.connects, disconnects: row.disconnects };
    if (!this.configured) return { ...counters, configured: false, connected: false, state: 'off', reason: NOT_CONFIGURED, connected_at: null };
    // A holder whose heartbeat ran out is gone, whatever it last wrote (a new leader writes its own at once).
    const alive = row.lease_expires_at !== null && Date.parse(row.lease_expires_at) > this.#o.clock.now().getTime();
    return {
      ...counters,
      configured: true,
      connected: row.connected && alive,
      state: alive ? row.state : 'off',
      reason: alive ? row.reason : (row.reason ?? 'No server process runs the bot.'),
      connected_at: row.connected_at,
    };
  }

  deliver(command: AskCommandRow, delivery: Delivery): Promise<void> {
    return this.#delivery.deliver(command, delivery);
  }

  // ---- the gateway --------------------------------------------------------------------------

  #requireConfigured(): REST {
    if (!this.#rest) throw serviceUnavailable('Discord is not configured', 'discord_not_configured');
    return this.#rest;
  }

  #whyOff(row: queries.GatewayRow): string | null {
    if (!this.#o.config.get().discord_gateway_enabled) return GATEWAY_REASONS.disabled;
    if (row.operator_disconnected) return GATEWAY_REASONS.operator;
    return this.#halted;
  }

  /** Gateway work one at a time (the loop, the console's buttons and the configuration all call it). */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(fn, fn);
    this.#tail = run.catch(() => {});
    return run;
  }

  async #open(): Promise<void> {
    const { clock, logger } = this.#o;
    await this.#setState('connecting', null);
    const client = new Client({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages], partials: [Partials.Channel], rest: { api: this.apiUrl } });
    this.#client = client;
    this.#bind(client);
    this.#opening = true;
    const deadline = clock.deadline(CONNECT_TIMEOUT_MS);
    try {
      const ready = new Promise<void>((resolve, reject) => {
        client.once(Events.ClientReady, () => resolve());
        client.once(Events.ShardDisconnect, (event) => reject(new GatewayClosedError(event.code)));
        deadline.signal.addEventListener('abort', () => reject(new Error(`no answer from the gateway within ${CONNECT_TIMEOUT_MS / 1000} s`)), { once: true });
      });
      await Promise.all([client.login(this.#o.token), ready]);
      await this.#recordingUp;
      this.#failures = 0;
    } catch (error) {
      const { reason, fatal } = describeFailure(error, this.apiUrl);
      await this.#teardown(client);
      this.#failures++;
      const wait = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (this.#failures - 1));
      this.#retryAt = fatal ? Number.POSITIVE_INFINITY : clock.now().getTime() + wait;
      await this.#setState('failed', reason);
      logger.error({ err: error, retryInSeconds: fatal ? null : wait / 1000 }, `Discord bot cannot connect: ${reason}`);
      throw error;
    } finally {
      this.#opening = false;
      deadline.clear();
    }
  }

  #bind(client: Client): void {
    const on = <K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void) => {
      client.on(event, listener);
      this.#unbind.push(() => client.off(event, listener));
    };
    const { gatewayLogger, logger } = this.#o;
    on(Events.Debug, (message) => gatewayLogger.debug(message));
    on(Events.Warn, (message) => gatewayLogger.warn(message));
    on(Events.Error, (error) => logger.error({ err: error }, 'Discord client error'));
    on(Events.ShardError, (error) => gatewayLogger.warn({ err: error }, 'gateway connection error'));
    on(Events.ShardReady, () => void (this.#recordingUp = this.#up(client, 'ready')));
    on(Events.ShardResume, () => void (this.#recordingUp = this.#up(client, 'resumed')));
    on(Events.ShardReconnecting, () => void this.#down(client));
    on(Events.ShardDisconnect, (event) => void this.#closedByDiscord(client, event.code));
    on(Events.InteractionCreate, (interaction) => void this.handler.handle(interaction));
    on(Events.MessageCreate, (message) => void this.handler.handleMessage(message));
  }

  async #up(client: Client, how: 'ready' | 'resumed'): Promise<void> {
    if (client !== this.#client) return;
    try {
      this.#connected = true;
      await this.#count({ connects: 1 });
      await this.#setState('connected', null, this.#o.clock.now().toISOString());
      // A new session starts with IDENTIFY's presence (online, no status): set ours again.
      this.#applyPresence(true);
      this.#o.logger.info({ how, user: client.user?.tag }, how === 'ready' ? 'Discord bot connected' : 'Discord gateway session resumed');
      if (how === 'ready') {
        void this.notifier.connected(client.user?.username ?? 'the bot');
        void this.#registerIfChanged();
      }
    } catch (error) {
      this.#o.logger.error({ err: error }, 'could not record the gateway connection');
    }
  }

  async #down(client: Client): Promise<void> {
    if (client !== this.#client || this.#opening) return;
    try {
      if (this.#connected) {
        this.#connected = false;
        await this.#count({ disconnects: 1 });
      }
      await this.#setState('reconnecting', GATEWAY_REASONS.reconnecting);
      this.#o.logger.warn('Discord gateway connection dropped; discord.js reconnects');
    } catch (error) {
      this.#o.logger.error({ err: error }, 'could not record the gateway disconnection');
    }
  }

  /** Discord closed the connection for good (a refused token or intent…): say why, and retry later unless retrying cannot help. */
  #closedByDiscord(client: Client, code: number): Promise<void> {
    if (client !== this.#client || this.#opening) return Promise.resolve();
    return this.#serial(async () => {
      if (client !== this.#client) return;
      const { reason, fatal } = describeFailure(new GatewayClosedError(code), this.apiUrl);
      await this.#teardown(client);
      this.#failures++;
      this.#retryAt = fatal ? Number.POSITIVE_INFINITY : this.#o.clock.now().getTime() + RETRY_FIRST_MS;
      await this.#setState('failed', reason);
      this.#o.logger.error({ code }, `Discord bot disconnected: ${reason}`);
    });
  }

  /** Leaves the gateway (our decision), recording why. */
  async #close(reason: string): Promise<void> {
    const client = this.#client;
    if (client) {
      await this.#teardown(client);
      this.#o.logger.info({ reason }, 'Discord bot disconnected');
    }
    await this.#setState('off', reason);
  }

  async #teardown(client: Client): Promise<void> {
    if (this.#client === client) this.#client = null;
    for (const unbind of this.#unbind.splice(0)) unbind();
    // Errors while closing are the connection's last words: logged, never thrown.
    client.on(Events.Error, (error) => this.#o.gatewayLogger.debug({ err: error }, 'error while closing the gateway'));
    await client.destroy().catch((error: unknown) => this.#o.gatewayLogger.warn({ err: error }, 'error while closing the gateway'));
    if (this.#connected) {
      this.#connected = false;
      await this.#count({ disconnects: 1 });
    }
  }

  #halt(reason: string): void {
    this.#halted = reason;
    this.#o.logger.fatal(reason);
    void this.#serial(() => this.#close(reason));
  }

  /**
   * Presence from the configuration: the custom status, Do Not Disturb while
   * paused — by the operator, or by the day's spent token budget when its
   * action is `pause`. Sent only when it differs from what this connection
   * last sent (`force`: a new session starts online, without a status).
   */
  #applyPresence(force = false): void {
    const client = this.#client;
    if (!client?.user || !this.#connected) return;
    const config: RuntimeConfig = this.#o.config.get();
    const text = config.discord_custom_status.trim();
    const status = config.paused || this.#o.pausedByBudget?.() ? 'dnd' : 'online';
    const key = `${status}\n${text}`;
    if (!force && key === this.#presence) return;
    try {
      client.user.setPresence({ status, activities: text ? [{ type: ActivityType.Custom, name: 'Custom Status', state: text }] : [] });
      this.#presence = key;
    } catch (error) {
      this.#o.logger.warn({ err: error }, 'could not set the presence');
    }
  }

  /** The presence once the day's spending is read again (a budget edit, or another process found it spent). */
  async #presenceAfterBudget(): Promise<void> {
    await this.#o.refreshBudget?.().catch(() => {});
    this.#applyPresence();
  }

  async #registerIfChanged(): Promise<void> {
    try {
      const row = await queries.gatewayRow(this.#db, this.#o.clock.now().toISOString());
      if (row.commands_hash !== commandsHash(commandDefinitions(this.#o.config.get()))) await this.registerCommands();
    } catch (error) {
      this.#o.logger.error({ err: error }, 'could not register the commands');
    }
  }

  /** Records the gateway's state for every process to read; a database error is logged, never thrown. */
  async #setState(state: GatewayState, reason: string | null, connectedAt?: string): Promise<void> {
    try {
      await queries.setGatewayState(this.#db, this.#o.owner, {
        state,
        reason,
        connected: state === 'connected',
        ...(connectedAt ? { connected_at: connectedAt } : {}),
        updated_at: this.#o.clock.now().toISOString(),
      });
    } catch (error) {
      this.#o.logger.warn({ err: error, state, reason }, 'could not record the gateway state');
    }
  }

  async #count(deltas: { connects?: number; disconnects?: number; messages_handled?: number }): Promise<void> {
    try {
      await queries.bumpGateway(this.#db, deltas);
    } catch (error) {
      this.#o.logger.warn({ err: error, deltas }, 'could not count a gateway event');
    }
  }

  async #storeMessage(message: Message): Promise<void> {
    await this.#o.askCommands.recordDiscordMessage({
      message_id: message.id,
      content: message.content,
      channel_id: message.channelId,
      guild_id: message.guildId,
      user_id: message.author.id,
      username: message.author.username,
      global_name: message.author.globalName,
      interaction_id: null,
      referenced_message_id: message.reference?.messageId ?? null,
      payload: JSON.stringify(message.toJSON()),
    });
  }
}

/** Why a connection failed, for operators, and whether trying again can help without their doing something. */
export function describeFailure(error: unknown, apiUrl: string): { reason: string; fatal: boolean } {
  if (error instanceof GatewayClosedError) {
    switch (error.code) {
      case GatewayCloseCodes.AuthenticationFailed:
        return { reason: 'Discord refused the bot token on the gateway (close code 4004): check DISCORD_TOKEN.', fatal: true };
      case GatewayCloseCodes.DisallowedIntents:
        return { reason: 'Discord refused the gateway intents (close code 4014): the bot asked for an intent not enabled for it in the Developer Portal.', fatal: true };
      case GatewayCloseCodes.InvalidIntents:
        return { reason: 'Discord refused the gateway intents as invalid (close code 4013).', fatal: true };
      case GatewayCloseCodes.ShardingRequired:
      case GatewayCloseCodes.InvalidShard:
        return { reason: `Discord requires sharding for this bot (close code ${error.code}).`, fatal: true };
      default:
        return { reason: `The gateway closed the connection (close code ${error.code}).`, fatal: false };
    }
  }
  if ((error instanceof DiscordAPIError && error.status === 401) || (error instanceof DiscordjsError && error.code === 'TokenInvalid')) {
    return { reason: 'Discord refused the bot token (401 Unauthorized): check DISCORD_TOKEN.', fatal: true };
  }
  const message = error instanceof Error ? error.message : String(error);
  // A network failure: the socket's own error code, wherever in the chain of causes it is.
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code)) {
      return { reason: `Could not reach Discord at ${apiUrl}: ${cause.message} (${code}).`, fatal: false };
    }
  }
  if (/sessions remaining/i.test(message)) return { reason: `Discord's limit of gateway session starts is used up: ${message}`, fatal: false };
  return { reason: `Could not connect to Discord: ${message}`, fatal: false };
}
