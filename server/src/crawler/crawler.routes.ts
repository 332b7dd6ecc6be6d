import {
  CrawlerEventsQuerySchema,
  CrawlerEventsReplySchema,
  CrawlerRunsQuerySchema,
  CrawlerRunsReplySchema,
  RefreshQuerySchema,
  RefreshReplySchema,
  ScheduleEventFileParamsSchema,
} from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { dateRange } from '../admin/list-query.ts';
import type { Database } from '../db/database.ts';
import { AppError, notFound } from '../errors.ts';
import * as queries from './crawler.queries.ts';
import type { CrawlerService } from './crawler.service.ts';

/** 'Refresh Schedule' / 'Force', and the Crawler Runs and Crawler Events lists (SPEC §7); admin routes. */
export function registerCrawlerRoutes(
  instance: FastifyInstance,
  deps: { crawler: CrawlerService; database: Database; timeZone: () => string },
): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const tags = ['crawler'];

  app.post('/api/schedule/refresh', { schema: { tags, querystring: RefreshQuerySchema, response: { 200: RefreshReplySchema } } }, async (request) => {
    const outcome = await deps.crawler.refresh(request.query.force);
    if (outcome.kind === 'failed') {
      throw new AppError(502, 'refresh_failed', `The schedule refresh failed (run ${outcome.runId}): ${outcome.error}`);
    }
    if (outcome.kind === 'skipped') {
      const message = {
        not_modified: 'The schedule source reports no change',
        unchanged: 'The schedule is unchanged since the last run',
        still_held: 'The schedule is unchanged since the held run; press Force to make it live',
      }[outcome.reason];
      return { success: true, skipped: true, held: outcome.reason === 'still_held', run_id: null, event_count: null, changes: null, message };
    }
    if (outcome.kind === 'held') {
      return { success: true, skipped: false, held: true, run_id: outcome.runId, event_count: outcome.eventCount, changes: null, message: outcome.warning };
    }
    return {
      success: true,
      skipped: false,
      held: false,
      run_id: outcome.runId,
      event_count: outcome.eventCount,
      changes: outcome.changes.length,
      message: `Stored ${outcome.eventCount} events with ${outcome.changes.length} changes`,
    };
  });

  app.get('/api/crawler_runs', { schema: { tags, querystring: CrawlerRunsQuerySchema, response: { 200: CrawlerRunsReplySchema } } }, async (request) => {
    const { query } = request;
    const rows = await queries.listRuns(deps.database.db, { ...query, range: dateRange(query, deps.timeZone()) });
    const runs = rows.map((row) => ({ ...row, forced: Boolean(row.forced), held: Boolean(row.held), changes: row.changes ? JSON.parse(row.changes) : [] }));
    return { crawler_runs: runs, returned_count: runs.length };
  });

  app.get('/api/crawler_events', { schema: { tags, querystring: CrawlerEventsQuerySchema, response: { 200: CrawlerEventsReplySchema } } }, async (request) => {
    const { query } = request;
    const rows = await queries.listEvents(deps.database.db, { ...query, range: dateRange(query, deps.timeZone()) });
    return { crawler_events: rows, returned_count: rows.length };
  });
}

/** One event of the live schedule as iCalendar, for the chat's "Add to calendar" (DESIGN §9 "Sources"); public. */
export function registerScheduleFileRoute(instance: FastifyInstance, deps: { crawler: CrawlerService }): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/public/schedule/events/:file',
    { schema: { tags: ['public chat'], description: 'One event of the live schedule as iCalendar ("Add to calendar"); the UID URL-encoded, then .ics.', params: ScheduleEventFileParamsSchema } },
    async (request, reply) => {
      const uid = request.params.file.slice(0, -'.ics'.length);
      const calendar = await deps.crawler.eventCalendar(uid);
      if (!calendar) throw notFound('No event with this id in the current schedule', 'event_not_found');
      return reply
        .type('text/calendar; charset=utf-8')
        .header('content-disposition', `attachment; filename="${calendar.filename}"`)
        .header('cache-control', 'no-cache')
        .send(calendar.body);
    },
  );
}
