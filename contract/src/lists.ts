import { z } from 'zod';

export const PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;

/** `true|false`, also `1|0` and `yes|no` (DESIGN §7). */
export const BooleanParam = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], 'must be true or false')
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

/** ISO 8601 date or date-time; a value without a zone is read in the convention's zone. */
export const DateParam = z
  .string()
  .trim()
  .regex(/^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d{1,6})?)?(Z|[+-]\d\d:?\d\d)?)?$/, 'must be an ISO 8601 date or date-time');

const TextParam = z.string().trim().max(200, 'must be at most 200 characters').optional();

/**
 * Paging, order and the date range every list accepts. Both spellings of the
 * date range are accepted: `date_from`/`date_to` and `start_date`/`end_date`;
 * the end is inclusive.
 */
export const ListQuerySchema = z.object({
  limit: z.coerce.number('must be a number').int('must be a whole number').min(1).max(MAX_PAGE_SIZE).default(PAGE_SIZE),
  offset: z.coerce.number('must be a number').int('must be a whole number').min(0).default(0),
  order: z.enum(['asc', 'desc'], 'must be asc or desc').default('desc'),
  date_from: DateParam.optional(),
  date_to: DateParam.optional(),
  start_date: DateParam.optional(),
  end_date: DateParam.optional(),
});
export type ListQuery = z.infer<typeof ListQuerySchema>;

export const CrawlerRunsQuerySchema = ListQuerySchema.extend({
  url: TextParam,
  hash: TextParam,
  has_error: BooleanParam.optional(),
});

export const CrawlerEventsQuerySchema = ListQuerySchema.extend({
  crawler_run_id: z.coerce.number('must be a run id').int().positive().optional(),
  track: TextParam,
  title: TextParam,
  location: TextParam,
  speakers: TextParam,
});

export const ScheduleChangeSchema = z.object({
  kind: z.enum(['added', 'removed', 'moved_time', 'moved_room', 'cancelled', 'reinstated']),
  uid: z.string(),
  title: z.string(),
  before: z.object({ start: z.string(), end: z.string().nullable(), location: z.string().nullable() }).optional(),
  after: z.object({ start: z.string(), end: z.string().nullable(), location: z.string().nullable() }).optional(),
});
export type ScheduleChangeRow = z.infer<typeof ScheduleChangeSchema>;

