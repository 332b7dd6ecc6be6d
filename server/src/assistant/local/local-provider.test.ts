import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_LOG_TABLE } from '../../db/schema/assistant.ts';
import { createTestContext, manualClock, type TestContext } from '../../test-support/test-context.ts';
import { AssistantService } from '../assistant.service.ts';
import { changeMarker, eventMarker, timezoneMarker } from '../knowledge-format.ts';
import { LocalProvider } from './local-provider.ts';

const ZONE = 'America/Chicago';
// Friday 13 March 2026, 18:00 in Chicago (UTC-5 after the DST change on 8 March).
const FRIDAY_6PM = new Date('2026-03-13T23:00:00Z');

const at = (local: string) => new Date(`${local}-05:00`);
function event(title: string, start: string, end: string | null, facts: Record<string, string>, description: string) {
  return [
    `### ${title}`,
    eventMarker(at(start), end ? at(end) : null, { uid: `uid:${title.toLowerCase().replace(/\W+/g, '-')}` }),
    ...Object.entries(facts).map(([key, value]) => `- ${key}: ${value}`),
    '',
    description,
    '',
  ].join('\n');
}

const SCHEDULE = [
  '# Starfall Con 2026 schedule',
  timezoneMarker(ZONE),
  '## Friday 13 March',
  event('Opening Ceremony', '2026-03-13T10:00:00', '2026-03-13T11:00:00', { Where: 'Main Stage', Track: 'Main Events' }, 'Welcome to the con.'),
  event('Retro Gaming Tournament', '2026-03-13T17:30:00', '2026-03-13T19:00:00', { Where: 'Gaming Hall', Track: 'Gaming' }, 'Bring your own controller.'),
  event('Friday Night Rave', '2026-03-13T21:00:00', '2026-03-14T01:00:00', { Where: 'Hall B', Track: 'Music', Speakers: 'DJ Nebula' }, 'Glow sticks provided.'),
  event('Filk Circle', '2026-03-13T22:00:00', '2026-03-13T23:30:00', { Where: 'Room 104', Track: 'Music' }, 'Songs of the stars.'),
  '## Saturday 14 March',
  event('Costume Contest', '2026-03-14T19:00:00', '2026-03-14T21:00:00', { Where: 'Main Stage', Track: 'Cosplay', Speakers: 'Mira Okafor, Juan Pérez' }, 'Prizes for every category.'),
  event('Hall B Karaoke', '2026-03-14T20:00:00', null, { Where: 'Hall B', Track: 'Fan Community' }, 'Sing your heart out.'),
].join('\n');

const NOTES = `# Practical information

The lost and found is at the registration desk in the lobby, open 8:00 to 20:00.

Water refill stations are next to every restroom.

Phone charging lockers are by the info desk.`;

