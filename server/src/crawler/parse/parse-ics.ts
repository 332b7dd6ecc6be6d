import { createHash } from 'node:crypto';
import ical, { type CalendarResponse, type VEvent } from 'node-ical';
import { instantOf, zonedParts } from '../../time-zone.ts';
import { byStartThenTitle, ScheduleParseError, type ParsedSchedule, type ScheduleEvent } from './schedule-event.ts';
import { cleanTitle, htmlToText, ownCopy, speakersFromDescription, splitNames, uniqueNames } from './text.ts';

export interface IcsOptions {
  /** The convention's zone: floating times and all-day dates are read in it. */
  timeZone: string;
  rangeStart?: Date;
  rangeEnd?: Date;
}

type DateValue = Date & { tz?: string; dateOnly?: boolean };

const MAX_INSTANCES = 500;
const DAY = 86_400_000;

/**
 * VEVENTs handed to node-ical at a time: its objects for a whole
 * 50,000-event feed take hundreds of MB, and a small piece's objects are
 * gone before the young generation is collected (at 250 a piece the
 * worker's heap peaked near 175 MB, at 25 near 95 MB, in the same time).
 */
const EVENTS_PER_PIECE = 25;

/** An event read from the feed, before its times are placed in the calendar's zone. */
type Timing = Pick<VEvent, 'uid' | 'start' | 'end'> & { duration?: unknown };

interface PendingEvent {
  vevent: Timing;
  floating: boolean;
  fields: Omit<ScheduleEvent, 'uid' | 'start' | 'end' | 'allDay'>;
}

/**
 * Reads an iCalendar export (Sched, Guidebook, Google Calendar…) into
 * schedule events: TZID, UTC and floating times, all-day dates, DURATION,
 * recurring events with EXDATE and RECURRENCE-ID overrides, cancellations,
 * speakers, tracks and HTML descriptions. A big feed is read a few hundred
 * events at a time (each piece carries the calendar's own properties and
 * time zones, and an event's overrides stay with it), so node-ical never
 * holds the whole calendar at once.
 */
