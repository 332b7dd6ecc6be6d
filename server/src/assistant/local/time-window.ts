import { instantOf, WEEKDAYS, zonedParts } from '../../time-zone.ts';

/**
 * Reads the time words of an attendee's question — "now", "next", "soon",
 * "today", "tonight", "tomorrow", "Saturday", "14 March", "Saturday
 * morning", "Sunday night" (which runs past midnight), "at 3pm", "after
 * 8pm", "before noon" — as a window of time in the convention's zone, and
 * says which words it used so the rest can be searched as text.
 */

export interface TimeWindow {
  /** What the window is, in words ("on Saturday", "Saturday night", "tonight"). */
  label: string;
  /** True when an event running during [from, to) is in the window (else: starting in it). */
  overlaps: boolean;
  from: Date;
  to: Date;
}

export interface TimeReading {
  /** A day, part of a day or hours asked about. */
  window: TimeWindow | null;
  /** "what's on now?" / "what's next?" */
  mode: 'now' | 'next' | null;
  /** With `next`, how far ahead the question looks ("in the next hour", "next 30 minutes"). */
  horizon: { minutes: number; label: string } | null;
  /** Indexes of the question's words the reading used. */
  used: Set<number>;
}

/** A night (and "late") runs until this hour of the next morning. */
const NIGHT_ENDS_HOUR = 4;

const PARTS: Record<string, { from: number; to: number; label: string }> = {
  morning: { from: 5, to: 12, label: 'morning' },
  afternoon: { from: 12, to: 17, label: 'afternoon' },
  lunch: { from: 11, to: 14, label: 'around lunchtime' },
  lunchtime: { from: 11, to: 14, label: 'around lunchtime' },
  midday: { from: 11, to: 14, label: 'around midday' },
  evening: { from: 17, to: 24 + NIGHT_ENDS_HOUR, label: 'evening' },
  night: { from: 17, to: 24 + NIGHT_ENDS_HOUR, label: 'night' },
  nighttime: { from: 17, to: 24 + NIGHT_ENDS_HOUR, label: 'night' },
  late: { from: 21, to: 24 + NIGHT_ENDS_HOUR, label: 'late' },
};

/** Meals a question can be before or after ("after lunch"), by the hours they take. */
const MEALS: Record<string, { from: number; to: number }> = {
  breakfast: { from: 7, to: 10 },
  lunch: { from: 11, to: 14 },
  lunchtime: { from: 11, to: 14 },
  dinner: { from: 18, to: 21 },
  dinnertime: { from: 18, to: 21 },
  supper: { from: 18, to: 21 },
};

const WEEKDAY_WORDS: Record<string, number> = {
  sunday: 0, sundays: 0,
  monday: 1, mondays: 1, mon: 1,
  tuesday: 2, tuesdays: 2, tue: 2, tues: 2,
  wednesday: 3, wednesdays: 3, wed: 3,
  thursday: 4, thursdays: 4, thu: 4, thur: 4, thurs: 4,
  friday: 5, fridays: 5, fri: 5,
  saturday: 6, saturdays: 6, sat: 6,
};

const MONTHS: Record<string, number> = {
  january: 1, jan: 1, february: 2, feb: 2, march: 3, mar: 3, april: 4, apr: 4, may: 5, june: 6, jun: 6, july: 7, jul: 7,
  august: 8, aug: 8, september: 9, sep: 9, sept: 9, october: 10, oct: 10, november: 11, nov: 11, december: 12, dec: 12,
};

/** Words after "left" that make it "still to come" ("anything left in Hall B?"), not a direction. */
const LEFT_FOLLOWERS: ReadonlySet<string> = new Set(['in', 'on', 'for', 'to', 'this']);

/** Words that are about time; a title made only of them ("Friday Night") is no title. */
export const TIME_WORDS: ReadonlySet<string> = new Set([
  ...Object.keys(PARTS),
  ...Object.keys(WEEKDAY_WORDS),
  ...Object.keys(MONTHS),
  'today', 'tonight', 'tomorrow', 'yesterday', 'now', 'currently', 'right', 'moment', 'next', 'soon', 'upcoming', 'later', 'coming',
  'noon', 'midnight', 'am', 'pm', 'oclock', 'this', 'day', 'nights', 'mornings', 'evenings', 'afternoons', 'tomorrows',
  'weekend', 'weekends', 'days',
]);

interface LocalDate {
  year: number;
  month: number;
  day: number;
}

