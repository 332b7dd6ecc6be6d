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
  run_id: z.number().nullable(),
  event_count: z.number().nullable(),
  changes: z.number().nullable(),
  message: z.string(),
});
