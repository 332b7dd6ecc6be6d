import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FINAL_RUN_STATUSES } from '../provider.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../test-support/fake-openai/fake-openai.ts';
import { cookieFrom, createTestContext, signIn, uploadKnowledge, type TestContext } from '../../test-support/test-context.ts';

const FAQ = '# Practical information\n\nBadges are picked up at the registration desk in Hall A.\n\nThe cloakroom is next to Room 101.\n';

describe('the OpenAI provider through the real SDK', () => {
  let fake: FakeOpenAI;
  let ctx: TestContext;
  let admin: string;
  let visitor: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  beforeEach(async () => {
    fake.reset();
    fake.configure({ runDurationMs: 30 });
    ctx = await createTestContext({ env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_MODEL: 'gpt-5-mini' } });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', assistant_max_poll_interval: '200ms' });
    expect((await uploadKnowledge(ctx.app, admin, 'faq.md', FAQ)).statusCode).toBe(200);
    visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } }));
  });
  afterEach(() => ctx.close());

  const ask = (message: string) => ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message }, headers: { cookie: visitor } });
  const db = () => ctx.deps.database.db;

  it('answers from the vector store with its source, logging every step with real bodies', async () => {
    const reply = await ask('Where do I pick up badges?');
    expect(reply.statusCode).toBe(200);
    expect(reply.json()).toMatchObject({ success: true, sources: [{ filename: 'faq.md' }] });
    expect(reply.json().response).toContain('registration desk in Hall A');

    const question = await db().selectFrom('public_chat_messages').selectAll().where('role', '=', 'user').executeTakeFirstOrThrow();
    expect(question.run_id).toMatch(/^resp_/);
    expect(question.run_status).toBe('completed');
    expect(question.total_tokens).toBe(question.prompt_tokens + question.completion_tokens);
    expect(question.total_tokens).toBeGreaterThan(0);

    const createRun = await db().selectFrom('openai_create_run_logs').selectAll().executeTakeFirstOrThrow();
    expect(JSON.parse(createRun.request_body!)).toMatchObject({ model: 'gpt-5-mini', background: true, store: true, truncation: 'auto', tools: [{ type: 'file_search' }] });
    expect(JSON.parse(createRun.request_body!).conversation).toMatch(/^conv_/);
    expect(JSON.parse(createRun.response_headers!)).toHaveProperty('x-request-id');
    expect(createRun).toMatchObject({ public_chat_message_id: question.id, error: null });
    for (const table of ['openai_create_thread_logs', 'openai_create_message_logs', 'openai_retrieve_run_logs', 'openai_list_messages_logs'] as const) {
      const rows = await db().selectFrom(table).selectAll().where('public_chat_message_id', '=', question.id).execute();
      expect(rows.length, table).toBeGreaterThan(0);
      expect(rows[0]!.response_body, table).toBeTruthy();
    }
    // A listing is logged as the provider sent it, once, without the SDK's page internals.
    const listed = await db().selectFrom('openai_list_messages_logs').selectAll().where('public_chat_message_id', '=', question.id).executeTakeFirstOrThrow();
    const listedBody = JSON.parse(listed.response_body!);
    expect(Object.keys(listedBody).sort()).toEqual(['data', 'has_more', 'last_id', 'object']);
    expect(listedBody.data).toContainEqual(expect.objectContaining({ type: 'message', role: 'assistant' }));
    // The instructions are the configured ones.
    const config = ctx.deps.config.get();
    expect(JSON.parse(createRun.request_body!).instructions).toContain(config.assistant_instructions.slice(0, 40));
  });

  it('keeps one conversation per session', async () => {
    await ask('Where do I pick up badges?');
    await ask('Where is the cloakroom?');
    expect(fake.state.conversations.size).toBe(1);
    const [conversation] = [...fake.state.conversations.values()];
    expect(conversation!.items.map((item) => item.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('shows a provider 500 to the user as a server error and records it on the message', async () => {
    fake.failNext({ method: 'POST', path: '/v1/responses', status: 500, count: 10 });
    const reply = await ask('Where do I pick up badges?');
    expect(reply.statusCode).toBe(502);
    expect(reply.json()).toMatchObject({ success: false, code: 'provider_error' });
    const question = await db().selectFrom('public_chat_messages').selectAll().executeTakeFirstOrThrow();
    expect(question).toMatchObject({ state: 'failed', content: 'Where do I pick up badges?' });
    expect(question.error).toContain('OpenAI 500 error');
    const log = await db().selectFrom('openai_create_run_logs').selectAll().executeTakeFirstOrThrow();
    expect(log.error).toContain('500');
    const session = await db().selectFrom('public_chat_sessions').selectAll().executeTakeFirstOrThrow();
    expect(session.error).toContain('OpenAI 500 error');
  });

  it('retries a passing 429 and still answers', async () => {
    fake.failNext({ method: 'POST', path: '/v1/responses', status: 429, count: 1 });
    const reply = await ask('Where do I pick up badges?');
    expect(reply.statusCode).toBe(200);
  });

  it('reports a failed run with its status', async () => {
    fake.configure({ finalStatus: 'failed' });
    const reply = await ask('Where do I pick up badges?');
    expect(reply.statusCode).toBe(502);
    const question = await db().selectFrom('public_chat_messages').selectAll().executeTakeFirstOrThrow();
    expect(question).toMatchObject({ state: 'failed', run_status: 'failed' });
    expect(question.error).toContain('The model failed to generate a response');
  });

  it('sends only the last N messages with last_messages truncation, and keeps the conversation whole', async () => {
    await ctx.deps.config.update({ openai_truncation_strategy_type: 'last_messages', openai_truncation_strategy_last_messages: 2, openai_max_completion_tokens: 300 });
    await ask('Where do I pick up badges?');
    await ask('Where is the cloakroom?');
    const runs = fake.journal.filter((entry) => entry.method === 'POST' && entry.path === '/v1/responses');
    const last = runs.at(-1)!.body as { input: { role: string; content: string }[]; conversation?: string; max_output_tokens: number };
    expect(last.conversation).toBeUndefined();
    expect(last.max_output_tokens).toBe(300);
    expect(last.input.map((message) => message.role)).toEqual(['assistant', 'user']);
    expect(last.input[1]!.content).toBe('Where is the cloakroom?');
    const [conversation] = [...fake.state.conversations.values()];
    expect(conversation!.items.map((item) => item.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it("reads a question's answer from the items after it, not a later question's", async () => {
    const { provider } = ctx.deps.assistant;
    const call = { request: () => {}, response: () => {} };
    const settings = ctx.deps.assistant.runSettings();
    const thread = await provider.createThread(call);
    const ended = async (runId: string) => {
      for (;;) {
        const state = await provider.retrieveRun(call, thread, runId);
        if (FINAL_RUN_STATUSES.has(state.status)) return state;
        await sleep(10);
      }
    };
    const badges = await provider.createMessage(call, thread, 'Where do I pick up badges?');
    const badgesRun = await ended((await provider.createRun(call, thread, settings)).id);
    const cloakroom = await provider.createMessage(call, thread, 'Where is the cloakroom?');
    const cloakroomRun = await ended((await provider.createRun(call, thread, settings)).id);

    expect((await provider.listMessages(call, thread, badgesRun, badges)).text).toContain('registration desk in Hall A');
    expect((await provider.listMessages(call, thread, cloakroomRun, cloakroom)).text).toContain('Room 101');
    // Without its question (a run recovered from a row stored without it), the newest answer is the one read.
    expect((await provider.listMessages(call, thread, badgesRun)).text).toContain('Room 101');
    const listed = fake.journal.filter((entry) => entry.method === 'GET' && entry.path === `/v1/conversations/${thread}/items`);
    expect(listed[0]!.query).toMatchObject({ after: badges, order: 'asc' });
  });

  it('creates its vector store once and remembers it', async () => {
    expect(fake.state.vectorStores.size).toBe(1);
    await uploadKnowledge(ctx.app, admin, 'more.md', 'More facts.');
    const list = await ctx.app.inject({ method: 'GET', url: '/api/openai/vector_stores', headers: { cookie: admin } });
    expect(list.json()).toMatchObject({ provider: 'openai', vector_stores: [{ file_count: 2 }] });
    expect(list.json().files.map((file: { filename: string }) => file.filename).sort()).toEqual(['faq.md', 'more.md']);
    expect(fake.state.vectorStores.size).toBe(1);
  });
});
