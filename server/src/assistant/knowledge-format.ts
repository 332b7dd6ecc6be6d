/**
 * Machine-readable hints inside knowledge documents (Markdown). The schedule
 * document the crawler uploads marks each event with its exact times, and the
 * document with its time zone, as HTML comments: invisible when the Markdown
 * is rendered, harmless to OpenAI's file_search, and what lets the offline
 * provider answer "what's on tonight?".
 *
 *   <!-- timezone: America/Chicago -->
 *   <!-- event start=2026-03-13T21:00:00-06:00 end=2026-03-14T01:00:00-06:00 -->
 */

export const timezoneMarker = (timeZone: string) => `<!-- timezone: ${timeZone} -->`;

export const eventMarker = (start: Date, end: Date | null) =>
  `<!-- event start=${start.toISOString()}${end ? ` end=${end.toISOString()}` : ''} -->`;

const TIMEZONE_PATTERN = /<!--\s*timezone:\s*([A-Za-z_+\-/0-9]+)\s*-->/;
const EVENT_PATTERN = /<!--\s*event\s+start=(\S+?)(?:\s+end=(\S+?))?\s*-->/;

export function readTimezoneMarker(text: string): string | undefined {
  return TIMEZONE_PATTERN.exec(text)?.[1];
}

export function readEventMarker(text: string): { start: Date; end: Date | null } | undefined {
  const match = EVENT_PATTERN.exec(text);
  if (!match) return undefined;
  const start = new Date(match[1]!);
  const end = match[2] ? new Date(match[2]) : null;
  if (Number.isNaN(start.getTime())) return undefined;
  return { start, end: end && !Number.isNaN(end.getTime()) ? end : null };
}

/** Removes the markers (for quoting a passage back to a reader). */
export const stripMarkers = (text: string) => text.replace(/<!--[\s\S]*?-->\n?/g, '');
