import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../test-support/fixture-server.ts';
import { createTestContext, manualClock, signIn, type TestContext } from '../test-support/test-context.ts';

const crlf = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

interface FixtureEvent {
  uid: string;
  title: string;
  start: string; // local Chicago wall time, yyyymmddThhmmss
  end: string;
  room: string;
  status?: 'CANCELLED';
}

function ics(events: FixtureEvent[]): string {
  return crlf([
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//Fixture//EN',
    'X-WR-CALNAME:Fixture Con',
    'X-WR-TIMEZONE:America/Chicago',
    ...events.flatMap((event) => [
      'BEGIN:VEVENT',
      `UID:${event.uid}`,
      `DTSTART;TZID=America/Chicago:${event.start}`,
      `DTEND;TZID=America/Chicago:${event.end}`,
      `SUMMARY:${event.title}`,
      `LOCATION:${event.room}`,
      'CATEGORIES:Panels',
      `X-SPEAKERS:Host of ${event.title.split(' ')[0]}`,
      `STATUS:${event.status ?? 'CONFIRMED'}`,
      'END:VEVENT',
    ]),
    'END:VCALENDAR',
  ]);
}

const V1: FixtureEvent[] = [
  { uid: 'a', title: 'Robot Building Basics', start: '20260314T100000', end: '20260314T110000', room: 'Room 101' },
  { uid: 'b', title: 'Dragon Lore Deep Dive', start: '20260314T110000', end: '20260314T120000', room: 'Room 102' },
  { uid: 'c', title: 'Pixel Art Jam', start: '20260314T130000', end: '20260314T140000', room: 'Room 103' },
  { uid: 'd', title: 'Trivia Night', start: '20260314T200000', end: '20260314T220000', room: 'Hall B' },
  { uid: 'e', title: 'Origami Corner', start: '20260314T150000', end: '20260314T160000', room: 'Room 104' },
];
const V2: FixtureEvent[] = [
  { uid: 'a', title: 'Robot Building Basics', start: '20260314T100000', end: '20260314T110000', room: 'Room 105' }, // moved room
  { uid: 'b', title: 'Dragon Lore Deep Dive', start: '20260314T160000', end: '20260314T170000', room: 'Room 102' }, // moved time
  { uid: 'c', title: 'Pixel Art Jam', start: '20260314T130000', end: '20260314T140000', room: 'Room 103', status: 'CANCELLED' },
  { uid: 'd', title: 'Trivia Night', start: '20260314T200000', end: '20260314T220000', room: 'Hall B' },
  { uid: 'f', title: 'Kite Flying Meetup', start: '20260314T170000', end: '20260314T180000', room: 'Pool Deck' }, // added; e removed
];

const FEED = JSON.stringify({
  name: 'Feed Con',
  timezone: 'America/Chicago',
  events: [
    { id: 'j1', title: 'Opening Parade', start: '2026-03-13T10:00', end: '2026-03-13T11:00', location: 'Main Stage', track: 'Main Events', speakers: ['Grand Marshal'], description: 'Everyone in costume!' },
    { id: 'j2', title: 'Late Night Movie', start: '2026-03-13T23:00', location: 'Hall B', track: 'Film', speakers: 'Film Club' },
  ],
});

