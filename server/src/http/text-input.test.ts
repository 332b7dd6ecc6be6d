import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cookieFrom, createTestContext, signIn, type TestContext } from '../test-support/test-context.ts';
import { findUnstorableText } from './text-input.ts';

const NUL = '\u0000';
const LONE_HIGH = '\uD800';
const LONE_LOW = '\uDC00';

describe('findUnstorableText', () => {
  it('finds NUL and unpaired surrogates anywhere, keeps tabs, newlines and paired surrogates', () => {
    expect(findUnstorableText({ a: 'line\n\ttab\r\n', b: ['😀 emoji', 'ünïcödé'] })).toBeNull();
    expect(findUnstorableText({ a: 'ok', b: [{ c: `x${NUL}` }] })).toEqual(['b', '0', 'c']);
    expect(findUnstorableText({ a: `${LONE_HIGH}x` })).toEqual(['a']);
    expect(findUnstorableText({ a: `x${LONE_LOW}` })).toEqual(['a']);
    expect(findUnstorableText({ [`k${NUL}`]: 1 })).toEqual(['k\\u0000']);
    expect(findUnstorableText(`${NUL}`)).toEqual([]);
    expect(findUnstorableText(undefined)).toBeNull();
  });

  it('walks a 30,000-deep array without overflowing the stack', () => {
    let deep: unknown = [`bottom${NUL}`];
    for (let level = 0; level < 30_000; level++) deep = [deep];
    expect(findUnstorableText({ deep })).toHaveLength(30_002);
  });
});

/** Both engines: PostgreSQL used to answer 500 to a NUL, SQLite stored it; now every route answers 400 naming the field. */
describe('text that cannot be stored', () => {
  let ctx: TestContext;
  let admin: string;

  beforeEach(async () => {
    ctx = await createTestContext();
    admin = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  const count = async (table: 'public_chat_messages' | 'public_chat_feedback') =>
    Number((await ctx.deps.database.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  async function visitor(): Promise<string> {
    const verify = await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } });
    expect(verify.statusCode).toBe(200);
    return cookieFrom(verify);
  }

  function expectRefused(response: { statusCode: number; json(): unknown }, field: string) {
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'validation_error', field, error: `${field}: must not contain NUL characters or unpaired surrogates` });
  }

  it('refuses them at /login, without a session', async () => {
    const nul = await ctx.app.inject({ method: 'POST', url: '/login', payload: { username: `volunteer${NUL}`, password: 'whatever' } });
    expectRefused(nul, 'username');
    const surrogate = await ctx.app.inject({ method: 'POST', url: '/login', payload: { username: 'volunteer', password: `pass${LONE_HIGH}word` } });
    expectRefused(surrogate, 'password');
  });

  it('refuses them in a chat question, stores nothing, and keeps tabs and newlines', async () => {
    const cookie = await visitor();
    for (const [message, label] of [
      [`Where is Hall B?${NUL}`, 'NUL'],
      [`Where is Hall B? ${LONE_LOW}`, 'lone low surrogate'],
    ] as const) {
      const refused = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message } });
      expectRefused(refused, 'message');
      expect(refused.json(), label).toMatchObject({ success: false });
    }
    const operator = await ctx.app.inject({ method: 'POST', url: '/api/chat/send', headers: { cookie: admin }, payload: { message: `hi${NUL}` } });
    expectRefused(operator, 'message');
    expect(await count('public_chat_messages')).toBe(0);

    const multiline = 'Where is Hall B?\n\tAnd the cloakroom?';
    const accepted = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message: multiline } });
    expect(accepted.statusCode).toBe(200);
    const stored = await ctx.deps.database.db.selectFrom('public_chat_messages').select('content').where('role', '=', 'user').executeTakeFirstOrThrow();
    expect(stored.content).toBe(multiline);
  });

  it('refuses them in feedback and stores nothing', async () => {
    const cookie = await visitor();
    const asked = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie }, payload: { message: 'Where is Hall B?' } });
    const feedbackId = asked.json().feedback_id as number;
    const description = await ctx.app.inject({
      method: 'POST',
      url: '/public/chat/feedback',
      headers: { cookie },
      payload: { feedback_id: feedbackId, type: 'other', description: `wrong room${NUL}` },
    });
    expectRefused(description, 'description');
    const detail = await ctx.app.inject({
      method: 'POST',
      url: '/public/chat/feedback',
      headers: { cookie },
      payload: { feedback_id: feedbackId, type: 'good', detail: `${LONE_HIGH}` },
    });
    expectRefused(detail, 'detail');
    expect(await count('public_chat_feedback')).toBe(0);
  });

  it('refuses them in a config edit, in a field name too, and changes nothing', async () => {
    const before = (await ctx.app.inject({ method: 'GET', url: '/api/config', headers: { cookie: admin } })).json();
    const value = await ctx.app.inject({ method: 'PATCH', url: '/api/config', headers: { cookie: admin }, payload: { discord_error_message: `Oops${NUL}`, paused: true } });
    expectRefused(value, 'discord_error_message');
    const key = await ctx.app.inject({ method: 'PATCH', url: '/api/config', headers: { cookie: admin }, payload: { paused: true, [`x${NUL}`]: 'y' } });
    expectRefused(key, 'x\\u0000');
    const after = (await ctx.app.inject({ method: 'GET', url: '/api/config', headers: { cookie: admin } })).json();
    expect(after).toEqual(before);

    const markdown = 'Welcome!\n\n\t- Hall B is upstairs';
    const edited = await ctx.app.inject({ method: 'PATCH', url: '/api/config', headers: { cookie: admin }, payload: { public_chat_welcome_message: markdown } });
    expect(edited.statusCode).toBe(200);
    expect(ctx.deps.config.get().public_chat_welcome_message).toBe(markdown);
  });

  it('refuses them in list filters and path parameters', async () => {
    for (const url of [
      '/api/public_chat_messages?session_id=%00',
      '/api/public_chat_sessions?client_ip=1%00',
      '/api/public/chat/feedback?type=good&session_id=a%00b',
      '/api/public_chat_rate_limits?identifier=%00',
      '/api/crawler_events?title=x%00',
    ]) {
      const response = await ctx.app.inject({ method: 'GET', url, headers: { cookie: admin } });
      expect(response.statusCode, url).toBe(400);
      expect(response.json().error, url).toMatch(/^\w+: must not contain NUL characters or unpaired surrogates$/);
    }
    const event = await ctx.app.inject({ method: 'GET', url: '/public/schedule/events/abc%00.ics' });
    expectRefused(event, 'file');
  });

  it('answers 400, not a crash, to a nested body carrying a NUL, and refuses a too deeply nested one before reading it', async () => {
    const cookie = await visitor();
    const nested = `{"message":${'['.repeat(20)}"x\\u0000"${']'.repeat(20)}}`;
    const response = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie, 'content-type': 'application/json' }, payload: nested });
    expect(response.statusCode).toBe(400);
    expect(response.json().field).toMatch(/^message\.0\.0\.0\.0\.0\.….0\.0\.0\.0$/);
    const deep = `{"message":${'['.repeat(30_000)}"x\\u0000"${']'.repeat(30_000)}}`;
    const tooDeep = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', headers: { cookie, 'content-type': 'application/json' }, payload: deep });
    expect(tooDeep.statusCode).toBe(400);
    expect(tooDeep.json().code).toBe('json_too_deep');
    expect(await count('public_chat_messages')).toBe(0);
  });
});
