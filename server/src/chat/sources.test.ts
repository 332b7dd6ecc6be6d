import { scheduleEventCalendarUrl } from '@concierge/contract';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseIcs } from '../crawler/parse/parse-ics.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { startFixtureServer, type FixtureServer } from '../test-support/fixture-server.ts';
import { cookieFrom, createTestContext, manualClock, signIn, type TestContext } from '../test-support/test-context.ts';

const crlf = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

/** A convention in Chicago; one UID holds characters a URL must encode. */
const FEED = crlf([
  'BEGIN:VCALENDAR',
  'VERSION:2.0',
  'PRODID:-//Fixture//EN',
  'X-WR-CALNAME:Fixture Con',
  'X-WR-TIMEZONE:America/Chicago',
  'BEGIN:VEVENT',
  'UID:talk/42 #costume@sched.example.org',
  'DTSTART;TZID=America/Chicago:20260314T190000',
  'DTEND;TZID=America/Chicago:20260314T210000',
  'SUMMARY:Costume Contest',
  'LOCATION:Main Stage',
  'CATEGORIES:Cosplay',
  'DESCRIPTION:Prizes for every category\\, judged by the guests.',
  'X-SPEAKERS:Mira Okafor',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:rave-1',
  'DTSTART;TZID=America/Chicago:20260313T210000',
  'DTEND;TZID=America/Chicago:20260314T010000',
  'SUMMARY:Friday Night Rave',
  'LOCATION:Hall B',
  'CATEGORIES:Music',
  'STATUS:CANCELLED',
  'END:VEVENT',
  'END:VCALENDAR',
]);

describe('sources and "Add to calendar"', () => {
  let fixtures: FixtureServer;
  let fake: FakeOpenAI;
  let ctx: TestContext;
  // Friday 13 March 2026, 12:00 in Chicago.
  const time = manualClock(new Date('2026-03-13T17:00:00Z'));

  beforeAll(async () => {
    fixtures = await startFixtureServer();
    fixtures.route('/schedule.ics', { body: FEED, contentType: 'text/calendar' });
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fixtures.close();
    await fake.close();
  });
  afterEach(() => ctx?.close());

  async function crawled(env: Record<string, string> = {}) {
    ctx = await createTestContext({ clock: time.clock, env: { CRAWLER_URL: `${fixtures.url}/schedule.ics`, ...env } });
    const admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
    const refresh = await ctx.app.inject({ method: 'POST', url: '/api/schedule/refresh', headers: { cookie: admin } });
    expect(refresh.statusCode).toBe(200);
    const verify = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
    const cookie = cookieFrom(verify);
    return (message: string) => ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message } }).then((reply) => reply.json());
  }

  it('cites events by the feed\'s own UID, and downloads one as iCalendar in the convention\'s zone', async () => {
    const ask = await crawled();
    const reply = await ask('When is the costume contest?');
    expect(reply.success).toBe(true);
    const source = reply.sources.find((candidate: { kind: string }) => candidate.kind === 'event');
    expect(source).toEqual({
      kind: 'event',
      title: 'Costume Contest',
      event_uid: 'talk/42 #costume@sched.example.org',
      starts_at: '2026-03-15T00:00:00.000Z',
      ends_at: '2026-03-15T02:00:00.000Z',
      location: 'Main Stage',
    });

    const download = await ctx.app.inject({ method: 'GET', url: scheduleEventCalendarUrl(source.event_uid) });
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toBe('text/calendar; charset=utf-8');
    expect(download.headers['content-disposition']).toBe('attachment; filename="costume-contest.ics"');
    const text = download.body;
    expect(text).toContain('BEGIN:VTIMEZONE');
    expect(text).toContain('TZID:America/Chicago');
    expect(text).toMatch(/DTSTART;TZID=America\/Chicago:20260314T190000/);
    expect(text).toMatch(/\r\nDTSTAMP:20260313T170000Z\r\n/);

    // The product's own parser reads it back: the same event, placed by its own zone whatever the reader's.
    const parsed = parseIcs(text, { timeZone: 'Asia/Tokyo' });
    expect(parsed.events).toHaveLength(1);
    const [event] = parsed.events;
    expect(event).toMatchObject({ uid: source.event_uid, title: 'Costume Contest', location: 'Main Stage', track: 'Cosplay', status: 'confirmed' });
    expect(event!.start.toISOString()).toBe(source.starts_at);
    expect(event!.end?.toISOString()).toBe(source.ends_at);
    expect(event!.description).toContain('Prizes for every category, judged by the guests.');
    expect(event!.speakers).toEqual(['Mira Okafor']);
  });

  it('marks a cancelled event, and refuses ids it does not know with a clear error', async () => {
    await crawled();
    const cancelled = await ctx.app.inject({ method: 'GET', url: scheduleEventCalendarUrl('rave-1') });
    expect(cancelled.statusCode).toBe(200);
    expect(parseIcs(cancelled.body, { timeZone: 'UTC' }).events[0]).toMatchObject({ title: 'Friday Night Rave', status: 'cancelled' });

    const unknown = await ctx.app.inject({ method: 'GET', url: scheduleEventCalendarUrl('no-such-event') });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ success: false, code: 'event_not_found' });
    const noSuffix = await ctx.app.inject({ method: 'GET', url: '/public/schedule/events/rave-1' });
    expect(noSuffix.statusCode).toBe(400);
    expect(noSuffix.json().error).toContain('.ics');
  });

  it('cites the crawler\'s schedule document as "Convention schedule" with OpenAI, never by its generated name', async () => {
    fake.reset();
    fake.configure({ runDurationMs: 10 });
    const ask = await crawled({ OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url });
    const reply = await ask('When is the Costume Contest?');
    expect(reply.success).toBe(true);
    expect(reply.sources).toEqual([expect.objectContaining({ kind: 'file', title: 'Convention schedule', filename: expect.stringMatching(/^schedule-.*\.md$/) })]);
    expect(reply.sources[0].title).not.toMatch(/schedule-/);
    expect(reply.response).not.toMatch(/schedule-\d{4}/);
  });
});