const addDays = (date: LocalDate, days: number): LocalDate => {
  const moved = new Date(Date.UTC(date.year, date.month - 1, date.day + days));
  return { year: moved.getUTCFullYear(), month: moved.getUTCMonth() + 1, day: moved.getUTCDate() };
};
const dayKey = (date: LocalDate) => `${date.year}-${String(date.month).padStart(2, '0')}-${String(date.day).padStart(2, '0')}`;
const weekdayOf = (date: LocalDate) => new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay();
/** An hour of a local day (hours past 24 run into the next day). */
const at = (date: LocalDate, hour: number, timeZone: string) => {
  const shifted = addDays(date, Math.floor(hour / 24));
  const minutes = Math.round((hour % 24) * 60);
  return instantOf({ ...shifted, hour: Math.floor(minutes / 60), minute: minutes % 60 }, timeZone);
};
const capitalize = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
const DAY_NAMES = WEEKDAYS.map(capitalize);
const dayName = (date: LocalDate) => DAY_NAMES[weekdayOf(date)]!;
const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * A clock time in words: "3pm", "15:00", "3:30 pm", "19h", "noon",
 * "midnight" → hours (15, 15.5, 12, 24). With `bare`, right after "at",
 * "after", "between"…, a number alone is an hour too ("at 10"), marked
 * `bare` because it does not say whether it is in the morning.
 */
function readClock(tokens: readonly string[], index: number, bare = false): { hours: number; length: number; bare?: boolean } | null {
  const word = tokens[index];
  if (!word) return null;
  if (word === 'noon' || word === 'midday') return { hours: 12, length: 1 };
  if (word === 'midnight') return { hours: 24, length: 1 };
  const first = /^(\d{1,2})(am|pm|h)?$/.exec(word);
  if (!first) return null;
  let hours = Number(first[1]);
  let suffix = first[2];
  let minutes: number | null = null;
  let length = 1;
  // The tokenizer splits "15:00" and "3:30pm" at the colon.
  const second = !suffix ? /^(\d{2})(am|pm)?$/.exec(tokens[index + 1] ?? '') : null;
  if (second && Number(second[1]) < 60) {
    minutes = Number(second[1]);
    suffix = second[2];
    length = 2;
  }
  const after = tokens[index + length];
  if (!suffix && (after === 'am' || after === 'pm' || after === 'oclock')) {
    suffix = after === 'oclock' ? 'h' : after;
    length++;
  }
  // A bare number is no time ("Room 104", "Podcasting 101") unless a word before it makes it one ("at 10").
  if (!suffix && minutes === null) return bare && hours >= 1 && hours <= 24 ? { hours, length, bare: true } : null;
  if (hours > 24 || (suffix !== undefined && suffix !== 'h' && hours > 12)) return null;
  if (suffix === 'pm' && hours < 12) hours += 12;
  if (suffix === 'am' && hours === 12) hours = 0;
  return { hours: hours + (minutes ?? 0) / 60, length };
}

/**
 * The time a question asks about. `words` are the question's folded words;
 * `eventDays` the local days (yyyy-mm-dd) the schedule covers, so a weekday
 * means the schedule's Saturday rather than next week's; `isTitleWord(i)`
 * says when a time word belongs to an event's name ("Board Game Night").
 */