describe('the offline (local) assistant', () => {
  let ctx: TestContext;
  let assistant: AssistantService;
  let provider: LocalProvider;
  const time = manualClock(FRIDAY_6PM);

  beforeEach(async () => {
    ctx = await createTestContext({ clock: time.clock });
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
    provider = new LocalProvider({ database: ctx.deps.database, clock: time.clock, timeZone: () => 'UTC' });
    assistant = new AssistantService({
      provider,
      database: ctx.deps.database,
      clock: time.clock,
      logger: ctx.deps.loggers.get('assistant'),
      config: () => ctx.deps.config.get(),
    });
    await assistant.uploadFile({ filename: 'schedule.md', data: Buffer.from(SCHEDULE) });
    await assistant.uploadFile({ filename: 'notes.txt', data: Buffer.from(NOTES) });
  });
  afterEach(async () => {
    await provider.close();
    await ctx.close();
  });

  const ask = (question: string, threadId: string | null = null) => assistant.ask({ sessionId: 'test-session' }, threadId, question);

  it('answers from an uploaded file, quoting it with its source', async () => {
    const result = await ask('Where is the lost and found?');
    expect(result.runStatus).toBe('completed');
    expect(result.answer.text).toContain('registration desk in the lobby');
    // The source is named in `sources`, never in the text.
    expect(result.answer.text).not.toContain('notes.txt');
    expect(result.answer.text).not.toContain('offline assistant');
    expect(result.answer.sources).toEqual([expect.objectContaining({ kind: 'file', title: 'Notes', filename: 'notes.txt' })]);
    expect(result.usage.total_tokens).toBeGreaterThan(0);
  });

  it('finds a set phrase in the files by its words, whatever the schedule is searched for', async () => {
    expect((await ask('where can I charge my phone?')).answer.text).toContain('Phone charging lockers are by the info desk.');
    expect((await ask('lost and found?')).answer.text).toContain('registration desk in the lobby');
  });

  it('reads "tonight" against the schedule in the convention\'s time zone', async () => {
    const { answer } = await ask("What's on in Hall B tonight?");
    expect(answer.text).toContain('Friday Night Rave');
    expect(answer.text).toContain('Fri 13 Mar, 21:00–01:00 CDT');
    expect(answer.text).toContain('· Hall B');
    // Events are cited by the feed's own id, with their time and room.
    expect(answer.sources).toContainEqual({
      kind: 'event',
      title: 'Friday Night Rave',
      event_uid: 'uid:friday-night-rave',
      starts_at: '2026-03-14T02:00:00.000Z',
      ends_at: '2026-03-14T06:00:00.000Z',
      location: 'Hall B',
    });
    expect(answer.text).not.toContain('Karaoke');
    expect(answer.text).not.toContain('Filk Circle');
  });

  it('lists what starts next and what runs now', async () => {
    const next = await ask("What's starting soon?");
    expect(next.answer.text).toContain('Friday Night Rave');
    expect(next.answer.text).not.toContain('Opening Ceremony');
    const now = await ask("What's happening right now?");
    expect(now.answer.text).toContain('Retro Gaming Tournament');
    expect(now.answer.text).not.toContain('Friday Night Rave');
  });

  it('reads a weekday as the schedule\'s own day', async () => {
    const { answer } = await ask('What is on Saturday night?');
    expect(answer.text).toContain('Costume Contest');
    expect(answer.text).toContain('Hall B Karaoke');
    expect(answer.text).not.toContain('Rave');
  });

  it('finds a guest\'s events by name, accents and all', async () => {
    const { answer } = await ask('When does Juan Pérez appear?');
    expect(answer.text).toContain('Costume Contest');
    expect(answer.text).toContain('Sat 14 Mar, 19:00–21:00 CDT');
  });

  it('reads a question typed on a phone', async () => {
    const now = await ask('whats on rn');
    expect(now.answer.text).toContain('Retro Gaming Tournament');
    expect(now.answer.text).not.toContain('Friday Night Rave');
    const tomorrow = await ask('anything tmrw nite?');
    expect(tomorrow.answer.text).toContain('Costume Contest');
    expect(tomorrow.answer.text).not.toContain('Filk Circle');
  });

  it('answers a kind of event on its own, but not a topic it does not have', async () => {
    expect((await ask('is there a contest?')).answer.text).toContain('Costume Contest');
    const cooking = await ask('is there a cooking contest?');
    expect(cooking.answer.text).toContain("I couldn't find anything about “cooking contest”");
    expect(cooking.answer.sources).toEqual([]);
  });

  it('quotes the answer of a plain-text FAQ written as questions and answers', async () => {
    const faq = [
      'FREQUENTLY ASKED QUESTIONS',
      '',
      'Q: Where do I pick up my badge?',
      'A: At the registration desk in the east lobby, from 8:00.',
      '',
      'Q: How much is parking?',
      'A: $12 a day in the Civic Centre garage.',
      '',
      'Is there Wi-Fi?',
      'Yes: the network is StarfallGuest, no password.',
    ].join('\n');
    await assistant.uploadFile({ filename: 'faq.txt', data: Buffer.from(faq) });
    const badge = await ask('where do i get my badge');
    expect(badge.answer.text).toContain('east lobby');
    expect(badge.answer.text).not.toContain('$12');
    const wifi = await ask('wifi?');
    expect(wifi.answer.text).toContain('StarfallGuest');
    expect(wifi.answer.text).not.toContain('east lobby');
  });

  it('says plainly when it finds nothing, and never invents', async () => {
    const { answer } = await ask('Is there a quidditch tournament?');
    expect(answer.text).toContain("I couldn't find anything about “quidditch tournament”");
    expect(answer.sources).toEqual([]);
  });

  it('reads "it" in a follow-up as the event the conversation\'s last answer was about', async () => {
    // A thread's messages are told apart by when they were written: the clock moves between questions.
    const later = (minutes: number) => time.set(new Date(FRIDAY_6PM.getTime() + minutes * 60_000));
    try {
      const first = await ask('When is the costume contest?');
      expect(first.answer.text).toMatch(/^- \*\*Costume Contest\*\*/);
      later(1);
      const howLong = await ask('how long is it?', first.threadId);
      expect(howLong.answer.text).toMatch(/^- \*\*Costume Contest\*\* — Sat 14 Mar, 19:00–21:00 CDT · Main Stage · 2 h/);
      expect(howLong.answer.sources).toEqual([expect.objectContaining({ kind: 'event', title: 'Costume Contest' })]);
      later(2);
      expect((await ask('is it still on?', first.threadId)).answer.text).toMatch(/^Yes, \*\*Costume Contest\*\* is still on\./);
      // "Is there anything on?" asks afresh, whatever came before.
      later(3);
      expect((await ask('is there anything on?', first.threadId)).answer.text).not.toContain('Costume Contest');
      // Without an earlier answer about an event, "it" is the convention.
      expect((await ask('when does it start?')).answer.text).toMatch(/^The convention started/);
      // Something named is asked about as itself.
      later(4);
      expect((await ask('how long is the rave?', first.threadId)).answer.text).toMatch(/^- \*\*Friday Night Rave\*\*/);
    } finally {
      time.set(FRIDAY_6PM);
    }
  });

  it('goes through the same logged steps as OpenAI, on one thread per conversation', async () => {
    const first = await ask('Where is the lost and found?');
    await ask('When is the costume contest?', first.threadId);
    const count = async (table: (typeof PROVIDER_LOG_TABLE)[keyof typeof PROVIDER_LOG_TABLE]) =>
      (await ctx.deps.database.db.selectFrom(table).selectAll().where('session_id', '=', 'test-session').execute()).length;
    expect(await count('openai_create_thread_logs')).toBe(1);
    expect(await count('openai_create_message_logs')).toBe(2);
    expect(await count('openai_create_run_logs')).toBe(2);
    expect(await count('openai_retrieve_run_logs')).toBe(2);
    expect(await count('openai_list_messages_logs')).toBe(2);
    const log = await ctx.deps.database.db.selectFrom('openai_list_messages_logs').selectAll().executeTakeFirstOrThrow();
    expect(JSON.parse(log.response_body!)).toMatchObject({ role: 'assistant' });
    expect(log.error).toBeNull();
  });

  it("lists the schedule's changes as the crawler records them: moved (with where and when it was) and added", async () => {
    const changes = [
      '## Recent changes',
      '',
      `- Moved: Filk Circle now Fri 13 Mar 22:00 in Room 104 (was Fri 13 Mar 20:00 in Room 104) ${changeMarker({ kind: 'moved_time', uid: 'uid:filk-circle', wasStart: at('2026-03-13T20:00:00').toISOString() })}`,
      `- Moved: Retro Gaming Tournament now Fri 13 Mar 17:30 in Gaming Hall (was Fri 13 Mar 17:30 in Hall C) ${changeMarker({ kind: 'moved_room', uid: 'uid:retro-gaming-tournament', wasRoom: 'Hall C' })}`,
      `- Added: Hall B Karaoke, Sat 14 Mar 20:00 in Hall B ${changeMarker({ kind: 'added', uid: 'uid:hall-b-karaoke' })}`,
      '',
    ].join('\n');
    await assistant.uploadFile({ filename: 'schedule.md', data: Buffer.from(SCHEDULE.replace('## Friday 13 March', `${changes}\n## Friday 13 March`)) });
    const moved = (await ask('what has been moved?')).answer.text;
    expect(moved).toMatch(/^Moved:\n\n- \*\*Retro Gaming Tournament\*\* — Fri 13 Mar, 17:30–19:00 CDT · Gaming Hall — _moved \(was in Hall C\)_ {2}\n/);
    expect(moved).toContain('- **Filk Circle** — Fri 13 Mar, 22:00–23:30 CDT · Room 104 — _moved (was Fri 13 Mar, 20:00 CDT)_');
    expect(moved).not.toContain('Karaoke');
    const all = (await ask('any schedule changes?')).answer.text;
    expect(all).toMatch(/^Moved:\n\n- \*\*Retro Gaming Tournament\*\*[^]*\n\nAdded:\n\n- \*\*Hall B Karaoke\*\* — Sat 14 Mar, 20:00 CDT · Hall B/);
    expect(all).not.toContain('Cancelled');
    expect((await ask('anything moved tonight?')).answer.text).toMatch(/^Moved tonight:\n\n- \*\*Filk Circle\*\*/);
    expect((await ask('what got cancelled?')).answer.text).toBe('Nothing has been cancelled: every event is on as the schedule lists it.');
  });

  it('replaces a file uploaded again under the same name', async () => {
    await assistant.uploadFile({ filename: 'notes.txt', data: Buffer.from('The lost and found moved to room 101.') });
    const files = await assistant.listFiles();
    expect(files.map((file) => file.filename).sort()).toEqual(['notes.txt', 'schedule.md']);
    const { answer } = await ask('Where is the lost and found?');
    expect(answer.text).toContain('moved to room 101');
    expect(answer.text).not.toContain('registration desk');
  });

  it('takes a new schedule document as the schedule, keeps the files beside it, and goes back to the older schedule if the new one is deleted', async () => {
    const moved = SCHEDULE.replace('- Where: Main Stage\n- Track: Cosplay', '- Where: Hall B\n- Track: Cosplay');
    expect((await ask('Where is the costume contest?')).answer.text).toContain('· Main Stage');
    // The crawler's way: the new document goes in first, then the old one is deleted.
    const next = await assistant.uploadFile({ filename: 'schedule-2026-03-13T1800Z.md', data: Buffer.from(moved) });
    const during = await ask('Where is the costume contest?');
    // Never both schedules at once: the contest is listed once, in its new room.
    expect(during.answer.text).toContain('· Hall B');
    expect(during.answer.text).not.toContain('Main Stage');
    expect((await ask('Where is the lost and found?')).answer.text).toContain('registration desk in the lobby');
    await assistant.deleteFile(next.id);
    const back = await ask('Where is the costume contest?');
    expect(back.answer.text).toContain('· Main Stage');
    expect(back.answer.text).not.toContain('· Hall B');
  });

  it('refuses binary files', async () => {
    await expect(assistant.uploadFile({ filename: 'photo.txt', data: Buffer.from([0xff, 0xd8, 0x00, 0x10]) })).rejects.toThrow('text files only');
    const log = await ctx.deps.database.db.selectFrom('openai_vector_store_logs').selectAll().where('operation', '=', 'upload_file').orderBy('id', 'desc').executeTakeFirstOrThrow();
    expect(log.error).toContain('text files only');
  });
});
