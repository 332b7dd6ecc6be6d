import { calendarFileName, eventCalendar } from './event-calendar.ts';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { KnowledgeService } from '../assistant/knowledge.service.ts';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import type { StatusCounters } from '../admin/status-counters.ts';
import { tryWithLock } from '../cluster/pg-session.ts';
import { findSetting, saveSetting } from '../db/app-settings.ts';
import { conflict, isAppError } from '../errors.ts';
import type { EventBus } from '../events.ts';
import * as queries from './crawler.queries.ts';
import { CrawlJob } from './crawl-job.ts';
import type { Parsed } from './crawl-worker.ts';
import { fetchSource } from './fetch-source.ts';
import type { ScheduleChange } from './parse/diff.ts';

export interface CrawlerOptions {
  database: Database;
  clock: Clock;
  logger: Logger;
  knowledge: KnowledgeService;
  /** CRAWLER_URL: an http(s) URL or a file path. */
  source: string;
  /** The bundled sample schedule's path: its dates are moved to the coming Friday. */
  bundledSource: string;
  /** CONVENTION_TIMEZONE; without it, the feed's own zone, else the server's. */
  timeZone: string | undefined;
  productName: string;
  /** Where each run's outcome is published (metrics). */
  events?: EventBus;
  /** The Status screen's shared totals (checks triggered and skipped). */
  counters: StatusCounters;
  fetch?: typeof fetch;
  timeoutMs?: number;
  maxBytes?: number;
}

export type RunOutcome =
  | { kind: 'skipped'; reason: 'not_modified' | 'unchanged' | 'still_held' }
  | { kind: 'stored'; runId: number; eventCount: number; changes: ScheduleChange[] }
  | { kind: 'held'; runId: number; eventCount: number; previousCount: number; warning: string }
  | { kind: 'failed'; runId: number; error: string };

/** Rows written per transaction when the main thread writes them (an in-memory SQLite database). */
const ROW_BATCH = 250;
/** Previous events read per query, for the comparison. */
const PAGE_SIZE = 2000;
/** The error a run carries while its events are being written (and keeps if that is interrupted). */
const STORING = 'Storing events (a run that keeps this message was interrupted)';

/** A run whose event count falls below this share of the last good run's is held until forced. */
const HOLD_BELOW_SHARE = 0.5;

/** Figures for the Status screen (SPEC §3 "Bot status" → crawler) and /metrics. */
export interface CrawlerCounters {
  enabled: boolean;
  last_run: string | null;
  runs_triggered: number;
  runs_skipped: number;
  /** The last check that read the schedule (stored, or found unchanged). */
  last_success_at: string | null;
  last_failure_at: string | null;
  /** Failed checks since the last good one; 0 when the last check succeeded. */
  consecutive_failures: number;
  /** The last failure's error, kept after a later success for the record. */
  last_error: string | null;
  /** The newest run of the current source, when it is held. */
  held_run: { id: number; event_count: number; warning: string | null; created_at: string } | null;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const REFRESH_RUNNING = 'A schedule refresh is already running';
/** When the crawler last checked the schedule, whichever process did (app_settings). */
const LAST_CHECK_SETTING = 'crawler_last_check_at';
const DEFAULT_MAX_BYTES = 20 * 1024 * 1024;

/**
 * Fetches the convention's schedule, parses it, records what changed since
 * the last good run, stores the run and its events, and replaces the
 * schedule document in the assistant's knowledge. One run at a time, in
 * every process together (a lock in the database: a forced refresh in one
 * process and the leader's tick in another never run at once); a failure is
 * stored on its run and the previous knowledge stays live.
 */
export class CrawlerService {
  readonly #options: CrawlerOptions;
  readonly #logger: Logger;
  #running: Promise<RunOutcome> | undefined;
  #feedTimeZone: string | null = null;

  constructor(options: CrawlerOptions) {
    this.#options = options;
    this.#logger = options.logger;
  }

