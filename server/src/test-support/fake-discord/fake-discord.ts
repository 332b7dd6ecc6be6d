import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { checkCommands, checkMessage, checkModal, FormErrors } from './limits.ts';

/**
 * A local stand-in for Discord, speaking the wire protocol discord.js 14
 * speaks to the real one: the REST API under `/api/v10` (gateway discovery
 * with its session start limit, the bot user, application commands,
 * interaction callbacks, webhook edits and follow-ups, channel messages) and
 * the gateway websocket (HELLO, IDENTIFY, READY + GUILD_CREATE, heartbeats
 * and their ACKs, presence updates, dispatches, RESUME, op 7 and op 9).
 *
 * It enforces what Discord enforces and a bot trips on: the limits of
 * messages, components, modals and commands (400 code 50035, an empty message
 * 50006), one callback per interaction (40060), the 3 s to acknowledge
 * (10062) and the 15 minutes an interaction token lives (50027), the bot
 * token on bot routes and none needed on webhooks. Time is its own clock,
 * which tests move (or share with the server under test), so expiry is
 * tested without waiting.
 *
 * Tests play users with `slashCommand`, `click`, `submitModal` and `post`,
 * and read what the bot did from `messages()`, `interactions` and
 * `presence`. `npm run fake-discord` runs it by hand (see main.ts).
 */

export const API_VERSION = 10;
/** Discord's epoch for snowflakes (2015-01-01). */
const DISCORD_EPOCH = 1_420_070_400_000n;
const CALLBACK_WINDOW_MS = 3000;
const TOKEN_LIFE_MS = 15 * 60_000;
const EPHEMERAL = 64;
const LOADING = 128;

const INTENTS = { Guilds: 1 << 0, GuildMembers: 1 << 1, GuildPresences: 1 << 8, GuildMessages: 1 << 9, DirectMessages: 1 << 12, MessageContent: 1 << 15 };
const PRIVILEGED_INTENTS = INTENTS.GuildMembers | INTENTS.GuildPresences | INTENTS.MessageContent;

export interface FakeUser {
  id: string;
  username: string;
  global_name: string | null;
  bot?: boolean;
}

export interface FakeChannel {
  id: string;
  name: string;
  /** 0 text, 1 DM, 11 public thread. */
  type: 0 | 1 | 11;
  guild_id: string | null;
  parent_id: string | null;
  /** A DM's other end. */
  recipient?: FakeUser;
}

export interface FakeMessage {
  id: string;
  channel_id: string;
  guild_id: string | null;
  author: FakeUser;
  content: string;
  components: unknown[];
  embeds: unknown[];
  flags: number;
  /** Only the interaction's user sees it (flag 64). */
  ephemeral: boolean;
  /** Still the "is thinking…" placeholder of a deferral. */
  loading: boolean;
  deleted: boolean;
  /** The interaction this message answers (original response or follow-up). */
  interaction_id: string | null;
  /** Times it was edited. */
  edits: number;
  reference: { message_id: string; channel_id: string; guild_id: string | null } | null;
  mentions: FakeUser[];
  created_at: number;
}

export interface FakeCallback {
  type: number;
  data: Record<string, unknown> | null;
  at: number;
}

export interface FakeInteraction {
  id: string;
  token: string;
  /** 2 application command, 3 message component, 5 modal submit. */
  type: 2 | 3 | 5;
  /** The command's name, or the component's / modal's custom id. */
  name: string;
  user: FakeUser;
  channel: FakeChannel;
  guild_id: string | null;
  created_at: number;
  payload: Record<string, unknown>;
  /** The accepted acknowledgement (deferral, reply, update, modal), or null. */
  callback: FakeCallback | null;
  /** The message a component or modal came from. */
  source: FakeMessage | null;
  /** The original response (a reply, a deferral's message, or the updated source message). */
  original: FakeMessage | null;
  followUps: FakeMessage[];
  /** The modal shown in answer (callback type 9). */
  modal: Record<string, unknown> | null;
}

export interface JournalEntry {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | null;
  body: unknown;
  status: number;
  /** Discord's JSON error code of a refusal. */
  code: number | null;
  at: number;
}

export interface PresenceUpdate {
  status: string;
  activities: { type: number; name: string; state?: string | null }[];
  /** identify (the presence sent with IDENTIFY) or update (op 3). */
  via: 'identify' | 'update';
  at: number;
}

export interface GatewaySession {
  id: string;
  intents: number;
  sequence: number;
  socket: WebSocket | null;
  /** Payloads sent, by sequence, for a resume to replay. */
  sent: { s: number; payload: unknown }[];
  resumes: number;
  invalid: boolean;
  heartbeats: number;
}

export interface FakeDiscordKnobs {
  /** Heartbeat interval announced in HELLO. */
  heartbeatIntervalMs: number;
  /** Answer heartbeats with op 11 (off: the bot sees a zombie connection). */
  ackHeartbeats: boolean;
  /** Identifies left in `/gateway/bot`'s session_start_limit. */
  sessionStartRemaining: number;
  /** Privileged intents switched on in the "developer portal". */
  privilegedIntents: number;
}

export interface FakeDiscordOptions {
  port?: number;
  token?: string;
  applicationId?: string;
  /** The fake's clock in ms (default: real time plus what `advance()` added). Share it with the server under test. */
  now?: () => number;
  knobs?: Partial<FakeDiscordKnobs>;
  /** The guild's, channels' and roles' ids the same at every start (the hand-run mode, so the config keeps working). */
  fixedIds?: boolean;
  /** Called for every message the bot creates or edits (the hand-run mode prints them). */
  onMessage?: (message: FakeMessage, change: 'created' | 'edited' | 'deleted') => void;
  /** Called when the bot answers an interaction with a modal (the hand-run mode prints it). */
  onModal?: (interaction: FakeInteraction) => void;
}

