/** Wall-clock arithmetic in IANA time zones with Intl only (no date library). */

export const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

/** One formatter per zone: building an Intl.DateTimeFormat costs far more than using one. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      weekday: 'long',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

export interface ZonedParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  weekday: number;
}

/**
 * The last minute asked for in each zone and its parts. Every zone's offset
 * has been whole minutes since 1972 (before, some were local mean time, to
 * the second), so from then on the parts stay the same for a whole UTC
 * minute; the hot path asks for "today" several times per question (the
 * token budget).
 */
const lastMinute = new Map<string, { minute: number; parts: Readonly<ZonedParts> }>();
const WHOLE_MINUTE_OFFSETS_FROM = Date.UTC(1973, 0, 1);

/** Calendar parts of an instant in a time zone. */
export function zonedParts(date: Date, timeZone: string): ZonedParts {
  const cacheable = date.getTime() >= WHOLE_MINUTE_OFFSETS_FROM;
  const minute = Math.floor(date.getTime() / 60_000);
  const known = cacheable ? lastMinute.get(timeZone) : undefined;
  if (known?.minute === minute) return { ...known.parts };
  const parts = formatterFor(timeZone).formatToParts(date);
  const get = (type: string) => parts.find((part) => part.type === type)?.value ?? '';
  const zoned = {
    year: Number(get('year')),
    month: Number(get('month')),
    day: Number(get('day')),
    hour: Number(get('hour')),
    minute: Number(get('minute')),
    weekday: WEEKDAYS.indexOf(get('weekday').toLowerCase()),
  };
  if (cacheable) lastMinute.set(timeZone, { minute, parts: Object.freeze({ ...zoned }) });
  return zoned;
}

export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour?: number;
  minute?: number;
  second?: number;
}

/** The instant a wall-clock time names in a time zone (DST-safe: a time skipped by a DST jump moves forward). */
export function instantOf(wall: WallTime, timeZone: string): Date {
  const guess = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour ?? 0, wall.minute ?? 0, wall.second ?? 0);
  // Correct by the zone's offset at the guess, then once more across a DST edge.
  let result = guess;
  for (let i = 0; i < 2; i++) {
    const parts = zonedParts(new Date(result), timeZone);
    const shown = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, new Date(result).getUTCSeconds());
    result += guess - shown;
  }
  return new Date(result);
}

/** The instant of a wall-clock hour in a time zone. */
export const zonedTime = (year: number, month: number, day: number, hour: number, timeZone: string): Date =>
  instantOf({ year, month, day, hour }, timeZone);

/** The local calendar day (yyyy-mm-dd) of an instant in a time zone. */
export function localDay(date: Date, timeZone: string): string {
  const parts = zonedParts(date, timeZone);
  return `${parts.year}-${String(parts.month).padStart(2, '0')}-${String(parts.day).padStart(2, '0')}`;
}

/** Adds whole days to an instant, keeping its wall-clock time in the zone (across DST changes). */
export function addLocalDays(date: Date, days: number, timeZone: string): Date {
  const parts = zonedParts(date, timeZone);
  const shifted = new Date(Date.UTC(parts.year, parts.month - 1, parts.day + days));
  return instantOf(
    { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate(), hour: parts.hour, minute: parts.minute, second: date.getUTCSeconds() },
    timeZone,
  );
}
