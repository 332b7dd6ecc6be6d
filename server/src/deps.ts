import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pino from 'pino';
import { AuthService } from './auth/auth.service.ts';
import { systemClock, type Clock } from './clock.ts';
import { defaultConfig } from './config/defaults.ts';
import { ConfigService } from './config/config.service.ts';
import { REPO_ROOT, turnstileConfigured, type Env } from './config/env.ts';
import { rememberedSetting } from './db/app-settings.ts';
import { openDatabase, type Database } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import type { HealthSources } from './health/health.routes.ts';
import { Loggers } from './logging.ts';

/** Everything the HTTP app and the background workers are built from. */
export interface Deps {
  env: Env;
  clock: Clock;
  loggers: Loggers;
  database: Database;
  config: ConfigService;
  auth: AuthService;
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
}

export const APP_VERSION: string = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).version;

/**
 * Opens the database, runs the migrations, loads the runtime configuration
 * and builds the services. Nothing here listens on a port.
 */
export async function createDeps(env: Env, options: DepsOptions = {}): Promise<Deps> {
  const clock = options.clock ?? systemClock;
  const loggers = new Loggers({ level: env.LOG_LEVEL, destination: options.logDestination });
  const database = await openDatabase(env.DATABASE_URL, { logger: loggers.get('db'), schema: options.databaseSchema });
  try {
    await migrateToLatest(database, loggers.get('db'));
    const config = new ConfigService({
      database,
      clock,
      defaults: defaultConfig(env.PRODUCT_NAME),
      logger: loggers.get('app'),
      turnstileConfigured: turnstileConfigured(env),
    });
    loggers.apply(await config.start());
    config.onChange(({ config: next }) => loggers.apply(next));

    const auth = new AuthService({ database, clock, logger: loggers.get('api') });
    const sessionSecret = env.SESSION_SECRET ?? (await loadOrCreateSessionSecret(database, clock));

    return {
      env,
      clock,
      loggers,
      database,
      config,
      auth,
      health: { queueSize: () => 0, discordGatewayConnected: () => false },
      sessionSecret,
      version: APP_VERSION,
      close: () => database.close(),
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** The cookie-signing secret: generated on first start and kept in the database. */
const loadOrCreateSessionSecret = (database: Database, clock: Clock) =>
  rememberedSetting(database.db, 'session_secret', clock().toISOString(), async () => randomBytes(48).toString('base64url'));
