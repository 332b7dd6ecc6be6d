import { PROVIDER_LOG_KINDS, type ProviderLogKind } from '@concierge/contract';
import type { Insertable } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertProviderLog, type ProviderLogRow } from '../assistant/assistant.queries.ts';
import type { Db } from '../db/database.ts';
import type { PublicChatFeedbackTable, PublicChatMessageTable, PublicChatRateLimitTable, PublicChatSessionTable } from '../db/schema/chat.ts';
import {
  cookieFrom,
  createTestContext,
  manualClock,
  minuteStartClock,
  signIn,
  uploadKnowledge,
  type TestContext,
} from '../test-support/test-context.ts';

type Row = Record<string, unknown>;

/** A monitoring list (SPEC §7) and the key its rows come under (DESIGN §7). */
interface MonitoringList {
  path: string;
  rowsKey: string;
}

const MESSAGES: MonitoringList = { path: '/api/public_chat_messages', rowsKey: 'messages' };
const FEEDBACK: MonitoringList = { path: '/api/public/chat/feedback', rowsKey: 'feedback' };
const SESSIONS: MonitoringList = { path: '/api/public_chat_sessions', rowsKey: 'sessions' };
const RATE_LIMITS: MonitoringList = { path: '/api/public_chat_rate_limits', rowsKey: 'rate_limits' };
const LOG_KINDS = Object.keys(PROVIDER_LOG_KINDS) as ProviderLogKind[];
const logList = (kind: ProviderLogKind): MonitoringList => ({ path: `/api/public_chat_openai_${kind}`, rowsKey: 'logs' });
const ALL_LISTS = [MESSAGES, FEEDBACK, SESSIONS, RATE_LIMITS, ...LOG_KINDS.map(logList)];

/** Reads a list as the signed-in operator; every read checks the 200 and that returned_count counts the rows sent. */
async function readList(ctx: TestContext, cookie: string, list: MonitoringList, query = ''): Promise<Row[]> {
  const url = query ? `${list.path}?${query}` : list.path;
  const reply = await ctx.app.inject({ method: 'GET', url, headers: { cookie } });
  expect(reply.statusCode, `${url}: ${reply.body}`).toBe(200);
  const body = reply.json<Row>();
  const rows = body[list.rowsKey];
  expect(Array.isArray(rows), url).toBe(true);
  expect(body.returned_count, url).toBe((rows as Row[]).length);
  return rows as Row[];
}

const field = (name: string) => (row: Row) => row[name];

