import { describe, expect, it } from 'vitest';
import { detectFormat } from './detect-format.ts';
import { diffSchedules } from './diff.ts';
import { parseIcs } from './parse-ics.ts';
import { parseJsonFeed } from './parse-json.ts';
import { renderScheduleDocument } from './render-document.ts';
import { ScheduleParseError, type ScheduleEvent } from './schedule-event.ts';
import { daysToComingFriday, shiftSchedule } from './shift.ts';

const crlf = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

/** A Google-Calendar-shaped export: Berlin time, UTC, floating, all-day, recurring with EXDATE and an override, folded unicode. */
const GOOGLE_STYLE = crlf([
  'BEGIN:VCALENDAR',
  'PRODID:-//Google Inc//Google Calendar 70.9054//EN',
  'VERSION:2.0',
  'X-WR-CALNAME:Nordlicht Con',
  'BEGIN:VTIMEZONE',
  'TZID:Europe/Berlin',
  'BEGIN:DAYLIGHT',
  'TZOFFSETFROM:+0100',
  'TZOFFSETTO:+0200',
  'TZNAME:CEST',
  'DTSTART:19700329T020000',
  'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU',
  'END:DAYLIGHT',
  'BEGIN:STANDARD',
  'TZOFFSETFROM:+0200',
  'TZOFFSETTO:+0100',
  'TZNAME:CET',
  'DTSTART:19701025T030000',
  'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU',
  'END:STANDARD',
  'END:VTIMEZONE',
  'BEGIN:VEVENT',
  'UID:keynote@nordlicht',
  'DTSTART;TZID=Europe/Berlin:20260327T180000',
  'DTEND;TZID=Europe/Berlin:20260327T193000',
  'SUMMARY:Eröffnung – Keynote 🎉',
  'LOCATION:Saal München',
  'CATEGORIES:Main Events',
  'DESCRIPTION:<p>Willkommen!<br>Die <b>Keynote</b> mit Überraschungsgästen &amp; Konfe',
  ' tti. Dieser Text ist absichtlich lang\\, damit er gefaltet wird – äöü ß é ñ ',
  ' 日本語.</p>',
  'ATTENDEE;CN="Jürgen Weiß";ROLE=CHAIR:mailto:j@example.org',
  'ATTENDEE;CN=Ana Núñez:mailto:a@example.org',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:utc@nordlicht',
  'DTSTART:20260328T090000Z',
  'DURATION:PT1H30M',
  'SUMMARY:Livestream Q&A',
  'DESCRIPTION:Speakers: Kim Lee\\, Sam Roe\\nAsk anything.',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:floating@nordlicht',
  'DTSTART:20260328T140000',
  'SUMMARY:Floating Meetup',
  'LOCATION:Foyer',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:allday@nordlicht',
  'DTSTART;VALUE=DATE:20260329',
  'DTEND;VALUE=DATE:20260330',
  'SUMMARY:Artist Alley (all day)',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:walk@nordlicht',
  'DTSTART;TZID=Europe/Berlin:20260327T080000',
  'DTEND;TZID=Europe/Berlin:20260327T083000',
  'RRULE:FREQ=DAILY;COUNT=4',
  'EXDATE;TZID=Europe/Berlin:20260328T080000',
  'SUMMARY:Morning Walk',
  'LOCATION:Lobby',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:walk@nordlicht',
  'RECURRENCE-ID;TZID=Europe/Berlin:20260329T080000',
  'DTSTART;TZID=Europe/Berlin:20260329T100000',
  'DTEND;TZID=Europe/Berlin:20260329T103000',
  'SUMMARY:Morning Walk (late start)',
  'LOCATION:Park Gate',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:cancelled@nordlicht',
  'DTSTART;TZID=Europe/Berlin:20260328T160000',
  'DTEND;TZID=Europe/Berlin:20260328T170000',
  'SUMMARY:[Cancelled] Drawing Jam',
  'STATUS:CANCELLED',
  'END:VEVENT',
  'END:VCALENDAR',
]);