  get #db() {
    return this.#options.database.db;
  }

  /** Reads what the last good run knew (the feed's time zone). */
  async load(): Promise<void> {
    this.#feedTimeZone = (await queries.lastSuccessfulRun(this.#db))?.time_zone ?? null;
  }

  /** The convention's zone: CONVENTION_TIMEZONE, else the schedule's own, else the server's. */
  timeZone(): string {
    return this.#options.timeZone ?? this.#feedTimeZone ?? serverTimeZone();
  }

  get isRunning(): boolean {
    return this.#running !== undefined;
  }

  /** Runs the crawler now; a refresh already under way, in this process or another, answers 409. */
  refresh(force: boolean): Promise<RunOutcome> {
    if (this.#running) throw conflict(REFRESH_RUNNING, 'refresh_running');
    const running = (async () => {
      const locked = await tryWithLock(this.#options.database, 'crawler', () => this.#check(force));
      if (!locked.ran) throw conflict(REFRESH_RUNNING, 'refresh_running');
      return locked.result;
    })();
    this.#running = running.finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** For the scheduler: runs unless a run is under way (in any process); never throws. */
  async runScheduled(): Promise<void> {
    if (this.#running) return;
    try {
      await this.refresh(false);
    } catch (error) {
      if (isAppError(error) && error.code === 'refresh_running') this.#logger.info('scheduled schedule refresh skipped: another process is refreshing');
      else this.#logger.error({ err: error }, 'scheduled schedule refresh failed');
    }
  }

  async #check(force: boolean): Promise<RunOutcome> {
    const started = this.#options.clock.now();
    this.#options.counters.add('crawler:runs_triggered');
    await saveSetting(this.#db, LAST_CHECK_SETTING, started.toISOString(), started.toISOString());
    return this.#recordHealth(await this.#run(force), started.getTime());
  }

  /**
   * One event of the live schedule (the latest good run) as an iCalendar
   * file, in the convention's zone (CONVENTION_TIMEZONE, else the run's own);
   * null when that schedule has no event with this UID.
   */
  async eventCalendar(uid: string): Promise<{ filename: string; body: string } | null> {
    const found = await queries.liveEvent(this.#db, uid);
    if (!found) return null;
    const timeZone = this.#options.timeZone ?? found.run.time_zone ?? this.timeZone();
    return {
      filename: calendarFileName(found.event.what),
      body: eventCalendar(found.event, { timeZone, productName: this.#options.productName, now: this.#options.clock.now() }),
    };
  }

  /** When the schedule was last refreshed successfully (the last good run's time). */
  async lastRefresh(): Promise<string | null> {
    const run = await queries.lastSuccessfulRun(this.#db);
    return run ? (run.updated_at ?? run.created_at) : null;
  }

  async counters(enabled: boolean): Promise<CrawlerCounters> {
    const [last, health, stored, lastCheck, counters] = await Promise.all([
      queries.lastRun(this.#db),
      queries.crawlerHealth(this.#db),
      queries.lastStoredRunOf(this.#db, this.#options.source),
      findSetting(this.#db, LAST_CHECK_SETTING),
      this.#options.counters.read(),
    ]);
    return {
      enabled,
      last_run: lastCheck?.value ?? last?.created_at ?? null,
      runs_triggered: counters.get('crawler:runs_triggered') ?? 0,
      runs_skipped: counters.get('crawler:runs_skipped') ?? 0,
      last_success_at: health?.last_success_at ?? null,
      last_failure_at: health?.last_failure_at ?? null,
      consecutive_failures: health?.consecutive_failures ?? 0,
      last_error: health?.last_error ?? null,
      held_run: stored?.held ? { id: stored.id, event_count: stored.event_count, warning: stored.warning, created_at: stored.created_at } : null,
    };
  }

  /** Writes the check's outcome to the health row and publishes it; never throws. */
  async #recordHealth(outcome: RunOutcome, started: number): Promise<RunOutcome> {
    const now = this.#options.clock.now();
    try {
      if (outcome.kind === 'failed') await queries.recordCheckFailed(this.#db, now.toISOString(), outcome.error);
      else await queries.recordCheckSucceeded(this.#db, now.toISOString());
    } catch (error) {
      this.#logger.error({ err: error }, 'could not record the crawler health');
    }
    this.#options.events?.publish('crawler_run', {
      outcome: outcome.kind,
      duration_ms: now.getTime() - started,
      ...(outcome.kind === 'stored' ? { changes: outcome.changes } : {}),
    });
    return outcome;
  }

  async #run(force: boolean): Promise<RunOutcome> {
    const started = this.#options.clock.now().getTime();
    const { source } = this.#options;
    // A new source starts a history of its own: nothing of the old one reads as removed.
    const previous = await queries.lastSuccessfulRunOf(this.#db, source);
    const lastStored = await queries.lastStoredRunOf(this.#db, source);
    let hash: string | null = null;
    let validators: { etag: string | null; lastModified: string | null } = { etag: null, lastModified: null };
    let format: string | null = null;
    let job: CrawlJob | undefined;
    try {
      const fetched = await fetchSource(source, {
        etag: force ? null : previous?.etag,
        lastModified: force ? null : previous?.last_modified,
        timeoutMs: this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxBytes: this.#options.maxBytes ?? DEFAULT_MAX_BYTES,
        fetch: this.#options.fetch,
      });
      if (fetched.kind === 'not_modified') return this.#skip('not_modified');
      validators = { etag: fetched.etag, lastModified: fetched.lastModified };

      // Hashing, parsing, comparing and rendering run in a worker thread (crawl-worker.ts).
      job = new CrawlJob();
      const bundled = source === this.#options.bundledSource;
      hash = await job.hash(fetched.body);
      if (!force && !bundled && previous && previous.hash === hash) return this.#skip('unchanged');
      const parsed = await job.parse({
        contentType: fetched.contentType,
        readZone: this.#options.timeZone ?? serverTimeZone(),
        configuredZone: this.#options.timeZone ?? null,
        shiftToFriday: bundled ? { now: this.#options.clock.now().toISOString() } : null,
      });
      format = parsed.format;
      hash = parsed.hash;
      if (!force && previous && previous.hash === hash) return this.#skip('unchanged');
      if (!force && lastStored?.held && lastStored.hash === hash) return this.#skip('still_held');
      return await this.#store(job, parsed, { validators, previous, force, started });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.#logger.error({ err: error, source }, 'schedule refresh failed');
      const now = this.#options.clock.now().toISOString();
      const runId = await queries.insertRun(this.#db, {
        url: source,
        hash,
        error: message,
        forced: force,
        format,
        etag: validators.etag,
        last_modified: validators.lastModified,
        duration_ms: this.#options.clock.now().getTime() - started,
        created_at: now,
        updated_at: now,
      });
      return { kind: 'failed', runId, error: message };
    } finally {
      await job?.close();
    }
  }

  async #store(
    job: CrawlJob,
    parsed: Parsed,
    context: {
      validators: { etag: string | null; lastModified: string | null };
      previous: Awaited<ReturnType<typeof queries.lastSuccessfulRun>>;
      force: boolean;
      started: number;
    },
  ): Promise<RunOutcome> {
    const now = this.#options.clock.now();
    const file = `schedule-${now.toISOString().slice(0, 16).replace(':', '')}Z.md`;
    // The worker reads and writes events with a connection of its own; an in-memory SQLite
    // database cannot be shared, and the main thread does it a batch at a time.
    const shared = this.#options.database.sharedAs;
    if (context.previous && shared) await job.readPrevious(shared, context.previous.id);
    else if (context.previous) {
      for (let after = 0; ; ) {
        const page = await queries.eventPageOfRun(this.#db, context.previous.id, after, PAGE_SIZE);
        if (page.length === 0) break;
        await job.previous(page);
        after = page.at(-1)!.id;
        await yieldToEventLoop();
      }
    }
    const prepared = await job.prepare({ diff: Boolean(context.previous), now: now.toISOString(), title: `${this.#options.productName} schedule` });

    // A feed that lost more than half its events is more likely broken than cancelled: hold it.
    const previousCount = context.previous?.event_count ?? 0;
    const held = !context.force && previousCount > 0 && parsed.eventCount < previousCount * HOLD_BELOW_SHARE;
    const warning = held
      ? `Held: ${parsed.eventCount} events against ${previousCount} in run ${context.previous!.id}. The previous schedule stays live until an operator presses Force.`
      : null;

    // The run is written first, marked as storing, then its events in batches; a run
    // interrupted half-way keeps that mark as its error.
    const runId = await queries.insertRun(this.#db, {
      url: this.#options.source,
      hash: parsed.hash,
      file: held ? null : file,
      tracks: prepared.tracks.join(', '),
      error: STORING,
      event_count: parsed.eventCount,
      speaker_count: prepared.speakerCount,
      forced: context.force,
      format: parsed.format,
      time_zone: parsed.timeZone,
      changes: JSON.stringify(prepared.changes),
      etag: context.validators.etag,
      last_modified: context.validators.lastModified,
      held,
      warning,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    });
    if (shared) await job.store(shared, runId);
    else {
      for (let from = 0; from < parsed.eventCount; from += ROW_BATCH) {
        const rows = await job.rows(from, ROW_BATCH);
        await this.#options.database.transaction((trx) => queries.insertEvents(trx, rows.map((row) => ({ ...row, crawler_run_id: runId }))));
        await yieldToEventLoop();
      }
    }
    await queries.updateRun(this.#db, runId, { error: null, updated_at: this.#options.clock.now().toISOString() });
    // The worker's memory goes back before the assistant indexes the new schedule.
    await job.close();
    if (held) {
      await queries.updateRun(this.#db, runId, { duration_ms: this.#options.clock.now().getTime() - context.started });
      this.#logger.warn({ runId, events: parsed.eventCount, previous: previousCount }, 'schedule run held: more than half of the events are gone');
      return { kind: 'held', runId, eventCount: parsed.eventCount, previousCount, warning: warning! };
    }

    // The knowledge document replaces the previous one only once it is in.
    try {
      const stored = await this.#options.knowledge.add({ kind: 'schedule', filename: file, data: Buffer.from(prepared.document) });
      await queries.updateRun(this.#db, runId, { file_id: stored.id, duration_ms: this.#options.clock.now().getTime() - context.started, updated_at: this.#options.clock.now().toISOString() });
    } catch (error) {
      const message = `Uploading the schedule to the assistant failed: ${error instanceof Error ? error.message : String(error)}`;
      this.#logger.error({ err: error, runId }, message);
      await queries.updateRun(this.#db, runId, { error: message, duration_ms: this.#options.clock.now().getTime() - context.started, updated_at: this.#options.clock.now().toISOString() });
      return { kind: 'failed', runId, error: message };
    }
    this.#feedTimeZone = parsed.feedZone ?? this.#feedTimeZone;
    this.#logger.info({ runId, events: parsed.eventCount, changes: prepared.changes.length }, 'schedule refreshed');
    return { kind: 'stored', runId, eventCount: parsed.eventCount, changes: prepared.changes };
  }

  #skip(reason: 'not_modified' | 'unchanged' | 'still_held'): RunOutcome {
    this.#options.counters.add('crawler:runs_skipped');
    this.#logger.info({ reason }, 'schedule unchanged; nothing stored');
    return { kind: 'skipped', reason };
  }
}

/** The server's own zone: fixed for the life of the process, and costly to ask Intl for on every request. */
const SERVER_TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;
const serverTimeZone = () => SERVER_TIME_ZONE;
