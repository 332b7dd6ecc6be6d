import { z } from 'zod';
import { instantOf } from '../../time-zone.ts';
import { stableId } from './parse-ics.ts';
import { byStartThenTitle, ScheduleParseError, type ParsedSchedule, type ScheduleEvent } from './schedule-event.ts';
import { cleanTitle, htmlToText, splitNames, uniqueNames } from './text.ts';

const ISO = /^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:\.\d+)?)?)?(Z|[+-]\d\d:?\d\d)?$/;

const text = z.string().trim().max(20_000).nullish();

const FeedEvent = z.object({
  id: z.union([z.string(), z.number()]).nullish(),
  uid: z.string().nullish(),
  title: z.string('is required').trim().min(1, 'is required').max(500),
  start: z.string('is required').trim().regex(ISO, 'not an ISO 8601 date'),
  end: z.string().trim().regex(ISO, 'not an ISO 8601 date').nullish(),
  location: text,
  track: text,
  speakers: z.union([z.array(z.string()), z.string()]).nullish(),
  description: text,
  status: z.string().nullish(),
  url: text,
});

const Feed = z.union([z.array(z.unknown()), z.object({ events: z.array(z.unknown()), name: z.string().optional(), timezone: z.string().optional() })]);

/** A time from the feed; one without an offset is read in the convention's zone. */
function readTime(value: string, timeZone: string): { date: Date; dateOnly: boolean } {
  const match = ISO.exec(value)!;
  const [, year, month, day, hour, minute, second, zone] = match;
  if (zone) return { date: new Date(value.replace(' ', 'T')), dateOnly: false };
  const date = instantOf({ year: Number(year), month: Number(month), day: Number(day), hour: Number(hour ?? 0), minute: Number(minute ?? 0), second: Number(second ?? 0) }, timeZone);
  return { date, dateOnly: hour === undefined };
}

/**
 * Reads a JSON feed: an array of events (or `{events: [...]}`) with title,
 * start, end, location, track, speakers (array or comma-separated) and
 * description; times in ISO 8601. A bad item is named with its index and field.
 */
export function parseJsonFeed(body: string, options: { timeZone: string }): ParsedSchedule {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch (error) {
    throw new ScheduleParseError(`Not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const feed = Feed.safeParse(raw);
  if (!feed.success) throw new ScheduleParseError('Not a schedule feed: expected an array of events or {"events": [...]}');
  const items = Array.isArray(feed.data) ? feed.data : feed.data.events;
  const feedZone = Array.isArray(feed.data) ? null : (feed.data.timezone ?? null);
  const zone = feedZone ?? options.timeZone;
  const events: ScheduleEvent[] = items.map((item, index) => {
    const parsed = FeedEvent.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ScheduleParseError(`events[${index}].${issue.path.join('.') || '(event)'}: ${issue.message}`);
    }
    const event = parsed.data;
    const start = readTime(event.start, zone);
    if (Number.isNaN(start.date.getTime())) throw new ScheduleParseError(`events[${index}].start: not a real date`);
    const end = event.end ? readTime(event.end, zone).date : start.dateOnly ? new Date(start.date.getTime() + 86_400_000) : null;
    if (end && Number.isNaN(end.getTime())) throw new ScheduleParseError(`events[${index}].end: not a real date`);
    const { title, cancelled } = cleanTitle(event.title);
    const speakers = Array.isArray(event.speakers) ? event.speakers : event.speakers ? splitNames(event.speakers) : [];
    const status = (event.status ?? '').toLowerCase();
    return {
      uid: String(event.uid ?? event.id ?? stableId(title, start.date)),
      title,
      start: start.date,
      end: end && end > start.date ? end : null,
      allDay: start.dateOnly,
      location: event.location || null,
      track: event.track || null,
      speakers: uniqueNames(speakers.map((name) => name.trim()).filter(Boolean)),
      description: event.description ? htmlToText(event.description) || null : null,
      status: cancelled || status.startsWith('cancel') ? 'cancelled' : status === 'tentative' ? 'tentative' : 'confirmed',
      url: event.url || null,
    };
  });
  if (events.length === 0) throw new ScheduleParseError('The feed has no events');
  events.sort(byStartThenTitle);
  return { events, calendarName: Array.isArray(feed.data) ? null : (feed.data.name ?? null), timeZone: feedZone, format: 'json' };
}
