import { getVtimezoneComponent } from '@touch4it/ical-timezones';
import ical, { ICalEventStatus } from 'ical-generator';
import { DateTime } from 'luxon';
import type { CrawlerEventTable } from '../db/schema/crawler.ts';
import type { Selectable } from 'kysely';

type EventRow = Selectable<CrawlerEventTable>;

/**
 * One schedule event as an iCalendar file for "Add to calendar" (DESIGN §9):
 * its times in the convention's zone (TZID with the zone's VTIMEZONE), the
 * feed's own UID so a calendar that imports it twice updates one event, the
 * room, track, speakers and description, and CANCELLED when it is.
 */
export function eventCalendar(event: EventRow, options: { timeZone: string; productName: string; now: Date }): string {
  const { timeZone } = options;
  const calendar = ical({
    prodId: { company: options.productName, product: 'schedule', language: 'EN' },
    name: options.productName,
    // The zone's VTIMEZONE comes with the event's TZID; the calendar itself keeps UTC, so DTSTAMP stays UTC as RFC 5545 wants.
    timezone: { name: null, generator: getVtimezoneComponent },
    x: [['X-WR-TIMEZONE', timeZone]],
  });
  const inZone = (iso: string) => DateTime.fromISO(iso, { zone: 'utc' }).setZone(timeZone);
  const start = inZone(event.start_at);
  const description = [event.speakers ? `With ${event.speakers.split(',').map((name) => name.trim()).filter(Boolean).join(', ')}` : '', event.description ?? '']
    .filter(Boolean)
    .join('\n\n');
  calendar.createEvent({
    id: event.uid,
    start,
    end: event.end_at ? inZone(event.end_at) : start.plus({ minutes: event.duration ?? 60 }),
    timezone: timeZone,
    stamp: DateTime.fromJSDate(options.now, { zone: 'utc' }),
    summary: event.what,
    location: event.where ?? undefined,
    description: description || undefined,
    categories: event.track ? event.track.split(',').map((name) => ({ name: name.trim() })).filter((category) => category.name) : [],
    status: event.status === 'cancelled' ? ICalEventStatus.CANCELLED : event.status === 'tentative' ? ICalEventStatus.TENTATIVE : ICalEventStatus.CONFIRMED,
    // Sched and Guidebook exports name speakers this way; the crawler reads it back.
    x: event.speakers ? [['X-SPEAKERS', event.speakers]] : [],
  });
  return calendar.toString();
}

/** A file name for the download: the title in plain letters. */
export function calendarFileName(title: string): string {
  const base = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .toLowerCase();
  return `${base || 'event'}.ics`;
}