export interface SlashCommandInput {
  /** Command name (ask, whisper, forget). */
  command: string;
  /** Option values by name. */
  options?: Record<string, string>;
  user: FakeUser;
  /** Default: #general. A DM channel makes it a DM interaction. */
  channel?: FakeChannel;
  /** The member's roles (guild only). */
  roles?: string[];
}

export class DiscordHttpError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  constructor(status: number, code: number, message: string, errors?: FormErrors) {
    super(message);
    this.status = status;
    this.body = { message, code, ...(errors && !errors.empty ? { errors: errors.toJSON() } : {}) };
  }
  get code(): number {
    return this.body.code as number;
  }
}

const unauthorized = () => new DiscordHttpError(401, 0, '401: Unauthorized');
const notFoundRoute = () => new DiscordHttpError(404, 0, '404: Not Found');
const unknownWebhook = () => new DiscordHttpError(404, 10015, 'Unknown Webhook');
const unknownMessage = () => new DiscordHttpError(404, 10008, 'Unknown Message');
const invalidForm = (errors: FormErrors) => new DiscordHttpError(400, 50035, 'Invalid Form Body', errors);

export interface FakeDiscord {
  /** The REST base without a version: DISCORD_API_URL (discord.js `rest.api`). */
  apiUrl: string;
  /** The gateway URL `/gateway/bot` hands out. */
  gatewayUrl: string;
  /** Where `/__control` listens (the hand-run mode's controls). */
  url: string;
  token: string;
  applicationId: string;
  bot: FakeUser;
  guild: { id: string; name: string; roles: { everyone: string; donor: string; staff: string } };
  channels: { general: FakeChannel; lounge: FakeChannel; notifications: FakeChannel; thread: FakeChannel };
  knobs: FakeDiscordKnobs;
  now(): number;
  /** Moves the fake's own clock (no effect when `now` was given). */
  advance(ms: number): void;

  /** Every REST request, with how it was answered. */
  requests: JournalEntry[];
  /** The registered application commands (after the last bulk overwrite). */
  commands: Record<string, unknown>[];
  interactions: FakeInteraction[];
  sessions: GatewaySession[];
  presenceUpdates: PresenceUpdate[];
  /** The latest presence the bot set, or null. */
  readonly presence: PresenceUpdate | null;
  /** Identifies and resumes received. */
  readonly identifies: number;
  /** Sessions with an open, identified socket. */
  readonly connected: number;
  /** Resolves when a session is identified and its guild sent. */
  waitForReady(timeoutMs?: number): Promise<GatewaySession>;

  user(username: string, options?: { globalName?: string | null }): FakeUser;
  dmChannel(user: FakeUser): FakeChannel;
  slashCommand(input: SlashCommandInput): FakeInteraction;
  click(message: FakeMessage, customId: string, user: FakeUser): FakeInteraction;
  submitModal(shownBy: FakeInteraction, values: Record<string, string>): FakeInteraction;
  post(input: { channel?: FakeChannel; user: FakeUser; content: string; mentionBot?: boolean; replyTo?: FakeMessage }): FakeMessage;
  message(id: string): FakeMessage | undefined;
  /** Messages (oldest first), of one channel or all; deleted ones left out. */
  messages(channel?: FakeChannel): FakeMessage[];

  /** Closes the gateway socket(s) with a code (4000: resumable). */
  disconnect(code?: number): void;
  /** Sends op 7 Reconnect (the bot resumes). */
  requestReconnect(): void;
  /** Sends op 9 Invalid Session; not resumable: the bot identifies again. */
  invalidateSession(resumable?: boolean): void;
  close(): Promise<void>;
}