export function readTimeWindow(
  tokens: readonly string[],
  now: Date,
  timeZone: string,
  eventDays: readonly string[] = [],
  isTitleWord: (index: number) => boolean = () => false,
): TimeReading {
  const used = new Set<number>();
  const free = (index: number) => !isTitleWord(index);
  const findWord = (predicate: (word: string, index: number) => boolean) => tokens.findIndex((word, index) => free(index) && predicate(word, index));
  const parts = zonedParts(now, timeZone);
  const today: LocalDate = { year: parts.year, month: parts.month, day: parts.day };

  // The day.
  let day: LocalDate | null = null;
  let dayLabel = '';
  const relative = findWord((word) => word === 'today' || word === 'tonight' || word === 'tomorrow' || word === 'tomorrows' || word === 'yesterday');
  const weekday = findWord((word) => word in WEEKDAY_WORDS && !(word === 'sat' && tokens.includes('i')));
  const date = readDate(tokens, today, eventDays, free);
  if (date) {
    day = date.date;
    for (const index of date.used) used.add(index);
    dayLabel = `on ${dayName(day)} ${day.day} ${MONTH_NAMES[day.month - 1]}`;
  } else if (relative !== -1) {
    const word = tokens[relative]!;
    used.add(relative);
    day = addDays(today, word === 'yesterday' ? -1 : word.startsWith('tomorrow') ? 1 : 0);
    dayLabel = word === 'tonight' ? 'tonight' : word.startsWith('tomorrow') ? 'tomorrow' : word;
  } else if (weekday !== -1) {
    used.add(weekday);
    day = dayForWeekday(WEEKDAY_WORDS[tokens[weekday]!]!, today, eventDays);
    dayLabel = `on ${dayName(day)}`;
  }
  // "this morning", "this evening"
  const thisIndex = tokens.findIndex((word, index) => word === 'this' && tokens[index + 1]! in PARTS && free(index + 1));
  if (!day && thisIndex !== -1) {
    day = today;
    used.add(thisIndex);
    dayLabel = 'today';
  }

  // The part of the day.
  let part: (typeof PARTS)[string] | null = null;
  // "Lunch" is a time only after a word that makes it one ("at lunch", "over lunchtime"); "where can I get lunch?" is about food.
  const mealTime = (index: number) => /^(at|around|during|over|by|till|until|near|this)$/.test(tokens[index - 1] ?? '');
  const partIndex = findWord(
    (word, index) => (word in PARTS && (!(word in MEALS) || mealTime(index))) || (word.endsWith('s') && word.slice(0, -1) in PARTS && word !== 'lates' && !(word.slice(0, -1) in MEALS)),
  );
  if (partIndex !== -1) {
    const word = tokens[partIndex]!;
    part = PARTS[word] ?? PARTS[word.slice(0, -1)]!;
    used.add(partIndex);
    // "late night" is late; "late" alone only after a day or "tonight".
    if (word === 'late' && tokens[partIndex + 1] === 'night') used.add(partIndex + 1);
    if (word === 'late' && !day && tokens[partIndex + 1] !== 'night') {
      part = null;
      used.delete(partIndex);
    }
  }
  if (tokens[relative] === 'tonight' && !part) part = PARTS.night!;

  // Clock times: "at 3pm", "after 8pm", "before noon", "between 2 and 4pm", "from 10 to 12".
  let clock: { from: number | null; to: number | null; point: boolean } | null = null;
  // "After lunch", "before dinner": from the end of the meal, or until its start.
  const mealIndex = findWord((word, index) => word in MEALS && (tokens[index - 1] === 'after' || tokens[index - 1] === 'before'));
  if (mealIndex !== -1) {
    const meal = MEALS[tokens[mealIndex]!]!;
    clock = tokens[mealIndex - 1] === 'after' ? { from: meal.to, to: null, point: false } : { from: null, to: meal.from, point: false };
    used.add(mealIndex - 1).add(mealIndex);
    if (partIndex === mealIndex) part = null;
  }
  for (let index = 0; index < tokens.length && !clock; index++) {
    const word = tokens[index]!;
    const relation = word === 'after' || word === 'from' || word === 'since' ? 'after' : word === 'before' || word === 'until' || word === 'till' || word === 'by' ? 'before' : word === 'at' || word === 'around' ? 'at' : word === 'between' ? 'between' : null;
    const first = relation ? index + 1 : index;
    if (!free(first)) continue; // "Midnight Movie" is a title
    const time = readClock(tokens, first, relation !== null);
    if (!time) continue;
    if (time.bare) time.hours = bareHour(time.hours, part);
    const span = [...Array(time.length).keys()].map((offset) => first + offset);
    if (relation === 'between' || (relation === 'after' && /^(and|to|until|till)$/.test(tokens[first + time.length] ?? ''))) {
      const second = readClock(tokens, first + time.length + 1, true);
      if (second) {
        if (second.bare) second.hours = bareHour(second.hours, part);
        let from = time.hours;
        const to = second.hours;
        if (from < 12 && to > 12 && to - from > 12) from += 12; // "between 2 and 4pm"
        clock = { from, to, point: false };
        for (let offset = index; offset <= first + time.length + second.length; offset++) used.add(offset);
        break;
      }
    }
    if (relation) used.add(index);
    for (const position of span) used.add(position);
    if (relation === 'after') clock = { from: time.hours, to: null, point: false };
    else if (relation === 'before') clock = { from: null, to: time.hours, point: false };
    else clock = { from: time.hours, to: time.hours, point: true };
  }

  // "Now" and "next".
  let mode: TimeReading['mode'] = null;
  const nowIndex = findWord((word, index) => word === 'now' || word === 'currently' || word === 'ongoing' || (word === 'moment' && tokens[index - 1] === 'the') || (word === 'progress' && tokens[index - 1] === 'in'));
  // "Anything left today?", "what's left in Hall B?": what is still to come.
  const left = (index: number) => index === tokens.length - 1 || TIME_WORDS.has(tokens[index + 1]!) || LEFT_FOLLOWERS.has(tokens[index + 1]!);
  const nextIndex = findWord(
    (word, index) =>
      word === 'next' || word === 'soon' || word === 'upcoming' || word === 'later' || word === 'remaining' || (word === 'left' && left(index)) || (word === 'up' && tokens[index - 1] === 'coming'),
  );
  let horizon: TimeReading['horizon'] = null;
  if (nextIndex !== -1) {
    mode = 'next';
    used.add(nextIndex);
    if (tokens[nextIndex] === 'up') used.add(nextIndex - 1);
    horizon = readHorizon(tokens, nextIndex + 1, used);
  } else if (nowIndex !== -1 && !day && !clock) {
    mode = 'now';
    used.add(nowIndex);
    if (tokens[nowIndex - 1] === 'right') used.add(nowIndex - 1);
    if (tokens[nowIndex] === 'moment') used.add(nowIndex - 1);
  }

  if (!day && !part && !clock) return { window: null, mode, horizon, used };
  if (!day) {
    day = today;
    dayLabel = part ? 'today' : '';
  }

  let window: TimeWindow;
  if (clock) {
    const base = part ? part : { from: 0, to: 24 + NIGHT_ENDS_HOUR, label: '' };
    const clockHour = (hours: number) => (hours < NIGHT_ENDS_HOUR && base.from >= 12 ? hours + 24 : hours);
    const from = clock.from === null ? base.from : clockHour(clock.from);
    const to = clock.to === null ? base.to : clockHour(clock.to);
    const label = clock.point
      ? `at ${formatHour(clock.from!)}`
      : clock.from !== null && clock.to !== null
        ? `between ${formatHour(clock.from)} and ${formatHour(clock.to)}`
        : clock.from !== null
          ? `after ${formatHour(clock.from)}`
          : `before ${formatHour(clock.to!)}`;
    window = clock.point
      ? { label: `${dayLabel} ${label}`.trim(), overlaps: true, from: at(day, from, timeZone), to: new Date(at(day, from, timeZone).getTime() + 1) }
      : { label: `${dayLabel} ${label}`.trim(), overlaps: false, from: at(day, from, timeZone), to: at(day, to, timeZone) };
  } else if (part) {
    const label =
      dayLabel === 'tonight' ? 'tonight' : dayLabel === 'today' ? `this ${part.label}` : dayLabel === 'tomorrow' ? `tomorrow ${part.label}` : `${dayLabel.replace(/^on /, '')} ${part.label}`;
    window = { label, overlaps: part.to > 24, from: at(day, part.from, timeZone), to: at(day, part.to, timeZone) };
    // Tonight, asked in the evening, means from now on (what is still running counts).
    if (dayKey(day) === dayKey(today) && window.from < now && now < window.to) window = { ...window, from: now, overlaps: true };
  } else {
    window = { label: dayLabel, overlaps: false, from: at(day, 0, timeZone), to: at(day, 24, timeZone) };
  }
  return { window, mode: mode === 'now' ? null : mode, horizon, used };
}

