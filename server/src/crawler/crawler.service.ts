import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { KnowledgeService } from '../assistant/knowledge.service.ts';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import { conflict } from '../errors.ts';
import * as queries from './crawler.queries.ts';
import { fetchSource } from './fetch-source.ts';
import { detectFormat } from './parse/detect-format.ts';
import { diffSchedules, type ScheduleChange } from './parse/diff.ts';
import { parseSchedule } from './parse/parse-schedule.ts';
import { renderScheduleDocument } from './parse/render-document.ts';
import type { ParsedSchedule, ScheduleEvent } from './parse/schedule-event.ts';
import { daysToComingFriday, shiftSchedule } from './parse/shift.ts';

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
  fetch?: typeof fetch;
  timeoutMs?: number;
  maxBytes?: number;
}

export type RunOutcome =
  | { kind: 'skipped'; reason: 'not_modified' | 'unchanged' | 'still_held' }
  | { kind: 'stored'; runId: number; eventCount: number; changes: ScheduleChange[] }
  | { kind: 'held'; runId: number; eventCount: number; previousCount: number; warning: string }
  | { kind: 'failed'; runId: number; error: string };

/** A run whose event count falls below this share of the last good run's is held until forced. */
const HOLD_BELOW_SHARE = 0.5;

/** Figures for the Status screen (SPEC §3 "Bot status" → crawler). */
export interface CrawlerCounters {
  enabled: boolean;
  last_run: string | null;
  runs_triggered: number;
  runs_skipped: number;
  /** The newest run of the current source, when it is held. */
  held_run: { id: number; event_count: number; warning: string | null; created_at: string } | null;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_BYTES = 20 * 1024 * 1024;

/**
 * Fetches the convention's schedule, parses it, records what changed since
 * the last good run, stores the run and its events, and replaces the
 * schedule document in the assistant's knowledge. One run at a time; a
 * failure is stored on its run and the previous knowledge stays live.
 */
export class CrawlerService {
  readonly #options: CrawlerOptions;
  readonly #logger: Logger;
  #running: Promise<RunOutcome> | undefined;
  #triggered = 0;
  #skipped = 0;
  #lastRunAt: string | null = null;
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

