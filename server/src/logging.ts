import { pino, type Logger, type LevelWithSilent } from 'pino';
import type { LogLevel, LogLevelField, RuntimeConfig } from '@concierge/contract';

/** The named subsystems that log, each with its runtime-config level field. */
export const SUBSYSTEMS = {
  app: 'log_level',
  api: 'api_log_level',
  db: 'database_log_level',
  assistant: 'openai_log_level',
  chat: 'log_level',
  crawler: 'log_level',
  discord: 'discord_log_level',
  gateway: 'discordgo_log_level',
  notifications: 'discord_webhook_log_level',
} as const satisfies Record<string, LogLevelField>;
export type Subsystem = keyof typeof SUBSYSTEMS;

const PINO_LEVEL: Record<LogLevel, LevelWithSilent> = { DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/** Anything that looks like a credential is replaced before a line is written. */
const REDACT_PATHS = [
  'password',
  'confirm_password',
  'token',
  'secret',
  'apiKey',
  'authorization',
  '*.password',
  '*.confirm_password',
  '*.token',
  '*.secret',
  '*.apiKey',
  '*.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
];

/**
 * One root pino logger and one child per subsystem. Start-up uses LOG_LEVEL;
 * once the runtime configuration is read, each child follows its own
 * `*_log_level` field and changes level as soon as the field is edited.
 */
export class Loggers {
  readonly root: Logger;
  readonly #children = new Map<Subsystem, Logger>();
  readonly #silent: boolean;

  constructor(options: { level: LevelWithSilent; destination?: pino.DestinationStream }) {
    this.#silent = options.level === 'silent';
    this.root = pino(
      {
        level: options.level,
        redact: { paths: REDACT_PATHS, censor: '[redacted]' },
        base: { pid: process.pid },
        timestamp: pino.stdTimeFunctions.isoTime,
      },
      options.destination,
    );
    for (const name of Object.keys(SUBSYSTEMS) as Subsystem[]) {
      this.#children.set(name, this.root.child({ subsystem: name }));
    }
  }

  get(name: Subsystem): Logger {
    return this.#children.get(name)!;
  }

  /** Follows the runtime configuration's log levels (a silent start stays silent). */
  apply(config: Pick<RuntimeConfig, LogLevelField>): void {
    if (this.#silent) return;
    for (const [name, field] of Object.entries(SUBSYSTEMS) as [Subsystem, LogLevelField][]) {
      this.get(name).level = PINO_LEVEL[config[field]];
    }
  }
}
