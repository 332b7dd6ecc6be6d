import { z } from 'zod';
import { parseDuration } from './duration.ts';

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const TRUNCATION_TYPES = ['auto', 'last_messages'] as const;

/** What happens when the day's token budget is spent (spending cap). */
export const TOKEN_BUDGET_ACTIONS = ['offline', 'pause'] as const;
export type TokenBudgetAction = (typeof TOKEN_BUDGET_ACTIONS)[number];
export type TruncationType = (typeof TRUNCATION_TYPES)[number];

/** The seven per-subsystem log level fields of the runtime configuration. */
export const LOG_LEVEL_FIELDS = [
  'log_level',
  'openai_log_level',
  'discord_log_level',
  'discordgo_log_level',
  'database_log_level',
  'discord_webhook_log_level',
  'api_log_level',
] as const;
export type LogLevelField = (typeof LOG_LEVEL_FIELDS)[number];

/** Poll interval bounds (DESIGN §8). */
export const POLL_INTERVAL_MIN_MS = 100;
export const POLL_INTERVAL_MAX_MS = 60_000;
export const MAX_POLL_INTERVAL_MAX_MS = 10 * 60_000;

const logLevel = z.preprocess(
  (value) => (typeof value === 'string' ? value.trim().toUpperCase() : value),
  z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }),
);

const duration = (minMs: number, maxMs: number) =>
  z
    .string()
    .trim()
    .refine((text) => parseDuration(text) !== null, { message: 'must be a duration such as 500ms, 3s or 1m30s' })
    .refine(
      (text) => {
        const ms = parseDuration(text);
        return ms === null || (ms >= minMs && ms <= maxMs);
      },
      { message: `must be between ${minMs}ms and ${maxMs / 1000}s` },
    );

const int = (min: number, max: number) =>
  z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const requiredText = (max: number) => text(max).trim().min(1, 'must not be empty');

/** A Discord snowflake, or empty to turn the feature off. */
const snowflakeOrEmpty = z
  .string()
  .trim()
  .regex(/^(\d{17,20})?$/, 'must be a Discord id (17–20 digits) or empty');

/** Discord channel ids in a text field: separated by commas, spaces or new lines. */
export const discordIdList = (text: string): string[] => text.split(/[\s,]+/).filter(Boolean);

/** A list of channel ids (any separator), stored as "id, id"; empty means every channel. */
const snowflakeList = z
  .string()
  .max(4000, 'must be at most 4000 characters')
  .transform((text) => discordIdList(text).join(', '))
  .refine((text) => discordIdList(text).every((id) => /^\d{17,20}$/.test(id)), { message: 'must be Discord channel ids (17–20 digits) separated by commas, or empty' });

const urlOrEmpty = z
  .string()
  .trim()
  .max(2000)
  .refine((value) => value === '' || /^https?:\/\/[^\s]+$/i.test(value), { message: 'must be an http(s) URL or empty' });

/** Public chat wording limits (DESIGN §9 "Operator wording"). */
export const EXAMPLE_PROMPTS_MAX = 8;
export const EXAMPLE_PROMPT_MAX_LENGTH = 200;

/**
 * Where the wording fields say `{product}`, the product's name
 * (PRODUCT_NAME) goes, so the texts follow a rename without an edit.
 */
export const PRODUCT_PLACEHOLDER = '{product}';
export const withProductName = (text: string, productName: string) => text.replaceAll(PRODUCT_PLACEHOLDER, productName);

/** The example prompts field, one prompt per line, as the list the chat offers (blank lines skipped). */
export const examplePromptList = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

const examplePrompts = z
  .string()
  .max(EXAMPLE_PROMPTS_MAX * (EXAMPLE_PROMPT_MAX_LENGTH + 2), 'is too long')
  .superRefine((value, ctx) => {
    const prompts = examplePromptList(value);
    if (prompts.length > EXAMPLE_PROMPTS_MAX) ctx.addIssue({ code: 'custom', message: `must have at most ${EXAMPLE_PROMPTS_MAX} prompts (one per line)` });
    const long = prompts.findIndex((prompt) => prompt.length > EXAMPLE_PROMPT_MAX_LENGTH);
    if (long >= 0) ctx.addIssue({ code: 'custom', message: `prompt ${long + 1} is longer than ${EXAMPLE_PROMPT_MAX_LENGTH} characters` });
  });

/**
 * Every editable field of the runtime configuration with its bounds. The
 * PATCH body is this schema with every field optional; unknown fields are
 * refused so a typo never silently does nothing.
 */
