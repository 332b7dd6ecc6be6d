import { parseFrabJson, parseFrabXml } from './parse-frab.ts';
import { parseIcs } from './parse-ics.ts';
import { parseJsonFeed } from './parse-json.ts';
import type { ParsedSchedule, ScheduleFormat } from './schedule-event.ts';

/**
 * Reads a feed of a known format; `timeZone` is the zone for times the feed
 * gives without one. iCalendar may come as its bytes (read a piece at a time).
 */
export function parseSchedule(feed: string | Uint8Array, format: ScheduleFormat, timeZone: string): ParsedSchedule {
  const text = () => (typeof feed === 'string' ? feed : Buffer.from(feed.buffer, feed.byteOffset, feed.byteLength).toString('utf8'));
  switch (format) {
    case 'ics':
      return parseIcs(feed, { timeZone });
    case 'json':
      return parseJsonFeed(text(), { timeZone });
    case 'frab-xml':
      return parseFrabXml(text(), { timeZone });
    case 'frab-json':
      return parseFrabJson(text(), { timeZone });
  }
}