export function parseIcs(content: string | Uint8Array, options: IcsOptions): ParsedSchedule {
  const feed = typeof content === 'string' ? textFeed(content) : bytesFeed(Buffer.from(content.buffer, content.byteOffset, content.byteLength));
  const beginning = typeof content === 'string' ? content : feed.slice(0, Math.min(content.byteLength, 64 * 1024));
  if (!/BEGIN:VCALENDAR/i.test(beginning)) throw new ScheduleParseError('Not an iCalendar file: no BEGIN:VCALENDAR');
  const isUtc = (zone: string) => /^(Etc\/)?(UTC|GMT|Z)$/i.test(zone);
  let calendar: Record<string, unknown> | undefined;
  const zones = new Set<string>();
  let firstStart = Number.POSITIVE_INFINITY;
  let count = 0;
  const events: ScheduleEvent[] = [];
  /** Events whose times are read in the calendar's zone, which is known only at the end when the feed does not declare it. */
  const pending: PendingEvent[] = [];
  const recurring: { vevent: VEvent; floating: boolean }[] = [];
  // Rooms, tracks and names repeat across thousands of events: one string each.
  const strings = new Map<string, string>();
  const shared = (value: string | null) => {
    if (value === null) return null;
    let copy = strings.get(value);
    if (copy === undefined) strings.set(value, (copy = ownCopy(value)));
    return copy;
  };
  const place = ({ vevent, floating, fields }: PendingEvent, zone: string) =>
    toEvent(fields, vevent, readDate(vevent.start as DateValue, zone, floating), endOf(vevent, vevent.start as DateValue, vevent.end as DateValue | undefined, zone, floating), vevent.uid);

  for (const piece of calendarPieces(feed)) {
    let data: CalendarResponse;
    try {
      data = ical.sync.parseICS(piece);
    } catch (error) {
      throw new ScheduleParseError(`Not a readable iCalendar file: ${error instanceof Error ? error.message : String(error)}`);
    }
    const floating = floatingEventIds(piece);
    for (const component of Object.values(data)) {
      if (component?.type === 'VCALENDAR') calendar ??= component as unknown as Record<string, unknown>;
      if (component?.type !== 'VEVENT' || !(component as VEvent).start) continue;
      const vevent = component as VEvent;
      count++;
      const start = vevent.start as DateValue;
      const isFloating = floating.has(vevent.uid);
      firstStart = Math.min(firstStart, start.getTime());
      if (!isFloating && !start.dateOnly && start.tz && !isUtc(start.tz)) zones.add(start.tz);
      if (vevent.recurrenceid) continue; // overrides come with their base event's instances
      if (vevent.rrule) {
        recurring.push({ vevent, floating: isFloating });
        continue;
      }
      const read: PendingEvent = { vevent: lightEvent(vevent), floating: isFloating, fields: eventFields(vevent, shared) };
      // Placed at once when its times are exact or the feed declares its zone; only the rest waits.
      const zone = declaredZoneOf(calendar);
      if (zone || (exact(start, isFloating) && (!vevent.end || exact(vevent.end as DateValue, isFloating)))) events.push(place(read, zone ?? options.timeZone));
      else pending.push(read);
    }
  }
  if (count === 0) throw new ScheduleParseError('Not a schedule: the iCalendar file has no events (VEVENT)');

  const declaredZone = declaredZoneOf(calendar);
  const timeZone = declaredZone ?? (zones.size === 1 ? [...zones][0]! : null);
  const readZone = timeZone ?? options.timeZone;
  const from = options.rangeStart ?? new Date(firstStart - 30 * DAY);
  const to = options.rangeEnd ?? new Date(firstStart + 400 * DAY);

  for (let i = 0; i < pending.length; i++) {
    events.push(place(pending[i]!, readZone));
    pending[i] = undefined!; // each placed event lets its pending one go
  }
  pending.length = 0;
  for (const { vevent, floating } of recurring) {
    const instances = ical.expandRecurringEvent(vevent, { from, to }).slice(0, MAX_INSTANCES);
    for (const instance of instances) {
      const source = instance.event;
      const start = readDate(instance.start as DateValue, readZone, floating);
      // An override keeps the id of the occurrence it replaces, so a moved instance reads as moved.
      const occurrence = source.recurrenceid ? readDate(source.recurrenceid as DateValue, readZone) : start;
      const end = endOf(source, instance.start as DateValue, instance.end as DateValue, readZone, floating);
      events.push(toEvent(eventFields(source), source, start, end, `${vevent.uid}#${occurrence.toISOString()}`));
    }
  }
  events.sort(byStartThenTitle);
  const calendarName = typeof calendar?.['WR-CALNAME'] === 'string' ? (calendar['WR-CALNAME'] as string) : null;
  return { events, calendarName, timeZone, format: 'ics' };
}

const declaredZoneOf = (calendar: Record<string, unknown> | undefined) => (typeof calendar?.['WR-TIMEZONE'] === 'string' ? (calendar['WR-TIMEZONE'] as string) : null);

/** A time that is an instant whatever the calendar's zone (zoned or UTC, not floating, not a date). */
const exact = (value: DateValue, floating: boolean) => !floating && !value.dateOnly && Boolean(value.tz);

/** What placing an event's times needs of node-ical's object (the rest is let go). */
const lightEvent = (vevent: VEvent): Timing => ({ uid: ownCopy(vevent.uid), start: vevent.start, end: vevent.end, duration: vevent.duration });

/** A feed as text or as its UTF-8 bytes, cut at component boundaries without ever being one string. */
interface Feed {
  slice(from: number, to: number): string;
  whole(): string;
  crlf: boolean;
  /** The BEGIN:/END: lines: their component, where the line starts and where the next one starts. */
  boundaries(): Generator<{ begin: boolean; name: string; at: number; after: number }>;
}

const BOUNDARY = /^(BEGIN|END):([A-Za-z0-9-]+)[ \t]*\r?$/;

function textFeed(text: string): Feed {
  return {
    slice: (from, to) => text.slice(from, to),
    whole: () => text,
    crlf: text.includes('\r\n'),
    *boundaries() {
      const boundary = new RegExp(BOUNDARY.source, 'gm');
      for (let match = boundary.exec(text); match; match = boundary.exec(text)) {
        const lineEnd = text.indexOf('\n', match.index);
        yield { begin: match[1] === 'BEGIN', name: match[2]!.toUpperCase(), at: match.index, after: lineEnd === -1 ? text.length : lineEnd + 1 };
      }
    },
  };
}