describe('iCalendar parsing', () => {
  const schedule = parseIcs(GOOGLE_STYLE, { timeZone: 'Europe/Berlin' });
  const byTitle = (title: string) => schedule.events.find((event) => event.title === title)!;

  it('reads zoned, UTC, floating and all-day times as exact instants', () => {
    expect(schedule).toMatchObject({ calendarName: 'Nordlicht Con', timeZone: 'Europe/Berlin', format: 'ics' });
    expect(byTitle('Eröffnung – Keynote 🎉')).toMatchObject({ start: new Date('2026-03-27T17:00:00Z'), end: new Date('2026-03-27T18:30:00Z') });
    expect(byTitle('Livestream Q&A')).toMatchObject({ start: new Date('2026-03-28T09:00:00Z'), end: new Date('2026-03-28T10:30:00Z') });
    // Floating 14:00 is convention time (Berlin, UTC+1 before the DST change on 29 March).
    expect(byTitle('Floating Meetup')).toMatchObject({ start: new Date('2026-03-28T13:00:00Z'), end: null });
    expect(byTitle('Artist Alley (all day)')).toMatchObject({ allDay: true, start: new Date('2026-03-28T23:00:00Z'), end: new Date('2026-03-29T22:00:00Z') });
  });

  it('unfolds long lines, keeps unicode and turns HTML into text', () => {
    const keynote = byTitle('Eröffnung – Keynote 🎉');
    expect(keynote.description).toBe('Willkommen!\nDie Keynote mit Überraschungsgästen & Konfetti. Dieser Text ist absichtlich lang, damit er gefaltet wird – äöü ß é ñ 日本語.');
    expect(keynote.speakers).toEqual(['Jürgen Weiß', 'Ana Núñez']);
    expect(keynote).toMatchObject({ location: 'Saal München', track: 'Main Events', status: 'confirmed' });
  });

  it('takes speakers from a "Speakers:" line and leaves the rest of the description', () => {
    expect(byTitle('Livestream Q&A')).toMatchObject({ speakers: ['Kim Lee', 'Sam Roe'], description: 'Ask anything.' });
  });

  it('expands recurring events, honouring EXDATE and RECURRENCE-ID overrides across a DST change', () => {
    const walks = schedule.events.filter((event) => event.title.startsWith('Morning Walk'));
    expect(walks.map((walk) => [walk.title, walk.start.toISOString(), walk.location])).toEqual([
      ['Morning Walk', '2026-03-27T07:00:00.000Z', 'Lobby'],
      ['Morning Walk (late start)', '2026-03-29T08:00:00.000Z', 'Park Gate'],
      ['Morning Walk', '2026-03-30T06:00:00.000Z', 'Lobby'],
    ]);
    expect(new Set(walks.map((walk) => walk.uid)).size).toBe(3);
  });

  it('marks cancelled events and strips the prefix', () => {
    expect(byTitle('Drawing Jam')).toMatchObject({ status: 'cancelled' });
  });

  it('reads a big feed a piece at a time, from its bytes as from its text, an override far from its event included', () => {
    // 300 events, then the time zone and an override of the first recurring event at the very end.
    const lines = GOOGLE_STYLE.trimEnd().split('\r\n');
    const timezone = lines.slice(lines.indexOf('BEGIN:VTIMEZONE'), lines.indexOf('END:VTIMEZONE') + 1);
    const events = lines.slice(lines.indexOf('END:VTIMEZONE') + 1, -1);
    const from = events.indexOf('RECURRENCE-ID;TZID=Europe/Berlin:20260329T080000') - 2;
    const to = events.indexOf('LOCATION:Park Gate') + 2;
    const override = events.slice(from, to);
    const others = [...events.slice(0, from), ...events.slice(to)];
    const filler = Array.from({ length: 300 }, (_, i) => [
      'BEGIN:VEVENT',
      `UID:filler-${i}@nordlicht`,
      `DTSTART;TZID=Europe/Berlin:202603${28 + (i % 2)}T${String(9 + (i % 10)).padStart(2, '0')}0000`,
      `SUMMARY:Filler ${i}`,
      'END:VEVENT',
    ]).flat();
    const big = crlf([...lines.slice(0, lines.indexOf('BEGIN:VTIMEZONE')), ...others, ...filler, ...timezone, ...override, 'END:VCALENDAR']);
    const fromText = parseIcs(big, { timeZone: 'UTC' });
    expect(parseIcs(Buffer.from(big), { timeZone: 'UTC' })).toEqual(fromText);
    expect(fromText.events).toHaveLength(schedule.events.length + 300);
    expect(fromText.events.filter((event) => !event.title.startsWith('Filler'))).toEqual(schedule.events);
  });

  it('refuses garbage with a clear reason', () => {
    expect(() => parseIcs('<html>Not here</html>', { timeZone: 'UTC' })).toThrow(ScheduleParseError);
    expect(() => parseIcs('BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n', { timeZone: 'UTC' })).toThrow('no events');
  });
});

