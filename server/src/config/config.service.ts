import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { CONFIG_FIELDS, parseDuration, type ConfigFields, type ConfigPatch, type RuntimeConfig } from '@concierge/contract';
import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import type { RuntimeConfigTable } from '../db/schema/index.ts';
import { invalidField } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { EventBus } from '../events.ts';
import { findConfigRow, seedConfigRow, updateConfigRow } from './config.queries.ts';

export interface ConfigChange {
  config: RuntimeConfig;
  previous: RuntimeConfig;
  /** The fields whose values changed. */
  changed: (keyof ConfigFields)[];
}

export type ConfigListener = (change: ConfigChange) => void;

export interface ConfigServiceOptions {
  database: Database;
  defaults: ConfigFields;
  clock: Clock;
  logger: Logger;
  /** Whether Turnstile keys are configured; without them verification cannot be switched on. */
  turnstileConfigured: boolean;
  /** Where other processes hear of a change (they read the row again: `listenForChanges()`). */
  events?: EventBus;
}

/**
 * The runtime configuration: one row, cached in memory, edited through
 * `update()`. Subsystems subscribe with `onChange()` so edits take effect at
 * once (log levels, crawler schedule, limits) — in every process: an edit
 * announces `config_changed` in the transaction that writes the row, and
 * the other processes read the row again when they hear it.
 */
export class ConfigService {
  readonly #options: ConfigServiceOptions;
  readonly #listeners = new Set<ConfigListener>();
  #current: RuntimeConfig | undefined;

  constructor(options: ConfigServiceOptions) {
    this.#options = options;
  }

  /** Seeds the row on first start and loads it into the cache. */
  async start(): Promise<RuntimeConfig> {
    const { database, defaults, clock } = this.#options;
    await seedConfigRow(database.db, defaults, clock.now().toISOString());
    return this.reload();
  }

  /**
   * Reads the row again whenever another process changed it, and after the
   * connection to the other processes was lost (a change may have been
   * missed). Returns the unsubscribe.
   */
  listenForChanges(): () => void {
    const events = this.#options.events;
    if (!events) return () => {};
    const reload = () =>
      void this.reload().catch((error: unknown) => this.#options.logger.error({ err: error }, 'could not read the runtime configuration again'));
    const stops = [
      events.subscribe('config_changed', ({ hash }) => {
        if (hash !== this.#current?.hash) reload();
      }),
      events.onResync(reload),
    ];
    return () => stops.forEach((stop) => stop());
  }

  /** Re-reads the row (e.g. after another process changed it) and notifies listeners of any difference. */
  async reload(): Promise<RuntimeConfig> {
    const row = await findConfigRow(this.#options.database.db);
    if (!row) throw new Error('runtime configuration row is missing; was the database migrated?');
    return this.#replace(present(row));
  }

  /** The cached configuration. */
  get(): RuntimeConfig {
    if (!this.#current) throw new Error('ConfigService.start() has not run');
    return this.#current;
  }

  onChange(listener: ConfigListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Applies a validated patch. Rules that involve several fields are checked
   * against the merged result; nothing is written when any check fails.
   */
  async update(patch: ConfigPatch): Promise<RuntimeConfig> {
    const current = this.get();
    const merged: ConfigFields = { ...pickFields(current), ...patch };
    this.#checkRules(merged, patch);
    const changes = Object.fromEntries(
      Object.entries(patch).filter(([key, value]) => current[key as keyof ConfigFields] !== value),
    ) as Partial<ConfigFields>;
    if (Object.keys(changes).length === 0) return current;
    const { database, events, clock } = this.#options;
    const row = await database.transaction(async (trx) => {
      const updated = await updateConfigRow(trx, changes, clock.now().toISOString());
      await events?.announce(trx, 'config_changed', { hash: present(updated).hash });
      return updated;
    });
    this.#options.logger.info({ fields: Object.keys(changes) }, 'runtime configuration updated');
    return this.#replace(present(row));
  }

  #checkRules(merged: ConfigFields, patch: ConfigPatch): void {
    const blame = (a: keyof ConfigFields, b: keyof ConfigFields) => (a in patch ? a : b);
    if (merged.feedback_modal_min_length > merged.feedback_modal_max_length) {
      throw invalidField(blame('feedback_modal_min_length', 'feedback_modal_max_length'), 'feedback_modal_min_length must not exceed feedback_modal_max_length');
    }
    if (merged.ask_command_min_length > merged.ask_command_max_length) {
      throw invalidField(blame('ask_command_min_length', 'ask_command_max_length'), 'ask_command_min_length must not exceed ask_command_max_length');
    }
    if (parseDuration(merged.assistant_poll_interval)! > parseDuration(merged.assistant_max_poll_interval)!) {
      throw invalidField(blame('assistant_poll_interval', 'assistant_max_poll_interval'), 'assistant_poll_interval must not exceed assistant_max_poll_interval');
    }
    if (patch.crawler_schedule !== undefined) {
      try {
        new Cron(patch.crawler_schedule, { paused: true }).stop();
      } catch (error) {
        throw invalidField('crawler_schedule', `must be a cron expression such as */30 * * * * (${(error as Error).message})`);
      }
    }
    if (patch.public_chat_turnstile_validation_enabled && !this.#options.turnstileConfigured) {
      throw invalidField('public_chat_turnstile_validation_enabled', 'cannot be enabled: TURNSTILE_SITE_KEY and TURNSTILE_SECRET_KEY are not set');
    }
  }

  #replace(next: RuntimeConfig): RuntimeConfig {
    const previous = this.#current;
    this.#current = next;
    if (previous && previous.hash !== next.hash) {
      const changed = CONFIG_FIELDS.filter((field) => previous[field] !== next[field]);
      for (const listener of this.#listeners) {
        try {
          listener({ config: next, previous, changed });
        } catch (error) {
          this.#options.logger.error({ err: error }, 'configuration listener failed');
        }
      }
    }
    return next;
  }
}

function pickFields(config: RuntimeConfig): ConfigFields {
  return Object.fromEntries(CONFIG_FIELDS.map((field) => [field, config[field]])) as ConfigFields;
}

function present(row: RuntimeConfigTable): RuntimeConfig {
  const fields = pickFields(row as RuntimeConfig);
  const hash = createHash('sha256').update(JSON.stringify(fields)).digest('hex');
  return { id: row.id, ...fields, created_at: row.created_at, updated_at: row.updated_at, hash };
}