describe('public chat monitoring lists', () => {
  let ctx: TestContext;
  let admin: string;
  let alice: string;
  let aliceSession: string;
  let firstQuestion: number;

  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: { cookie: admin } });
  const read = (list: MonitoringList, query = '') => readList(ctx, admin, list, query);

  beforeAll(async () => {
    ctx = await createTestContext({ env: { CONVENTION_TIMEZONE: 'America/Chicago' }, clock: minuteStartClock() });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', public_chat_requests_per_minute: 2 });
    await uploadKnowledge(ctx.app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.');
    const visitor = async (ip: string) =>
      cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' }, remoteAddress: ip }));
    alice = await visitor('198.51.100.1');
    const bob = await visitor('198.51.100.2');
    const ask = (cookie: string, message: string, ip: string) =>
      ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message }, headers: { cookie }, remoteAddress: ip });
    firstQuestion = (await ask(alice, 'Where is the lost and found?', '198.51.100.1')).json().feedback_id;
    await ask(alice, 'Is there a quidditch match?', '198.51.100.1');
    expect((await ask(alice, 'third question', '198.51.100.1')).statusCode).toBe(429);
    await ask(bob, 'Where is the lost and found?', '198.51.100.2');
    await ctx.app.inject({ method: 'POST', url: '/public/chat/feedback', payload: { feedback_id: firstQuestion, type: 'good' }, headers: { cookie: alice } });
    aliceSession = (await ctx.deps.database.db.selectFrom('public_chat_messages').select('session_id').where('id', '=', firstQuestion).executeTakeFirstOrThrow()).session_id;
  });
  afterAll(() => ctx.close());

  it('lists messages newest first with feedback, filtered by session, role and date', async () => {
    const all = (await get('/api/public_chat_messages')).json();
    expect(all.returned_count).toBe(6);
    expect(all.messages[0].id).toBeGreaterThan(all.messages[5].id);
    const question = all.messages.find((message: { id: number }) => message.id === firstQuestion);
    expect(question).toMatchObject({ role: 'user', state: 'completed', feedback_count: 1, feedback: [{ type: 'good' }] });

    const mine = (await get(`/api/public_chat_messages?session_id=${aliceSession.slice(2, 12).toUpperCase()}&role=user&order=asc`)).json();
    expect(mine.messages.map((message: { content: string }) => message.content)).toEqual(['Where is the lost and found?', 'Is there a quidditch match?']);

    const paged = (await get('/api/public_chat_messages?limit=2&offset=2')).json();
    expect(paged.returned_count).toBe(2);
    expect(paged.messages[0].id).toBe(all.messages[2].id);

    const future = (await get('/api/public_chat_messages?date_from=2999-01-01')).json();
    expect(future.returned_count).toBe(0);
    const today = new Date().toISOString().slice(0, 10);
    const byOtherSpelling = (await get(`/api/public_chat_messages?start_date=2000-01-01&end_date=${today}T23:59`)).json();
    expect(byOtherSpelling.returned_count).toBeGreaterThan(0);
  });

  it('refuses bad filter values with a 400 naming the parameter', async () => {
    for (const [url, field] of [
      ['/api/public_chat_messages?limit=0', 'limit'],
      ['/api/public_chat_messages?limit=500', 'limit'],
      ['/api/public_chat_messages?offset=-1', 'offset'],
      ['/api/public_chat_messages?order=sideways', 'order'],
      ['/api/public_chat_messages?role=robot', 'role'],
      ['/api/public_chat_messages?date_from=yesterday', 'date_from'],
      ['/api/public_chat_messages?date_from=2026-02-31', 'date_from'],
      ['/api/public_chat_sessions?active=maybe', 'active'],
      ['/api/public_chat_openai_create_run?message_id=abc', 'message_id'],
      ['/api/public/chat/feedback?type=meh', 'type'],
      ['/api/public_chat_rate_limits?date_from=2026-03-14&date_to=2026-03-13', 'date_to'],
    ]) {
      const reply = await get(url!);
      expect(reply.statusCode, url).toBe(400);
      expect(reply.json().error, url).toContain(field);
    }
  });

  it('lists feedback by message and type', async () => {
    const byMessage = (await get(`/api/public/chat/feedback?message_id=${firstQuestion}`)).json();
    expect(byMessage).toMatchObject({ returned_count: 1, feedback: [{ public_chat_message_id: firstQuestion, type: 'good' }] });
    expect((await get('/api/public/chat/feedback?type=other')).json().returned_count).toBe(0);
  });

  it('lists sessions with their activity, filtered by address, thread, activity and errors', async () => {
    const all = (await get('/api/public_chat_sessions')).json();
    expect(all.returned_count).toBe(2);
    const alicesRow = all.sessions.find((session: { session_id: string }) => session.session_id === aliceSession);
    expect(alicesRow).toMatchObject({ client_ip: '198.51.100.1', message_count: 2, active: true });
    expect((await get('/api/public_chat_sessions?client_ip=198.51.100.2')).json().returned_count).toBe(1);
    expect((await get(`/api/public_chat_sessions?thread_id=${alicesRow.thread_id}`)).json().sessions[0].session_id).toBe(aliceSession);
    expect((await get('/api/public_chat_sessions?active=false')).json().returned_count).toBe(0);
    expect((await get('/api/public_chat_sessions?has_error=yes')).json().returned_count).toBe(0);
    expect((await get('/api/public_chat_sessions?has_error=0')).json().returned_count).toBe(2);
  });

  it('lists rate-limit windows, filtered by identifier and limited', async () => {
    const limited = (await get('/api/public_chat_rate_limits?limited=true')).json();
    expect(limited.returned_count).toBe(1);
    expect(limited.rate_limits[0]).toMatchObject({ identifier: `session:${aliceSession}`, request_count: 3, max_requests: 2, limited: true });
    expect((await get('/api/public_chat_rate_limits?identifier=ip:198.51.100.2')).json().rate_limits[0]).toMatchObject({ max_requests: 20 });
  });

  it('lists each of the five AI call logs with message and error filters', async () => {
    for (const kind of ['create_thread', 'create_message', 'create_run', 'retrieve_run', 'list_messages']) {
      const reply = await get(`/api/public_chat_openai_${kind}`);
      expect(reply.statusCode, kind).toBe(200);
      expect(reply.json().returned_count, kind).toBeGreaterThan(0);
    }
    const forMessage = (await get(`/api/public_chat_openai_create_message?public_chat_message_id=${firstQuestion}`)).json();
    expect(forMessage.returned_count).toBe(1);
    expect(JSON.parse(forMessage.logs[0].request_body)).toMatchObject({ content: 'Where is the lost and found?' });
    expect((await get(`/api/public_chat_openai_create_message?message_id=${firstQuestion}`)).json().returned_count).toBe(1);
    expect((await get('/api/public_chat_openai_create_run?has_error=true')).json().returned_count).toBe(0);
  });

  it('counts exactly the rows it sends on every list', async () => {
    for (const list of ALL_LISTS) {
      expect((await read(list)).length, list.path).toBeGreaterThan(0);
      expect(await read(list, 'limit=1'), list.path).toHaveLength(1);
    }
  });

  it('shows answers without feedback and each question with only its own feedback', async () => {
    const answers = await read(MESSAGES, 'role=assistant');
    expect(answers.map(field('role'))).toEqual(['assistant', 'assistant', 'assistant']);
    for (const answer of answers) expect(answer).toMatchObject({ feedback_count: 0, feedback: [] });
    const questions = await read(MESSAGES, 'role=user&order=asc');
    expect(questions.map(field('content'))).toEqual(['Where is the lost and found?', 'Is there a quidditch match?', 'Where is the lost and found?']);
    expect(questions.map(field('feedback_count'))).toEqual([1, 0, 0]);
    expect(await read(MESSAGES, 'state=completed')).toHaveLength(6);
    expect(await read(MESSAGES, 'state=failed')).toEqual([]);
  });

  it('narrows sessions, feedback and rate-limit windows to one visitor', async () => {
    const partOfAlices = aliceSession.slice(2, 12).toUpperCase();
    expect((await read(SESSIONS, `session_id=${partOfAlices}`)).map(field('session_id'))).toEqual([aliceSession]);
    expect((await read(FEEDBACK, `session_id=${partOfAlices}`)).map(field('public_chat_message_id'))).toEqual([firstQuestion]);
    expect(await read(FEEDBACK, 'session_id=somebody-else')).toEqual([]);
    const alicesWindows = await read(RATE_LIMITS, 'client_ip=198.51.100.1');
    // Her session's and her address's chat windows, and her address's verification attempts.
    expect(alicesWindows.map(field('identifier')).sort()).toEqual(['ip:198.51.100.1', `session:${aliceSession}`, 'verify:198.51.100.1']);
  });

  it('narrows each of the five AI call logs to one visitor by session, address or question', async () => {
    for (const kind of LOG_KINDS) {
      const list = logList(kind);
      const all = await read(list);
      const alices = await read(list, `session_id=${aliceSession.slice(2, 12).toUpperCase()}`);
      expect(alices.length, kind).toBeGreaterThan(0);
      expect(new Set(alices.map(field('session_id'))), kind).toEqual(new Set([aliceSession]));
      const bobs = await read(list, 'client_ip=198.51.100.2');
      expect(bobs.length, kind).toBeGreaterThan(0);
      expect(new Set(bobs.map(field('client_ip'))), kind).toEqual(new Set(['198.51.100.2']));
      expect(alices.length + bobs.length, kind).toBe(all.length);
      const forFirstQuestion = await read(list, `message_id=${firstQuestion}`);
      expect(forFirstQuestion.length, kind).toBeGreaterThan(0);
      expect(new Set(forFirstQuestion.map(field('public_chat_message_id'))), kind).toEqual(new Set([firstQuestion]));
      expect(await read(list, `public_chat_message_id=${firstQuestion}`), kind).toEqual(forFirstQuestion);
    }
  });
});