function bytesFeed(bytes: Buffer): Feed {
  return {
    slice: (from, to) => bytes.toString('utf8', from, to),
    whole: () => bytes.toString('utf8'),
    crlf: bytes.includes('\r\n'),
    *boundaries() {
      for (let at = 0; at < bytes.length; ) {
        const newline = bytes.indexOf(10, at);
        const end = newline === -1 ? bytes.length : newline;
        const after = newline === -1 ? bytes.length : newline + 1;
        // Only a short line starting with B or E can be one ("BEGIN:VEVENT", "END:VCALENDAR").
        if ((bytes[at] === 0x42 || bytes[at] === 0x45) && end - at <= 64) {
          const match = BOUNDARY.exec(bytes.toString('latin1', at, end));
          if (match) yield { begin: match[1] === 'BEGIN', name: match[2]!.toUpperCase(), at, after };
        }
        at = after;
      }
    },
  };
}

/**
 * The calendar cut into pieces of a few hundred VEVENTs, each a calendar of
 * its own with the feed's calendar properties and VTIMEZONEs, the VEVENTs
 * of one UID (an event and its RECURRENCE-ID overrides) always together.
 * A feed whose components cannot be told apart is one piece.
 */
function* calendarPieces(feed: Feed): Generator<string> {
  const header: string[] = [];
  const events: { from: number; to: number; key: string }[] = [];
  let depth = 0;
  let calendarAt = -1;
  let componentAt = -1;
  let componentName = '';
  let outsideFrom = -1;
  let calendars = 0;
  for (const { begin, name, at, after } of feed.boundaries()) {
    if (depth === 0) {
      if (!begin || name !== 'VCALENDAR' || ++calendars > 1) return yield feed.whole();
      depth = 1;
      calendarAt = at;
      outsideFrom = after;
    } else if (depth === 1) {
      if (!begin) {
        if (name !== 'VCALENDAR') return yield feed.whole();
        header.push(feed.slice(outsideFrom, at));
        depth = 0;
        continue;
      }
      header.push(feed.slice(outsideFrom, at));
      depth = 2;
      componentAt = at;
      componentName = name;
    } else if (begin) {
      depth++;
    } else if (--depth === 1) {
      if (name !== componentName) return yield feed.whole();
      if (componentName === 'VEVENT') {
        const uid = /^UID[;:][^\r\n]*(?:\r?\n[ \t][^\r\n]*)*/im.exec(feed.slice(componentAt, after))?.[0];
        events.push({ from: componentAt, to: after, key: uid ? uid.replace(/\r?\n[ \t]/g, '') : `#${events.length}` });
      } else if (componentName === 'VTIMEZONE') {
        header.push(feed.slice(componentAt, after));
      }
      outsideFrom = after;
    }
  }
  if (calendarAt === -1 || depth !== 0) return yield feed.whole();
  const lineBreak = feed.crlf ? '\r\n' : '\n';
  const head = `BEGIN:VCALENDAR${lineBreak}${header.join('')}`;
  const tail = `END:VCALENDAR${lineBreak}`;
  // An event's overrides join it in its piece.
  const byKey = new Map<string, { from: number; to: number }[]>();
  for (const event of events) {
    const group = byKey.get(event.key);
    if (group) group.push(event);
    else byKey.set(event.key, [event]);
  }
  let piece: string[] = [];
  for (const group of byKey.values()) {
    for (const event of group) piece.push(feed.slice(event.from, event.to));
    if (piece.length >= EVENTS_PER_PIECE) {
      yield `${head}${piece.join('')}${tail}`;
      piece = [];
    }
  }
  if (piece.length > 0 || events.length === 0) yield `${head}${piece.join('')}${tail}`;
}

/**
 * A parsed DTSTART/DTEND as an instant. Zoned and UTC values are exact.
 * Floating values (no TZID, no Z) and dates are wall-clock times, read in
 * `zone`: node-ical builds them in the process's zone, or in a zone it
 * guesses from the file's VTIMEZONE, so their wall-clock parts are taken back.
 */
function readDate(value: DateValue, zone: string, floating = false): Date {
  if (value.tz && !value.dateOnly && !floating) return new Date(value.getTime());
  const wall = value.tz && !value.dateOnly
    ? zonedParts(value, value.tz)
    : { year: value.getFullYear(), month: value.getMonth() + 1, day: value.getDate(), hour: value.getHours(), minute: value.getMinutes() };
  return instantOf(
    {
      year: wall.year,
      month: wall.month,
      day: wall.day,
      hour: value.dateOnly ? 0 : wall.hour,
      minute: value.dateOnly ? 0 : wall.minute,
      second: value.dateOnly ? 0 : value.getSeconds(),
    },
    zone,
  );
}

