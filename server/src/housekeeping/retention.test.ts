import { sql, type Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../test-support/fixture-server.ts';
import { ADMIN, cookieFrom, createTestContext, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

const DAY = 24 * 60 * 60_000;
const OLD_VISITOR = '198.51.100.1';
const NEW_VISITOR = '198.51.100.2';
const GUESSER = '203.0.113.9';
const SCHEDULE = JSON.stringify([{ id: 'p1', title: 'Costume Contest', start: '2026-03-14T19:00:00-05:00', location: 'Main Stage' }]);

/** Every row of every application table as text, to look for an address anywhere. */
async function everything(ctx: TestContext): Promise<string> {
  const db = ctx.deps.database.db as unknown as Kysely<unknown>;
  const tables =
    ctx.deps.database.dialect === 'sqlite'
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db)).rows
      : (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db)).rows;
  const dump: string[] = [];
  for (const { name } of tables) dump.push(JSON.stringify((await sql`select * from ${sql.id(name)}`.execute(db)).rows));
  return dump.join('\n');
}

describe('retention (hourly housekeeping)', () => {
  let fixtures: FixtureServer;
  let ctx: TestContext;
  const time = manualClock(new Date('2026-01-05T12:00:00Z'));
  beforeAll(async () => {
    fixtures = await startFixtureServer();
  });
  afterAll(() => fixtures.close());
  afterEach(() => ctx.close());

  const visit = async (ip: string, question: string) => {
    const cookie = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: ip }));
    const reply = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: question }, headers: { cookie }, remoteAddress: ip });
    expect(reply.statusCode).toBe(200);
    await ctx.app.inject({ method: 'POST', url: '/public/chat/feedback', payload: { feedback_id: reply.json().feedback_id, type: 'good' }, headers: { cookie }, remoteAddress: ip });
  };

  it('drops addresses, call bodies, messages and old runs’ events when each is due, and the Status figures stay', async () => {
    time.set(new Date('2026-01-05T12:00:00Z'));
    ctx = await createTestContext({ clock: time.clock, env: { CRAWLER_URL: `${fixtures.url}/schedule.json` } });
    const admin = await signIn(ctx.app);
    // A week for addresses: shorter than the 30 days rate-limit windows and call bodies are kept anyway.
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', retention_crawler_runs: 2, retention_client_ip_days: 7 });
    await uploadKnowledge(ctx.app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.');
    const { db } = ctx.deps.database;

    // Three good crawls, then two failures: the newest two runs have no events; the last good one's stay.
    fixtures.route('/schedule.json', { status: 200, body: SCHEDULE, contentType: 'application/json' });
    for (let run = 0; run < 3; run++) expect((await ctx.deps.crawler.refresh(true)).kind).toBe('stored');
    fixtures.route('/schedule.json', { status: 500, body: 'down' });
    for (let run = 0; run < 2; run++) expect((await ctx.deps.crawler.refresh(true)).kind).toBe('failed');
    const runs = await db.selectFrom('crawler_runs').select(['id', 'error']).orderBy('id').execute();
    const lastGood = runs.filter((run) => run.error === null).at(-1)!.id;

    await visit(OLD_VISITOR, 'Where is the lost and found?');
    expect((await ctx.app.inject({ method: 'POST', url: '/login', payload: { ...ADMIN, password: 'wrong password' }, remoteAddress: GUESSER })).statusCode).toBe(401);
    const status = async () => (await ctx.app.inject({ url: '/api/status', headers: { cookie: await signIn(ctx.app) } })).json();
    const figures = (await status()).public_chat;

    // 8 days on, another visitor comes; the pass runs.
    time.advance(8 * DAY);
    await visit(NEW_VISITOR, 'When is the costume contest?');
    await ctx.deps.housekeeping.runOnce();

    const stored = await everything(ctx);
    expect(stored).not.toContain(OLD_VISITOR);
    expect(stored).not.toContain(GUESSER);
    expect(stored).toContain(NEW_VISITOR);
    const identifiers = (await db.selectFrom('public_chat_rate_limits').select('identifier').execute()).map((row) => row.identifier);
    // Windows named by an address go with it; those named by a session (questions, feedback) stay, without the address.
    expect(identifiers.filter((identifier) => !identifier.startsWith('session:') && !identifier.startsWith('feedback:')).sort()).toEqual([`ip:${NEW_VISITOR}`, `verify:${NEW_VISITOR}`]);

    // The old visitor's messages and call bodies are still there (90 and 30 days), without address.
    const oldQuestion = await db.selectFrom('public_chat_messages').selectAll().where('content', '=', 'Where is the lost and found?').executeTakeFirstOrThrow();
    expect(oldQuestion.client_ip).toBeNull();
    const callOf = (messageId: number) => db.selectFrom('openai_create_run_logs').selectAll().where('public_chat_message_id', '=', messageId).executeTakeFirstOrThrow();
    expect((await callOf(oldQuestion.id)).request_body).not.toBeNull();

    // 31 days after the first visit: its call bodies are cleared (timings stay), the newer ones are not.
    time.advance(23 * DAY);
    await ctx.deps.housekeeping.runOnce();
    const oldRun = await callOf(oldQuestion.id);
    expect(oldRun).toMatchObject({ request_body: null, response_body: null, response_headers: null });
    expect(oldRun.request_ended).not.toBeNull();
    const newQuestion = await db.selectFrom('public_chat_messages').select('id').where('content', '=', 'When is the costume contest?').executeTakeFirstOrThrow();
    expect((await callOf(newQuestion.id)).request_body).not.toBeNull();

    // Events of the newest two runs (none: they failed) and of the last good run are kept.
    const eventRuns = await db.selectFrom('crawler_events').select('crawler_run_id').distinct().execute();
    expect(eventRuns.map((row) => row.crawler_run_id)).toEqual([lastGood]);
    expect(await db.selectFrom('crawler_runs').select('id').execute()).toHaveLength(5);

    // 91 days after the first visit: that conversation is gone, the newer one stays.
    time.advance(60 * DAY);
    await ctx.deps.housekeeping.runOnce();
    const questions = await db.selectFrom('public_chat_messages').select('content').where('role', '=', 'user').execute();
    expect(questions).toEqual([{ content: 'When is the costume contest?' }]);
    expect(await db.selectFrom('public_chat_feedback').select('id').execute()).toHaveLength(1);
    expect(await db.selectFrom('public_chat_sessions').select('client_ip').execute()).toEqual([{ client_ip: null }]);
    expect(JSON.stringify(await db.selectFrom('local_messages').select('content').execute())).not.toContain('lost and found?');

    // The Status totals are counters: the clean-up does not change them. The retention shows there.
    const after = await status();
    expect(after.public_chat).toMatchObject({ message_count: figures.message_count + 2, feedback_count: figures.feedback_count + 1 });
    expect(after.retention).toEqual({
      messages_days: 90,
      client_ip_days: 7,
      call_bodies_days: 30,
      crawler_runs_kept: 2,
      last_pass: {
        at: time.clock.now().toISOString(),
        messages_deleted: 2,
        sessions_deleted: 1,
        client_ip_rows_scrubbed: expect.any(Number),
        call_bodies_cleared: expect.any(Number),
        crawler_events_deleted: 0,
      },
    });
  });

  it('keeps everything for ever when set to 0', async () => {
    time.set(new Date('2026-01-05T12:00:00Z'));
    ctx = await createTestContext({ clock: time.clock });
    await signIn(ctx.app);
    await ctx.deps.config.update({
      assistant_poll_interval: '100ms',
      retention_messages_days: 0,
      retention_client_ip_days: 0,
      retention_call_bodies_days: 0,
      retention_crawler_runs: 0,
    });
    await visit(OLD_VISITOR, 'Where is the lost and found?');
    time.advance(400 * DAY);
    await ctx.deps.housekeeping.runOnce();
    const question = await ctx.deps.database.db.selectFrom('public_chat_messages').selectAll().where('role', '=', 'user').executeTakeFirstOrThrow();
    expect(question.client_ip).toBe(OLD_VISITOR);
  });
});
