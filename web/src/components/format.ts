import { formatPeopleTime } from '@concierge/contract/people-time';
import { runtimeConfig } from '../app/runtime-config.ts';

/** Cuts text to `max` characters with an ellipsis; N/A when empty (SPEC §2 cut-offs). */
export function cut(text: string | null | undefined, max: number, empty = 'N/A'): string {
  if (text === null || text === undefined || text === '') return empty;
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * Every time the console shows (DESIGN §9 "Times shown to people"): the
 * convention's zone, a 24-hour clock and the zone's abbreviation, e.g.
 * "Sat 21 Nov, 19:00 CST" — the same on every screen and in every dialog,
 * whatever the browser's own zone or locale. N/A when there is none.
 * `<DateTime>` shows it with the raw ISO value on hover.
 */
export const formatDateTime = (iso: string | Date | null | undefined, zone: string = runtimeConfig.timeZone): string =>
  iso ? formatPeopleTime(iso, zone) : 'N/A';

/** 'Xh Ym' from 60 minutes on, else 'Ym'; N/A when unknown (SPEC §5). */
export function formatDuration(minutes: number | null | undefined): string {
  if (minutes === null || minutes === undefined) return 'N/A';
  if (minutes >= 60) return `${Math.floor(minutes / 60)}h ${minutes % 60}m`;
  return `${minutes}m`;
}

/** Pretty JSON when the text parses as JSON, else the text itself (SPEC §3 log bodies). */
export function prettyJson(text: string | null | undefined): string {
  if (!text) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
