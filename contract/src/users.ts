import { z } from 'zod';
import { parseDuration } from './duration.ts';
import { BooleanParam, ListQuerySchema, MAX_PAGE_SIZE, PAGE_SIZE } from './lists.ts';

/** Ask command states (DESIGN §6). */
export const ASK_COMMAND_STATES = ['received', 'queued', 'in_progress', 'completed', 'failed', 'expired', 'ignored', 'rate_limited', 'aborted'] as const;
export type AskCommandState = (typeof ASK_COMMAND_STATES)[number];

/** Ask command steps (DESIGN §6). */
export const ASK_COMMAND_STEPS = ['enqueue', 'creating_thread', 'creating_message', 'creating_run', 'polling_run', 'list_message', 'feedback_open', 'feedback_closed'] as const;

/** The users page's sizes (SPEC §2) and the history page size (SPEC §9). */
export const USER_PAGE_SIZES = [25, 50, 100] as const;
export const HISTORY_PAGE_SIZE = 20;
/** The 24 h limit a user gets without an override: this many times the 6 h limit (DESIGN §8). */
export const LIMIT_24H_FACTOR = 4;

// ---------------------------------------------------------------- users

/** Usage of one sliding window (SPEC §3 "User" → stats.ask_command_usage). */
export const WindowUsageSchema = z.object({
  limit: z.number(),
  attempted: z.number(),
  billable: z.number(),
  /** Commands still queued or being answered: they count against the limit until they end. */
  pending: z.number(),
  remaining: z.number(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
  state_counts: z.record(z.string(), z.number()),
  whisper_count: z.number(),
  thread_count: z.number(),
});
export type WindowUsage = z.infer<typeof WindowUsageSchema>;

export const UserStatsSchema = z.object({
  ask_command_usage: z.object({
    '24h': WindowUsageSchema,
    '6h': WindowUsageSchema,
    commands_available: z.number(),
    /** When the next command frees up (ISO), while none is available. */
    commands_available_at: z.string().nullable(),
  }),
  forget_commands: z.number(),
  /** Feedback this user gave on answers, by type. */
  reports: z.record(z.string(), z.number()),
});
export type UserStats = z.infer<typeof UserStatsSchema>;

export const UserSchema = z.object({
  id: z.string(),
  username: z.string(),
  global_name: z.string().nullable(),
  bot: z.boolean(),
  content: z.string().nullable(),
  thread_id: z.string().nullable(),
  priority: z.boolean(),
  ignored: z.boolean(),
  donated: z.boolean(),
  request_limit_24h: z.number().nullable(),
  request_limit_6h: z.number().nullable(),
  openai_truncation_strategy_type: z.enum(['auto', 'last_messages']).nullable(),
  openai_max_completion_tokens: z.number().nullable(),
  openai_max_prompt_tokens: z.number().nullable(),
  openai_truncation_strategy_last_messages: z.number().nullable(),
  assistant_additional_instructions: z.string().nullable(),
  assistant_poll_interval: z.string().nullable(),
  assistant_max_poll_interval: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  deleted_at: z.string().nullable(),
  stats: UserStatsSchema.optional(),
  // The figures the Users screen reads (SPEC §3), present with stats.
  billable_6h: z.number().optional(),
  attempted_6h: z.number().optional(),
  limit_6h: z.number().optional(),
  billable_24h: z.number().optional(),
  attempted_24h: z.number().optional(),
  limit_24h: z.number().optional(),
});
export type User = z.infer<typeof UserSchema>;

export const UsersQuerySchema = z.object({
  include_stats: BooleanParam.default(true),
  limit: z.coerce.number('must be a number').int('must be a whole number').min(1).max(MAX_PAGE_SIZE).default(PAGE_SIZE),
  offset: z.coerce.number('must be a number').int('must be a whole number').min(0).default(0),
  /** By username. */
  order: z.enum(['asc', 'desc'], 'must be asc or desc').default('asc'),
});

export const UserIdParamsSchema = z.object({ id: z.string().trim().regex(/^\d{1,20}$/, 'must be a Discord user id') });

export const UserHistoryQuerySchema = z.object({
  sort: z.enum(['asc', 'desc'], 'must be asc or desc').default('desc'),
  limit: z.coerce.number('must be a number').int('must be a whole number').min(1).max(MAX_PAGE_SIZE).default(HISTORY_PAGE_SIZE),
  offset: z.coerce.number('must be a number').int('must be a whole number').min(0).default(0),
  include_reports: BooleanParam.default(false),
});

export const FeedbackReportSchema = z.object({
  id: z.number(),
  user_id: z.string(),
  type: z.string(),
  description: z.string().nullable(),
  created_at: z.string(),
});

/** SPEC §3 "History item". */
export const HistoryItemSchema = z.object({
  ask_command_id: z.number(),
  username: z.string(),
  global_name: z.string().nullable(),
  user_id: z.string(),
  prompt: z.string(),
  response: z.string().nullable(),
  error: z.string().nullable(),
  created_at: z.string(),
  run_id: z.string().nullable(),
  state: z.string(),
  step: z.string(),
  thread_id: z.string().nullable(),
  run_status: z.string().nullable(),
  interaction_id: z.string().nullable(),
  context: z.string().nullable(),
  whisper: z.boolean(),
  /** Votes on this answer, by type. */
  feedback: z.record(z.string(), z.number()),
  /** The votes themselves, with `include_reports`. */
  reports: z.array(FeedbackReportSchema).optional(),
});
export type HistoryItem = z.infer<typeof HistoryItemSchema>;

const optionalLimit = (min: number, what: string) =>
  z.number({ error: `must be a number` }).int('must be a whole number').min(min, `${what} must be at least ${min}`).nullable();

const optionalDuration = z
  .string()
  .trim()
  .max(20)
  .nullable()
  .transform((text) => (text === '' ? null : text))
  .refine((text) => text === null || parseDuration(text) !== null, { message: 'must be a duration such as 500ms, 3s or 1m30s, or empty for the global setting' })
  .refine((text) => text === null || (parseDuration(text)! >= 100 && parseDuration(text)! <= 600_000), { message: 'must be between 100ms and 10m' });

/**
 * PATCH /api/user/{id}: only the fields that changed (SPEC §5). null puts a
 * per-user setting back to the global one. Username and global name come
 * from Discord and are read-only.
 */
export const UserPatchSchema = z
  .strictObject(
    {
      priority: z.boolean({ error: 'must be true or false' }),
      ignored: z.boolean({ error: 'must be true or false' }),
      donated: z.boolean({ error: 'must be true or false' }),
      request_limit_6h: optionalLimit(1, 'request_limit_6h'),
      request_limit_24h: optionalLimit(1, 'request_limit_24h'),
      openai_max_completion_tokens: optionalLimit(0, 'openai_max_completion_tokens'),
      openai_max_prompt_tokens: optionalLimit(0, 'openai_max_prompt_tokens'),
      openai_truncation_strategy_type: z.enum(['auto', 'last_messages'], { error: 'must be auto or last_messages' }).nullable(),
      openai_truncation_strategy_last_messages: optionalLimit(1, 'openai_truncation_strategy_last_messages'),
      assistant_additional_instructions: z.string().max(32_000, 'must be at most 32000 characters').nullable(),
      assistant_poll_interval: optionalDuration,
      assistant_max_poll_interval: optionalDuration,
    },
    {
      error: (issue) => {
        if (issue.code !== 'unrecognized_keys') return 'expected an object';
        const readOnly = issue.keys.filter((key) => ['username', 'global_name', 'id', 'bot'].includes(key));
        return readOnly.length ? `${readOnly.join(', ')} cannot be changed here (it comes from Discord)` : `unknown field ${issue.keys.join(', ')}`;
      },
    },
  )
  .partial();
export type UserPatch = z.output<typeof UserPatchSchema>;

// ---------------------------------------------------------------- ask commands

export const AskCommandsQuerySchema = ListQuerySchema.extend({
  user_id: z.string().trim().regex(/^\d{1,20}$/, 'must be a Discord user id').optional(),
  state: z.enum(ASK_COMMAND_STATES, `must be one of ${ASK_COMMAND_STATES.join(', ')}`).optional(),
  whisper: BooleanParam.optional(),
});

/** SPEC §3 "Ask command record" (the interaction token itself is never sent). */
export const AskCommandSchema = z.object({
  id: z.number(),
  state: z.string(),
  step: z.string(),
  prompt: z.string(),
  whisper: z.boolean(),
  thread_id: z.string().nullable(),
  message_id: z.string().nullable(),
  run_id: z.string().nullable(),
  run_status: z.string().nullable(),
  priority: z.boolean(),
  attempts: z.number(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
  custom_id: z.string().nullable(),
  disable_good: z.boolean(),
  disable_outdated: z.boolean(),
  disable_hallucinated: z.boolean(),
  disable_other: z.boolean(),
  show_good: z.boolean(),
  show_outdated: z.boolean(),
  show_hallucinated: z.boolean(),
  show_other: z.boolean(),
  show_undo: z.boolean(),
  user_id: z.string(),
  interaction_id: z.string().nullable(),
  discord_message_id: z.string().nullable(),
  token_expires: z.string().nullable(),
  application_id: z.string().nullable(),
  type: z.string(),
  guild_id: z.string().nullable(),
  channel_id: z.string().nullable(),
  context: z.string().nullable(),
  content: z.string().nullable(),
  user: z.object({ id: z.string(), username: z.string(), global_name: z.string().nullable() }),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  acknowledged: z.boolean(),
  response: z.string().nullable(),
  error: z.string().nullable(),
  processing_duration_ms: z.number().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AskCommand = z.infer<typeof AskCommandSchema>;

export const DiscordMessagesQuerySchema = ListQuerySchema.extend({
  user_id: z.string().trim().regex(/^\d{1,20}$/, 'must be a Discord user id').optional(),
  channel_id: z.string().trim().regex(/^\d{1,20}$/, 'must be a Discord channel id').optional(),
});

/** SPEC §3 "Chat-platform (Discord) message". */
export const DiscordMessageSchema = z.object({
  id: z.number(),
  message_id: z.string(),
  content: z.string().nullable(),
  channel_id: z.string().nullable(),
  guild_id: z.string().nullable(),
  user_id: z.string().nullable(),
  username: z.string().nullable(),
  global_name: z.string().nullable(),
  interaction_id: z.string().nullable(),
  referenced_message_id: z.string().nullable(),
  payload: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type DiscordMessage = z.infer<typeof DiscordMessageSchema>;