const COUNT_WORDS: ReadonlyMap<string, number> = new Map(Object.entries({ a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, couple: 2, few: 3 }));

/**
 * How far "next" looks when the words after it say: "next hour", "next 2
 * hours", "next couple of hours", "next half hour", "next 30 minutes".
 */
function readHorizon(tokens: readonly string[], from: number, used: Set<number>): TimeReading['horizon'] {
  let position = from;
  let count = 1;
  let half = false;
  const word = tokens[position];
  if (word !== undefined && (/^\d{1,3}$/.test(word) || COUNT_WORDS.has(word))) {
    count = /^\d/.test(word) ? Number(word) : COUNT_WORDS.get(word)!;
    position++;
    if (tokens[position] === 'of') position++;
  } else if (word === 'half') {
    half = true;
    position++;
  }
  const unit = tokens[position];
  const minutes = unit === 'hour' || unit === 'hours' ? (half ? 30 : count * 60) : (unit === 'minute' || unit === 'minutes') && !half ? count : null;
  if (minutes === null || minutes < 1 || minutes > 24 * 60) return null;
  for (let index = from; index <= position; index++) used.add(index);
  const label = minutes === 60 ? 'in the next hour' : minutes % 60 === 0 ? `in the next ${minutes / 60} hours` : `in the next ${minutes} minutes`;
  return { minutes, label };
}

