import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../db/database.ts';
import { countedStatements } from '../test-support/counted-statements.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { cookieFrom, createTestContext, signIn, testDatabaseKind, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';
import { ProviderLogWriter } from './provider-log-writer.ts';

const row = (at: string) => ({
  session_id: 'writer-test',
  public_chat_message_id: null,
  client_ip: null,
  user_agent: null,
  operation: null,
  request_started: at,
  request_ended: at,
  request_body: '{"input":"hello"}',
  response_body: '{"id":"resp_1"}',
  response_headers: null,
  error: null,
});

describe('provider call logs written in batches', () => {
  let fake: FakeOpenAI;
  let ctx: TestContext;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());
  beforeEach(async () => {
    fake.reset();
    ctx = await createTestContext({ env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_MODEL: 'gpt-5-mini' } });
  });
  afterEach(() => ctx.close());
  const db = () => ctx.deps.database.db;
  const logged = async (table: 'openai_create_run_logs' | 'openai_retrieve_run_logs' | 'openai_list_messages_logs', sessionId?: string) =>
    (await db().selectFrom(table).selectAll().$if(sessionId !== undefined, (q) => q.where('session_id', '=', sessionId!)).execute()).length;

  it('logs the calls of an answer still running within a moment, and every call of an answer once it is given', async () => {
    const admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms', assistant_max_poll_interval: '200ms' });
    expect((await uploadKnowledge(ctx.app, admin, 'faq.md', '# Badges\n\nBadges are at the registration desk.\n')).statusCode).toBe(200);
    const visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } }));
    fake.configure({ runDurationMs: 1500 });
    const asking = ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: 'Where are badges?' }, headers: { cookie: visitor } });
    // The run is created at once and runs 1.5 s: its creation is logged long before the answer comes.
    let createdLogged = 0;
    for (let tries = 0; tries < 20 && createdLogged === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      createdLogged = await logged('openai_create_run_logs');
    }
    expect(createdLogged).toBe(1);
    const question = await db().selectFrom('public_chat_messages').select('state').where('role', '=', 'user').executeTakeFirstOrThrow();
    expect(question.state).toBe('processing');

    const reply = await asking;
    expect(reply.json()).toMatchObject({ success: true });
    // Once the answer is given, each of its steps is in the log tables (nothing left waiting in memory).
    expect(await logged('openai_retrieve_run_logs')).toBeGreaterThanOrEqual(1);
    expect(await logged('openai_list_messages_logs')).toBe(1);
  });

  it('writes a batch in one transaction, and when the database refuses one row, still writes the others', async () => {
    const writer = new ProviderLogWriter({ database: ctx.deps.database, logger: pino({ level: 'silent' }), flushEveryMs: 60_000 });
    const at = new Date().toISOString();
    writer.add('create_run', row(at));
    writer.add('list_messages', row(at));
    await writer.flush();
    expect([await logged('openai_create_run_logs', 'writer-test'), await logged('openai_list_messages_logs', 'writer-test')]).toEqual([1, 1]);

    // A row the database refuses (no start time) in a batch spanning two tables: the batch's write fails as a whole,
    // the table without it is written on its own, and the refused chunk is tried again a bounded number of times.
    writer.add('create_run', { ...row(at), request_started: null as unknown as string });
    writer.add('list_messages', row(at));
    await writer.flush();
    expect([await logged('openai_create_run_logs', 'writer-test'), await logged('openai_list_messages_logs', 'writer-test')]).toEqual([1, 2]);
    await writer.flush();
    await writer.flush();
    writer.add('create_run', row(at));
    await writer.flush();
    // Dropped after its third refusal; the row after it is written.
    expect(await logged('openai_create_run_logs', 'writer-test')).toBe(2);
    await writer.close();
  });

  it('lets answers that end in the same turn share one write', async () => {
    const { database: counted, statements } = countedStatements(ctx.deps.database);
    let transactions = 0;
    const database: Database = {
      ...counted,
      transaction: (work) => {
        transactions++;
        return counted.transaction(work);
      },
    };
    const writer = new ProviderLogWriter({ database, logger: pino({ level: 'silent' }), flushEveryMs: 60_000 });
    try {
      const at = new Date().toISOString();
      // Three answers end in the same turn of the event loop, each in a callback of its own (as replies from the
      // provider come in), and each flushes its own two calls.
      const flushes = [1, 2, 3].map(
        () =>
          new Promise<void>((resolve) =>
            setImmediate(() => {
              writer.add('create_run', row(at));
              writer.add('list_messages', row(at));
              resolve(writer.flush());
            }),
          ),
      );
      await Promise.all(flushes);
      expect([await logged('openai_create_run_logs', 'writer-test'), await logged('openai_list_messages_logs', 'writer-test')]).toEqual([3, 3]);
      // One write for the three: on PostgreSQL a single statement for both tables, on SQLite one transaction.
      if (testDatabaseKind() === 'postgres') expect({ statements: statements.length, transactions }).toEqual({ statements: 1, transactions: 0 });
      else expect(transactions).toBe(1);
    } finally {
      await writer.close();
    }
  });

  it('writes what is waiting when it closes (a stopping process loses no call log)', async () => {
    const writer = new ProviderLogWriter({ database: ctx.deps.database, logger: pino({ level: 'silent' }), flushEveryMs: 60_000 });
    const at = new Date().toISOString();
    for (let i = 0; i < 250; i++) writer.add('create_run', row(at));
    writer.add('list_messages', row(at));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await logged('openai_create_run_logs', 'writer-test')).toBe(0);
    await writer.close();
    expect(await logged('openai_create_run_logs', 'writer-test')).toBe(250);
    expect(await logged('openai_list_messages_logs', 'writer-test')).toBe(1);
    // After closing, a late call's row is written at once.
    writer.add('create_run', row(at));
    await writer.flush();
    expect(await logged('openai_create_run_logs', 'writer-test')).toBe(251);
  });

  it.runIf(testDatabaseKind() === 'postgres')('keeps a streamed run\'s log of a few kilobytes in its row, neither compressed nor moved to the TOAST table', async () => {
    const writer = new ProviderLogWriter({ database: ctx.deps.database, logger: pino({ level: 'silent' }), flushEveryMs: 60_000 });
    const at = new Date().toISOString();
    // About what a streamed run's log holds: its request with the instructions, and the response.created event with them again.
    const instructions = 'Answer only from the convention schedule and the files you can search. '.repeat(20);
    const request = JSON.stringify({ model: 'gpt-5-mini', background: true, store: true, instructions, stream: true });
    const response = JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'queued', instructions, output: [] } });
    expect(request.length + response.length).toBeGreaterThan(3000);
    writer.add('create_run', { ...row(at), request_body: request, response_body: response });
    await writer.close();
    // Stored whole (its size with the 4-byte length, not less) and nothing in the TOAST table.
    const { rows } = await sql<{ whole: boolean; toasted: number }>`
      select pg_column_size(response_body) = octet_length(response_body) + 4 as whole,
        pg_relation_size((select reltoastrelid from pg_class where oid = 'openai_create_run_logs'::regclass)) as toasted
      from openai_create_run_logs where session_id = 'writer-test'`.execute(db());
    expect(rows).toEqual([{ whole: true, toasted: 0 }]);
    expect(await db().selectFrom('openai_create_run_logs').select(['request_body', 'response_body']).where('session_id', '=', 'writer-test').executeTakeFirst()).toEqual({ request_body: request, response_body: response });
  });
});
