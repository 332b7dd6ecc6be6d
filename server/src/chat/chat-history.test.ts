import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHAT_HISTORY_MAX } from '@concierge/contract';
import { insertMessage } from './chat.queries.ts';
import { cookieFrom, createTestContext, type TestContext } from '../test-support/test-context.ts';

interface HistoryBody {
  success: boolean;
  exchanges: { feedback_id: number; question: string; answer: string | null }[];
  has_more: boolean;
  earlier_count: number;
}

/**
 * `GET /public/chat/history` in pages: a phone restores the newest exchanges
 * first and asks for older ones with `before`, within its own session's
 * current conversation only.
 */
describe('public chat history in pages', () => {
  let ctx: TestContext;
  const db = () => ctx.deps.database.db;

  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  /** A visitor's session, readied as the page does with verification off: its cookie and id. */
  async function visitor(): Promise<{ cookie: string; sessionId: string }> {
    const verify = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
    expect(verify.statusCode).toBe(200);
    const session = await db().selectFrom('public_chat_sessions').select('session_id').orderBy('id', 'desc').executeTakeFirstOrThrow();
    return { cookie: cookieFrom(verify), sessionId: session.session_id };
  }

  /** One stored exchange, as the pipeline leaves it: the question row (with its answer) and the answer's row. */
  async function exchange(sessionId: string, question: string): Promise<number> {
    const now = new Date().toISOString();
    const common = { session_id: sessionId, state: 'completed', client_ip: '198.51.100.7', user_agent: 'test', now };
    const id = await insertMessage(db(), { ...common, role: 'user', content: question, response: `Answer to ${question}` });
    await insertMessage(db(), { ...common, role: 'assistant', content: `Answer to ${question}` });
    return id;
  }

  const history = async (cookie: string | undefined, query = '') => {
    const reply = await ctx.app.inject({ method: 'GET', url: `/public/chat/history${query}`, headers: cookie ? { cookie } : {} });
    return { status: reply.statusCode, body: reply.json() as HistoryBody };
  };
  const questions = (body: HistoryBody) => body.exchanges.map((item) => item.question);
  const numbered = (prefix: string, from: number, to: number) => Array.from({ length: to - from }, (_, n) => `${prefix} ${from + n}`);

  it('pages back from the newest exchange, oldest first in each page, never showing another session', async () => {
    const mine = await visitor();
    const theirs = await visitor();
    const theirIds: number[] = [];
    // Two visitors asking at the same time: their rows interleave.
    for (let n = 0; n < 25; n++) {
      await exchange(mine.sessionId, `Mine ${n}`);
      theirIds.push(await exchange(theirs.sessionId, `Theirs ${n}`));
    }

    // Without paging parameters: the whole conversation, as before, and nothing more to fetch.
    const all = await history(mine.cookie);
    expect(all.status).toBe(200);
    expect(questions(all.body)).toEqual(numbered('Mine', 0, 25));
    expect(all.body).toMatchObject({ success: true, has_more: false, earlier_count: 0 });
    expect(all.body.exchanges[24]!.answer).toBe('Answer to Mine 24');

    const newest = await history(mine.cookie, '?limit=10');
    expect(questions(newest.body)).toEqual(numbered('Mine', 15, 25));
    expect(newest.body).toMatchObject({ has_more: true, earlier_count: 15 });

    const second = await history(mine.cookie, `?before=${newest.body.exchanges[0]!.feedback_id}&limit=10`);
    expect(questions(second.body)).toEqual(numbered('Mine', 5, 15));
    expect(second.body).toMatchObject({ has_more: true, earlier_count: 5 });

    const last = await history(mine.cookie, `?limit=10&before=${second.body.exchanges[0]!.feedback_id}`);
    expect(questions(last.body)).toEqual(numbered('Mine', 0, 5));
    expect(last.body).toMatchObject({ has_more: false, earlier_count: 0 });

    // A page that ends exactly at the first exchange says there is nothing before it.
    const exact = await history(mine.cookie, `?before=${second.body.exchanges[0]!.feedback_id}&limit=5`);
    expect(questions(exact.body)).toEqual(numbered('Mine', 0, 5));
    expect(exact.body).toMatchObject({ has_more: false, earlier_count: 0 });
    const beforeFirst = await history(mine.cookie, `?before=${last.body.exchanges[0]!.feedback_id}`);
    expect(beforeFirst.body).toEqual({ success: true, exchanges: [], has_more: false, earlier_count: 0 });

    // Another session's message id as the cursor only says where to start in one's own conversation.
    const theirCursor = await history(mine.cookie, `?before=${theirIds[12]}&limit=100`);
    expect(questions(theirCursor.body)).toEqual(numbered('Mine', 0, 13));
    // A cursor past every id is the newest page.
    expect(questions((await history(mine.cookie, '?before=9007199254740991&limit=3')).body)).toEqual(numbered('Mine', 22, 25));

    // The other visitor sees only theirs; a visitor without a session sees nothing, whatever the cursor.
    expect(questions((await history(theirs.cookie, '?limit=2')).body)).toEqual(['Theirs 23', 'Theirs 24']);
    for (const query of ['', `?before=${theirIds[24]! + 1}`, '?limit=1']) {
      expect((await history(undefined, query)).body).toEqual({ success: true, exchanges: [], has_more: false, earlier_count: 0 });
    }
  });

  it(`holds at most ${CHAT_HISTORY_MAX} exchanges a reply, and says how many are left`, async () => {
    const { cookie, sessionId } = await visitor();
    for (let n = 0; n < CHAT_HISTORY_MAX + 20; n++) await exchange(sessionId, `Q ${n}`);

    const first = await history(cookie);
    expect(questions(first.body)).toEqual(numbered('Q', 20, CHAT_HISTORY_MAX + 20));
    expect(first.body).toMatchObject({ has_more: true, earlier_count: 20 });
    const max = await history(cookie, `?limit=${CHAT_HISTORY_MAX}&before=${first.body.exchanges[0]!.feedback_id}`);
    expect(questions(max.body)).toEqual(numbered('Q', 0, 20));
    expect(max.body.has_more).toBe(false);

    const one = await history(cookie, '?limit=1');
    expect(questions(one.body)).toEqual([`Q ${CHAT_HISTORY_MAX + 19}`]);
    expect(one.body).toMatchObject({ has_more: true, earlier_count: CHAT_HISTORY_MAX + 19 });
  });

  it('refuses bad paging values with a 400 that names the parameter', async () => {
    const { cookie, sessionId } = await visitor();
    await exchange(sessionId, 'Q 0');
    const bad: [string, string][] = [
      ['limit=0', 'limit'],
      [`limit=${CHAT_HISTORY_MAX + 1}`, 'limit'],
      ['limit=-5', 'limit'],
      ['limit=ten', 'limit'],
      ['limit=2.5', 'limit'],
      ['limit=', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['before=0', 'before'],
      ['before=-1', 'before'],
      ['before=abc', 'before'],
      ['before=1.5', 'before'],
      ['before=', 'before'],
      ['before=99999999999999999999', 'before'],
      ['before=1e400', 'before'],
      ['before=3&before=4', 'before'],
    ];
    for (const [query, field] of bad) {
      for (const who of [cookie, undefined]) {
        const reply = await ctx.app.inject({ method: 'GET', url: `/public/chat/history?${query}`, headers: who ? { cookie: who } : {} });
        expect({ query, status: reply.statusCode }).toEqual({ query, status: 400 });
        const body = reply.json();
        expect(body).toMatchObject({ success: false, code: 'validation_error', field });
        expect(body.error).toMatch(new RegExp(`^${field}: must `));
      }
    }
    // Unknown parameters are ignored, as on every list.
    expect(questions((await history(cookie, '?after=1&page=2')).body)).toEqual(['Q 0']);
  });

  it('pages only through the conversation started by "New conversation"', async () => {
    const { cookie, sessionId } = await visitor();
    const oldIds: number[] = [];
    for (let n = 0; n < 15; n++) oldIds.push(await exchange(sessionId, `Old ${n}`));
    const fresh = await ctx.app.inject({ method: 'POST', url: '/public/chat/new_conversation', headers: { cookie } });
    expect(fresh.statusCode).toBe(200);
    expect((await history(cookie, '?limit=5')).body).toEqual({ success: true, exchanges: [], has_more: false, earlier_count: 0 });

    for (let n = 0; n < 3; n++) await exchange(sessionId, `New ${n}`);
    const newest = await history(cookie, '?limit=2');
    expect(questions(newest.body)).toEqual(['New 1', 'New 2']);
    expect(newest.body).toMatchObject({ has_more: true, earlier_count: 1 });
    const rest = await history(cookie, `?limit=2&before=${newest.body.exchanges[0]!.feedback_id}`);
    expect(questions(rest.body)).toEqual(['New 0']);
    expect(rest.body).toMatchObject({ has_more: false, earlier_count: 0 });

    // A cursor inside the earlier conversation finds nothing there.
    for (const before of [oldIds[14]!, oldIds[3]!, rest.body.exchanges[0]!.feedback_id]) {
      expect((await history(cookie, `?before=${before}`)).body).toEqual({ success: true, exchanges: [], has_more: false, earlier_count: 0 });
    }
    expect(questions((await history(cookie)).body)).toEqual(['New 0', 'New 1', 'New 2']);
  });
});