/**
 * The hour a number alone means ("at 10", "after 9 tonight"): 12 to 24 say
 * it; with a part of the day named, its half of the clock (2 at night is
 * still 2 in the morning); else the hours a convention keeps, 8 to 11 in
 * the morning and 1 to 7 in the afternoon and evening.
 */
function bareHour(hours: number, part: { from: number } | null): number {
  if (hours >= 12) return hours;
  if (part) return part.from >= 12 && hours >= NIGHT_ENDS_HOUR ? hours + 12 : hours;
  return hours < 8 ? hours + 12 : hours;
}

function formatHour(hours: number): string {
  const whole = Math.floor(hours) % 24;
  const minutes = Math.round((hours - Math.floor(hours)) * 60);
  return `${String(whole).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`;
}

/** "14 March", "March 14th", "the 14th", "14/3", "2026-03-14". */
function readDate(tokens: readonly string[], today: LocalDate, eventDays: readonly string[], free: (index: number) => boolean): { date: LocalDate; used: number[] } | null {
  const dayNumber = (word: string | undefined) => {
    const match = /^(\d{1,2})(?:st|nd|rd|th)?$/.exec(word ?? '');
    const value = match ? Number(match[1]) : NaN;
    return value >= 1 && value <= 31 ? value : null;
  };
  const near = (month: number, day: number): LocalDate => {
    // The year that puts the date nearest to today.
    const candidates = [today.year - 1, today.year, today.year + 1].map((year) => ({ year, month, day }));
    const distance = (date: LocalDate) => Math.abs(Date.UTC(date.year, date.month - 1, date.day) - Date.UTC(today.year, today.month - 1, today.day));
    return candidates.sort((a, b) => distance(a) - distance(b))[0]!;
  };
  for (let index = 0; index < tokens.length; index++) {
    if (!free(index)) continue;
    const word = tokens[index]!;
    const iso = /^(\d{4})(\d{2})(\d{2})$/.exec(word);
    if (iso) return { date: { year: Number(iso[1]), month: Number(iso[2]), day: Number(iso[3]) }, used: [index] };
    if (/^\d{4}$/.test(word) && /^\d{1,2}$/.test(tokens[index + 1] ?? '') && /^\d{1,2}$/.test(tokens[index + 2] ?? '')) {
      return { date: { year: Number(word), month: Number(tokens[index + 1]), day: Number(tokens[index + 2]) }, used: [index, index + 1, index + 2] };
    }
    const month = MONTHS[word];
    if (month && !(word === 'may' && dayNumber(tokens[index + 1]) === null && dayNumber(tokens[index - 1]) === null)) {
      const after = dayNumber(tokens[index + 1]);
      if (after) return { date: near(month, after), used: [index, index + 1] };
      const before = dayNumber(tokens[index - 1]);
      if (before) return { date: near(month, before), used: [index - 1, index] };
      const skipped = tokens[index - 1] === 'of' ? dayNumber(tokens[index - 2]) : null; // "14th of March"
      if (skipped) return { date: near(month, skipped), used: [index - 2, index - 1, index] };
    }
    // "the 14th": the schedule's day of that number, else this month's.
    const ordinal = /^(\d{1,2})(st|nd|rd|th)$/.exec(word);
    if (ordinal && !MONTHS[tokens[index + 1] ?? ''] && tokens[index + 1] !== 'of') {
      const value = Number(ordinal[1]);
      if (value < 1 || value > 31) continue;
      const scheduleDay = eventDays.find((day) => Number(day.slice(8, 10)) === value);
      if (scheduleDay) {
        const [year, month, day] = scheduleDay.split('-').map(Number) as [number, number, number];
        return { date: { year, month, day }, used: [index] };
      }
      return { date: { year: today.year, month: today.month, day: value }, used: [index] };
    }
  }
  return null;
}

/** The schedule's own day with that weekday, else the next such day from today. */
function dayForWeekday(weekday: number, today: LocalDate, eventDays: readonly string[]): LocalDate {
  const scheduleDay = eventDays.find((day) => new Date(`${day}T12:00:00Z`).getUTCDay() === weekday);
  if (scheduleDay) {
    const [year, month, day] = scheduleDay.split('-').map(Number) as [number, number, number];
    return { year, month, day };
  }
  return addDays(today, (weekday - weekdayOf(today) + 7) % 7);
}

/** The local day (yyyy-mm-dd) of an instant. */
export function localDayOf(date: Date, timeZone: string): string {
  const parts = zonedParts(date, timeZone);
  return dayKey(parts);
}

