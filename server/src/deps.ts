import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pino from 'pino';
import { StatusService } from './admin/status.service.ts';
import { AskCommandService } from './ask/ask-commands.service.ts';
import { AskPipeline } from './ask/ask-pipeline.ts';
import { AskWorker } from './ask/ask-worker.ts';
import { TokenBudget } from './ask/token-budget.ts';
import { OfflineFallback } from './assistant/offline-fallback.ts';
import { LeaseKeeper } from './ask/lease-keeper.ts';
import { AssistantService } from './assistant/assistant.service.ts';
import { KnowledgeService } from './assistant/knowledge.service.ts';
import { LocalProvider } from './assistant/local/local-provider.ts';
import { OpenAIProvider } from './assistant/openai/openai-provider.ts';
import type { AssistantProvider } from './assistant/provider.ts';
import { AuthService } from './auth/auth.service.ts';
import type { LastRefreshSource } from './chat/chat.routes.ts';
import { ChatService } from './chat/chat.service.ts';
import { CrawlerScheduler } from './crawler/crawler-scheduler.ts';
import { DiscordBot } from './discord/discord-bot.ts';
import { CrawlerService } from './crawler/crawler.service.ts';
import { systemClock, type Clock } from './clock.ts';
import { defaultConfig } from './config/defaults.ts';
import { ConfigService } from './config/config.service.ts';
import { BUNDLED_SCHEDULE_PATH, REPO_ROOT, turnstileConfigured, usesOpenAI, type Env } from './config/env.ts';
import { rememberedSetting } from './db/app-settings.ts';
import { openDatabase, type Database } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { EventBus } from './events.ts';
import { StatusCounters } from './admin/status-counters.ts';
import { ProviderLogWriter } from './assistant/provider-log-writer.ts';
import { Leadership } from './cluster/leadership.ts';
import { PgNotifyTransport } from './cluster/pg-notify.ts';
import { Housekeeping } from './housekeeping/housekeeping.ts';
import type { HealthSources } from './health/health.routes.ts';
import { Loggers } from './logging.ts';
import { UsersService } from './users/users.service.ts';
import { formatPeopleTime } from '@concierge/contract';
import { Metrics } from './metrics/metrics.ts';
import { WatchHub } from './watch/watch-hub.ts';
import { WatchTokens } from './watch/watch-tokens.ts';

/** Everything the HTTP app and the background workers are built from. */
export interface Deps {
  env: Env;
  clock: Clock;
  loggers: Loggers;
  database: Database;
  config: ConfigService;
  auth: AuthService;
  events: EventBus;
  /** Which process runs the singleton background work (with several processes on PostgreSQL); started by startServer. */
  leadership: Leadership;
  /** The Status screen's running totals, shared by every process. */
  counters: StatusCounters;
  assistant: AssistantService;
  /** Turns questions from every front into answers. */
  pipeline: AskPipeline;
  /** The spending cap's daily token count. */
  budget: TokenBudget;
  /** Renews this process's leases and takes over a stopped process's work; started by startServer, not by tests. */
  leases: LeaseKeeper;
  /** The documents the assistant knows, whatever the provider; synced to the provider on start. */
  knowledge: KnowledgeService;
  chat: ChatService;
  users: UsersService;
  askCommands: AskCommandService;
  /** Answers queued ask commands; started by startServer, not by tests (which call `drain()`). */
  askWorker: AskWorker;
  /** The Discord bot (the ask worker's front); its gateway is started by startServer, not by tests that do not want it. */
  discord: DiscordBot;
  crawler: CrawlerService;
  status: StatusService;
  /** Prometheus metrics of this process (GET /metrics). */
  metrics: Metrics;
  /** The Watch feed's single-use tokens (shared by every process through the database). */
  watchTokens: WatchTokens;
  /** The Watch feed's websocket connections in this process; hears every process's answers. */
  watch: WatchHub;
  /** Asks the process to shut down gracefully (the console's Kill); main.ts sets it. */
  requestShutdown: () => void;
  /** Runs the crawler on its cron schedule; started by startServer, not by tests. */
  crawlerScheduler: CrawlerScheduler;
  /** Hourly clean-up of expired rows; started by startServer, not by tests. */
  housekeeping: Housekeeping;
  lastRefresh: LastRefreshSource;
  /** The convention's IANA time zone: CONVENTION_TIMEZONE, else the schedule's own, else the server's. */
  timeZone(): string;
  health: HealthSources;
  sessionSecret: string;
  version: string;
  /** Stops background work and closes the database. */
  close(): Promise<void>;
}

export interface DepsOptions {
  clock?: Clock;
  /** Where log lines go (default stdout). */
  logDestination?: pino.DestinationStream;
  /** PostgreSQL schema to work in; tests use one per suite. */
  databaseSchema?: string;
  /** Outgoing HTTP (Turnstile's siteverify); tests may stand in for it. */
  fetch?: typeof fetch;
  /**
   * Run the hot path's database operations on a thread of their own
   * (QueryThread; default true). bench/src/count-writes.ts turns it off to
   * count every statement on the event loop's connection.
   */
  queryThread?: boolean;
}

