/**
 * iCalendar or a JSON feed, from the content first (servers often send .ics
 * as text/plain or application/octet-stream) and the content type second.
 */
export function detectFormat(contentType: string | null, body: string): 'ics' | 'json' | null {
  const start = body.replace(/^\uFEFF/, '').trimStart();
  if (/^BEGIN:VCALENDAR/i.test(start)) return 'ics';
  if (start.startsWith('[') || start.startsWith('{')) return 'json';
  const type = (contentType ?? '').toLowerCase();
  if (type.includes('text/calendar')) return 'ics';
  if (type.includes('json')) return 'json';
  return null;
}
