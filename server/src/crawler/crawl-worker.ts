/**
 * One schedule refresh's heavy lifting, in a worker thread: hashing the
 * feed, parsing it (any format), moving the bundled sample to the coming
 * Friday, comparing it with the previous run, rendering the knowledge
 * document, reading the previous run's events and writing the new ones
 * with a database connection of its own — so a 50,000-event feed never
 * holds the server's main thread, whose event loop and heap see none of
 * it. (An in-memory SQLite database cannot be opened twice: then the main
 * thread reads and writes the rows, a batch at a time.) The main thread
 * drives the steps (crawl-job.ts).
 */
import { createHash, type Hash } from 'node:crypto';
import { setImmediate as yieldToEventLoop, setTimeout as sleep } from 'node:timers/promises';
import { parentPort } from 'node:worker_threads';
import { openDatabase, type Database } from '../db/database.ts';
import * as queries from './crawler.queries.ts';
import { detectFormat } from './parse/detect-format.ts';
import { diffSchedules, type ScheduleChange } from './parse/diff.ts';
import { parseSchedule } from './parse/parse-schedule.ts';
import { renderScheduleDocumentPieces } from './parse/render-document.ts';
import type { ParsedSchedule, ScheduleEvent, ScheduleFormat } from './parse/schedule-event.ts';
import { daysToComingFriday, shiftSchedule } from './parse/shift.ts';

/** What the main thread knows of a previous run's event (a crawler_events row, in part). */
export interface PreviousEvent {
  uid: string;
  what: string;
  start_at: string;
  end_at: string | null;
  where: string | null;
  status: string;
}

export type EventRow = ReturnType<typeof eventToRow>;

/** How the worker opens the server's database (Database.sharedAs). */
export interface SharedDatabase {
  url: string;
  schema: string | undefined;
}

export type CrawlRequest =
  | { type: 'hash'; body: ArrayBuffer }
  | { type: 'readPrevious'; database: SharedDatabase; runId: number }
  | { type: 'store'; database: SharedDatabase; runId: number }
  | { type: 'close' }
  | { type: 'parse'; contentType: string | null; readZone: string; configuredZone: string | null; shiftToFriday: { now: string } | null }
  | { type: 'previous'; events: PreviousEvent[] }
  | { type: 'prepare'; diff: boolean; now: string; title: string }
  | { type: 'rows'; from: number; count: number };

export interface Parsed {
  format: ScheduleFormat;
  hash: string;
  /** The feed's own zone. */
  feedZone: string | null;
  /** The zone the run is stored in: CONVENTION_TIMEZONE, else the feed's, else the server's. */
  timeZone: string;
  eventCount: number;
}

export interface Prepared {
  changes: ScheduleChange[];
  tracks: string[];
  speakerCount: number;
  /** The knowledge document, UTF-8 (transferred, not copied). */
  document: ArrayBuffer;
}

const port = parentPort;
if (!port) throw new Error('crawl-worker.ts runs as a worker thread');

let body: Buffer | null = null;
/** The feed's hash so far (the bundled sample's shift is added to it). */
let hasher: Hash | null = null;
let schedule: ParsedSchedule | null = null;
let zone = 'UTC';
let previous: ScheduleEvent[] = [];
/** How rows are shaped once the schedule is prepared (they are made a batch at a time). */
let rowShape: { formats: ReturnType<typeof formatsFor>; now: string } | null = null;
let shiftDays = 0;
let database: Database | null = null;

/** Rows written per transaction, and previous events read per query. */
const ROW_BATCH = 250;
const PAGE_SIZE = 2000;
/**
 * A pause between two SQLite transactions: a write of the main thread that
 * finds the database locked sleeps 1, 2, 5… ms and tries again, and must
 * find it free then, or it would wait (holding the main thread) until the
 * whole schedule is written.
 */
const SQLITE_PAUSE_MS = 2;

const databaseOf = async (shared: SharedDatabase) => (database ??= await openDatabase(shared.url, { schema: shared.schema, poolSize: 1, applicationName: 'concierge crawler' }));

