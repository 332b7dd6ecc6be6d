import { XMLParser } from 'fast-xml-parser';
import { instantOf } from '../../time-zone.ts';
import { stableId } from './parse-ics.ts';
import { byStartThenTitle, ScheduleParseError, type ParsedSchedule, type ScheduleEvent } from './schedule-event.ts';
import { cleanTitle, htmlToText, uniqueNames } from './text.ts';

/**
 * The frab family of schedule exports: Pentabarf/frab `schedule.xml` and
 * the frab/pretalx `schedule.json` (c3voc's schema) — what FOSDEM, CCC
 * events and pretalx-run conferences publish and what apps like Giggity and
 * ConfClerk read. Both are conference → days → rooms → events, each event
 * with its `date` (ISO, with offset) or `start` (HH:MM on its day; a day
 * runs past midnight), `duration` (HH:MM), `room`, `track`, `language`,
 * `persons`, `abstract` and `description`.
 */

interface FrabEvent {
  guid?: unknown;
  id?: unknown;
  date?: unknown;
  start?: unknown;
  duration?: unknown;
  room?: unknown;
  title?: unknown;
  subtitle?: unknown;
  track?: unknown;
  type?: unknown;
  language?: unknown;
  abstract?: unknown;
  description?: unknown;
  persons?: unknown;
  url?: unknown;
  state?: unknown;
  status?: unknown;
}

interface FrabDay {
  date: string;
  /** When the day's schedule starts (frab days run past midnight, to day_end). */
  dayStart: string | null;
  rooms: { name: string; events: FrabEvent[] }[];
}

interface FrabConference {
  title: string | null;
  timeZone: string | null;
  days: FrabDay[];
}

const ISO_DATE = /^\d{4}-\d\d-\d\d$/;
const isValidZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

/** Reads Pentabarf/frab `schedule.xml`. */
export function parseFrabXml(body: string, options: { timeZone: string }): ParsedSchedule {
  let document: Record<string, unknown>;
  try {
    const parser = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '@',
      textNodeName: '#text',
      parseTagValue: false,
      parseAttributeValue: false,
      trimValues: true,
      processEntities: true,
      htmlEntities: true,
      isArray: (name) => ['day', 'room', 'event', 'person', 'link'].includes(name),
    });
    document = parser.parse(body) as Record<string, unknown>;
  } catch (error) {
    throw new ScheduleParseError(`Not readable XML: ${error instanceof Error ? error.message : String(error)}`);
  }
  const schedule = (document.schedule === '' ? {} : document.schedule) as Record<string, unknown> | undefined;
  if (!schedule || typeof schedule !== 'object') throw new ScheduleParseError('Not a frab schedule: no <schedule> element');
  const conference = (schedule.conference ?? {}) as Record<string, unknown>;
  const days = asArray(schedule.day).map((day, dayIndex): FrabDay => {
    const record = day as Record<string, unknown>;
    const date = textOf(record['@date']);
    if (!date || !ISO_DATE.test(date)) throw new ScheduleParseError(`day[${dayIndex}]: the date attribute is missing or not yyyy-mm-dd`);
    return {
      date,
      dayStart: textOf(record['@start']),
      rooms: asArray(record.room).map((room) => {
        const roomRecord = room as Record<string, unknown>;
        return {
          name: textOf(roomRecord['@name']) ?? '',
          events: asArray(roomRecord.event).map((event) => xmlEvent(event as Record<string, unknown>)),
        };
      }),
    };
  });
  return normalize(
    { title: textOf(conference.title), timeZone: textOf(conference.time_zone_name) ?? textOf(conference.timezone), days },
    options.timeZone,
    'frab-xml',
  );
}

function xmlEvent(record: Record<string, unknown>): FrabEvent {
  const persons = record.persons as Record<string, unknown> | undefined;
  return {
    ...record,
    guid: record['@guid'] ?? record.guid,
    id: record['@id'] ?? record.id,
    persons: asArray(persons?.person).map((person) => (typeof person === 'object' && person ? textOf((person as Record<string, unknown>)['#text']) : textOf(person))),
  };
}