export const APP_VERSION: string = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).version;

/**
 * Opens the database, runs the migrations, loads the runtime configuration
 * and builds the services. Nothing here listens on a port.
 */
export async function createDeps(env: Env, options: DepsOptions = {}): Promise<Deps> {
  const clock = options.clock ?? systemClock;
  const loggers = new Loggers({ level: env.LOG_LEVEL, destination: options.logDestination });
  const database = await openDatabase(env.DATABASE_URL, {
    logger: loggers.get('db'),
    schema: options.databaseSchema,
    poolSize: env.DATABASE_POOL_SIZE,
    sessionUrl: env.DATABASE_SESSION_URL,
    checkpointThread: true,
    queryThread: options.queryThread ?? true,
  });
  try {
    await migrateToLatest(database, loggers.get('db'));
    // With PostgreSQL, events of CLUSTER_EVENTS reach every process (LISTEN/NOTIFY); startServer starts hearing them.
    // (The Watch feed's shared events ride the same transport: new ClusterChannel({ namespace: 'shared', transport, logger }).)
    const transport = database.dialect === 'postgres' ? new PgNotifyTransport({ database, clock, logger: loggers.get('app') }) : undefined;
    const events = new EventBus({ transport, logger: loggers.get('app') });
    const config = new ConfigService({
      database,
      clock,
      defaults: defaultConfig(env.PRODUCT_NAME),
      logger: loggers.get('app'),
      turnstileConfigured: turnstileConfigured(env),
      events,
    });
    loggers.apply(await config.start());
    config.onChange(({ config: next }) => loggers.apply(next));
    config.listenForChanges();
    const counters = new StatusCounters({ database, logger: loggers.get('app') });
    const leadership = new Leadership({ database, clock, logger: loggers.get('app') });

    const auth = new AuthService({ database, clock, logger: loggers.get('api'), events });
    const sessionSecret = env.SESSION_SECRET ?? (await loadOrCreateSessionSecret(database, clock));

    // The answers' call logs are written in batches, shared by the assistant and its offline fallback.
    const providerLogs = new ProviderLogWriter({ database, logger: loggers.get('assistant') });
    const assistant = new AssistantService({
      provider: createProvider(env, database, clock),
      database,
      clock,
      logger: loggers.get('assistant'),
      config: () => config.get(),
      events,
      logs: providerLogs,
    });
    const knowledge = new KnowledgeService({ database, clock, logger: loggers.get('assistant'), assistant });
    // The spending cap: the day's provider tokens, and with OpenAI the offline assistant standing by.
    const budget = new TokenBudget({ database, clock, config, events, logger: loggers.get('assistant'), timeZone: () => crawler.timeZone() });
    const fallback = usesOpenAI(env)
      ? new OfflineFallback({
          assistant: new AssistantService({ provider: createLocalProvider(env, database, clock), database, clock, logger: loggers.get('assistant'), config: () => config.get(), events, logs: providerLogs }),
          knowledge,
        })
      : undefined;
    const pipeline = new AskPipeline({
      assistant,
      clock,
      config,
      events,
      logger: loggers.get('assistant'),
      maxConcurrentRuns: env.MAX_CONCURRENT_RUNS,
      productName: env.PRODUCT_NAME,
      budget,
      fallback,
    });
    const leases = new LeaseKeeper({ clock, logger: loggers.get('assistant'), pipeline, everyoneAtStart: database.dialect === 'sqlite' });
    const chat = new ChatService({
      database,
      clock,
      logger: loggers.get('chat'),
      config,
      pipeline,
      assistant,
      turnstile:
        env.TURNSTILE_SITE_KEY && env.TURNSTILE_SECRET_KEY ? { secretKey: env.TURNSTILE_SECRET_KEY, verifyUrl: env.TURNSTILE_VERIFY_URL } : null,
      fetch: options.fetch,
    });
    leases.register(chat);
    const users = new UsersService({ database, clock, config });
    const askCommands = new AskCommandService({
      database,
      clock,
      config,
      users,
      pipeline,
      formatTime: (iso) => formatPeopleTime(iso, crawler.timeZone()),
    });
    const askWorker = new AskWorker({ database, clock, config, logger: loggers.get('assistant'), pipeline, users });
    // The worker runs on the leader, which may be another process: it hears of the command at once.
    askCommands.onQueued = () => events.publish('ask_command_queued', {});
    events.subscribe('ask_command_queued', () => askWorker.poke());
    leases.register(askWorker);
    const crawler = new CrawlerService({
      database,
      clock,
      logger: loggers.get('crawler'),
      knowledge,
      source: env.CRAWLER_URL,
      bundledSource: BUNDLED_SCHEDULE_PATH,
      timeZone: env.CONVENTION_TIMEZONE,
      productName: env.PRODUCT_NAME,
      events,
      counters,
      fetch: options.fetch,
    });
    await crawler.load();
    // A new schedule made live by any process: its time zone is the convention's here too.
    events.subscribe('crawler_run', ({ outcome }) => {
      if (outcome === 'stored') void crawler.load().catch((error: unknown) => loggers.get('crawler').error({ err: error }, "could not read the new schedule's time zone"));
    });
    const crawlerScheduler = new CrawlerScheduler({ crawler, config, logger: loggers.get('crawler') });
    const housekeeping = new Housekeeping({ auth, chat, database, config: () => config.get(), clock, logger: loggers.get('app') });
    const warnings =
      usesOpenAI(env) && !turnstileConfigured(env)
        ? ['An OpenAI key is set but human verification (Turnstile) is not configured: anyone can use the public chat and spend OpenAI tokens.']
        : [];
    const discord = new DiscordBot({
      token: env.DISCORD_TOKEN,
      applicationId: env.DISCORD_APPLICATION_ID,
      apiUrl: env.DISCORD_API_URL,
      owner: pipeline.owner,
      database,
      clock,
      config,
      logger: loggers.get('discord'),
      gatewayLogger: loggers.get('gateway'),
      notificationLogger: loggers.get('notifications'),
      askCommands,
      users,
      events,
      timeZone: () => crawler.timeZone(),
      productName: env.PRODUCT_NAME,
      pausedByBudget: () => pipeline.budgetPaused(),
      refreshBudget: () => budget.refresh(),
    });
    askWorker.setFront(discord);
    const status = new StatusService({ database, clock, config, crawler, users, askCommands, budget, discord, retention: housekeeping, timeZone: () => crawler.timeZone(), warnings, counters }, events);
    const health: HealthSources = { queueSize: () => askCommands.queued(database.healthDb), discordGatewayConnected: () => discord.connected };
    const metrics = new Metrics({
      events,
      version: APP_VERSION,
      snapshot: async () => {
        const figures = await status.status();
        return { paused: figures.paused, leader: leadership.isLeader, queueDepth: await health.queueSize(), crawler: figures.crawler, public_chat: figures.public_chat, token_budget: figures.token_budget };
      },
    });
    const liveSessions = (ids: readonly string[]) => auth.liveSessions(ids);
    const watchTokens = new WatchTokens({ database, clock, liveSessions });
    const watch = new WatchHub({ events, logger: loggers.get('api'), liveSessions });
    if (usesOpenAI(env) && !turnstileConfigured(env)) {
      loggers
        .get('app')
        .warn(
          'OPENAI_API_KEY is set but Turnstile is not configured: anyone can use the public chat and spend OpenAI tokens. ' +
            'Set TURNSTILE_SITE_KEY and TURNSTILE_SECRET_KEY and enable verification on the Config screen.',
        );
    }

    return {
      env,
      clock,
      loggers,
      database,
      config,
      auth,
      events,
      leadership,
      counters,
      assistant,
      pipeline,
      budget,
      leases,
      knowledge,
      chat,
      users,
      askCommands,
      askWorker,
      discord,
      crawler,
      crawlerScheduler,
      housekeeping,
      status,
      requestShutdown: () => loggers.get('app').warn('shutdown requested, but this process has no shutdown handler'),
      lastRefresh: crawler,
      timeZone: () => crawler.timeZone(),
      health,
      metrics,
      watchTokens,
      watch,
      sessionSecret,
      version: APP_VERSION,
      async close() {
        // The leader's work stops first (the gateway first of all: no new interactions; answers in flight are still
        // delivered through their webhooks), and the lock goes with it: another process takes over while this one finishes.
        await leadership.stop();
        await discord.stop();
        await askWorker.stop();
        await leases.stop();
        await fallback?.close();
        await crawlerScheduler.stop();
        await housekeeping.stop();
        metrics.close();
        watch.close();
        await knowledge.settled();
        await assistant.provider.close?.();
        await events.stop();
        await counters.close();
        await providerLogs.close();
        await database.close();
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** The cookie-signing secret: generated on first start and kept in the database. */
const loadOrCreateSessionSecret = (database: Database, clock: Clock) =>
  rememberedSetting(database.db, 'session_secret', clock.now().toISOString(), async () => randomBytes(48).toString('base64url'));

/** OpenAI when a key is set, else the offline assistant. */
function createProvider(env: Env, database: Database, clock: Clock): AssistantProvider {
  if (env.OPENAI_API_KEY) {
    return new OpenAIProvider({
      apiKey: env.OPENAI_API_KEY,
      baseURL: env.OPENAI_BASE_URL,
      model: env.OPENAI_MODEL,
      vectorStoreId: env.OPENAI_VECTOR_STORE_ID,
      timeoutMs: env.OPENAI_TIMEOUT_MS,
      productName: env.PRODUCT_NAME,
      database,
      clock,
    });
  }
  return createLocalProvider(env, database, clock);
}

const createLocalProvider = (env: Env, database: Database, clock: Clock) =>
  new LocalProvider({ database, clock, timeZone: () => env.CONVENTION_TIMEZONE ?? Intl.DateTimeFormat().resolvedOptions().timeZone });
