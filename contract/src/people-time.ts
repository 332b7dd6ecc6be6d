/**
 * Times shown to people, attendees and operators alike (DESIGN §9): the
 * convention's zone, a 24-hour clock and the zone's abbreviation, e.g.
 * "Sat 21 Nov, 19:00 CST". Shared by the server (bot and assistant texts)
 * and the web app, so every screen reads the same.
 */

const formats = new Map<string, Intl.DateTimeFormat>();
const abbreviations = new Map<string, Intl.DateTimeFormat[]>();

function format(zone: string): Intl.DateTimeFormat {
  let formatter = formats.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-GB', { timeZone: zone, weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formats.set(zone, formatter);
  }
  return formatter;
}

/** Locales whose short zone names people recognise for their part of the world (CST, CET, AEDT…). */
const ZONE_NAME_LOCALES = ['en-US', 'en-GB', 'en-AU', 'en-IN'];

/** The zone's short name at that instant: a familiar abbreviation where one exists, else the offset ("UTC+9"). */
export function zoneAbbreviation(date: Date, zone: string): string {
  let formatters = abbreviations.get(zone);
  if (!formatters) {
    formatters = ZONE_NAME_LOCALES.map((locale) => new Intl.DateTimeFormat(locale, { timeZone: zone, timeZoneName: 'short' }));
    abbreviations.set(zone, formatters);
  }
  let offset = '';
  for (const formatter of formatters) {
    const name = formatter.formatToParts(date).find((part) => part.type === 'timeZoneName')?.value ?? '';
    if (/^[A-Z]{2,5}$/.test(name)) return name;
    offset ||= name;
  }
  return offset.replace(/^GMT/, 'UTC') || 'UTC';
}

/** "Sat 21 Nov, 19:00 CST" for an instant (Date or ISO text) in the convention's zone. */
export function formatPeopleTime(value: Date | string, zone: string): string {
  const date = typeof value === 'string' ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) return String(value);
  const parts = format(zone).formatToParts(date);
  const get = (type: string) => parts.find((part) => part.type === type)?.value ?? '';
  return `${get('weekday')} ${get('day')} ${get('month')}, ${get('hour')}:${get('minute')} ${zoneAbbreviation(date, zone)}`;
}