// Row factories for what the API cannot easily make: errors on sessions and
// calls, expired sessions, several addresses, rows on different days.

const stamp = (at: string) => ({ created_at: at, updated_at: at });

async function seedSession(db: Db, at: string, values: { session_id: string } & Partial<Insertable<PublicChatSessionTable>>): Promise<void> {
  await db
    .insertInto('public_chat_sessions')
    .values({ verified: true, verified_at: at, first_seen_at: at, last_seen_at: at, expires_at: at, ...stamp(at), ...values })
    .execute();
}

async function seedMessage(
  db: Db,
  at: string,
  values: Pick<Insertable<PublicChatMessageTable>, 'session_id' | 'role' | 'content' | 'state'> & Partial<Insertable<PublicChatMessageTable>>,
): Promise<number> {
  const row = await db
    .insertInto('public_chat_messages')
    .values({ ...stamp(at), ...values })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function seedFeedback(
  db: Db,
  at: string,
  values: Pick<Insertable<PublicChatFeedbackTable>, 'public_chat_message_id' | 'session_id' | 'type'> & Partial<Insertable<PublicChatFeedbackTable>>,
): Promise<void> {
  await db
    .insertInto('public_chat_feedback')
    .values({ ...stamp(at), ...values })
    .execute();
}

/** A one-minute window starting at `at`; limited when the count went over the maximum. */
async function seedRateLimit(
  db: Db,
  at: string,
  values: Pick<Insertable<PublicChatRateLimitTable>, 'identifier' | 'request_count' | 'max_requests'> & Partial<Insertable<PublicChatRateLimitTable>>,
): Promise<void> {
  const limited = values.request_count > values.max_requests;
  await db
    .insertInto('public_chat_rate_limits')
    .values({ window_start: at, window_end: new Date(Date.parse(at) + 60_000).toISOString(), limited, limited_at: limited ? at : null, ...stamp(at), ...values })
    .execute();
}

/** One call in `kind`'s log; its request body names the step, so a screen reading the wrong log shows. */
async function seedLog(db: Db, kind: ProviderLogKind, at: string, values: Partial<ProviderLogRow>): Promise<void> {
  await insertProviderLog(db, kind, {
    session_id: null,
    public_chat_message_id: null,
    client_ip: null,
    user_agent: 'Mozilla/5.0 (test)',
    operation: null,
    request_started: at,
    request_ended: at,
    request_body: JSON.stringify({ step: kind }),
    response_body: null,
    response_headers: null,
    error: null,
    ...values,
  });
}

describe('monitoring list filters on rows recorded around midnight in the convention zone', () => {
  /**
   * The convention is in America/Chicago, on daylight time (UTC−5) since
   * 8 March 2026. Every list holds rows at these three instants, in this order.
   */
  const AT = {
    /** 21:00 on 12 March in Chicago, already the 13th in UTC. */
    evening12: '2026-03-13T02:00:00.000Z',
    /** 23:30:40 on 13 March in Chicago, already the 14th in UTC. */
    late13: '2026-03-14T04:30:40.000Z',
    /** 00:30 on 14 March in Chicago. */
    early14: '2026-03-14T05:30:00.000Z',
  };
  /** The clock reads noon on 14 March in Chicago; a session that expired before then is inactive. */
  const NOW = new Date('2026-03-14T17:00:00.000Z');
  const LATER = '2026-03-14T18:00:00.000Z';
  const PROVIDER_ERROR = 'OpenAI 500 error: The server had an error';

  let ctx: TestContext;
  let admin: string;
  const ids = { costumeQuestion: 0, costumeAnswer: 0, hallBQuestion: 0, dealersQuestion: 0 };
  const read = (list: MonitoringList, query = '') => readList(ctx, admin, list, query);

  beforeAll(async () => {
    ctx = await createTestContext({ env: { CONVENTION_TIMEZONE: 'America/Chicago' }, clock: manualClock(NOW).clock });
    admin = await signIn(ctx.app);
    const db = ctx.deps.database.db;

    // Alpha chatted fine and is still active; Bravo's question failed and the session expires this very
    // moment (gone, as the chat itself sees it); Charlie is active, from an IPv6 address, with no thread
    // because creating it failed.
    await seedSession(db, AT.evening12, { session_id: 'sess-Alpha-01', client_ip: '203.0.113.7', thread_id: 'thread_Alpha', expires_at: LATER });
    await seedSession(db, AT.late13, { session_id: 'sess-bravo-02', client_ip: '203.0.113.70', thread_id: 'thread_bravo', expires_at: NOW.toISOString(), error: PROVIDER_ERROR });
    await seedSession(db, AT.early14, { session_id: 'sess-charlie-03', client_ip: '2001:db8::c', expires_at: LATER, error: 'Could not create a thread' });

    ids.costumeQuestion = await seedMessage(db, AT.evening12, {
      session_id: 'sess-Alpha-01',
      role: 'user',
      content: 'When is the costume contest?',
      response: 'Saturday at 19:00 in Hall A.',
      state: 'completed',
    });
    ids.costumeAnswer = await seedMessage(db, AT.evening12, { session_id: 'sess-Alpha-01', role: 'assistant', content: 'Saturday at 19:00 in Hall A.', state: 'completed' });
    ids.hallBQuestion = await seedMessage(db, AT.late13, { session_id: 'sess-bravo-02', role: 'user', content: 'Where is Hall B?', state: 'failed', error: PROVIDER_ERROR });
    ids.dealersQuestion = await seedMessage(db, AT.early14, { session_id: 'sess-charlie-03', role: 'user', content: 'Is the dealer room open late?', state: 'processing' });

    await seedFeedback(db, AT.evening12, { public_chat_message_id: ids.costumeQuestion, session_id: 'sess-Alpha-01', type: 'good', description: 'Spot on' });
    await seedFeedback(db, AT.late13, { public_chat_message_id: ids.costumeQuestion, session_id: 'sess-Alpha-01', type: 'outdated', description: 'The contest moved to 20:00' });
    await seedFeedback(db, AT.early14, { public_chat_message_id: ids.hallBQuestion, session_id: 'sess-bravo-02', type: 'other', description: 'It only said there was an error' });

    await seedRateLimit(db, AT.evening12, { identifier: 'session:sess-Alpha-01', client_ip: '203.0.113.7', request_count: 1, max_requests: 2 });
    await seedRateLimit(db, AT.late13, { identifier: 'ip:203.0.113.70', client_ip: '203.0.113.70', request_count: 21, max_requests: 20 });
    await seedRateLimit(db, AT.early14, { identifier: 'session:sess-charlie-03', client_ip: '2001:db8::c', request_count: 3, max_requests: 2 });

    for (const kind of LOG_KINDS) {
      await seedLog(db, kind, AT.evening12, { session_id: 'sess-Alpha-01', public_chat_message_id: ids.costumeQuestion, client_ip: '203.0.113.7' });
      await seedLog(db, kind, AT.late13, { session_id: 'sess-bravo-02', public_chat_message_id: ids.hallBQuestion, client_ip: '203.0.113.70', error: PROVIDER_ERROR });
      await seedLog(db, kind, AT.early14, { session_id: 'sess-charlie-03', public_chat_message_id: ids.dealersQuestion, client_ip: '2001:db8::c' });
    }
  });
  afterAll(() => ctx.close());

  it('narrows messages by session, role and state, each question carrying its own feedback', async () => {
    const contents = async (query: string) => (await read(MESSAGES, query)).map(field('content'));
    expect(await contents('role=user')).toEqual(['Is the dealer room open late?', 'Where is Hall B?', 'When is the costume contest?']);
    expect(await contents('role=assistant')).toEqual(['Saturday at 19:00 in Hall A.']);
    expect(await contents('state=failed')).toEqual(['Where is Hall B?']);
    expect(await contents('state=processing')).toEqual(['Is the dealer room open late?']);
    expect(await contents('state=completed')).toEqual(['Saturday at 19:00 in Hall A.', 'When is the costume contest?']);
    expect(await contents('session_id=ALPHA-0')).toEqual(['Saturday at 19:00 in Hall A.', 'When is the costume contest?']);
    expect(await contents('session_id=alpha&role=user')).toEqual(['When is the costume contest?']);
    expect(await contents('session_id=bravo&state=completed')).toEqual([]);

    const byId = new Map((await read(MESSAGES)).map((row) => [row.id, row]));
    expect(byId.get(ids.costumeQuestion)).toMatchObject({
      feedback_count: 2,
      feedback: [
        { type: 'good', description: 'Spot on' },
        { type: 'outdated', description: 'The contest moved to 20:00' },
      ],
    });
    expect(byId.get(ids.hallBQuestion)).toMatchObject({ error: PROVIDER_ERROR, feedback_count: 1, feedback: [{ type: 'other' }] });
    expect(byId.get(ids.dealersQuestion)).toMatchObject({ feedback_count: 0, feedback: [] });
    expect(byId.get(ids.costumeAnswer)).toMatchObject({ feedback_count: 0, feedback: [] });
    // A page holding only that question still brings its feedback along.
    expect(await read(MESSAGES, 'role=user&order=asc&limit=1')).toMatchObject([{ id: ids.costumeQuestion, feedback_count: 2 }]);
  });

  it('narrows feedback by session, message and type', async () => {
    const descriptions = async (query: string) => (await read(FEEDBACK, query)).map(field('description'));
    expect(await descriptions('session_id=ALPHA')).toEqual(['The contest moved to 20:00', 'Spot on']);
    expect(await descriptions('session_id=bravo')).toEqual(['It only said there was an error']);
    expect(await descriptions(`message_id=${ids.costumeQuestion}`)).toEqual(['The contest moved to 20:00', 'Spot on']);
    expect(await descriptions(`message_id=${ids.hallBQuestion}`)).toEqual(['It only said there was an error']);
    expect(await descriptions(`message_id=${ids.dealersQuestion}`)).toEqual([]);
    expect(await descriptions('type=outdated')).toEqual(['The contest moved to 20:00']);
    expect(await descriptions('type=good')).toEqual(['Spot on']);
    expect(await descriptions('type=hallucinated')).toEqual([]);
    expect(await descriptions('session_id=alpha&type=good')).toEqual(['Spot on']);
  });

  it('narrows sessions by id, address, thread, activity and errors', async () => {
    const sessionIds = async (query: string) => (await read(SESSIONS, query)).map(field('session_id'));
    expect(await sessionIds('session_id=ALPHA')).toEqual(['sess-Alpha-01']);
    expect(await sessionIds('session_id=sess-')).toEqual(['sess-charlie-03', 'sess-bravo-02', 'sess-Alpha-01']);
    // Addresses match as text: 203.0.113.7 is also part of 203.0.113.70.
    expect(await sessionIds('client_ip=203.0.113.7')).toEqual(['sess-bravo-02', 'sess-Alpha-01']);
    expect(await sessionIds('client_ip=113.70')).toEqual(['sess-bravo-02']);
    expect(await sessionIds('client_ip=2001:DB8')).toEqual(['sess-charlie-03']);
    // LIKE wildcards typed into a filter are plain characters.
    expect(await sessionIds('client_ip=203_0')).toEqual([]);
    expect(await sessionIds('client_ip=%25')).toEqual([]);
    expect(await sessionIds('thread_id=BRAVO')).toEqual(['sess-bravo-02']);
    expect(await sessionIds('thread_id=thread_')).toEqual(['sess-bravo-02', 'sess-Alpha-01']);
    for (const yes of ['true', '1', 'yes']) {
      expect(await sessionIds(`active=${yes}`), yes).toEqual(['sess-charlie-03', 'sess-Alpha-01']);
      expect(await sessionIds(`has_error=${yes}`), yes).toEqual(['sess-charlie-03', 'sess-bravo-02']);
    }
    for (const no of ['false', '0', 'no']) {
      expect(await sessionIds(`active=${no}`), no).toEqual(['sess-bravo-02']);
      expect(await sessionIds(`has_error=${no}`), no).toEqual(['sess-Alpha-01']);
    }
    expect(await sessionIds('active=true&has_error=true')).toEqual(['sess-charlie-03']);
    expect(await read(SESSIONS, 'session_id=bravo')).toMatchObject([{ active: false, error: PROVIDER_ERROR }]);
  });

  it('narrows rate-limit windows by identifier, address and whether they were limited', async () => {
    const identifiers = async (query: string) => (await read(RATE_LIMITS, query)).map(field('identifier'));
    expect(await identifiers('identifier=SESSION:')).toEqual(['session:sess-charlie-03', 'session:sess-Alpha-01']);
    expect(await identifiers('identifier=ip:')).toEqual(['ip:203.0.113.70']);
    expect(await identifiers('identifier=alpha')).toEqual(['session:sess-Alpha-01']);
    expect(await identifiers('client_ip=203.0.113.7')).toEqual(['ip:203.0.113.70', 'session:sess-Alpha-01']);
    expect(await identifiers('client_ip=2001:DB8')).toEqual(['session:sess-charlie-03']);
    for (const yes of ['true', '1', 'yes']) expect(await identifiers(`limited=${yes}`), yes).toEqual(['session:sess-charlie-03', 'ip:203.0.113.70']);
    for (const no of ['false', '0', 'no']) expect(await identifiers(`limited=${no}`), no).toEqual(['session:sess-Alpha-01']);
    expect(await identifiers('identifier=session:&limited=true')).toEqual(['session:sess-charlie-03']);
  });

  it('narrows each of the five AI call logs by session, message under either name, address and errors', async () => {
    for (const kind of LOG_KINDS) {
      const list = logList(kind);
      const sessionsOf = async (query: string) => (await read(list, query)).map(field('session_id'));
      for (const row of await read(list)) expect(JSON.parse(String(row.request_body)), `${kind} reads its own log`).toEqual({ step: kind });
      expect(await sessionsOf('session_id=BRAVO'), kind).toEqual(['sess-bravo-02']);
      expect(await sessionsOf(`public_chat_message_id=${ids.costumeQuestion}`), kind).toEqual(['sess-Alpha-01']);
      expect(await sessionsOf(`message_id=${ids.dealersQuestion}`), kind).toEqual(['sess-charlie-03']);
      expect(await sessionsOf(`message_id=${ids.costumeAnswer}`), kind).toEqual([]);
      expect(await sessionsOf('client_ip=203.0.113.7'), kind).toEqual(['sess-bravo-02', 'sess-Alpha-01']);
      expect(await sessionsOf('client_ip=2001:DB8'), kind).toEqual(['sess-charlie-03']);
      for (const yes of ['true', '1', 'yes']) expect(await sessionsOf(`has_error=${yes}`), `${kind} ${yes}`).toEqual(['sess-bravo-02']);
      for (const no of ['false', '0', 'no']) expect(await sessionsOf(`has_error=${no}`), `${kind} ${no}`).toEqual(['sess-charlie-03', 'sess-Alpha-01']);
      expect(await sessionsOf('client_ip=203.0.113&has_error=false'), kind).toEqual(['sess-Alpha-01']);
    }
  });

  it.each(ALL_LISTS)('pages $path newest first unless asked for oldest first', async (list) => {
    const ids = async (query = '') => (await read(list, query)).map(field('id'));
    const oldestFirst = await ids('order=asc');
    expect(oldestFirst.length).toBeGreaterThanOrEqual(3);
    expect(oldestFirst).toEqual([...oldestFirst].sort((a, b) => Number(a) - Number(b)));
    const newestFirst = [...oldestFirst].reverse();
    expect(await ids()).toEqual(newestFirst);
    expect(await ids('order=desc')).toEqual(newestFirst);
    expect(await ids('limit=2')).toEqual(newestFirst.slice(0, 2));
    expect(await ids('limit=2&offset=1')).toEqual(newestFirst.slice(1, 3));
    expect(await ids('order=asc&limit=1&offset=2')).toEqual(oldestFirst.slice(2, 3));
    expect(await ids(`offset=${oldestFirst.length}`)).toEqual([]);
  });

  it.each(ALL_LISTS)('reads dates on $path as Chicago days and times, the end inclusive, under either spelling', async (list) => {
    const everything = await read(list, 'order=asc');
    expect(new Set(everything.map(field('created_at')))).toEqual(new Set(Object.values(AT)));
    const idsAt = (...instants: string[]) =>
      everything
        .filter((row) => instants.includes(String(row.created_at)))
        .map(field('id'))
        .reverse();
    const ids = async (query: string) => (await read(list, query)).map(field('id'));

    for (const [from, to] of [
      ['date_from', 'date_to'],
      ['start_date', 'end_date'],
    ]) {
      // 21:00 on the 12th in Chicago is already the 13th in UTC, and 23:30:40 on the 13th already the 14th.
      expect(await ids(`${from}=2026-03-13&${to}=2026-03-13`), from).toEqual(idsAt(AT.late13));
      expect(await ids(`${to}=2026-03-13`), to).toEqual(idsAt(AT.evening12, AT.late13));
      expect(await ids(`${from}=2026-03-13`), from).toEqual(idsAt(AT.late13, AT.early14));
      expect(await ids(`${from}=2026-03-14`), from).toEqual(idsAt(AT.early14));
      // An end given to the minute covers that whole minute; one given to the second, only that second.
      expect(await ids(`${to}=2026-03-13T23:30`), to).toEqual(idsAt(AT.evening12, AT.late13));
      expect(await ids(`${to}=2026-03-13T23:29`), to).toEqual(idsAt(AT.evening12));
      expect(await ids(`${to}=2026-03-13T23:30:00`), to).toEqual(idsAt(AT.evening12));
      expect(await ids(`${from}=2026-03-13T23:30&${to}=2026-03-13T23:30`), from).toEqual(idsAt(AT.late13));
      expect(await ids(`${from}=2026-03-13%2023:31`), from).toEqual(idsAt(AT.early14));
      // A value with a zone names that instant.
      expect(await ids(`${to}=2026-03-14T04:30:40Z`), to).toEqual(idsAt(AT.evening12, AT.late13));
      expect(await ids(`${from}=2026-03-14T04:30:41Z`), from).toEqual(idsAt(AT.early14));
      expect(await ids(`${from}=2026-03-13T23:30:40-05:00&${to}=2026-03-13T23:30:40-05:00`), from).toEqual(idsAt(AT.late13));
      // The far end of the calendar lists everything.
      expect(await ids(`${to}=9999-12-31`), to).toEqual(idsAt(AT.evening12, AT.late13, AT.early14));
    }
  });

  it.each(ALL_LISTS)('refuses a bad page, order or date on $path with a 400 naming the parameter', async (list) => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['offset=-1', 'offset'],
      ['offset=1.5', 'offset'],
      ['order=newest', 'order'],
      ['date_from=tomorrow', 'date_from'],
      ['date_to=2026-13-01', 'date_to'],
      ['start_date=2026-02-30', 'start_date'],
      ['end_date=2026-03-13T24:00', 'end_date'],
      ['start_date=2026-03-14&end_date=2026-03-13', 'end_date'],
    ] as const) {
      const reply = await ctx.app.inject({ method: 'GET', url: `${list.path}?${query}`, headers: { cookie: admin } });
      expect(reply.statusCode, query).toBe(400);
      expect(reply.json().error, query).toContain(param);
    }
  });

  it("refuses a bad value for a list's own filters with a 400 naming the parameter", async () => {
    const cases: [MonitoringList, string, string][] = [
      [MESSAGES, 'role=visitor', 'role'],
      [FEEDBACK, 'message_id=first', 'message_id'],
      [FEEDBACK, 'type=great', 'type'],
      [SESSIONS, 'active=maybe', 'active'],
      [SESSIONS, 'has_error=perhaps', 'has_error'],
      [RATE_LIMITS, 'limited=sometimes', 'limited'],
      ...LOG_KINDS.flatMap((kind): [MonitoringList, string, string][] => [
        [logList(kind), 'has_error=maybe', 'has_error'],
        [logList(kind), 'public_chat_message_id=first', 'public_chat_message_id'],
        [logList(kind), 'message_id=0', 'message_id'],
      ]),
    ];
    for (const [list, query, param] of cases) {
      const reply = await ctx.app.inject({ method: 'GET', url: `${list.path}?${query}`, headers: { cookie: admin } });
      expect(reply.statusCode, `${list.path}?${query}`).toBe(400);
      expect(reply.json().error, `${list.path}?${query}`).toContain(param);
    }
  });
});