export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  let offset = 0;
  const now = options.now ?? (() => Date.now() + offset);
  const token = options.token ?? `fake.${randomBytes(12).toString('base64url')}`;
  const knobs: FakeDiscordKnobs = { heartbeatIntervalMs: 41_250, ackHeartbeats: true, sessionStartRemaining: 1000, privilegedIntents: 0, ...options.knobs };
  let increment = 0n;
  const snowflake = (at = now()) => ((BigInt(at) - DISCORD_EPOCH) << 22n | (increment++ & 0xfffn)).toString();
  const FIXED_AT = Date.UTC(2024, 0, 1);
  const setupId = () => (options.fixedIds ? snowflake(FIXED_AT) : snowflake());

  const applicationId = options.applicationId ?? setupId();
  const bot: FakeUser = { id: applicationId, username: 'concierge', global_name: 'Con Concierge', bot: true };
  const guildId = setupId();
  const ownerId = setupId();
  const roles = { everyone: guildId, donor: setupId(), staff: setupId() };
  const channel = (name: string, type: 0 | 11 = 0, parent: string | null = null): FakeChannel => ({ id: setupId(), name, type, guild_id: guildId, parent_id: parent });
  const general = channel('general');
  const channels = { general, lounge: channel('lounge'), notifications: channel('bot-notifications'), thread: channel('panel-questions', 11, general.id) };
  const allChannels = new Map<string, FakeChannel>(Object.values(channels).map((c) => [c.id, c]));
  const users = new Map<string, FakeUser>([[bot.id, bot]]);
  const memberRoles = new Map<string, string[]>();
  const messages = new Map<string, FakeMessage>();
  const interactions: FakeInteraction[] = [];
  const byToken = new Map<string, FakeInteraction>();
  const requests: JournalEntry[] = [];
  let commands: Record<string, unknown>[] = [];
  const sessions: GatewaySession[] = [];
  const presenceUpdates: PresenceUpdate[] = [];
  let identifies = 0;
  const readyWaiters: ((session: GatewaySession) => void)[] = [];

  // ---- JSON shapes ----------------------------------------------------------------------------

  const userJson = (user: FakeUser) => ({
    id: user.id,
    username: user.username,
    global_name: user.global_name,
    discriminator: '0',
    avatar: null,
    public_flags: 0,
    ...(user.bot ? { bot: true } : {}),
  });
  const memberJson = (user: FakeUser, withUser = true) => ({
    ...(withUser ? { user: userJson(user) } : {}),
    roles: memberRoles.get(user.id) ?? [],
    nick: null,
    avatar: null,
    joined_at: new Date(now() - 86_400_000).toISOString(),
    premium_since: null,
    deaf: false,
    mute: false,
    flags: 0,
    pending: false,
    communication_disabled_until: null,
  });
  const channelJson = (c: FakeChannel) =>
    c.type === 1
      ? { id: c.id, type: 1, last_message_id: null, recipients: c.recipient ? [userJson(c.recipient)] : [], flags: 0 }
      : {
          id: c.id,
          type: c.type,
          guild_id: c.guild_id,
          name: c.name,
          position: 0,
          parent_id: c.parent_id,
          topic: null,
          nsfw: false,
          last_message_id: null,
          rate_limit_per_user: 0,
          flags: 0,
          permission_overwrites: [],
          ...(c.type === 11 ? { owner_id: bot.id, thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date(now()).toISOString(), locked: false }, member_count: 1, message_count: 0 } : {}),
        };
  const roleJson = (id: string, name: string, position: number) => ({
    id,
    name,
    color: 0,
    colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
    hoist: false,
    icon: null,
    unicode_emoji: null,
    position,
    permissions: id === guildId ? '2248473465835073' : '0',
    managed: false,
    mentionable: false,
    flags: 0,
  });
  const guildJson = () => ({
    id: guildId,
    name: 'Test Con',
    icon: null,
    splash: null,
    discovery_splash: null,
    owner_id: ownerId,
    afk_channel_id: null,
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    roles: [roleJson(roles.everyone, '@everyone', 0), roleJson(roles.donor, 'Donor', 1), roleJson(roles.staff, 'Staff', 2)],
    emojis: [],
    stickers: [],
    features: [],
    mfa_level: 0,
    application_id: null,
    system_channel_id: null,
    system_channel_flags: 0,
    rules_channel_id: null,
    vanity_url_code: null,
    description: null,
    banner: null,
    premium_tier: 0,
    premium_subscription_count: 0,
    preferred_locale: 'en-US',
    public_updates_channel_id: null,
    nsfw_level: 0,
    premium_progress_bar_enabled: false,
    safety_alerts_channel_id: null,
    joined_at: new Date(now() - 86_400_000).toISOString(),
    large: false,
    unavailable: false,
    member_count: users.size,
    members: [memberJson(bot)],
    channels: [...allChannels.values()].filter((c) => c.type === 0).map(channelJson),
    threads: [...allChannels.values()].filter((c) => c.type === 11).map(channelJson),
    presences: [],
    voice_states: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
  });

  const messageJson = (message: FakeMessage) => ({
    id: message.id,
    type: message.interaction_id ? (message.reference ? 19 : 20) : message.reference ? 19 : 0,
    channel_id: message.channel_id,
    ...(message.guild_id ? { guild_id: message.guild_id } : {}),
    author: userJson(message.author),
    content: message.content,
    timestamp: new Date(message.created_at).toISOString(),
    edited_timestamp: message.edits > 0 ? new Date(now()).toISOString() : null,
    tts: false,
    mention_everyone: false,
    mentions: message.mentions.map((user) => ({ ...userJson(user), ...(message.guild_id ? { member: memberJson(user, false) } : {}) })),
    mention_roles: [],
    attachments: [],
    embeds: message.embeds,
    pinned: false,
    flags: message.flags,
    components: message.components,
    ...(message.interaction_id ? { webhook_id: applicationId, application_id: applicationId } : {}),
    ...(message.reference ? { message_reference: { type: 0, ...message.reference } } : {}),
  });

  // ---- gateway --------------------------------------------------------------------------------

  const sendTo = (session: GatewaySession, payload: Record<string, unknown>) => {
    if (session.socket && session.socket.readyState === session.socket.OPEN) session.socket.send(JSON.stringify(payload));
  };

  /** A dispatch to every identified session (kept for a resume when the socket is down); `data` may differ per session. */
  const dispatch = (event: string, data: unknown | ((session: GatewaySession) => unknown), filter: (session: GatewaySession) => boolean = () => true) => {
    for (const session of sessions) {
      if (session.invalid || !filter(session)) continue;
      const s = ++session.sequence;
      const payload = { op: 0, t: event, s, d: typeof data === 'function' ? (data as (session: GatewaySession) => unknown)(session) : data };
      session.sent.push({ s, payload });
      if (session.sent.length > 1000) session.sent.shift();
      sendTo(session, payload);
    }
  };

  const liveSessions = () => sessions.filter((session) => !session.invalid && session.socket && session.socket.readyState === session.socket.OPEN);

  function handleSocket(socket: WebSocket, request: IncomingMessage): void {
    const url = new URL(request.url ?? '/', 'ws://localhost');
    if (url.searchParams.get('v') !== String(API_VERSION)) {
      socket.close(4012, 'Invalid API version');
      return;
    }
    if (url.searchParams.get('encoding') !== 'json' || url.searchParams.has('compress')) {
      // The bot must not ask for compressed frames (discord.js does so only when zlib-sync is installed).
      socket.close(4002, 'Decode error');
      return;
    }
    let session: GatewaySession | null = null;
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: knobs.heartbeatIntervalMs }, s: null, t: null }));

    socket.on('message', (raw) => {
      let payload: { op?: number; d?: Record<string, unknown> | number | null };
      try {
        payload = JSON.parse(String(raw));
      } catch {
        socket.close(4002, 'Decode error');
        return;
      }
      switch (payload.op) {
        case 1: {
          if (session) session.heartbeats++;
          if (knobs.ackHeartbeats) socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
          return;
        }
        case 2: {
          if (session) {
            socket.close(4005, 'Already authenticated');
            return;
          }
          const d = (payload.d ?? {}) as Record<string, unknown>;
          if (d.token !== token) {
            socket.close(4004, 'Authentication failed');
            return;
          }
          const intents = Number(d.intents ?? 0);
          if ((intents & PRIVILEGED_INTENTS & ~knobs.privilegedIntents) !== 0) {
            socket.close(4014, 'Disallowed intent(s)');
            return;
          }
          if (knobs.sessionStartRemaining <= 0) {
            socket.close(4004, 'Authentication failed');
            return;
          }
          knobs.sessionStartRemaining--;
          identifies++;
          const presence = d.presence as { status?: string; activities?: PresenceUpdate['activities'] } | undefined;
          if (presence) presenceUpdates.push({ status: presence.status ?? 'online', activities: presence.activities ?? [], via: 'identify', at: now() });
          session = { id: randomBytes(16).toString('hex'), intents, sequence: 0, socket, sent: [], resumes: 0, invalid: false, heartbeats: 0 };
          sessions.push(session);
          const ready = {
            v: API_VERSION,
            user: { ...userJson(bot), verified: true, mfa_enabled: false, flags: 0 },
            guilds: [{ id: guildId, unavailable: true }],
            session_id: session.id,
            resume_gateway_url: gatewayUrl,
            shard: [0, 1],
            application: { id: applicationId, flags: 0 },
            private_channels: [],
            relationships: [],
            user_settings: {},
            presences: [],
            guild_join_requests: [],
            geo_ordered_rtc_regions: [],
          };
          const own = session;
          dispatch('READY', ready, (candidate) => candidate === own);
          // The guild follows READY at once, so discord.js is ready without its 15 s wait for guilds.
          if (intents & INTENTS.Guilds) dispatch('GUILD_CREATE', guildJson(), (candidate) => candidate === own);
          for (const waiter of readyWaiters.splice(0)) waiter(own);
          return;
        }
        case 6: {
          const d = (payload.d ?? {}) as { token?: string; session_id?: string; seq?: number };
          if (d.token !== token) {
            socket.close(4004, 'Authentication failed');
            return;
          }
          const known = sessions.find((candidate) => candidate.id === d.session_id && !candidate.invalid);
          if (!known || typeof d.seq !== 'number' || d.seq > known.sequence) {
            socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
            return;
          }
          if (known.socket && known.socket !== socket && known.socket.readyState === known.socket.OPEN) known.socket.close(4000, 'Session resumed elsewhere');
          known.socket = socket;
          known.resumes++;
          session = known;
          for (const { s, payload: missed } of known.sent) if (s > d.seq) socket.send(JSON.stringify(missed));
          const s = ++known.sequence;
          const resumed = { op: 0, t: 'RESUMED', s, d: {} };
          known.sent.push({ s, payload: resumed });
          socket.send(JSON.stringify(resumed));
          return;
        }
        case 3: {
          if (!session) {
            socket.close(4003, 'Not authenticated');
            return;
          }
          const d = (payload.d ?? {}) as { status?: string; activities?: PresenceUpdate['activities'] };
          presenceUpdates.push({ status: d.status ?? 'online', activities: d.activities ?? [], via: 'update', at: now() });
          return;
        }
        case 8:
          return;
        default:
          socket.close(session ? 4001 : 4003, session ? 'Unknown opcode' : 'Not authenticated');
      }
    });
    socket.on('close', () => {
      if (session && session.socket === socket) session.socket = null;
    });
  }

  // ---- interactions ---------------------------------------------------------------------------

  const newMessage = (fields: Partial<FakeMessage> & { channel_id: string; author: FakeUser }): FakeMessage => {
    const message: FakeMessage = {
      id: snowflake(),
      guild_id: allChannels.get(fields.channel_id)?.guild_id ?? null,
      content: '',
      components: [],
      embeds: [],
      flags: 0,
      ephemeral: false,
      loading: false,
      deleted: false,
      interaction_id: null,
      edits: 0,
      reference: null,
      mentions: [],
      created_at: now(),
      ...fields,
    };
    message.ephemeral = (message.flags & EPHEMERAL) !== 0;
    messages.set(message.id, message);
    options.onMessage?.(message, 'created');
    return message;
  };

  const applyEdit = (message: FakeMessage, body: Record<string, unknown>) => {
    if (typeof body.content === 'string') message.content = body.content;
    if (Array.isArray(body.components)) message.components = body.components;
    if (Array.isArray(body.embeds)) message.embeds = body.embeds;
    message.loading = false;
    message.flags &= ~LOADING;
    message.edits++;
    options.onMessage?.(message, 'edited');
  };

  const mentionsIn = (content: string): FakeUser[] =>
    [...content.matchAll(/<@!?(\d+)>/g)].map((match) => users.get(match[1]!)).filter((user): user is FakeUser => Boolean(user));

  /** Checks a message body as Discord does; throws its refusal. */
  const requireMessage = (body: unknown, edit = false) => {
    const { errors, empty } = checkMessage(body, { edit });
    if (!errors.empty) throw invalidForm(errors);
    if (empty) throw new DiscordHttpError(400, 50006, 'Cannot send an empty message');
  };

  function interactionPayload(interaction: Omit<FakeInteraction, 'payload'>, data: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const { channel, user } = interaction;
    const inGuild = channel.guild_id !== null;
    return {
      id: interaction.id,
      application_id: applicationId,
      type: interaction.type,
      data,
      token: interaction.token,
      version: 1,
      locale: 'en-US',
      app_permissions: '2248473465835073',
      entitlements: [],
      attachment_size_limit: 10_485_760,
      channel: channelJson(channel),
      channel_id: channel.id,
      ...(inGuild
        ? { guild_id: channel.guild_id, guild: { id: channel.guild_id, locale: 'en-US', features: [] }, guild_locale: 'en-US', member: { ...memberJson(user), permissions: '2248473465835073' }, context: 0, authorizing_integration_owners: { '0': channel.guild_id } }
        : { user: userJson(user), context: 1, authorizing_integration_owners: { '1': user.id } }),
      ...extra,
    };
  }

  function createInteraction(fields: { type: 2 | 3 | 5; name: string; user: FakeUser; channel: FakeChannel; source?: FakeMessage | null }, data: Record<string, unknown>, extra: Record<string, unknown> = {}): FakeInteraction {
    if (liveSessions().length === 0) throw new Error('the bot is not connected to the fake Discord gateway');
    const at = now();
    const base = {
      id: snowflake(at),
      token: `aW50ZXJhY3Rpb246${randomBytes(48).toString('base64url')}`,
      type: fields.type,
      name: fields.name,
      user: fields.user,
      channel: fields.channel,
      guild_id: fields.channel.guild_id,
      created_at: at,
      callback: null,
      source: fields.source ?? null,
      original: null,
      followUps: [],
      modal: null,
    };
    const interaction: FakeInteraction = { ...base, payload: interactionPayload(base, data, extra) };
    interactions.push(interaction);
    byToken.set(interaction.token, interaction);
    dispatch('INTERACTION_CREATE', interaction.payload);
    return interaction;
  }

  function interactionCallback(id: string, interactionToken: string, body: Record<string, unknown>): { status: number; body?: unknown } {
    const interaction = byToken.get(interactionToken);
    if (!interaction || interaction.id !== id) throw new DiscordHttpError(404, 10062, 'Unknown interaction');
    if (interaction.callback) throw new DiscordHttpError(400, 40060, 'Interaction has already been acknowledged.');
    if (now() - interaction.created_at > CALLBACK_WINDOW_MS) throw new DiscordHttpError(404, 10062, 'Unknown interaction');
    const type = Number(body.type);
    const data = (body.data ?? null) as Record<string, unknown> | null;
    const base = { channel_id: interaction.channel.id, author: bot, interaction_id: interaction.id };
    switch (type) {
      case 4: {
        requireMessage(data);
        const flags = Number(data?.flags ?? 0);
        interaction.original = newMessage({ ...base, content: String(data?.content ?? ''), components: (data?.components as unknown[]) ?? [], embeds: (data?.embeds as unknown[]) ?? [], flags });
        break;
      }
      case 5: {
        const flags = Number(data?.flags ?? 0);
        if ((flags & ~EPHEMERAL) !== 0) throw invalidForm(withError(['data', 'flags'], 'MESSAGE_FLAGS_INVALID', 'Invalid message flags'));
        interaction.original = newMessage({ ...base, flags: flags | LOADING, loading: true });
        break;
      }
      case 6:
      case 7: {
        if (!interaction.source) throw new DiscordHttpError(400, 50035, 'Invalid Form Body', withError(['type'], 'INTERACTION_RESPONSE_TYPE_INVALID', 'This interaction response type is only valid for component interactions'));
        if (type === 7) {
          requireMessage(data, true);
          applyEdit(interaction.source, data ?? {});
        }
        interaction.original = interaction.source;
        break;
      }
      case 9: {
        if (interaction.type === 5) throw invalidForm(withError(['type'], 'INTERACTION_RESPONSE_TYPE_INVALID', 'A modal cannot answer a modal submit'));
        const errors = checkModal(data);
        if (!errors.empty) throw invalidForm(errors);
        interaction.modal = data;
        options.onModal?.(interaction);
        break;
      }
      default:
        throw invalidForm(withError(['type'], 'BASE_TYPE_CHOICES', `Value must be one of {4, 5, 6, 7, 9}.`));
    }
    interaction.callback = { type, data, at: now() };
    return { status: 204 };
  }

  const withError = (path: (string | number)[], code: string, message: string) => {
    const errors = new FormErrors();
    errors.add(path, code, message);
    return errors;
  };

  /** The interaction a webhook route names: the application must match and the token still live (15 minutes). */
  const webhookInteraction = (appId: string, webhookToken: string): FakeInteraction => {
    const interaction = byToken.get(webhookToken);
    if (appId !== applicationId || !interaction) throw unknownWebhook();
    if (now() - interaction.created_at > TOKEN_LIFE_MS) throw new DiscordHttpError(401, 50027, 'Invalid Webhook Token');
    if (!interaction.callback || interaction.callback.type === 9) throw unknownWebhook();
    return interaction;
  };

  const webhookMessage = (interaction: FakeInteraction, messageId: string): FakeMessage => {
    const message = messageId === '@original' ? interaction.original : [interaction.original, ...interaction.followUps].find((candidate) => candidate?.id === messageId);
    if (!message || message.deleted) throw unknownMessage();
    return message;
  };

  function followUp(interaction: FakeInteraction, body: Record<string, unknown>): FakeMessage {
    requireMessage(body);
    const original = interaction.original;
    // The first follow-up after a deferral replaces its "thinking" message and keeps the deferral's
    // ephemeral state, whatever it asks for; every later one is ephemeral only if it says so.
    if (original && original.loading && !original.deleted) {
      applyEdit(original, body);
      return original;
    }
    const message = newMessage({
      channel_id: interaction.channel.id,
      author: bot,
      interaction_id: interaction.id,
      content: String(body.content ?? ''),
      components: (body.components as unknown[]) ?? [],
      embeds: (body.embeds as unknown[]) ?? [],
      flags: Number(body.flags ?? 0) & (EPHEMERAL | 4 | 4096),
    });
    interaction.followUps.push(message);
    return message;
  }

  // ---- REST -----------------------------------------------------------------------------------

  const requireBot = (request: IncomingMessage) => {
    if (request.headers.authorization !== `Bot ${token}`) throw unauthorized();
  };

  function route(method: string, parts: string[], request: IncomingMessage, body: unknown, query: URLSearchParams): { status: number; body?: unknown } {
    const json = (body ?? {}) as Record<string, unknown>;
    const ok = (value: unknown) => ({ status: 200, body: value });
    const [resource, first, second, third, fourth] = parts;

    if (resource === 'gateway' && first === 'bot' && method === 'GET') {
      requireBot(request);
      return ok({ url: gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: knobs.sessionStartRemaining, reset_after: 14_400_000, max_concurrency: 1 } });
    }
    if (resource === 'gateway' && !first && method === 'GET') return ok({ url: gatewayUrl });
    if (resource === 'users' && first === '@me' && !second && method === 'GET') {
      requireBot(request);
      return ok({ ...userJson(bot), verified: true, mfa_enabled: false, flags: 0 });
    }
    if (resource === 'applications' && second === 'commands' && !third) {
      requireBot(request);
      if (first !== applicationId) throw new DiscordHttpError(403, 50001, 'Missing Access');
      if (method === 'GET') return ok(commands);
      if (method === 'PUT') {
        const errors = checkCommands(body);
        if (!errors.empty) throw invalidForm(errors);
        commands = (body as Record<string, unknown>[]).map((command) => ({
          id: commands.find((old) => old.name === command.name)?.id ?? snowflake(),
          application_id: applicationId,
          version: snowflake(),
          type: 1,
          default_member_permissions: null,
          nsfw: false,
          integration_types: [0],
          contexts: null,
          ...command,
        }));
        return ok(commands);
      }
    }
    if (resource === 'channels' && first) {
      requireBot(request);
      const target = allChannels.get(first);
      if (!target) throw new DiscordHttpError(404, 10003, 'Unknown Channel');
      if (!second && method === 'GET') return ok(channelJson(target));
      if (second === 'messages' && !third && method === 'POST') {
        requireMessage(body);
        const reference = json.message_reference as { message_id?: string } | undefined;
        const message = newMessage({
          channel_id: target.id,
          author: bot,
          content: String(json.content ?? ''),
          components: (json.components as unknown[]) ?? [],
          embeds: (json.embeds as unknown[]) ?? [],
          flags: Number(json.flags ?? 0) & (4 | 4096),
          mentions: mentionsIn(String(json.content ?? '')),
          reference: reference?.message_id ? { message_id: reference.message_id, channel_id: target.id, guild_id: target.guild_id } : null,
        });
        dispatch('MESSAGE_CREATE', messageJson(message), (session) => (session.intents & (target.guild_id ? INTENTS.GuildMessages : INTENTS.DirectMessages)) !== 0);
        return ok(messageJson(message));
      }
      if (second === 'messages' && third && method === 'GET') {
        const message = messages.get(third);
        if (!message || message.deleted || message.channel_id !== target.id || message.ephemeral) throw unknownMessage();
        return ok(messageJson(message));
      }
    }
    if (resource === 'interactions' && first && second && third === 'callback' && method === 'POST') {
      return interactionCallback(first, second, json);
    }
    if (resource === 'webhooks' && first && second) {
      const interaction = webhookInteraction(first, second);
      if (!third && method === 'POST') {
        const message = followUp(interaction, json);
        return query.get('wait') === 'true' ? ok(messageJson(message)) : { status: 204 };
      }
      if (third === 'messages' && fourth) {
        const message = webhookMessage(interaction, fourth);
        if (method === 'GET') return ok(messageJson(message));
        if (method === 'PATCH') {
          requireMessage(body, true);
          applyEdit(message, json);
          return ok(messageJson(message));
        }
        if (method === 'DELETE') {
          message.deleted = true;
          options.onMessage?.(message, 'deleted');
          return { status: 204 };
        }
      }
    }
    throw notFoundRoute();
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = request.method ?? 'GET';
    const raw = await readBody(request);
    if (url.pathname.startsWith('/__control')) return control(method, url, raw, response);

    let body: unknown = undefined;
    const entry: JournalEntry = { method, path: url.pathname, query: Object.fromEntries(url.searchParams), authorization: request.headers.authorization ?? null, body: null, status: 0, code: null, at: now() };
    requests.push(entry);
    try {
      if (raw.length > 0) {
        if (!String(request.headers['content-type'] ?? '').includes('application/json')) {
          throw new DiscordHttpError(400, 50035, 'Invalid Form Body', withError([], 'CONTENT_TYPE_INVALID', 'Expected "Content-Type" header to be one of {\'application/json\', \'multipart/form-data\'}.'));
        }
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          throw new DiscordHttpError(400, 50109, 'The request body contains invalid JSON.');
        }
      }
      entry.body = body ?? null;
      const prefix = `/api/v${API_VERSION}/`;
      if (!url.pathname.startsWith(prefix)) throw notFoundRoute();
      const parts = url.pathname.slice(prefix.length).split('/').filter(Boolean).map((part) => decodeURIComponent(part));
      const result = route(method, parts, request, body, url.searchParams);
      entry.status = result.status;
      send(response, result.status, result.body);
    } catch (error) {
      const failure = error instanceof DiscordHttpError ? error : new DiscordHttpError(500, 0, '500: Internal Server Error');
      if (!(error instanceof DiscordHttpError)) console.error('fake-discord:', error);
      entry.status = failure.status;
      entry.code = failure.code;
      send(response, failure.status, failure.body);
    }
  }

  // ---- the hand-run mode's controls (main.ts) ------------------------------------------------

  function control(method: string, url: URL, raw: Buffer, response: ServerResponse): void {
    try {
      const json = raw.length ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : {};
      const action = url.pathname.replace(/^\/__control\/?/, '');
      const named = (name: unknown) => fake.user(String(name ?? 'attendee'));
      const channelNamed = (name: unknown) => Object.values(channels).find((c) => c.name === name || c.id === name) ?? general;
      if (method === 'GET' && action === 'messages') return send(response, 200, fake.messages().map(messageJson));
      if (method === 'POST' && action === 'command') {
        const interaction = fake.slashCommand({
          command: String(json.command ?? 'ask'),
          options: json.question !== undefined ? { question: String(json.question) } : ((json.options as Record<string, string>) ?? {}),
          user: named(json.user),
          channel: channelNamed(json.channel),
          roles: (json.roles as string[]) ?? [],
        });
        return send(response, 200, { interaction_id: interaction.id });
      }
      if (method === 'POST' && action === 'click') {
        const message = fake.message(String(json.message_id));
        if (!message) return send(response, 404, { error: 'no such message' });
        const interaction = fake.click(message, String(json.custom_id), named(json.user));
        return send(response, 200, { interaction_id: interaction.id });
      }
      if (method === 'POST' && action === 'modal') {
        const shownBy = interactions.find((candidate) => candidate.id === json.interaction_id);
        if (!shownBy) return send(response, 404, { error: 'no such interaction' });
        const interaction = fake.submitModal(shownBy, (json.values as Record<string, string>) ?? {});
        return send(response, 200, { interaction_id: interaction.id });
      }
      if (method === 'POST' && action === 'message') {
        const message = fake.post({ channel: channelNamed(json.channel), user: named(json.user), content: String(json.content ?? ''), mentionBot: json.mention !== false });
        return send(response, 200, { message_id: message.id });
      }
      if (method === 'POST' && action === 'disconnect') {
        fake.disconnect(Number(json.code ?? 4000));
        return send(response, 200, { ok: true });
      }
      if (method === 'POST' && action === 'knobs') {
        Object.assign(knobs, json);
        return send(response, 200, { knobs });
      }
      if (method === 'GET' && action === '') {
        return send(response, 200, { connected: liveSessions().length, identifies, presence: presenceUpdates.at(-1) ?? null, commands, channels, guild: { id: guildId, roles } });
      }
      send(response, 404, { error: `unknown control ${method} /__control/${action}` });
    } catch (error) {
      send(response, 400, { error: error instanceof Error ? error.message : String(error) });
    }
  }

  // ---- server ---------------------------------------------------------------------------------

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      console.error('fake-discord:', error);
      if (!response.headersSent) send(response, 500, { message: '500: Internal Server Error', code: 0 });
    });
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', handleSocket);
  // Every socket, upgraded ones included (closeAllConnections leaves those out), so that close() ends them all,
  // and any a reconnecting client opens while it runs.
  const sockets = new Set<Socket>();
  let closing = false;
  server.on('connection', (socket) => {
    if (closing) return void socket.destroy();
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const gatewayUrl = `ws://127.0.0.1:${port}`;

  const fake: FakeDiscord = {
    apiUrl: `${base}/api`,
    gatewayUrl,
    url: base,
    token,
    applicationId,
    bot,
    guild: { id: guildId, name: 'Test Con', roles },
    channels,
    knobs,
    now,
    advance(ms) {
      offset += ms;
    },
    requests,
    get commands() {
      return commands;
    },
    set commands(value) {
      commands = value;
    },
    interactions,
    sessions,
    presenceUpdates,
    get presence() {
      return presenceUpdates.at(-1) ?? null;
    },
    get identifies() {
      return identifies;
    },
    get connected() {
      return liveSessions().length;
    },
    waitForReady(timeoutMs = 10_000) {
      const live = liveSessions().at(-1);
      if (live) return Promise.resolve(live);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no gateway session became ready')), timeoutMs);
        readyWaiters.push((session) => {
          clearTimeout(timer);
          resolve(session);
        });
      });
    },

    user(username, userOptions = {}) {
      const existing = [...users.values()].find((user) => user.username === username);
      if (existing) return existing;
      const user: FakeUser = { id: snowflake(), username, global_name: userOptions.globalName === undefined ? username[0]!.toUpperCase() + username.slice(1) : userOptions.globalName };
      users.set(user.id, user);
      return user;
    },
    dmChannel(user) {
      const existing = [...allChannels.values()].find((c) => c.type === 1 && c.recipient?.id === user.id);
      if (existing) return existing;
      const dm: FakeChannel = { id: snowflake(), name: `dm-${user.username}`, type: 1, guild_id: null, parent_id: null, recipient: user };
      allChannels.set(dm.id, dm);
      return dm;
    },

    slashCommand(input) {
      const command = commands.find((candidate) => candidate.name === input.command);
      if (!command) throw new Error(`/${input.command} is not registered (registered: ${commands.map((c) => c.name).join(', ') || 'none'})`);
      const declared = (command.options as { name: string; type: number; required?: boolean; min_length?: number; max_length?: number }[] | undefined) ?? [];
      const given = input.options ?? {};
      // What the Discord client enforces before sending.
      for (const option of declared) {
        const value = given[option.name];
        if (value === undefined) {
          if (option.required) throw new Error(`/${input.command} needs ${option.name}`);
          continue;
        }
        if (option.min_length !== undefined && value.length < option.min_length) throw new Error(`${option.name} is shorter than ${option.min_length}`);
        if (option.max_length !== undefined && value.length > option.max_length) throw new Error(`${option.name} is longer than ${option.max_length}`);
      }
      for (const name of Object.keys(given)) if (!declared.some((option) => option.name === name)) throw new Error(`/${input.command} has no option ${name}`);
      const channelOf = input.channel ?? general;
      if (channelOf.guild_id) memberRoles.set(input.user.id, input.roles ?? memberRoles.get(input.user.id) ?? []);
      return createInteraction(
        { type: 2, name: input.command, user: input.user, channel: channelOf },
        {
          id: command.id,
          name: input.command,
          type: 1,
          ...(channelOf.guild_id ? { guild_id: channelOf.guild_id } : {}),
          ...(Object.keys(given).length ? { options: Object.entries(given).map(([name, value]) => ({ name, type: 3, value })) } : {}),
        },
      );
    },
    click(message, customId, user) {
      const button = message.components
        .flatMap((row) => ((row as { components?: unknown[] }).components ?? []) as { type: number; custom_id?: string; disabled?: boolean }[])
        .find((component) => component.type === 2 && component.custom_id === customId);
      if (!button) throw new Error(`message ${message.id} has no button ${customId}`);
      if (button.disabled) throw new Error(`button ${customId} is disabled`);
      if (message.deleted) throw new Error(`message ${message.id} was deleted`);
      const answered = interactions.find((candidate) => candidate.id === message.interaction_id);
      if (message.ephemeral && answered && answered.user.id !== user.id) throw new Error('only the asker sees an ephemeral message');
      const channelOf = allChannels.get(message.channel_id)!;
      return createInteraction({ type: 3, name: customId, user, channel: channelOf, source: message }, { custom_id: customId, component_type: 2 }, { message: messageJson(message) });
    },
    submitModal(shownBy, values) {
      const modal = shownBy.modal;
      if (!modal) throw new Error(`interaction ${shownBy.id} did not answer with a modal`);
      const submitted = ((modal.components as Record<string, unknown>[]) ?? []).map((component) => {
        const labelled = component.type === 18;
        const input = (labelled ? component.component : (component.components as unknown[])[0]) as { custom_id: string; required?: boolean; min_length?: number; max_length?: number };
        const value = values[input.custom_id] ?? '';
        if ((input.required ?? true) && value.length === 0) throw new Error(`${input.custom_id} is required`);
        if (value.length > 0 && input.min_length !== undefined && value.length < input.min_length) throw new Error(`${input.custom_id} is shorter than ${input.min_length}`);
        if (input.max_length !== undefined && value.length > input.max_length) throw new Error(`${input.custom_id} is longer than ${input.max_length}`);
        const text = { type: 4, id: 2, custom_id: input.custom_id, value };
        return labelled ? { type: 18, id: 1, component: text } : { type: 1, id: 1, components: [text] };
      });
      return createInteraction(
        { type: 5, name: String(modal.custom_id), user: shownBy.user, channel: shownBy.channel, source: shownBy.source },
        { custom_id: modal.custom_id, components: submitted },
        shownBy.source ? { message: messageJson(shownBy.source) } : {},
      );
    },
    post(input) {
      const channelOf = input.channel ?? general;
      const replied = input.replyTo ?? null;
      const mentions = [...(input.mentionBot ? [bot] : []), ...(replied ? [replied.author] : [])];
      const content = input.mentionBot ? `<@${bot.id}> ${input.content}` : input.content;
      users.set(input.user.id, input.user);
      const message = newMessage({
        channel_id: channelOf.id,
        author: input.user,
        content,
        mentions: [...new Map(mentions.map((user) => [user.id, user])).values()],
        reference: replied ? { message_id: replied.id, channel_id: replied.channel_id, guild_id: replied.guild_id } : null,
      });
      const guildMessage = channelOf.guild_id !== null;
      const payload = {
        ...messageJson(message),
        ...(guildMessage ? { member: memberJson(input.user, false) } : {}),
        ...(replied ? { referenced_message: messageJson(replied) } : {}),
      };
      // Without the MessageContent intent a bot gets the text only of DMs and of messages that mention it.
      const mentionsBot = message.mentions.some((user) => user.id === bot.id);
      dispatch(
        'MESSAGE_CREATE',
        (session: GatewaySession) => ((session.intents & INTENTS.MessageContent) !== 0 || !guildMessage || mentionsBot ? payload : { ...payload, content: '' }),
        (session) => (session.intents & (guildMessage ? INTENTS.GuildMessages : INTENTS.DirectMessages)) !== 0,
      );
      return message;
    },
    message: (id) => messages.get(id),
    messages(channelOf) {
      return [...messages.values()].filter((message) => !message.deleted && (!channelOf || message.channel_id === channelOf.id));
    },

    disconnect(code = 4000) {
      for (const session of liveSessions()) session.socket!.close(code, 'Closed by the fake Discord');
    },
    requestReconnect() {
      for (const session of liveSessions()) sendTo(session, { op: 7, d: null, s: null, t: null });
    },
    invalidateSession(resumable = false) {
      for (const session of liveSessions()) {
        if (!resumable) session.invalid = true;
        sendTo(session, { op: 9, d: resumable, s: null, t: null });
      }
    },
    async close() {
      closing = true;
      for (const client of wss.clients) client.terminate();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, body?: unknown): void {
  if (status === 204 || body === undefined) {
    response.writeHead(status === 200 ? 204 : status);
    response.end();
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