describe('the schedule crawler', () => {
  let fixtures: FixtureServer;
  let ctx: TestContext;
  let admin: string;
  // Saturday 14 March 2026, 09:00 in Chicago.
  const time = manualClock(new Date('2026-03-14T14:00:00Z'));

  beforeAll(async () => {
    fixtures = await startFixtureServer();
  });
  afterAll(() => fixtures.close());

  async function contextFor(path: string) {
    ctx = await createTestContext({ clock: time.clock, env: { CRAWLER_URL: `${fixtures.url}${path}` } });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
  }
  beforeEach(() => {
    fixtures.requests.length = 0;
  });
  afterEach(() => ctx?.close());

  const refresh = (force = false) => ctx.app.inject({ method: 'POST', url: `/api/schedule/refresh${force ? '?force=true' : ''}`, headers: { cookie: admin } });
  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: { cookie: admin } });
  const knowledgeFiles = async () => (await get('/api/openai/vector_stores')).json().files as { filename: string }[];
  const ask = async (message: string) => {
    const reply = await ctx.app.inject({ method: 'POST', url: '/api/chat/send', payload: { message }, headers: { cookie: admin } });
    return reply.json().response as string;
  };

  it('stores a run with its events and teaches the assistant the schedule', async () => {
    fixtures.route('/schedule.ics', { body: ics(V1), contentType: 'text/calendar; charset=utf-8', etag: '"v1"' });
    await contextFor('/schedule.ics');
    const reply = await refresh();
    expect(reply.statusCode).toBe(200);
    expect(reply.json()).toMatchObject({ success: true, skipped: false, event_count: 5, changes: 0 });

    const runs = (await get('/api/crawler_runs')).json();
    expect(runs.returned_count).toBe(1);
    const run = runs.crawler_runs[0];
    expect(run).toMatchObject({ url: `${fixtures.url}/schedule.ics`, tracks: 'Panels', event_count: 5, speaker_count: 5, error: null, format: 'ics', time_zone: 'America/Chicago' });
    expect(run.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(run.file).toMatch(/^schedule-2026-03-14T1400Z\.md$/);

    const events = (await get(`/api/crawler_events?crawler_run_id=${run.id}&order=asc`)).json();
    expect(events.crawler_events.map((event: { what: string }) => event.what)).toEqual([
      'Robot Building Basics',
      'Dragon Lore Deep Dive',
      'Pixel Art Jam',
      'Origami Corner',
      'Trivia Night',
    ]);
    expect(events.crawler_events[0]).toMatchObject({ where: 'Room 101', track: 'Panels', duration: 60, when: 'Sat 14 Mar 10:00–11:00', date: '2026-03-14', start_at: '2026-03-14T15:00:00.000Z' });

    expect((await knowledgeFiles()).map((file) => file.filename)).toEqual([run.file]);
    expect(await ask('Where is Robot Building Basics?')).toContain('Room 101');
    const lastRefresh = await ctx.app.inject({ method: 'GET', url: '/public/chat/last_refresh' });
    expect(lastRefresh.json()).toEqual({ success: true, data: run.updated_at });
  });

  it('skips an unchanged schedule, by ETag and by hash, unless forced', async () => {
    fixtures.route('/etag.ics', { body: ics(V1), contentType: 'text/calendar', etag: '"same"' });
    await contextFor('/etag.ics');
    await refresh();
    const again = await refresh();
    expect(again.json()).toMatchObject({ skipped: true, message: 'The schedule source reports no change' });
    expect(fixtures.requests.at(-1)!.headers['if-none-match']).toBe('"same"');

    fixtures.route('/etag.ics', { body: ics(V1), contentType: 'text/calendar' }); // no validators now
    expect((await refresh()).json()).toMatchObject({ skipped: true, message: 'The schedule is unchanged since the last run' });
    expect((await get('/api/crawler_runs')).json().returned_count).toBe(1);

    const forced = await refresh(true);
    expect(forced.json()).toMatchObject({ skipped: false, event_count: 5 });
    expect(fixtures.requests.at(-1)!.headers['if-none-match']).toBeUndefined();
    const runs = (await get('/api/crawler_runs')).json().crawler_runs;
    expect(runs).toHaveLength(2);
    expect(runs[0].forced).toBe(true);
    // Still one schedule document in the assistant's knowledge.
    expect(await knowledgeFiles()).toHaveLength(1);
  });

  it('records moved, cancelled, added and removed events, and the assistant hears about the move', async () => {
    fixtures.route('/changing.ics', { body: ics(V1), contentType: 'text/calendar' });
    await contextFor('/changing.ics');
    await refresh();
    time.advance(30 * 60_000);
    fixtures.route('/changing.ics', { body: ics(V2), contentType: 'text/calendar' });
    const reply = await refresh();
    expect(reply.json()).toMatchObject({ skipped: false, changes: 5 });
    const run = (await get('/api/crawler_runs?limit=1')).json().crawler_runs[0];
    expect(run.changes.map((change: { kind: string; title: string }) => [change.kind, change.title])).toEqual([
      ['cancelled', 'Pixel Art Jam'],
      ['moved_time', 'Dragon Lore Deep Dive'],
      ['moved_room', 'Robot Building Basics'],
      ['added', 'Kite Flying Meetup'],
      ['removed', 'Origami Corner'],
    ]);
    const files = await knowledgeFiles();
    expect(files.map((file) => file.filename)).toEqual([run.file]);
    const moved = await ask('Where is Robot Building Basics?');
    expect(moved).toContain('Room 105');
    expect(moved).toMatch(/moved \(was .* in Room 101\)/);
    const answer = await ask('Is Pixel Art Jam still on?');
    expect(answer).toContain('**Pixel Art Jam** has been cancelled.');
    expect(answer).not.toContain('Removed:');
  });

  it('holds a run that lost more than half of its events, until an operator presses Force', async () => {
    fixtures.route('/shrinking.ics', { body: ics(V1), contentType: 'text/calendar' });
    await contextFor('/shrinking.ics');
    expect((await refresh()).json()).toMatchObject({ event_count: 5, held: false });
    fixtures.route('/shrinking.ics', { body: ics(V1.slice(0, 2)), contentType: 'text/calendar' });

    const held = await refresh();
    expect(held.statusCode).toBe(200);
    expect(held.json()).toMatchObject({ success: true, held: true, event_count: 2 });
    expect(held.json().message).toContain('2 events against 5');
    // The previous schedule stays live: what the held run dropped is still answered.
    expect(await ask('When is Trivia Night?')).toContain('20:00');
    const status = (await get('/api/status')).json();
    expect(status.crawler.held_run).toMatchObject({ event_count: 2 });
    expect((await get('/metrics')).body).toMatch(/^concierge_crawler_run_held 1$/m);
    const runs = (await get('/api/crawler_runs')).json().crawler_runs;
    expect(runs[0]).toMatchObject({ held: true, error: null, event_count: 2 });
    expect(runs[0].warning).toContain('Force');
    // Asking again changes nothing while the feed stays the same.
    expect((await refresh()).json()).toMatchObject({ skipped: true, held: true });

    const forced = await refresh(true);
    expect(forced.json()).toMatchObject({ held: false, skipped: false, event_count: 2 });
    expect((await get('/api/status')).json().crawler.held_run).toBeNull();
    expect((await get('/metrics')).body).toMatch(/^concierge_crawler_run_held 0$/m);
    expect(await ask('When is Trivia Night?')).toContain("couldn't find");
  });

  it('starts a new history when CRAWLER_URL points to another source: nothing of the old one reads as removed', async () => {
    fixtures.route('/old.ics', { body: ics(V1), contentType: 'text/calendar' });
    fixtures.route('/new.json', { body: FEED, contentType: 'application/json' });
    await contextFor('/old.ics');
    expect((await refresh()).json()).toMatchObject({ event_count: 5 });
    const { database } = ctx;
    // The same database, the other source: a restart with a new CRAWLER_URL.
    const next = await createTestContext({ clock: time.clock, env: { CRAWLER_URL: `${fixtures.url}/new.json` }, database });
    try {
      const cookie = await signIn(next.app);
      const reply = await next.app.inject({ method: 'POST', url: '/api/schedule/refresh', headers: { cookie } });
      // Two events against five is no shrinking feed either: it is another feed.
      expect(reply.json()).toMatchObject({ held: false, event_count: 2, changes: 0 });
      const answer = (await next.app.inject({ method: 'POST', url: '/api/chat/send', payload: { message: 'Is Origami Corner still on?' }, headers: { cookie } })).json().response;
      expect(answer).not.toContain('Removed');
      expect(answer).toContain("couldn't find");
    } finally {
      await next.close();
    }
  });

  it('reads a JSON feed', async () => {
    fixtures.route('/feed', { body: FEED, contentType: 'application/json' });
    await contextFor('/feed');
    expect((await refresh()).json()).toMatchObject({ event_count: 2 });
    const events = (await get('/api/crawler_events?order=asc')).json().crawler_events;
    expect(events.map((event: { what: string; start_at: string; speakers: string }) => [event.what, event.start_at, event.speakers])).toEqual([
      ['Opening Parade', '2026-03-13T15:00:00.000Z', 'Grand Marshal'],
      ['Late Night Movie', '2026-03-14T04:00:00.000Z', 'Film Club'],
    ]);
  });

  it('stores a failing fetch on its run and keeps the knowledge it had', async () => {
    fixtures.route('/flaky.ics', { body: ics(V1), contentType: 'text/calendar' });
    await contextFor('/flaky.ics');
    await refresh();
    const goodFile = (await knowledgeFiles())[0]!.filename;

    const failures: [string, Parameters<FixtureServer['route']>[1], string][] = [
      ['server error', { status: 500, body: 'oops' }, 'answered 500'],
      ['garbage', { body: '<html><body>Maintenance</body></html>', contentType: 'text/html' }, 'is not iCalendar, frab/Pentabarf XML, frab/pretalx JSON or a JSON feed'],
      ['broken calendar', { body: 'BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n', contentType: 'text/calendar' }, 'no events'],
      ['endless body', { streamBytes: 50 * 1024 * 1024, contentType: 'text/calendar' }, 'too large'],
    ];
    for (const [name, route, expected] of failures) {
      fixtures.route('/flaky.ics', route);
      const reply = await refresh(true);
      expect(reply.statusCode, name).toBe(502);
      expect(reply.json().error, name).toContain(expected);
      const run = (await get('/api/crawler_runs?limit=1')).json().crawler_runs[0];
      expect(run.error, name).toContain(expected);
    }
    expect((await get('/api/crawler_runs?has_error=true')).json().returned_count).toBe(4);
    expect((await get('/api/crawler_runs?has_error=false')).json().returned_count).toBe(1);
    expect((await knowledgeFiles()).map((file) => file.filename)).toEqual([goodFile]);
    expect(await ask('Where is Robot Building Basics?')).toContain('Room 101');
  });

  it('filters runs and events', async () => {
    fixtures.route('/filters.ics', { body: ics(V1), contentType: 'text/calendar' });
    await contextFor('/filters.ics');
    await refresh();
    const run = (await get('/api/crawler_runs')).json().crawler_runs[0];
    expect((await get(`/api/crawler_runs?hash=${run.hash.slice(10, 20)}`)).json().returned_count).toBe(1);
    expect((await get('/api/crawler_runs?url=FILTERS')).json().returned_count).toBe(1);
    expect((await get('/api/crawler_runs?url=nothing-like-this')).json().returned_count).toBe(0);
    expect((await get('/api/crawler_events?title=dragon')).json().crawler_events[0].what).toBe('Dragon Lore Deep Dive');
    expect((await get('/api/crawler_events?location=hall%20b')).json().returned_count).toBe(1);
    expect((await get('/api/crawler_events?speakers=host%20of%20pixel')).json().returned_count).toBe(1);
    expect((await get('/api/crawler_events?track=panels&limit=2')).json().returned_count).toBe(2);
    // Date filters apply to the start, read in the convention's zone.
    expect((await get('/api/crawler_events?date_from=2026-03-14T13:00&date_to=2026-03-14T15:00')).json().returned_count).toBe(2);
    expect((await get('/api/crawler_events?start_date=2026-03-15')).json().returned_count).toBe(0);
    expect((await get('/api/crawler_events?crawler_run_id=abc')).statusCode).toBe(400);
  });

  it('runs one refresh at a time', async () => {
    fixtures.route('/slow.ics', { body: ics(V1), contentType: 'text/calendar', delayMs: 300 });
    await contextFor('/slow.ics');
    const [first, second] = await Promise.all([refresh(), refresh()]);
    expect([first.statusCode, second.statusCode].sort()).toEqual([200, 409]);
  });

  it('refuses a refresh without a session', async () => {
    fixtures.route('/x.ics', { body: ics(V1) });
    await contextFor('/x.ics');
    const reply = await ctx.app.inject({ method: 'POST', url: '/api/schedule/refresh' });
    expect(reply.statusCode).toBe(401);
  });
});
