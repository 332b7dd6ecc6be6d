import type { Source } from '@concierge/contract';

/**
 * Machine-readable hints inside knowledge documents (Markdown). The schedule
 * document the crawler uploads marks each event with its feed id, exact times
 * and status, each recent change with what it was before, and the document
 * with its time zone, as HTML comments: invisible when the Markdown is
 * rendered, harmless to OpenAI's file_search, and what lets the offline
 * provider answer "what's on tonight?" and cite events by their id.
 *
 *   <!-- timezone: America/Chicago -->
 *   <!-- event uid=talk-42 start=2026-03-13T21:00:00.000Z end=2026-03-14T01:00:00.000Z status=cancelled -->
 *   <!-- change kind=moved_room uid=talk-42 was=2026-03-13T20:00:00.000Z room=Hall%20A -->
 *
 * Spaces, "%" and ">" in values are percent-encoded, so a feed's id may hold any character.
 */

export const timezoneMarker = (timeZone: string) => `<!-- timezone: ${timeZone} -->`;

export interface EventMarker {
  uid: string | null;
  start: Date;
  end: Date | null;
  status: 'confirmed' | 'tentative' | 'cancelled';
}

export interface ChangeMarker {
  kind: string;
  uid: string;
  /** Where and when the event was before the change. */
  wasStart: Date | null;
  wasRoom: string | null;
}

const attributes = (values: Record<string, string | null | undefined>) =>
  Object.entries(values)
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== '')
    .map(([key, value]) => `${key}=${value.replace(/[%\s>]/g, (character) => encodeURIComponent(character))}`)
    .join(' ');

export function eventMarker(start: Date, end: Date | null, extra: { uid?: string; status?: EventMarker['status'] } = {}): string {
  const status = extra.status && extra.status !== 'confirmed' ? extra.status : undefined;
  return `<!-- event ${attributes({ uid: extra.uid, start: start.toISOString(), end: end?.toISOString(), status })} -->`;
}

export const changeMarker = (change: { kind: string; uid: string; wasStart?: string | null; wasRoom?: string | null }) =>
  `<!-- change ${attributes({ kind: change.kind, uid: change.uid, was: change.wasStart, room: change.wasRoom })} -->`;

const TIMEZONE_PATTERN = /<!--\s*timezone:\s*([A-Za-z_+\-/0-9]+)\s*-->/;
const EVENT_PATTERN = /<!--\s*event\s+([^>]*?)\s*-->/;
const CHANGE_PATTERN = /<!--\s*change\s+([^>]*?)\s*-->/;

function readAttributes(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const pair of text.split(/\s+/)) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      values.set(pair.slice(0, at), decodeURIComponent(pair.slice(at + 1)));
    } catch {
      values.set(pair.slice(0, at), pair.slice(at + 1));
    }
  }
  return values;
}

const dateOf = (value: string | undefined) => {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
};

export function readTimezoneMarker(text: string): string | undefined {
  return TIMEZONE_PATTERN.exec(text)?.[1];
}

export function readEventMarker(text: string): EventMarker | undefined {
  const match = EVENT_PATTERN.exec(text);
  if (!match) return undefined;
  const values = readAttributes(match[1]!);
  const start = dateOf(values.get('start'));
  if (!start) return undefined;
  const status = values.get('status');
  return {
    uid: values.get('uid') ?? null,
    start,
    end: dateOf(values.get('end')),
    status: status === 'cancelled' || status === 'tentative' ? status : 'confirmed',
  };
}

export function readChangeMarker(text: string): ChangeMarker | undefined {
  const match = CHANGE_PATTERN.exec(text);
  if (!match) return undefined;
  const values = readAttributes(match[1]!);
  const kind = values.get('kind');
  const uid = values.get('uid');
  if (!kind || !uid) return undefined;
  return { kind, uid, wasStart: dateOf(values.get('was')), wasRoom: values.get('room') ?? null };
}

/** Removes the markers (for quoting a passage back to a reader). */
export const stripMarkers = (text: string) => text.replace(/<!--[\s\S]*?-->\n?/g, '');

/** The crawler's schedule documents are named like this (one per run). */
export const SCHEDULE_FILE_PATTERN = /^schedule-\d{4}-\d\d-\d\dT\d{4}Z\.md$/;

/** What the schedule document is called wherever a person sees it. */
export const SCHEDULE_TITLE = 'Convention schedule';

/**
 * The title a knowledge file is cited by: "Convention schedule" for the
 * crawler's document, else the file's name without its extension, in words
 * ("venue-guide.md" → "Venue guide").
 */
export function knowledgeTitle(filename: string): string {
  if (SCHEDULE_FILE_PATTERN.test(filename)) return SCHEDULE_TITLE;
  const base = filename.replace(/\.[A-Za-z0-9]{1,8}$/, '').replace(/[-_]+/g, ' ').replace(/\s+/g, ' ').trim();
  if (!base) return filename;
  // A short single word is an initialism more often than not ("faq.md" → "FAQ").
  if (/^[a-z]{2,4}$/i.test(base)) return base.toUpperCase();
  return base.charAt(0).toUpperCase() + base.slice(1);
}

/** A knowledge file as an answer's source: cited by its title. */
export const fileSource = (fileId: string, filename: string): Source => ({ kind: 'file', title: knowledgeTitle(filename), file_id: fileId, filename });

/** A stored reply's sources, including rows written before sources had a kind (`{file_id, filename}`). */
export function storedSource(value: unknown): Source[] {
  if (!value || typeof value !== 'object') return [];
  const source = value as Partial<Source>;
  if (source.kind === 'event' || source.kind === 'file') return typeof source.title === 'string' ? [source as Source] : [];
  return typeof source.file_id === 'string' && typeof source.filename === 'string' ? [fileSource(source.file_id, source.filename)] : [];
}