/** UIDs of events whose DTSTART is a floating time (no TZID, not UTC, not a date). */
function floatingEventIds(text: string): Set<string> {
  const unfolded = text.replace(/\r?\n[ \t]/g, '');
  const ids = new Set<string>();
  for (const block of unfolded.split(/BEGIN:VEVENT/i).slice(1)) {
    const uid = /^UID:(.*)$/im.exec(block)?.[1]?.trim();
    const start = /^DTSTART([^:\r\n]*):([^\r\n]*)$/im.exec(block);
    if (!uid || !start) continue;
    const [, params, value] = start;
    if (!/TZID=/i.test(params!) && !/VALUE=DATE(?!-)/i.test(params!) && !/Z$/i.test(value!.trim())) ids.add(uid);
  }
  return ids;
}

function endOf(event: Pick<VEvent, 'uid'> & { duration?: unknown }, start: DateValue, end: DateValue | undefined, zone: string, floating = false): Date | null {
  if (start.dateOnly) {
    const startInstant = readDate(start, zone);
    const endInstant = end ? readDate(end, zone) : null;
    return endInstant && endInstant > startInstant ? endInstant : new Date(startInstant.getTime() + DAY);
  }
  if (!end) return null;
  const endInstant = readDate(end, zone, floating);
  const startInstant = readDate(start, zone, floating);
  // Without DTEND or DURATION node-ical repeats the start: the feed gave no end.
  if (endInstant.getTime() <= startInstant.getTime() && !event.duration) return null;
  return endInstant;
}

/** An event's title, place, people and words: everything but its times. */
function eventFields(event: VEvent, shared: (text: string | null) => string | null = ownCopy): PendingEvent['fields'] {
  const rawTitle = text(event.summary) ?? 'Untitled event';
  const { title, cancelled: titleSaysCancelled } = cleanTitle(rawTitle);
  const rawDescription = text(event.description);
  let description = rawDescription ? htmlToText(rawDescription) : null;
  const speakers: string[] = [];
  const custom = (event as Record<string, unknown>).SPEAKERS;
  if (typeof custom === 'string') speakers.push(...splitNames(custom));
  for (const attendee of [event.attendee ?? []].flat() as unknown[]) {
    const name = typeof attendee === 'object' && attendee && 'params' in attendee ? (attendee as { params?: { CN?: string } }).params?.CN : undefined;
    if (name) speakers.push(name.replace(/^"|"$/g, ''));
  }
  if (description) {
    const fromText = speakersFromDescription(description);
    if (fromText.speakers.length) {
      speakers.push(...fromText.speakers);
      description = fromText.rest || null;
    }
  }
  const categories = [(event as { categories?: unknown }).categories ?? []].flat().filter((value): value is string => typeof value === 'string');
  const status = String(event.status ?? '').toUpperCase();
  // Copies, so the piece of the feed they were read from is let go; rooms, tracks and names shared.
  return {
    title: ownCopy(title),
    location: shared(text(event.location)),
    track: shared(categories[0]?.trim() || null),
    speakers: uniqueNames(speakers).map((name) => shared(name)!),
    description: ownCopy(description),
    status: status === 'CANCELLED' || titleSaysCancelled ? 'cancelled' : status === 'TENTATIVE' ? 'tentative' : 'confirmed',
    url: ownCopy(text((event as { url?: unknown }).url)),
  };
}

function toEvent(fields: PendingEvent['fields'], event: Pick<VEvent, 'start'>, start: Date, end: Date | null, uid: string | undefined): ScheduleEvent {
  return {
    uid: uid || stableId(fields.title, start),
    title: fields.title,
    start,
    end,
    allDay: Boolean((event.start as DateValue).dateOnly),
    location: fields.location,
    track: fields.track,
    speakers: fields.speakers,
    description: fields.description,
    status: fields.status,
    url: fields.url,
  };
}

/** A property's text, whether node-ical gave a string or `{params, val}`. */
function text(value: unknown): string | null {
  if (typeof value === 'string') return value.trim() || null;
  if (value && typeof value === 'object' && 'val' in value && typeof (value as { val: unknown }).val === 'string') {
    return ((value as { val: string }).val.trim() || null);
  }
  return null;
}

export const stableId = (title: string, start: Date) => createHash('sha1').update(`${title}|${start.toISOString()}`).digest('hex').slice(0, 16);
