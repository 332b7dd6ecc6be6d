import type { ScheduleFormat } from './schedule-event.ts';

/**
 * The feed's format, from the content first (servers often send .ics as
 * text/plain or application/octet-stream) and the content type second:
 * iCalendar, frab/Pentabarf XML, frab/pretalx JSON or the project's JSON feed.
 */
export function detectFormat(contentType: string | null, body: string): ScheduleFormat | null {
  const start = body.slice(0, 8192).replace(/^\uFEFF/, '').trimStart();
  if (/^BEGIN:VCALENDAR/i.test(start)) return 'ics';
  if (start.startsWith('<')) return /<schedule[\s>]/.test(start) ? 'frab-xml' : null;
  if (start.startsWith('{') && /"schedule"\s*:\s*\{/.test(start)) return 'frab-json';
  if (start.startsWith('[') || start.startsWith('{')) return 'json';
  const type = (contentType ?? '').toLowerCase();
  if (type.includes('text/calendar')) return 'ics';
  if (type.includes('json')) return 'json';
  return null;
}
