import { createHash } from 'node:crypto';
import ical, { type CalendarResponse, type VEvent } from 'node-ical';
import { instantOf, zonedParts } from '../../time-zone.ts';
import { byStartThenTitle, ScheduleParseError, type ParsedSchedule, type ScheduleEvent } from './schedule-event.ts';
import { cleanTitle, htmlToText, speakersFromDescription, splitNames, uniqueNames } from './text.ts';

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
 * Reads an iCalendar export (Sched, Guidebook, Google Calendar…) into
 * schedule events: TZID, UTC and floating times, all-day dates, DURATION,
 * recurring events with EXDATE and RECURRENCE-ID overrides, cancellations,
 * speakers, tracks and HTML descriptions.
 */
export function parseIcs(text: string, options: IcsOptions): ParsedSchedule {
  if (!/BEGIN:VCALENDAR/i.test(text)) throw new ScheduleParseError('Not an iCalendar file: no BEGIN:VCALENDAR');
  let data: CalendarResponse;
  try {
    data = ical.sync.parseICS(text);
  } catch (error) {
    throw new ScheduleParseError(`Not a readable iCalendar file: ${error instanceof Error ? error.message : String(error)}`);
  }
  const components = Object.values(data);
  const vevents = components.filter((component): component is VEvent => component?.type === 'VEVENT' && Boolean((component as VEvent).start));
  if (vevents.length === 0) throw new ScheduleParseError('Not a schedule: the iCalendar file has no events (VEVENT)');

  const calendar = components.find((component) => component?.type === 'VCALENDAR') as Record<string, unknown> | undefined;
  const declaredZone = typeof calendar?.['WR-TIMEZONE'] === 'string' ? (calendar['WR-TIMEZONE'] as string) : null;
  const floating = floatingEventIds(text);
  const isUtc = (zone: string) => /^(Etc\/)?(UTC|GMT|Z)$/i.test(zone);
  const zones = new Set(
    vevents
      .filter((event) => !floating.has(event.uid))
      .map((event) => event.start as DateValue)
      .filter((start) => !start.dateOnly)
      .map((start) => start.tz)
      .filter((zone): zone is string => Boolean(zone) && !isUtc(zone!)),
  );
  const timeZone = declaredZone ?? (zones.size === 1 ? [...zones][0]! : null);
  const readZone = timeZone ?? options.timeZone;

  const firstStart = Math.min(...vevents.map((event) => event.start.getTime()));
  const from = options.rangeStart ?? new Date(firstStart - 30 * DAY);
  const to = options.rangeEnd ?? new Date(firstStart + 400 * DAY);

  const events: ScheduleEvent[] = [];
  for (const vevent of vevents) {
    if (vevent.recurrenceid) continue; // overrides come with their base event's instances
    if (vevent.rrule) {
      const instances = ical.expandRecurringEvent(vevent, { from, to }).slice(0, MAX_INSTANCES);
      for (const instance of instances) {
        const source = instance.event;
        const start = readDate(instance.start as DateValue, readZone, floating.has(vevent.uid));
        // An override keeps the id of the occurrence it replaces, so a moved instance reads as moved.
        const occurrence = source.recurrenceid ? readDate(source.recurrenceid as DateValue, readZone) : start;
        events.push(
          toEvent(source, start, endOf(source, instance.start as DateValue, instance.end as DateValue, readZone, floating.has(vevent.uid)), `${vevent.uid}#${occurrence.toISOString()}`),
        );
      }
      continue;
    }
    const isFloating = floating.has(vevent.uid);
    const start = readDate(vevent.start as DateValue, readZone, isFloating);
    events.push(toEvent(vevent, start, endOf(vevent, vevent.start as DateValue, vevent.end as DateValue | undefined, readZone, isFloating), vevent.uid));
  }
  events.sort(byStartThenTitle);
  const calendarName = typeof calendar?.['WR-CALNAME'] === 'string' ? (calendar['WR-CALNAME'] as string) : null;
  return { events, calendarName, timeZone, format: 'ics' };
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

function endOf(event: VEvent, start: DateValue, end: DateValue | undefined, zone: string, floating = false): Date | null {
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

function toEvent(event: VEvent, start: Date, end: Date | null, uid: string | undefined): ScheduleEvent {
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
  return {
    uid: uid || stableId(title, start),
    title,
    start,
    end,
    allDay: Boolean((event.start as DateValue).dateOnly),
    location: text(event.location),
    track: categories[0]?.trim() || null,
    speakers: uniqueNames(speakers),
    description,
    status: status === 'CANCELLED' || titleSaysCancelled ? 'cancelled' : status === 'TENTATIVE' ? 'tentative' : 'confirmed',
    url: text((event as { url?: unknown }).url),
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
