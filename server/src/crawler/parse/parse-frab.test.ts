import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { detectFormat } from './detect-format.ts';
import { parseFrabJson, parseFrabXml } from './parse-frab.ts';
import { parseSchedule } from './parse-schedule.ts';
import { ScheduleParseError, type ParsedSchedule } from './schedule-event.ts';

const fixture = (name: string) => readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', name), 'utf8');
const XML = fixture('frab-schedule.xml');
const JSON_EXPORT = fixture('frab-schedule.json');

/** Both shapes of the same made-up conference read the same way. */
function expectFjordFanCon(schedule: ParsedSchedule) {
  expect(schedule.calendarName).toBe('Fjord Fan Con 2026');
  expect(schedule.timeZone).toBe('Europe/Oslo');
  expect(schedule.events.map((event) => event.title)).toEqual(['Åpning & Welcome', 'Midnight Movie: Troll Hunter', 'Night Owl Sketching', 'Worldbuilding with Maps']);
  const [opening, movie, sketching, maps] = schedule.events;
  expect(opening).toMatchObject({
    uid: '9b2f4c1e-1111-4a11-8a11-000000000001',
    start: new Date('2026-10-16T17:00:00Z'),
    end: new Date('2026-10-16T18:30:00Z'),
    location: 'Storsalen',
    track: 'Main Programme',
    language: 'no',
    speakers: ['Ingrid Sæther', 'Tomás Nygård'],
    status: 'confirmed',
  });
  expect(opening!.description).toContain('Kick-off of the weekend');
  expect(opening!.description).toContain('The organisers open the con.');
  expect(opening!.description).not.toContain('<b>');
  // Past midnight, the event belongs to day 1 but happens on the 17th.
  expect(movie).toMatchObject({ start: new Date('2026-10-16T23:15:00Z'), end: new Date('2026-10-17T00:00:00Z'), track: 'Film', speakers: [] });
  // No <date>: "02:00" on a day that starts at 08:00 is the next morning.
  expect(sketching).toMatchObject({ start: new Date('2026-10-17T00:00:00Z'), status: 'cancelled', speakers: ['Mika Lund'], location: 'Verkstedet' });
  expect(maps).toMatchObject({ start: new Date('2026-10-17T08:00:00Z'), speakers: ['Sunniva Berg'], track: 'Literature' });
}

describe('frab and pretalx schedules', () => {
  it('reads Pentabarf/frab schedule.xml: persons, tracks, languages, days past midnight, cancellations', () => {
    const schedule = parseFrabXml(XML, { timeZone: 'UTC' });
    expect(schedule.format).toBe('frab-xml');
    expectFjordFanCon(schedule);
  });

  it('reads the frab/pretalx schedule.json the same way', () => {
    const schedule = parseFrabJson(JSON_EXPORT, { timeZone: 'UTC' });
    expect(schedule.format).toBe('frab-json');
    expectFjordFanCon(schedule);
  });

  it('tells the four formats apart by content, whatever the server calls them', () => {
    expect(detectFormat('application/octet-stream', XML)).toBe('frab-xml');
    expect(detectFormat('text/plain', JSON_EXPORT)).toBe('frab-json');
    expect(detectFormat('application/json', '{"events": [{"title": "x", "start": "2026-01-01"}]}')).toBe('json');
    expect(detectFormat('text/plain', 'BEGIN:VCALENDAR\r\n')).toBe('ics');
    expect(detectFormat('text/html', '<!doctype html><html></html>')).toBeNull();
    expectFjordFanCon(parseSchedule(XML, detectFormat(null, XML)!, 'UTC'));
  });

  it('reads times without an offset in the conference zone, and a duration in minutes', () => {
    const body = JSON.stringify({
      schedule: {
        conference: {
          title: 'Tiny',
          time_zone_name: 'America/Denver',
          days: [{ date: '2026-06-01', rooms: { Lab: [{ id: 5, date: '2026-06-01T09:30:00', duration: 90, title: 'Soldering' }] } }],
        },
      },
    });
    const [event] = parseFrabJson(body, { timeZone: 'UTC' }).events;
    expect(event).toMatchObject({ uid: '5', start: new Date('2026-06-01T15:30:00Z'), end: new Date('2026-06-01T17:00:00Z'), location: 'Lab' });
  });

  it('says what is wrong with a broken export, naming the day, room and event', () => {
    expect(() => parseFrabXml('<schedule><day index="1"><room name="A"/></day></schedule>', { timeZone: 'UTC' })).toThrow(/day\[0\]: the date attribute/);
    expect(() => parseFrabXml('<schedule><day date="2026-01-01"><room name="A"><event><start>10:00</start><duration>01:00</duration></event></room></day></schedule>', { timeZone: 'UTC' })).toThrow(
      /day 2026-01-01, room "A", event 1: title is required/,
    );
    expect(() => parseFrabJson('{"schedule": {"conference": {"days": [{"date": "2026-01-01", "rooms": {"A": [{"title": "T", "start": "10:00", "duration": "an hour"}]}}]}}}', { timeZone: 'UTC' })).toThrow(
      /duration is not HH:MM/,
    );
    expect(() => parseFrabJson('{"schedule": {}}', { timeZone: 'UTC' })).toThrow(ScheduleParseError);
    expect(() => parseFrabXml('<schedule></schedule>', { timeZone: 'UTC' })).toThrow(/no events/);
  });
});