export const CrawlerRunSchema = z.object({
  id: z.number(),
  url: z.string(),
  hash: z.string().nullable(),
  file: z.string().nullable(),
  tracks: z.string().nullable(),
  error: z.string().nullable(),
  event_count: z.number(),
  speaker_count: z.number(),
  forced: z.boolean(),
  format: z.string().nullable(),
  time_zone: z.string().nullable(),
  changes: z.array(ScheduleChangeSchema),
  duration_ms: z.number().nullable(),
  /** Stored but not live: its event count fell by more than half; Force makes the source's schedule live. */
  held: z.boolean(),
  warning: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type CrawlerRun = z.infer<typeof CrawlerRunSchema>;

export const CrawlerEventSchema = z.object({
  id: z.number(),
  crawler_run_id: z.number(),
  track: z.string().nullable(),
  what: z.string(),
  duration: z.number().nullable(),
  when: z.string().nullable(),
  where: z.string().nullable(),
  speakers: z.string().nullable(),
  start_at: z.string(),
  end_at: z.string().nullable(),
  date: z.string().nullable(),
  description: z.string().nullable(),
  status: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type CrawlerEvent = z.infer<typeof CrawlerEventSchema>;

export const CrawlerRunsReplySchema = z.object({ crawler_runs: z.array(CrawlerRunSchema), returned_count: z.number() });
export const CrawlerEventsReplySchema = z.object({ crawler_events: z.array(CrawlerEventSchema), returned_count: z.number() });

export const RefreshQuerySchema = z.object({ force: BooleanParam.default(false) });
export const RefreshReplySchema = z.object({
  success: z.boolean(),
  skipped: z.boolean(),
  /** The run was held (or the source is unchanged since a held run): the previous schedule stays live. */
  held: z.boolean(),
  run_id: z.number().nullable(),
  event_count: z.number().nullable(),
  changes: z.number().nullable(),
  message: z.string(),
});

const IdText = z.string().trim().min(1).max(200, 'must be at most 200 characters').optional();

export const PublicChatMessagesQuerySchema = ListQuerySchema.extend({
  session_id: IdText,
  role: z.enum(['user', 'assistant'], 'must be user or assistant').optional(),
  state: z.string().trim().max(30).optional(),
});

export const PublicChatSessionsQuerySchema = ListQuerySchema.extend({
  session_id: IdText,
  client_ip: IdText,
  thread_id: IdText,
  active: BooleanParam.optional(),
  has_error: BooleanParam.optional(),
});

export const PublicChatRateLimitsQuerySchema = ListQuerySchema.extend({
  identifier: IdText,
  client_ip: IdText,
  limited: BooleanParam.optional(),
});

/** Which front the calls of a log were made for. */
export const LOG_ORIGINS = ['public_chat', 'ask_command', 'all'] as const;
export type LogOrigin = (typeof LOG_ORIGINS)[number];

/**
 * The five AI call logs; `message_id` is the screen's name for
 * `public_chat_message_id`. They show the public chat's calls unless
 * `origin` (or an ask command id) asks for the Discord side's.
 */
export const ProviderLogsQuerySchema = ListQuerySchema.extend({
  session_id: IdText,
  public_chat_message_id: z.coerce.number('must be a message id').int().positive().optional(),
  message_id: z.coerce.number('must be a message id').int().positive().optional(),
  ask_command_id: z.coerce.number('must be an ask command id').int().positive().optional(),
  origin: z.enum(LOG_ORIGINS, 'must be public_chat, ask_command or all').optional(),
  client_ip: IdText,
  has_error: BooleanParam.optional(),
});

export const FeedbackQuerySchema = ListQuerySchema.extend({
  session_id: IdText,
  message_id: z.coerce.number('must be a message id').int().positive().optional(),
  type: z.enum(['good', 'outdated', 'hallucinated', 'other'], 'must be good, outdated, hallucinated or other').optional(),
});

export const FeedbackItemSchema = z.object({
  id: z.number(),
  public_chat_message_id: z.number(),
  session_id: z.string(),
  type: z.string(),
  description: z.string().nullable(),
  detail: z.string().nullable(),
  client_ip: z.string().nullable(),
  user_agent: z.string().nullable(),
  created_at: z.string(),
});
export type FeedbackItem = z.infer<typeof FeedbackItemSchema>;

export const PublicChatMessageSchema = z.object({
  id: z.number(),
  session_id: z.string(),
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  response: z.string().nullable(),
  state: z.string(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
  client_ip: z.string().nullable(),
  user_agent: z.string().nullable(),
  openai_message_id: z.string().nullable(),
  run_id: z.string().nullable(),
  run_status: z.string().nullable(),
  processing_duration_ms: z.number().nullable(),
  response_latency_ms: z.number().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  error: z.string().nullable(),
  feedback_count: z.number(),
  feedback: z.array(FeedbackItemSchema),
});
export type PublicChatMessage = z.infer<typeof PublicChatMessageSchema>;

export const PublicChatSessionSchema = z.object({
  id: z.number(),
  session_id: z.string(),
  client_ip: z.string().nullable(),
  user_agent: z.string().nullable(),
  referer: z.string().nullable(),
  thread_id: z.string().nullable(),
  message_count: z.number(),
  total_tokens: z.number(),
  active: z.boolean(),
  verified: z.boolean(),
  first_seen_at: z.string(),
  last_seen_at: z.string(),
  expires_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  error: z.string().nullable(),
});
export type PublicChatSession = z.infer<typeof PublicChatSessionSchema>;

export const RateLimitSchema = z.object({
  id: z.number(),
  identifier: z.string(),
  client_ip: z.string().nullable(),
  window_start: z.string(),
  window_end: z.string(),
  request_count: z.number(),
  max_requests: z.number(),
  limited: z.boolean(),
  limited_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  notes: z.string().nullable(),
});
export type RateLimit = z.infer<typeof RateLimitSchema>;

export const ProviderLogSchema = z.object({
  id: z.number(),
  session_id: z.string().nullable(),
  public_chat_message_id: z.number().nullable(),
  ask_command_id: z.number().nullable(),
  client_ip: z.string().nullable(),
  user_agent: z.string().nullable(),
  request_started: z.string(),
  request_ended: z.string().nullable(),
  request_body: z.string().nullable(),
  response_body: z.string().nullable(),
  response_headers: z.string().nullable(),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ProviderLog = z.infer<typeof ProviderLogSchema>;

export const PublicChatMessagesReplySchema = z.object({ messages: z.array(PublicChatMessageSchema), returned_count: z.number() });
export const PublicChatSessionsReplySchema = z.object({ sessions: z.array(PublicChatSessionSchema), returned_count: z.number() });
export const RateLimitsReplySchema = z.object({ rate_limits: z.array(RateLimitSchema), returned_count: z.number() });
export const ProviderLogsReplySchema = z.object({ logs: z.array(ProviderLogSchema), returned_count: z.number() });
export const FeedbackReplySchema = z.object({ feedback: z.array(FeedbackItemSchema), returned_count: z.number() });

/** The five log screens: route suffix → SPEC's title. */
export const PROVIDER_LOG_KINDS = {
  create_thread: 'OpenAI Create Thread Logs',
  create_message: 'OpenAI Create Message Logs',
  create_run: 'OpenAI Create Run Logs',
  retrieve_run: 'OpenAI Retrieve Run Logs',
  list_messages: 'OpenAI List Messages Logs',
} as const;
export type ProviderLogKind = keyof typeof PROVIDER_LOG_KINDS;

/** A document the assistant knows (the crawler's schedule or an upload), with where it is in the provider's store. */
export const KnowledgeDocumentSchema = z.object({
  id: z.number(),
  kind: z.enum(['schedule', 'upload']),
  title: z.string(),
  filename: z.string(),
  bytes: z.number(),
  provider: z.string().nullable(),
  provider_file_id: z.string().nullable(),
  provider_status: z.enum(['pending', 'ready', 'failed']),
  provider_error: z.string().nullable(),
  synced_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type KnowledgeDocument = z.infer<typeof KnowledgeDocumentSchema>;

export const KnowledgeReplySchema = z.object({ provider: z.enum(['openai', 'local']), documents: z.array(KnowledgeDocumentSchema) });
export type KnowledgeReply = z.infer<typeof KnowledgeReplySchema>;

export const KnowledgeDocumentParamsSchema = z.object({ id: z.coerce.number('id must be a document id').int('id must be a document id').positive('id must be a document id') });