/** Reads the frab/pretalx `schedule.json` (`{schedule: {conference: {days: [{rooms: {name: [events]}}]}}}`). */
export function parseFrabJson(body: string, options: { timeZone: string }): ParsedSchedule {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch (error) {
    throw new ScheduleParseError(`Not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const conference = frabJsonConference(raw);
  if (!conference) throw new ScheduleParseError('Not a frab/pretalx schedule: expected {"schedule": {"conference": {"days": [...]}}}');
  const days = asArray(conference.days).map((day, dayIndex): FrabDay => {
    const record = (day ?? {}) as Record<string, unknown>;
    const date = textOf(record.date);
    if (!date || !ISO_DATE.test(date)) throw new ScheduleParseError(`schedule.conference.days[${dayIndex}].date: missing or not yyyy-mm-dd`);
    const rooms = record.rooms && typeof record.rooms === 'object' && !Array.isArray(record.rooms) ? (record.rooms as Record<string, unknown>) : {};
    return {
      date,
      dayStart: textOf(record.day_start),
      rooms: Object.entries(rooms).map(([name, events]) => ({ name, events: asArray(events) as FrabEvent[] })),
    };
  });
  return normalize({ title: textOf(conference.title), timeZone: textOf(conference.time_zone_name), days }, options.timeZone, 'frab-json');
}

/** The conference object of a frab/pretalx JSON export, or null when it is not one. */
export function frabJsonConference(raw: unknown): Record<string, unknown> | null {
  if (!raw || typeof raw !== 'object') return null;
  const schedule = (raw as Record<string, unknown>).schedule;
  if (!schedule || typeof schedule !== 'object') return null;
  const conference = (schedule as Record<string, unknown>).conference;
  if (!conference || typeof conference !== 'object' || !Array.isArray((conference as Record<string, unknown>).days)) return null;
  return conference as Record<string, unknown>;
}

function normalize(conference: FrabConference, fallbackZone: string, format: 'frab-xml' | 'frab-json'): ParsedSchedule {
  const declared = conference.timeZone && isValidZone(conference.timeZone) ? conference.timeZone : null;
  const zone = declared ?? fallbackZone;
  const events: ScheduleEvent[] = [];
  conference.days.forEach((day, dayIndex) => {
    const dayStartHour = day.dayStart ? Number(/T(\d\d):/.exec(day.dayStart)?.[1] ?? 0) : 0;
    for (const room of day.rooms) {
      room.events.forEach((event, eventIndex) => {
        const where = `day ${day.date}, room "${room.name}", event ${eventIndex + 1}`;
        events.push(toEvent(event, { date: day.date, dayStartHour, room: room.name, zone, where }));
      });
    }
    if (dayIndex > 10_000) throw new ScheduleParseError('Too many days');
  });
  if (events.length === 0) throw new ScheduleParseError('The schedule has no events');
  events.sort(byStartThenTitle);
  return { events, calendarName: conference.title, timeZone: declared, format };
}

function toEvent(event: FrabEvent, day: { date: string; dayStartHour: number; room: string; zone: string; where: string }): ScheduleEvent {
  const rawTitle = textOf(event.title);
  if (!rawTitle) throw new ScheduleParseError(`${day.where}: title is required`);
  const { title, cancelled } = cleanTitle(rawTitle);
  const start = startOf(event, day);
  const minutes = durationMinutes(event.duration);
  if (minutes === undefined) throw new ScheduleParseError(`${day.where} (${title}): duration is not HH:MM`);
  const subtitle = textOf(event.subtitle);
  const abstract = textOf(event.abstract);
  const description = textOf(event.description);
  const parts = [subtitle, abstract, description && description !== abstract ? description : null].filter((part): part is string => Boolean(part));
  const state = `${textOf(event.state) ?? ''} ${textOf(event.status) ?? ''} ${textOf(event.type) ?? ''}`.toLowerCase();
  const id = textOf(event.guid) ?? textOf(event.id);
  return {
    uid: id ?? stableId(title, start),
    title,
    start,
    end: minutes > 0 ? new Date(start.getTime() + minutes * 60_000) : null,
    allDay: false,
    location: textOf(event.room) ?? (day.room || null),
    track: textOf(event.track),
    speakers: uniqueNames(personsOf(event.persons)),
    description: parts.length ? htmlToText(parts.join('\n\n')) || null : null,
    status: cancelled || /\bcancel/.test(state) ? 'cancelled' : 'confirmed',
    url: textOf(event.url),
    language: textOf(event.language),
    type: textOf(event.type),
  };
}

/** The event's start: its ISO `date` when it has one, else `start` on its day (before the day's first hour: the next morning). */
function startOf(event: FrabEvent, day: { date: string; dayStartHour: number; zone: string; where: string }): Date {
  const date = textOf(event.date);
  if (date && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(date)) {
    const hasOffset = /(Z|[+-]\d\d:?\d\d)$/.test(date);
    if (hasOffset) {
      const instant = new Date(date);
      if (!Number.isNaN(instant.getTime())) return instant;
    }
    const [, y, mo, d, h, mi] = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)/.exec(date)!;
    return instantOf({ year: Number(y), month: Number(mo), day: Number(d), hour: Number(h), minute: Number(mi) }, day.zone);
  }
  const clock = /^(\d{1,2}):(\d\d)/.exec(textOf(event.start) ?? '');
  if (!clock) throw new ScheduleParseError(`${day.where}: start is not HH:MM`);
  const hour = Number(clock[1]);
  const [year, month, dayOfMonth] = day.date.split('-').map(Number) as [number, number, number];
  // A day's schedule runs past midnight: 01:00 on a day starting at 06:00 is the next morning.
  const nextMorning = day.dayStartHour > 0 && hour < day.dayStartHour ? 1 : 0;
  const calendar = new Date(Date.UTC(year, month - 1, dayOfMonth + nextMorning));
  return instantOf({ year: calendar.getUTCFullYear(), month: calendar.getUTCMonth() + 1, day: calendar.getUTCDate(), hour, minute: Number(clock[2]) }, day.zone);
}

/** "01:30", "1:30:00", "90" (minutes) → minutes; undefined when unreadable. */
function durationMinutes(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return 0;
  if (typeof value === 'number') return Math.max(0, Math.round(value));
  const text = String(value).trim();
  const clock = /^(\d{1,3}):(\d\d)(?::(\d\d))?$/.exec(text);
  if (clock) return Number(clock[1]) * 60 + Number(clock[2]);
  if (/^\d+$/.test(text)) return Number(text);
  return undefined;
}

function personsOf(value: unknown): string[] {
  return asArray(value)
    .map((person) => {
      if (typeof person === 'string') return person.trim();
      if (person && typeof person === 'object') {
        const record = person as Record<string, unknown>;
        return textOf(record.public_name) ?? textOf(record.full_public_name) ?? textOf(record.name) ?? textOf(record['#text']) ?? '';
      }
      return '';
    })
    .filter(Boolean);
}

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === undefined || value === null || value === '' ? [] : [value]);

function textOf(value: unknown): string | null {
  if (typeof value === 'string') return value.trim() || null;
  if (typeof value === 'number') return String(value);
  if (value && typeof value === 'object' && '#text' in value) return textOf((value as Record<string, unknown>)['#text']);
  return null;
}
