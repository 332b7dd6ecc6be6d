import { parseFrabJson, parseFrabXml } from './parse-frab.ts';
import { parseIcs } from './parse-ics.ts';
import { parseJsonFeed } from './parse-json.ts';
import type { ParsedSchedule, ScheduleFormat } from './schedule-event.ts';

/** Reads a feed of a known format; `timeZone` is the zone for times the feed gives without one. */
export function parseSchedule(text: string, format: ScheduleFormat, timeZone: string): ParsedSchedule {
  switch (format) {
    case 'ics':
      return parseIcs(text, { timeZone });
    case 'json':
      return parseJsonFeed(text, { timeZone });
    case 'frab-xml':
      return parseFrabXml(text, { timeZone });
    case 'frab-json':
      return parseFrabJson(text, { timeZone });
  }
}
