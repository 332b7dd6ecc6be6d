import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { BudgetExhaustedEvent } from '../events.ts';
import { countedStatements } from '../test-support/counted-statements.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { cookieFrom, createTestContext, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';
import { OFFLINE_FALLBACK_NOTE } from './ask-pipeline.ts';
import { TokenBudget } from './token-budget.ts';

const silent = pino({ level: 'silent' });

const FAQ = '# Practical information\n\nBadges are picked up at the registration desk in Hall A.\n\nThe cloakroom is next to Room 101.\n';
// Saturday 14 March 2026, 18:00 in Chicago.
const SATURDAY_EVENING = new Date('2026-03-15T00:00:00Z');

describe('the spending cap (daily token budget)', () => {
  let fake: FakeOpenAI;
  let ctx: TestContext;
  let admin: string;
  let visitor: string;
  let exhausted: BudgetExhaustedEvent[];
  const time = manualClock(SATURDAY_EVENING);

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  beforeEach(async () => {
    fake.reset();
    fake.configure({ runDurationMs: 0 });
    time.set(SATURDAY_EVENING);
    ctx = await createTestContext({
      clock: time.clock,
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, CONVENTION_TIMEZONE: 'America/Chicago' },
    });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', public_chat_requests_per_minute: 60 });
    expect((await uploadKnowledge(ctx.app, admin, 'faq.md', FAQ)).statusCode).toBe(200);
    visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } }));
    exhausted = [];
    ctx.deps.events.subscribe('budget_exhausted', (event) => exhausted.push(event));
  });
  afterEach(() => ctx.close());

  const ask = (message: string) => ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message }, headers: { cookie: visitor } });
  const status = async () => (await ctx.app.inject({ method: 'GET', url: '/api/status', headers: { cookie: admin } })).json();
  const runsAtOpenAI = () => fake.journal.filter((entry) => entry.method === 'POST' && entry.path === '/v1/responses').length;

  it('counts the day\'s tokens and changes nothing while there is no cap', async () => {
    const reply = await ask('Where do I pick up badges?');
    expect(reply.statusCode).toBe(200);
    const question = await ctx.deps.database.db.selectFrom('public_chat_messages').select('total_tokens').where('role', '=', 'user').executeTakeFirstOrThrow();
    const budget = (await status()).token_budget;
    expect(budget).toMatchObject({ day: '2026-03-14', daily_budget: 0, spent_today: question.total_tokens, exhausted: false });
    expect(question.total_tokens).toBeGreaterThan(0);
  });

  it('answers with the offline assistant once the day\'s budget is spent, and with OpenAI again the next day', async () => {
    await ctx.deps.config.update({ daily_token_budget: 50 });
    const first = await ask('Where do I pick up badges?');
    expect(first.statusCode).toBe(200);
    expect(first.json().response).not.toContain(OFFLINE_FALLBACK_NOTE);
    expect(runsAtOpenAI()).toBe(1);
    expect(exhausted).toEqual([expect.objectContaining({ day: '2026-03-14', budget: 50, action: 'offline' })]);

    // Spent: the offline assistant answers from the same knowledge, and says so.
    const second = await ask('Where is the cloakroom?');
    expect(second.statusCode).toBe(200);
    expect(second.json().response).toContain('next to Room 101');
    expect(second.json().response).toContain(OFFLINE_FALLBACK_NOTE);
    expect(runsAtOpenAI()).toBe(1);
    // The visitor's conversation stays the OpenAI one for tomorrow.
    const session = await ctx.deps.database.db.selectFrom('public_chat_sessions').select('thread_id').executeTakeFirstOrThrow();
    expect(session.thread_id).toMatch(/^conv_/);

    const figures = await status();
    expect(figures.token_budget).toMatchObject({ exhausted: true, action: 'offline', daily_budget: 50 });
    const metrics = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { cookie: admin } });
    expect(metrics.body).toMatch(/^concierge_token_budget_exhausted 1$/m);

    // Announced once, however many answers follow.
    await ask('Where do I pick up badges?');
    expect(exhausted).toHaveLength(1);

    // Midnight in Chicago: a new day, a new budget.
    time.set(new Date('2026-03-15T06:00:00Z'));
    const nextDay = await ask('Where do I pick up badges?');
    expect(nextDay.json().response).not.toContain(OFFLINE_FALLBACK_NOTE);
    expect(runsAtOpenAI()).toBe(2);
  });

  it('refuses everyone until midnight when the operator chose to pause, the bot included', async () => {
    await ctx.deps.config.update({ daily_token_budget: 50, token_budget_action: 'pause' });
    expect((await ask('Where do I pick up badges?')).statusCode).toBe(200);
    const refused = await ask('Where is the cloakroom?');
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ success: false, code: 'budget_spent', error: ctx.deps.pipeline.pausedMessage() });
    const command = await ctx.deps.askCommands.submit({ user: { id: '111', username: 'attendee', global_name: null }, prompt: 'Where is the cloakroom?', whisper: false, type: 'ask' });
    expect(command.status).toBe('paused');

    // Raising the budget opens the chat again at once.
    await ctx.deps.config.update({ daily_token_budget: 1_000_000 });
    expect((await ask('Where is the cloakroom?')).statusCode).toBe(200);
  });

  it('adds the tokens of answers that end together in one statement, and announces the budget spent once', async () => {
    await ctx.deps.config.update({ daily_token_budget: 1000 });
    const { database, statements } = countedStatements(ctx.deps.database);
    const budget = new TokenBudget({ database, clock: time.clock, config: ctx.deps.config, events: ctx.deps.events, logger: silent, timeZone: () => 'America/Chicago' });
    await Promise.all(Array.from({ length: 10 }, () => budget.record(60)));
    expect(statements).toHaveLength(1);
    expect(budget.state()).toMatchObject({ day: '2026-03-14', spent_today: 600, exhausted: false });

    await Promise.all(Array.from({ length: 10 }, () => budget.record(60)));
    expect(budget.state()).toMatchObject({ spent_today: 1200, exhausted: true });
    expect(exhausted).toEqual([expect.objectContaining({ day: '2026-03-14', spent: 1200, budget: 1000 })]);
    const row = await ctx.deps.database.db.selectFrom('token_spend').select('tokens').where('day', '=', '2026-03-14').executeTakeFirstOrThrow();
    expect(Number(row.tokens)).toBe(1200);
  });
});