describe('JSON feed parsing', () => {
  const feed = JSON.stringify([
    { id: 1, title: 'Opening', start: '2026-03-13T10:00:00-05:00', end: '2026-03-13T11:00:00-05:00', location: 'Main Stage', track: 'Main Events', speakers: ['A. Person', 'B. Person'], description: '<b>Hello</b>' },
    { id: 2, title: 'Local time', start: '2026-03-13T12:00', location: 'Room 1', speakers: 'C. Person, D. Person' },
    { id: 3, title: 'CANCELLED: Old thing', start: '2026-03-13T13:00:00Z' },
  ]);

  it('reads events, reading times without an offset in the convention zone', () => {
    const schedule = parseJsonFeed(feed, { timeZone: 'America/Chicago' });
    expect(schedule.events.map((event) => [event.uid, event.title, event.start.toISOString(), event.status])).toEqual([
      ['1', 'Opening', '2026-03-13T15:00:00.000Z', 'confirmed'],
      ['2', 'Local time', '2026-03-13T17:00:00.000Z', 'confirmed'],
      ['3', 'Old thing', '2026-03-13T13:00:00.000Z', 'cancelled'],
    ].sort((a, b) => a[2]!.localeCompare(b[2]!)));
    expect(schedule.events.find((event) => event.uid === '2')!.speakers).toEqual(['C. Person', 'D. Person']);
    expect(schedule.events.find((event) => event.uid === '1')!.description).toBe('Hello');
  });

  it('names the bad item and field', () => {
    const bad = JSON.stringify([{ title: 'ok', start: '2026-03-13T10:00:00Z' }, { title: 'broken', start: 'next tuesday' }]);
    expect(() => parseJsonFeed(bad, { timeZone: 'UTC' })).toThrow('events[1].start: not an ISO 8601 date');
    expect(() => parseJsonFeed('{"nope": true}', { timeZone: 'UTC' })).toThrow(ScheduleParseError);
    expect(() => parseJsonFeed('not json', { timeZone: 'UTC' })).toThrow('Not valid JSON');
  });
});

describe('format detection', () => {
  it('trusts the content over the content type', () => {
    expect(detectFormat('application/octet-stream', 'BEGIN:VCALENDAR\r\n')).toBe('ics');
    expect(detectFormat('text/plain', '\uFEFF  [ {"title": "x"} ]')).toBe('json');
    expect(detectFormat('text/calendar', '')).toBe('ics');
    expect(detectFormat('text/html', '<html></html>')).toBeNull();
  });
});

const event = (uid: string, title: string, start: string, location: string, status: ScheduleEvent['status'] = 'confirmed'): ScheduleEvent => ({
  uid,
  title,
  start: new Date(start),
  end: new Date(new Date(start).getTime() + 3_600_000),
  allDay: false,
  location,
  track: null,
  speakers: [],
  description: null,
  status,
  url: null,
});

