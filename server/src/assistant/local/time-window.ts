import { WEEKDAYS, zonedParts, zonedTime } from '../../time-zone.ts';

/**
 * Reads the time words of an attendee's question ("now", "next", "today",
 * "tonight", "tomorrow", "Saturday", "Saturday night") as a window of time in
 * the convention's zone, and says which words it used so the rest can be
 * searched as text.
 */

export interface TimeWindow {
  /** What the window is, in words ("happening now", "tonight", "on Saturday"). */
  label: string;
  /** True when an event overlapping [from, to) is in the window (else: starting in it). */
  overlaps: boolean;
  from: Date;
  to: Date;
}


const WEEKDAY_ALIASES: Record<string, number> = Object.fromEntries([
  ...WEEKDAYS.map((day, index) => [day, index] as const),
  ...['sun', 'mon', 'tue', 'tues', 'wed', 'thu', 'thur', 'thurs', 'fri', 'sat'].map(
    (short) => [short, WEEKDAYS.findIndex((day) => day.startsWith(short.slice(0, 3)))] as const,
  ),
]);

const HOUR = 3_600_000;
const EVENING_HOUR = 17;
/** Late-night events (until 4 am) still count as the evening before. */
const NIGHT_ENDS_HOUR = 4;
const NEXT_WINDOW_HOURS = 3;

/** The start of the local day `offsetDays` after `now`'s, plus `hour` hours. */
function localDayAt(now: Date, timeZone: string, offsetDays: number, hour: number): Date {
  const today = zonedParts(now, timeZone);
  const noon = new Date(Date.UTC(today.year, today.month - 1, today.day + offsetDays, 12));
  return zonedTime(noon.getUTCFullYear(), noon.getUTCMonth() + 1, noon.getUTCDate(), hour, timeZone);
}

interface Match {
  window: TimeWindow;
  words: string[];
}

/**
 * The time window a question asks about, or null. `eventDays` are the local
 * days (yyyy-mm-dd) the schedule covers, so a weekday means the schedule's
 * Saturday rather than next week's.
 */
export function readTimeWindow(question: string, now: Date, timeZone: string, eventDays: readonly string[] = []): Match | null {
  const text = question.toLowerCase();
  const has = (pattern: RegExp) => pattern.test(text);
  const night = has(/\b(tonight|night|evening|late)\b/);

  const whatsHappening = has(/\bwhat(?:'?s| is) (?:happening|going on|on)\b/) && !has(/\b(tonight|today|tomorrow|night|evening)\b/);
  if ((has(/\b(right now|now|currently|at the moment)\b/) || (whatsHappening && has(/\bhappening\b/))) && !has(/\b(next|later|upcoming|soon)\b/)) {
    return {
      window: { label: 'happening now', overlaps: true, from: now, to: new Date(now.getTime() + 1) },
      words: ['now', 'right', 'currently', 'moment', 'happening', 'going', 'on'],
    };
  }
  if (has(/\b(next|soon|upcoming|coming up|later today|starting soon)\b/)) {
    // "Next" means not yet started: from the next minute on.
    return {
      window: {
        label: `starting in the next ${NEXT_WINDOW_HOURS} hours`,
        overlaps: false,
        from: new Date(now.getTime() + 60_000),
        to: new Date(now.getTime() + NEXT_WINDOW_HOURS * HOUR + 60_000),
      },
      words: ['next', 'soon', 'upcoming', 'coming', 'up', 'later', 'starting'],
    };
  }
  if (has(/\btomorrow\b/)) {
    const window = night
      ? { label: 'tomorrow night', from: localDayAt(now, timeZone, 1, EVENING_HOUR), to: localDayAt(now, timeZone, 2, NIGHT_ENDS_HOUR) }
      : { label: 'tomorrow', from: localDayAt(now, timeZone, 1, 0), to: localDayAt(now, timeZone, 2, NIGHT_ENDS_HOUR) };
    return { window: { ...window, overlaps: false }, words: ['tomorrow', 'night', 'evening', 'tonight', 'late'] };
  }
  const weekdayWord = text.match(/\b(sunday|monday|tuesday|wednesday|thursday|friday|saturday|sun|mon|tues?|wed|thu(?:rs?)?|fri|sat)\b/);
  if (weekdayWord) {
    const weekday = WEEKDAY_ALIASES[weekdayWord[1]!]!;
    const offset = dayOffsetFor(weekday, now, timeZone, eventDays);
    const name = WEEKDAYS[weekday]!;
    const label = `${night ? `${capitalize(name)} night` : `on ${capitalize(name)}`}`;
    const from = localDayAt(now, timeZone, offset, night ? EVENING_HOUR : 0);
    return {
      window: { label, overlaps: false, from, to: localDayAt(now, timeZone, offset + 1, NIGHT_ENDS_HOUR) },
      words: [weekdayWord[1]!, 'night', 'evening', 'late'],
    };
  }
  if (has(/\b(today|tonight|this (morning|afternoon|evening))\b/)) {
    const evening = night || has(/\bthis evening\b/);
    const from = evening ? localDayAt(now, timeZone, 0, EVENING_HOUR) : localDayAt(now, timeZone, 0, 0);
    return {
      window: { label: evening ? 'tonight' : 'today', overlaps: evening, from: evening && from < now ? now : from, to: localDayAt(now, timeZone, 1, NIGHT_ENDS_HOUR) },
      words: ['today', 'tonight', 'this', 'morning', 'afternoon', 'evening', 'night', 'late'],
    };
  }
  return null;
}

/** Days from today to the named weekday: the schedule's own day when it has one, else the next such day. */
function dayOffsetFor(weekday: number, now: Date, timeZone: string, eventDays: readonly string[]): number {
  const today = zonedParts(now, timeZone);
  const todayUtc = Date.UTC(today.year, today.month - 1, today.day);
  const scheduleDay = eventDays.find((day) => new Date(`${day}T12:00:00Z`).getUTCDay() === weekday);
  if (scheduleDay) return Math.round((Date.parse(`${scheduleDay}T00:00:00Z`) - todayUtc) / (24 * HOUR));
  return (weekday - today.weekday + 7) % 7;
}

const capitalize = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
