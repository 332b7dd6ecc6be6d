import { addLocalDays, localDay, zonedParts } from '../../time-zone.ts';
import type { ParsedSchedule } from './schedule-event.ts';

const DAY = 86_400_000;
const FRIDAY = 5;

/** Moves every event by whole days, keeping wall-clock times in the zone. */
export function shiftSchedule(schedule: ParsedSchedule, days: number, timeZone: string): ParsedSchedule {
  if (days === 0) return schedule;
  return {
    ...schedule,
    events: schedule.events.map((event) => ({
      ...event,
      start: addLocalDays(event.start, days, timeZone),
      end: event.end ? addLocalDays(event.end, days, timeZone) : null,
    })),
  };
}

/**
 * Whole days that put a schedule starting on a Friday onto the coming
 * Friday (today when today is Friday), or keep it on this week's while the
 * convention is running (until the Monday after), so demos' "now" and
 * "tonight" questions land on real events.
 */
export function daysToComingFriday(firstEventStart: Date, now: Date, timeZone: string): number {
  const today = Date.parse(`${localDay(now, timeZone)}T00:00:00Z`);
  const first = Date.parse(`${localDay(firstEventStart, timeZone)}T00:00:00Z`);
  const weekday = zonedParts(now, timeZone).weekday;
  // Days back to this week's Friday if the convention (Fri–Mon) is on now, else forward to the next one.
  const sinceFriday = (weekday - FRIDAY + 7) % 7;
  const target = sinceFriday <= 3 ? today - sinceFriday * DAY : today + (7 - sinceFriday) * DAY;
  return Math.round((target - first) / DAY);
}