  /** Runs the crawler now; a refresh already under way answers 409. */
  refresh(force: boolean): Promise<RunOutcome> {
    if (this.#running) throw conflict('A schedule refresh is already running', 'refresh_running');
    this.#triggered++;
    this.#lastRunAt = this.#options.clock.now().toISOString();
    this.#running = this.#run(force).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** For the scheduler: runs unless a run is under way; never throws. */
  async runScheduled(): Promise<void> {
    if (this.#running) return;
    try {
      await this.refresh(false);
    } catch (error) {
      this.#logger.error({ err: error }, 'scheduled schedule refresh failed');
    }
  }

  /** When the schedule was last refreshed successfully (the last good run's time). */
  async lastRefresh(): Promise<string | null> {
    const run = await queries.lastSuccessfulRun(this.#db);
    return run ? (run.updated_at ?? run.created_at) : null;
  }

  async counters(enabled: boolean): Promise<CrawlerCounters> {
    const last = await queries.lastRun(this.#db);
    const stored = await queries.lastStoredRunOf(this.#db, this.#options.source);
    return {
      enabled,
      last_run: this.#lastRunAt ?? last?.created_at ?? null,
      runs_triggered: this.#triggered,
      runs_skipped: this.#skipped,
      held_run: stored?.held ? { id: stored.id, event_count: stored.event_count, warning: stored.warning, created_at: stored.created_at } : null,
    };
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

      const text = fetched.body.toString('utf8').replace(/^\uFEFF/, '');
      const detected = detectFormat(fetched.contentType, text);
      if (!detected) throw new Error('The schedule is not iCalendar, frab/Pentabarf XML, frab/pretalx JSON or a JSON feed');
      format = detected;
      const zone = this.#options.timeZone ?? serverTimeZone();
      let schedule = parseSchedule(text, detected, zone);
      const timeZone = this.#options.timeZone ?? schedule.timeZone ?? serverTimeZone();

      // The bundled sample keeps fixed dates in its file; it is moved to the coming Friday,
      // and the shift is part of its hash so a new week means a new run.
      let shiftDays = 0;
      if (source === this.#options.bundledSource && schedule.events.length > 0) {
        shiftDays = daysToComingFriday(schedule.events[0]!.start, this.#options.clock.now(), timeZone);
        schedule = shiftSchedule(schedule, shiftDays, timeZone);
      }
      hash = createHash('sha256').update(fetched.body).update(shiftDays ? `shift:${shiftDays}` : '').digest('hex');
      if (!force && previous && previous.hash === hash) return this.#skip('unchanged');
      if (!force && lastStored?.held && lastStored.hash === hash) return this.#skip('still_held');

      return await this.#store(schedule, { hash, format: detected, timeZone, validators, previous, force, started });
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
    }
  }

  async #store(
    schedule: ParsedSchedule,
    context: {
      hash: string;
      format: string;
      timeZone: string;
      validators: { etag: string | null; lastModified: string | null };
      previous: Awaited<ReturnType<typeof queries.lastSuccessfulRun>>;
      force: boolean;
      started: number;
    },
  ): Promise<RunOutcome> {
    const now = this.#options.clock.now();
    const previousEvents = context.previous ? (await queries.eventsOfRun(this.#db, context.previous.id)).map(rowToEvent) : [];
    const changes = context.previous ? diffSchedules(previousEvents, schedule.events) : [];
    const tracks = [...new Set(schedule.events.map((event) => event.track).filter((track): track is string => Boolean(track)))].sort();
    const speakers = new Set(schedule.events.flatMap((event) => event.speakers));
    const file = `schedule-${now.toISOString().slice(0, 16).replace(':', '')}Z.md`;

    // A feed that lost more than half its events is more likely broken than cancelled: hold it.
    const previousCount = context.previous?.event_count ?? 0;
    const held = !context.force && previousCount > 0 && schedule.events.length < previousCount * HOLD_BELOW_SHARE;
    const warning = held
      ? `Held: ${schedule.events.length} events against ${previousCount} in run ${context.previous!.id}. The previous schedule stays live until an operator presses Force.`
      : null;

    const runId = await this.#options.database.transaction(async (trx) => {
      const id = await queries.insertRun(trx, {
        url: this.#options.source,
        hash: context.hash,
        file: held ? null : file,
        tracks: tracks.join(', '),
        error: null,
        event_count: schedule.events.length,
        speaker_count: speakers.size,
        forced: context.force,
        format: context.format,
        time_zone: context.timeZone,
        changes: JSON.stringify(changes),
        etag: context.validators.etag,
        last_modified: context.validators.lastModified,
        held,
        warning,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      });
      await queries.insertEvents(trx, schedule.events.map((event) => eventToRow(event, id, context.timeZone, now.toISOString())));
      return id;
    });
    if (held) {
      this.#logger.warn({ runId, events: schedule.events.length, previous: previousCount }, 'schedule run held: more than half of the events are gone');
      return { kind: 'held', runId, eventCount: schedule.events.length, previousCount, warning: warning! };
    }

    // The knowledge document replaces the previous one only once it is in.
    try {
      const document = renderScheduleDocument(schedule, {
        timeZone: context.timeZone,
        title: schedule.calendarName ?? `${this.#options.productName} schedule`,
        generatedAt: now,
        changes,
      });
      const stored = await this.#options.knowledge.add({ kind: 'schedule', filename: file, data: Buffer.from(document, 'utf8') });
      await queries.updateRun(this.#db, runId, { file_id: stored.id, duration_ms: this.#options.clock.now().getTime() - context.started, updated_at: this.#options.clock.now().toISOString() });
    } catch (error) {
      const message = `Uploading the schedule to the assistant failed: ${error instanceof Error ? error.message : String(error)}`;
      this.#logger.error({ err: error, runId }, message);
      await queries.updateRun(this.#db, runId, { error: message, duration_ms: this.#options.clock.now().getTime() - context.started, updated_at: this.#options.clock.now().toISOString() });
      return { kind: 'failed', runId, error: message };
    }
    this.#feedTimeZone = schedule.timeZone ?? this.#feedTimeZone;
    this.#logger.info({ runId, events: schedule.events.length, changes: changes.length }, 'schedule refreshed');
    return { kind: 'stored', runId, eventCount: schedule.events.length, changes };
  }

  #skip(reason: 'not_modified' | 'unchanged' | 'still_held'): RunOutcome {
    this.#skipped++;
    this.#logger.info({ reason }, 'schedule unchanged; nothing stored');
    return { kind: 'skipped', reason };
  }
}

/** The server's own zone: fixed for the life of the process, and costly to ask Intl for on every request. */
const SERVER_TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;
const serverTimeZone = () => SERVER_TIME_ZONE;

function eventToRow(event: ScheduleEvent, runId: number, timeZone: string, now: string) {
  const day = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(event.start);
  const time = (date: Date) => new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(date);
  const weekday = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', day: 'numeric', month: 'short' }).format(event.start);
  const when = event.allDay ? `${weekday} (all day)` : `${weekday} ${time(event.start)}${event.end ? `–${time(event.end)}` : ''}`;
  return {
    crawler_run_id: runId,
    uid: event.uid,
    track: event.track,
    what: event.title,
    duration: event.end ? Math.round((event.end.getTime() - event.start.getTime()) / 60_000) : null,
    when,
    where: event.location,
    speakers: event.speakers.length ? event.speakers.join(', ') : null,
    start_at: event.start.toISOString(),
    end_at: event.end?.toISOString() ?? null,
    date: day,
    description: event.description,
    status: event.status,
    created_at: now,
    updated_at: now,
  };
}

function rowToEvent(row: Awaited<ReturnType<typeof queries.eventsOfRun>>[number]): ScheduleEvent {
  return {
    uid: row.uid,
    title: row.what,
    start: new Date(row.start_at),
    end: row.end_at ? new Date(row.end_at) : null,
    allDay: false,
    location: row.where,
    track: row.track,
    speakers: row.speakers ? row.speakers.split(', ') : [],
    description: row.description,
    status: row.status as ScheduleEvent['status'],
    url: null,
  };
}