describe('monitoring list page size', () => {
  const ROWS = 101;
  let ctx: TestContext;
  let admin: string;

  beforeAll(async () => {
    ctx = await createTestContext({ env: { CONVENTION_TIMEZONE: 'America/Chicago' } });
    admin = await signIn(ctx.app);
    const db = ctx.deps.database.db;
    const at = '2026-03-14T15:00:00.000Z';
    await seedSession(db, at, { session_id: 'sess-busy' });
    // One feedback per type per question per session: each question gets one.
    const questionIds = [await seedMessage(db, at, { session_id: 'sess-busy', role: 'user', content: 'question 0', state: 'completed' })];
    for (let i = 1; i < ROWS; i++) {
      await seedSession(db, at, { session_id: `sess-${i}` });
      questionIds.push(await seedMessage(db, at, { session_id: 'sess-busy', role: 'user', content: `question ${i}`, state: 'completed' }));
    }
    for (let i = 0; i < ROWS; i++) {
      await seedFeedback(db, at, { public_chat_message_id: questionIds[i]!, session_id: 'sess-busy', type: 'good' });
      await seedRateLimit(db, at, { identifier: `session:sess-${i}`, request_count: 1, max_requests: 2 });
      for (const kind of LOG_KINDS) await seedLog(db, kind, at, { session_id: 'sess-busy' });
    }
  });
  afterAll(() => ctx.close());

  it.each(ALL_LISTS)('sends $path 25 rows a page unless limit asks for up to 100', async (list) => {
    expect(await readList(ctx, admin, list)).toHaveLength(25);
    expect(await readList(ctx, admin, list, 'limit=100')).toHaveLength(100);
    expect(await readList(ctx, admin, list, `offset=${ROWS - 1}`)).toHaveLength(1);
  });
});