describe('schedule changes', () => {
  it('finds added, removed, cancelled and moved events', () => {
    const before = [
      event('1', 'Same', '2026-03-14T15:00:00Z', 'Room 1'),
      event('2', 'Moves room', '2026-03-14T15:00:00Z', 'Room 2'),
      event('3', 'Moves time', '2026-03-14T15:00:00Z', 'Room 3'),
      event('4', 'Gets cancelled', '2026-03-14T15:00:00Z', 'Room 4'),
      event('5', 'Goes away', '2026-03-14T15:00:00Z', 'Room 5'),
      event('old-id', 'Renumbered', '2026-03-14T15:00:00Z', 'Room 6'),
    ];
    const after = [
      event('1', 'Same', '2026-03-14T15:00:00Z', 'room 1'),
      event('2', 'Moves room', '2026-03-14T15:00:00Z', 'Hall B'),
      event('3', 'Moves time', '2026-03-14T18:00:00Z', 'Room 3'),
      event('4', 'Gets cancelled', '2026-03-14T15:00:00Z', 'Room 4', 'cancelled'),
      event('6', 'New one', '2026-03-14T16:00:00Z', 'Room 7'),
      event('new-id', 'Renumbered', '2026-03-14T15:00:00Z', 'Room 6'),
    ];
    const changes = diffSchedules(before, after);
    expect(changes.map((change) => [change.kind, change.title])).toEqual([
      ['cancelled', 'Gets cancelled'],
      ['moved_time', 'Moves time'],
      ['moved_room', 'Moves room'],
      ['added', 'New one'],
      ['removed', 'Goes away'],
    ]);
    expect(changes[2]).toMatchObject({ before: { location: 'Room 2' }, after: { location: 'Hall B' } });
  });
});

describe('the knowledge document', () => {
  it('lists events by day with times in the convention zone, markers and recent changes', () => {
    const schedule = parseIcs(GOOGLE_STYLE, { timeZone: 'Europe/Berlin' });
    const document = renderScheduleDocument(schedule, {
      timeZone: 'Europe/Berlin',
      title: 'Nordlicht Con',
      generatedAt: new Date('2026-03-20T12:00:00Z'),
      changes: [{ kind: 'moved_room', uid: 'x', title: 'Floating Meetup', before: { start: '2026-03-28T13:00:00.000Z', end: null, location: 'Hall' }, after: { start: '2026-03-28T13:00:00.000Z', end: null, location: 'Foyer' } }],
    });
    expect(document).toContain('# Nordlicht Con');
    expect(document).toContain('<!-- timezone: Europe/Berlin -->');
    expect(document).toContain('- Moved: Floating Meetup now Sat 28 Mar, 14:00 in Foyer (was Sat 28 Mar, 14:00 in Hall) <!-- change kind=moved_room uid=');
    expect(document).toContain('## Friday, 27 March 2026');
    expect(document).toContain('### 18:00–19:30 · Eröffnung – Keynote 🎉\n<!-- event uid=keynote@nordlicht start=2026-03-27T17:00:00.000Z end=2026-03-27T18:30:00.000Z -->\n- Where: Saal München');
    expect(document).toContain('### 16:00–17:00 · Drawing Jam (CANCELLED)');
    expect(document).toContain('- Status: Cancelled');
    expect(document.indexOf('Friday, 27 March')).toBeLessThan(document.indexOf('Saturday, 28 March'));
  });
});

describe('moving the sample schedule to the coming Friday', () => {
  const zone = 'America/Chicago';
  const firstEvent = new Date('2026-03-13T13:00:00Z'); // Friday 08:00 in Chicago

  it('picks the coming Friday on a weekday, and keeps a running convention on its own weekend', () => {
    expect(daysToComingFriday(firstEvent, new Date('2026-03-13T18:00:00Z'), zone)).toBe(0); // that Friday
    expect(daysToComingFriday(firstEvent, new Date('2026-03-16T15:00:00Z'), zone)).toBe(0); // Monday of it
    expect(daysToComingFriday(firstEvent, new Date('2026-03-18T15:00:00Z'), zone)).toBe(7); // the Wednesday after → Friday 20th
    expect(daysToComingFriday(firstEvent, new Date('2026-11-22T15:00:00Z'), zone) % 7).toBe(0);
  });

  it('keeps wall-clock times across a DST change', () => {
    const schedule = parseIcs(GOOGLE_STYLE, { timeZone: 'Europe/Berlin' });
    const shifted = shiftSchedule(schedule, 7, 'Europe/Berlin');
    const keynote = shifted.events.find((candidate) => candidate.title.startsWith('Eröffnung'))!;
    // 18:00 Berlin on Friday 3 April is 16:00 UTC (summer time), a week after 17:00 UTC.
    expect(keynote.start.toISOString()).toBe('2026-04-03T16:00:00.000Z');
  });
});