async function handle(request: CrawlRequest): Promise<{ result: unknown; transfer?: ArrayBuffer[] }> {
  switch (request.type) {
    case 'hash': {
      body = Buffer.from(request.body);
      hasher = createHash('sha256').update(body);
      return { result: hasher.copy().digest('hex') };
    }
    case 'parse': {
      if (!body || !hasher) throw new Error('No feed to parse');
      // A byte order mark is no part of the feed.
      const bytes = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? body.subarray(3) : body;
      body = null;
      const format = detectFormat(request.contentType, bytes.toString('utf8', 0, Math.min(bytes.length, 64 * 1024)));
      if (!format) throw new Error('The schedule is not iCalendar, frab/Pentabarf XML, frab/pretalx JSON or a JSON feed');
      // iCalendar is read from the bytes a piece at a time; the other formats as one text.
      let parsed = parseSchedule(format === 'ics' ? bytes : bytes.toString('utf8'), format, request.readZone);
      zone = request.configuredZone ?? parsed.timeZone ?? request.readZone;
      // The bundled sample keeps fixed dates in its file; it is moved to the coming Friday,
      // and the shift is part of its hash so a new week means a new run.
      shiftDays = 0;
      if (request.shiftToFriday && parsed.events.length > 0) {
        shiftDays = daysToComingFriday(parsed.events[0]!.start, new Date(request.shiftToFriday.now), zone);
        parsed = shiftSchedule(parsed, shiftDays, zone);
      }
      schedule = parsed;
      if (shiftDays) hasher.update(`shift:${shiftDays}`);
      const hash = hasher.digest('hex');
      hasher = null;
      return { result: { format, hash, feedZone: parsed.timeZone, timeZone: zone, eventCount: parsed.events.length } satisfies Parsed };
    }
    case 'previous': {
      for (const row of request.events) previous.push(rowToEvent(row));
      return { result: previous.length };
    }
    case 'prepare': {
      if (!schedule) throw new Error('No schedule parsed');
      const changes = request.diff ? diffSchedules(previous, schedule.events) : [];
      previous = [];
      const now = new Date(request.now);
      const tracks = [...new Set(schedule.events.map((event) => event.track).filter((track): track is string => Boolean(track)))].sort();
      const speakers = new Set(schedule.events.flatMap((event) => event.speakers));
      // The document is rendered and encoded a piece at a time, then copied into one buffer to hand over.
      const pieces: Buffer[] = [];
      let size = 0;
      for (const piece of renderScheduleDocumentPieces(schedule, { timeZone: zone, title: schedule.calendarName ?? request.title, generatedAt: now, changes })) {
        const bytes = Buffer.from(piece, 'utf8');
        pieces.push(bytes);
        size += bytes.length;
      }
      const document = new Uint8Array(size);
      for (let offset = 0, i = 0; i < pieces.length; offset += pieces[i]!.length, i++) document.set(pieces[i]!, offset);
      pieces.length = 0;
      rowShape = { formats: formatsFor(zone), now: request.now };
      return { result: { changes, tracks, speakerCount: speakers.size, document: document.buffer } satisfies Prepared, transfer: [document.buffer] };
    }
    case 'readPrevious': {
      const { db } = await databaseOf(request.database);
      for (let after = 0; ; ) {
        const page = await queries.eventPageOfRun(db, request.runId, after, PAGE_SIZE);
        if (page.length === 0) break;
        for (const row of page) previous.push(rowToEvent(row));
        after = page.at(-1)!.id;
      }
      return { result: previous.length };
    }
    case 'store': {
      if (!schedule || !rowShape) throw new Error('No schedule prepared');
      const { formats, now } = rowShape;
      const target = await databaseOf(request.database);
      for (let from = 0; from < schedule.events.length; from += ROW_BATCH) {
        const rows = schedule.events.slice(from, from + ROW_BATCH).map((event) => ({ ...eventToRow(event, formats, now), crawler_run_id: request.runId }));
        await target.transaction((trx) => queries.insertEvents(trx, rows));
        await (target.dialect === 'sqlite' ? sleep(SQLITE_PAUSE_MS) : yieldToEventLoop());
      }
      return { result: schedule.events.length };
    }
    case 'close': {
      await database?.close();
      database = null;
      return { result: null };
    }
    case 'rows': {
      if (!schedule || !rowShape) throw new Error('No schedule prepared');
      const { formats, now } = rowShape;
      return { result: schedule.events.slice(request.from, request.from + request.count).map((event) => eventToRow(event, formats, now)) };
    }
  }
}

/** Requests are handled one after another, in the order they came. */
let queue: Promise<void> = Promise.resolve();
port.on('message', (message: { id: number; request: CrawlRequest }) => {
  queue = queue.then(async () => {
    try {
      const { result, transfer } = await handle(message.request);
      port.postMessage({ id: message.id, ok: true, result }, transfer ?? []);
    } catch (error) {
      port.postMessage({ id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) });
    }
  });
});

function formatsFor(timeZone: string) {
  return {
    day: new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }),
    time: new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }),
    weekday: new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', day: 'numeric', month: 'short' }),
  };
}

/** An event as a crawler_events row (without its run id), times as attendees read them. */
function eventToRow(event: ScheduleEvent, formats: ReturnType<typeof formatsFor>, now: string) {
  const weekday = formats.weekday.format(event.start);
  const when = event.allDay
    ? `${weekday} (all day)`
    : `${weekday} ${formats.time.format(event.start)}${event.end ? `–${formats.time.format(event.end)}` : ''}`;
  return {
    uid: event.uid,
    track: event.track,
    what: event.title,
    duration: event.end ? Math.round((event.end.getTime() - event.start.getTime()) / 60_000) : null,
    when,
    where: event.location,
    speakers: event.speakers.length ? event.speakers.join(', ') : null,
    start_at: event.start.toISOString(),
    end_at: event.end?.toISOString() ?? null,
    date: formats.day.format(event.start),
    description: event.description,
    status: event.status,
    created_at: now,
    updated_at: now,
  };
}

function rowToEvent(row: PreviousEvent): ScheduleEvent {
  return {
    uid: row.uid,
    title: row.what,
    start: new Date(row.start_at),
    end: row.end_at ? new Date(row.end_at) : null,
    allDay: false,
    location: row.where,
    track: null,
    speakers: [],
    description: null,
    status: row.status as ScheduleEvent['status'],
    url: null,
  };
}
