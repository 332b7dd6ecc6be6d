import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

const HOUR = 3_600_000;
const NOW = new Date('2026-03-14T18:00:00Z');

describe('users, their history and the Discord lists (API)', () => {
  let ctx: TestContext;
  let admin: string;
  const time = manualClock(NOW);

  beforeEach(async () => {
    time.set(NOW);
    ctx = await createTestContext({ clock: time.clock });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ user_ask_command_limit_6h: 5 });
  });
  afterEach(() => ctx.close());

  const db = () => ctx.deps.database.db;
  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: { cookie: admin } });
  const patch = (id: string, payload: unknown) => ctx.app.inject({ method: 'PATCH', url: `/api/user/${id}`, payload: payload as object, headers: { cookie: admin } });

  async function command(userId: string, msAgo: number, values: { state?: string; total_tokens?: number; run_status?: string; whisper?: boolean; thread_id?: string; prompt?: string; response?: string } = {}) {
    const at = new Date(NOW.getTime() - msAgo).toISOString();
    const row = await db()
      .insertInto('ask_commands')
      .values({ user_id: userId, prompt: values.prompt ?? 'a question', type: 'ask', step: 'list_message', state: values.state ?? 'completed', total_tokens: values.total_tokens ?? 0, prompt_tokens: values.total_tokens ?? 0, run_status: values.run_status ?? null, whisper: values.whisper ?? false, thread_id: values.thread_id ?? null, response: values.response ?? null, token: 'secret-interaction-token', interaction_id: `i${Math.random()}`, created_at: at, updated_at: at })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  async function people() {
    for (const [id, username] of [
      ['100', 'charlie'],
      ['200', 'alice'],
      ['300', 'bob'],
    ] as const) {
      await ctx.deps.users.seen({ id, username, global_name: username.toUpperCase() });
    }
  }

  it('lists users by username with a true total and their usage in both windows', async () => {
    await people();
    await command('200', HOUR, { total_tokens: 40, run_status: 'completed', thread_id: 't1' });
    await command('200', 2 * HOUR, { total_tokens: 60, run_status: 'completed', whisper: true, thread_id: 't1' });
    await command('200', 7 * HOUR, { total_tokens: 10, run_status: 'completed', thread_id: 't0' });
    await command('200', 3 * HOUR, { state: 'failed' });
    await command('200', 25 * HOUR, { total_tokens: 99, run_status: 'completed' });

    const page = await get('/api/users?limit=2');
    expect(page.statusCode).toBe(200);
    expect(page.headers['x-total-count']).toBe('3');
    const users = page.json();
    expect(users.map((user: { username: string }) => user.username)).toEqual(['alice', 'bob']);
    const alice = users[0];
    expect(alice).toMatchObject({ id: '200', global_name: 'ALICE', billable_6h: 2, attempted_6h: 3, limit_6h: 5, billable_24h: 3, attempted_24h: 4, limit_24h: 20 });
    expect(alice.stats.ask_command_usage['6h']).toMatchObject({ remaining: 3, total_tokens: 100, whisper_count: 1, thread_count: 1, state_counts: { completed: 2, failed: 1 } });
    expect(alice.stats.ask_command_usage['24h']).toMatchObject({ total_tokens: 110, thread_count: 2 });
    expect(alice.stats.ask_command_usage.commands_available).toBe(3);
    expect(users[1]).toMatchObject({ username: 'bob', billable_6h: 0, attempted_24h: 0 });

    const desc = (await get('/api/users?order=desc&offset=1&limit=25')).json();
    expect(desc.map((user: { username: string }) => user.username)).toEqual(['bob', 'alice']);
    const bare = (await get('/api/users?include_stats=false')).json();
    expect(bare[0].stats).toBeUndefined();
    expect(bare[0].billable_6h).toBeUndefined();

    const reload = await ctx.app.inject({ method: 'POST', url: '/api/users/reload', headers: { cookie: admin } });
    expect(reload.statusCode).toBe(200);
    expect(reload.json()).toHaveLength(3);

    for (const query of ['limit=0', 'limit=101', 'order=up', 'offset=-1', 'include_stats=maybe']) {
      const bad = await get(`/api/users?${query}`);
      expect(bad.statusCode, query).toBe(400);
      expect(bad.json().error, query).toMatch(/^(limit|order|offset|include_stats):/);
    }
  });

  it('leaves deleted users out of the page and the total, both ways round', async () => {
    await people();
    await db().updateTable('users').set({ deleted_at: NOW.toISOString() }).where('id', '=', '300').execute();
    const asc = await get('/api/users');
    expect(asc.headers['x-total-count']).toBe('2');
    expect(asc.json().map((user: { username: string }) => user.username)).toEqual(['alice', 'charlie']);
    const desc = await get('/api/users?order=desc&limit=1&offset=1');
    expect(desc.headers['x-total-count']).toBe('2');
    expect(desc.json().map((user: { username: string }) => user.username)).toEqual(['alice']);
    expect((await get('/api/status')).json().users_seen).toBe(2);
  });

  it('shows a user\'s history with the votes on each answer', async () => {
    await people();
    const first = await command('200', 2 * HOUR, { prompt: 'Where is Hall B?', response: 'East wing.', whisper: true });
    const second = await command('200', HOUR, { prompt: 'When is the contest?', state: 'failed' });
    const now = NOW.toISOString();
    await db()
      .insertInto('ask_command_feedback')
      .values([
        { ask_command_id: first, user_id: '200', type: 'good', description: null, created_at: now, updated_at: now },
        { ask_command_id: first, user_id: '300', type: 'good', description: null, created_at: now, updated_at: now },
        { ask_command_id: first, user_id: '300', type: 'other', description: 'too short', created_at: now, updated_at: now },
      ])
      .execute();

    const history = (await get('/api/user/200/history')).json();
    expect(history.map((item: { ask_command_id: number }) => item.ask_command_id)).toEqual([second, first]);
    expect(history[1]).toMatchObject({ prompt: 'Where is Hall B?', response: 'East wing.', whisper: true, username: 'alice', global_name: 'ALICE', user_id: '200', feedback: { good: 2, other: 1 } });
    expect(history[1].reports).toBeUndefined();
    expect(history[0]).toMatchObject({ state: 'failed', response: null, feedback: {} });

    const withReports = (await get('/api/user/200/history?sort=asc&include_reports=true&limit=1')).json();
    expect(withReports).toHaveLength(1);
    expect(withReports[0].reports.map((report: { type: string; user_id: string }) => `${report.user_id}:${report.type}`)).toEqual(['200:good', '300:good', '300:other']);

    const bob = (await get('/api/users?limit=25')).json().find((user: { id: string }) => user.id === '300');
    expect(bob.stats.reports).toEqual({ good: 1, other: 1 });

    expect((await get('/api/user/999/history')).statusCode).toBe(404);
    expect((await get('/api/user/not-an-id/history')).statusCode).toBe(400);
  });

  it('edits only the fields sent, validates them as SPEC §5 says, and resets to the global value with null', async () => {
    await people();
    const edited = await patch('200', { priority: true, request_limit_6h: 2, openai_truncation_strategy_type: 'last_messages', openai_truncation_strategy_last_messages: 4, assistant_poll_interval: '2s' });
    expect(edited.statusCode).toBe(200);
    expect(edited.json()).toMatchObject({ id: '200', priority: true, ignored: false, request_limit_6h: 2, limit_6h: 2, limit_24h: 8, openai_truncation_strategy_type: 'last_messages', assistant_poll_interval: '2s' });
    const stored = await ctx.deps.users.get('200');
    expect(stored).toMatchObject({ username: 'alice', donated: false, openai_max_completion_tokens: null });

    const cases: [unknown, string][] = [
      [{ request_limit_6h: 0 }, 'request_limit_6h'],
      [{ request_limit_24h: 1.5 }, 'request_limit_24h'],
      [{ request_limit_6h: '3' }, 'request_limit_6h'],
      [{ openai_max_completion_tokens: -1 }, 'openai_max_completion_tokens'],
      [{ openai_truncation_strategy_type: 'first_messages' }, 'openai_truncation_strategy_type'],
      [{ openai_truncation_strategy_last_messages: 0 }, 'openai_truncation_strategy_last_messages'],
      [{ assistant_max_poll_interval: 'soon' }, 'assistant_max_poll_interval'],
      [{ username: 'mallory' }, 'cannot be changed'],
      [{ shoe_size: 44 }, 'unknown field shoe_size'],
      [{ request_limit_24h: 1 }, 'request_limit_24h'],
      [[1, 2], 'object'],
    ];
    for (const [payload, text] of cases) {
      const reply = await patch('200', payload);
      expect(reply.statusCode, JSON.stringify(payload)).toBe(400);
      expect(reply.json().error, JSON.stringify(payload)).toContain(text);
    }
    expect(await ctx.deps.users.get('200')).toMatchObject({ request_limit_6h: 2, username: 'alice' });

    const reset = await patch('200', { request_limit_6h: null, assistant_poll_interval: '' });
    expect(reset.json()).toMatchObject({ request_limit_6h: null, limit_6h: 5, assistant_poll_interval: null });
    expect((await patch('999', { priority: true })).statusCode).toBe(404);
  });

  it('applies a user\'s own settings to their runs', async () => {
    await people();
    await patch('200', { openai_max_completion_tokens: 300, assistant_additional_instructions: 'Answer in French.', openai_truncation_strategy_type: 'last_messages', openai_truncation_strategy_last_messages: 2 });
    const user = await ctx.deps.users.get('200');
    const settings = ctx.deps.pipeline.runSettings(ctx.deps.users.runOverrides(user));
    expect(settings).toMatchObject({ maxOutputTokens: 300, truncation: { type: 'last_messages', lastMessages: 2 } });
    expect(settings.instructions).toContain('Answer in French.');
    const global = ctx.deps.pipeline.runSettings(ctx.deps.users.runOverrides(await ctx.deps.users.get('300')));
    expect(global).toMatchObject({ maxOutputTokens: 0, truncation: { type: 'auto' } });
  });

  it('lists ask commands and Discord messages as arrays with filters and a total, never the interaction token', async () => {
    await people();
    const a = await command('200', 3 * HOUR, { whisper: true, prompt: 'private one' });
    await command('200', 2 * HOUR, { state: 'failed' });
    const c = await command('300', HOUR);
    const all = await get('/api/ask_commands');
    expect(all.statusCode).toBe(200);
    expect(all.headers['x-total-count']).toBe('3');
    const rows = all.json();
    expect(rows[0]).toMatchObject({ id: c, user_id: '300', user: { id: '300', username: 'bob', global_name: 'BOB' } });
    expect(JSON.stringify(rows)).not.toContain('secret-interaction-token');
    expect(rows[0]).not.toHaveProperty('token');

    const filtered = await get('/api/ask_commands?user_id=200&whisper=true&order=asc');
    expect(filtered.json().map((row: { id: number }) => row.id)).toEqual([a]);
    expect(filtered.headers['x-total-count']).toBe('1');
    expect((await get('/api/ask_commands?state=failed')).json()).toHaveLength(1);
    const dated = await get(`/api/ask_commands?date_from=${encodeURIComponent(new Date(NOW.getTime() - 2.5 * HOUR).toISOString())}`);
    expect(dated.headers['x-total-count']).toBe('2');
    const paged = await get('/api/ask_commands?limit=1&offset=1');
    expect(paged.json()).toHaveLength(1);
    expect(paged.headers['x-total-count']).toBe('3');
    for (const query of ['state=sleeping', 'user_id=bob', 'whisper=perhaps', 'date_from=yesterday']) {
      expect((await get(`/api/ask_commands?${query}`)).statusCode, query).toBe(400);
    }

    const now = NOW.toISOString();
    await db()
      .insertInto('discord_messages')
      .values([
        { message_id: '500000000000000001', content: '@Concierge where is Hall B?', channel_id: '700000000000000001', user_id: '200', username: 'alice', created_at: now, updated_at: now },
        { message_id: '500000000000000002', content: 'thanks!', channel_id: '700000000000000002', user_id: '300', username: 'bob', referenced_message_id: '500000000000000001', created_at: now, updated_at: now },
      ])
      .execute();
    const messages = await get('/api/discord_messages?user_id=300');
    expect(messages.headers['x-total-count']).toBe('1');
    expect(messages.json()).toEqual([expect.objectContaining({ message_id: '500000000000000002', referenced_message_id: '500000000000000001', content: 'thanks!' })]);
    expect((await get('/api/discord_messages')).json()).toHaveLength(2);
  });

  it('counts users seen and queued commands on the Status screen and the health record', async () => {
    await people();
    await command('200', HOUR, { state: 'queued' });
    const status = (await get('/api/status')).json();
    expect(status).toMatchObject({ users_seen: 3, current_requests_queued: 1 });
    const health = (await ctx.app.inject({ method: 'GET', url: '/healthz' })).json();
    expect(health.queue_size).toBe(1);
  });

  it('keeps the call logs to the public chat by default, with an origin filter for ask commands', async () => {
    const upload = await uploadKnowledge(ctx.app, admin, 'notes.md', 'The lost and found is at the registration desk.');
    expect(upload.statusCode).toBe(200);
    const submitted = await ctx.deps.askCommands.submit({ user: { id: '200', username: 'alice', global_name: null }, prompt: 'Where is the lost and found?', whisper: false, type: 'ask' });
    await ctx.deps.askWorker.drain();
    const visitor = (await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } })).cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    expect((await ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'Where is the lost and found?' }, headers: { cookie: visitor } })).statusCode).toBe(200);

    const publicOnly = (await get('/api/public_chat_openai_create_run')).json().logs;
    expect(publicOnly).toHaveLength(1);
    expect(publicOnly[0].ask_command_id).toBeNull();
    const askOnly = (await get('/api/public_chat_openai_create_run?origin=ask_command')).json().logs;
    expect(askOnly.map((log: { ask_command_id: number }) => log.ask_command_id)).toEqual([submitted.command.id]);
    expect((await get(`/api/public_chat_openai_retrieve_run?ask_command_id=${submitted.command.id}`)).json().logs.length).toBeGreaterThan(0);
    expect((await get('/api/public_chat_openai_create_run?origin=all')).json().logs).toHaveLength(2);
    expect((await get('/api/public_chat_openai_create_run?origin=discord')).statusCode).toBe(400);
  });
});