export const ConfigFieldsSchema = z.object({
  paused: z.boolean(),
  recover_panic: z.boolean(),
  discord_gateway_enabled: z.boolean(),
  discord_custom_status: text(128),
  discord_error_message: requiredText(2000),
  discord_rate_limit_message: requiredText(2000),
  discord_notification_channel_id: snowflakeOrEmpty,
  /** Channels /ask and /whisper answer in; empty: every channel. */
  discord_allowed_channel_ids: snowflakeList,
  feedback_enabled: z.boolean(),
  feedback_modal_title: requiredText(45),
  feedback_modal_input_label: requiredText(45),
  feedback_modal_placeholder: text(100),
  feedback_modal_min_length: int(0, 4000),
  feedback_modal_max_length: int(1, 4000),
  feedback_max_undo: int(0, 10),
  ask_command_max_attempts: int(0, 100),
  ask_command_description: requiredText(100),
  ask_command_option_description: requiredText(100),
  ask_command_min_length: int(1, 6000),
  ask_command_max_length: int(1, 6000),
  whisper_command_description: requiredText(100),
  whisper_command_option_description: requiredText(100),
  ack_early: z.boolean(),
  openai_truncation_strategy_type: z.enum(TRUNCATION_TYPES, { error: 'must be auto or last_messages' }),
  openai_truncation_strategy_last_messages: int(1, 1000),
  openai_max_requests_per_second: z
    .number({ error: 'must be a number' })
    .min(0.1, 'must be at least 0.1')
    .max(1000, 'must be at most 1000'),
  /** Status checks of runs that are not streamed, per second, for all runs together (one budget for every process). */
  openai_max_polls_per_second: int(1, 1000),
  openai_max_prompt_tokens: int(0, 2_000_000).refine((n) => n === 0 || n >= 256, {
    message: 'must be 0 (no limit) or at least 256',
  }),
  openai_max_completion_tokens: int(0, 1_000_000).refine((n) => n === 0 || n >= 16, {
    message: 'must be 0 (no limit) or at least 16',
  }),
  donated_role_id: snowflakeOrEmpty,
  assistant_poll_interval: duration(POLL_INTERVAL_MIN_MS, POLL_INTERVAL_MAX_MS),
  assistant_max_poll_interval: duration(POLL_INTERVAL_MIN_MS, MAX_POLL_INTERVAL_MAX_MS),
  assistant_instructions: requiredText(32_000),
  assistant_additional_instructions: text(32_000),
  crawler_schedule: requiredText(200),
  user_ask_command_limit_6h: int(1, 10_000),
  donation_url: urlOrEmpty,
  public_chat_enabled: z.boolean(),
  public_chat_requests_per_minute: int(1, 60),
  public_chat_turnstile_validation_enabled: z.boolean(),
  /** Markdown; the chat's first message. */
  public_chat_welcome_message: requiredText(4000),
  /** One per line, offered under the welcome message. */
  public_chat_example_prompts: examplePrompts,
  /** Markdown; the info dialog's text (who runs this, what it is). */
  public_chat_about_text: requiredText(8000),
  /** Markdown; what a visitor is told while the bot is paused. */
  public_chat_paused_message: requiredText(1000),
  /** Provider tokens the public chat and the bot may spend per convention day; 0 = no cap. */
  daily_token_budget: int(0, 1_000_000_000),
  /** What happens once the day's tokens are spent: answer with the offline assistant, or pause. */
  token_budget_action: z.enum(TOKEN_BUDGET_ACTIONS, { error: 'must be offline or pause' }),
  /** Days public chat messages (and idle sessions) are kept; 0 keeps them for ever. */
  retention_messages_days: int(0, 3650),
  /** Days client IP addresses are kept on any row (then removed from it); 0 keeps them for ever. */
  retention_client_ip_days: int(0, 3650),
  /** Days provider call logs keep their request and response bodies; 0 keeps them for ever. */
  retention_call_bodies_days: int(0, 3650),
  /** Crawler runs whose events are kept (the newest ones; the last good run's always are); 0 keeps all. */
  retention_crawler_runs: int(0, 10_000),
  log_level: logLevel,
  openai_log_level: logLevel,
  discord_log_level: logLevel,
  discordgo_log_level: logLevel,
  database_log_level: logLevel,
  discord_webhook_log_level: logLevel,
  api_log_level: logLevel,
});
export type ConfigFields = z.output<typeof ConfigFieldsSchema>;
export type ConfigField = keyof ConfigFields;
export const CONFIG_FIELDS = Object.keys(ConfigFieldsSchema.shape) as ConfigField[];

/** The configuration as the API returns it. */
export type RuntimeConfig = ConfigFields & {
  id: number;
  created_at: string;
  updated_at: string;
  /** SHA-256 of the editable fields: changes whenever any of them does. */
  hash: string;
};

/** The spelling SPEC also uses for `openai_max_completion_tokens`. */
export const CONFIG_FIELD_ALIASES: Record<string, ConfigField> = {
  openai_completion_tokens: 'openai_max_completion_tokens',
};

export const ConfigPatchSchema = z.preprocess(
  (body) => {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
    const renamed: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(body)) renamed[CONFIG_FIELD_ALIASES[key] ?? key] = value;
    return renamed;
  },
  z.strictObject(ConfigFieldsSchema.partial().shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}` : 'expected an object'),
  }),
);
export type ConfigPatch = z.output<typeof ConfigPatchSchema>;
