/** The feed formats the crawler reads, told apart by content (detect-format.ts). */
export type ScheduleFormat = 'ics' | 'json' | 'frab-xml' | 'frab-json';

/** One event of the convention's schedule, whatever format it came in. */
export interface ScheduleEvent {
  /** The feed's id (a recurrence instance: `${uid}#${start ISO}`), or a stable hash of title and start. */
  uid: string;
  /** SPEC "what"; "CANCELLED:"-style prefixes removed (status says it). */
  title: string;
  start: Date;
  end: Date | null;
  allDay: boolean;
  /** SPEC "where". */
  location: string | null;
  track: string | null;
  speakers: string[];
  /** Plain text. */
  description: string | null;
  status: 'confirmed' | 'tentative' | 'cancelled';
  url: string | null;
  /** The language it is held in, when the feed says (frab/pretalx: "en", "de"). */
  language?: string | null;
  /** The kind of session, when the feed says (frab/pretalx: "Talk", "Workshop", "Screening"). */
  type?: string | null;
}

export interface ParsedSchedule {
  events: ScheduleEvent[];
  calendarName: string | null;
  /** The feed's own zone (X-WR-TIMEZONE or its only TZID). */
  timeZone: string | null;
  format: ScheduleFormat;
}

/** A schedule that cannot be read; the message says what is wrong. */
export class ScheduleParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScheduleParseError';
  }
}

export const byStartThenTitle = (a: ScheduleEvent, b: ScheduleEvent) => a.start.getTime() - b.start.getTime() || a.title.localeCompare(b.title);
