import { sql } from 'kysely';
import { bumpCounters } from '@concierge/server/src/chat/chat.queries.ts';
import type { Database } from '@concierge/server/src/db/database.ts';
import { count, median, signIn, type Engine } from './engines.ts';
import type { BenchResult } from './report.ts';

const ITERATIONS = 40;
const SMALL = { messages: 1_000, sessions: 100 };
const LARGE = { messages: 1_000_000, sessions: 100_000 };
/** Today's traffic is the same in both runs: the large run only adds history. */
const TODAY_MESSAGES = 200;

/**
 * Adds sessions and messages with plain SQL (fast enough for a million rows):
 * history spread over the previous 29 days, most sessions long expired.
 */
async function seed(database: Database, from: { messages: number; sessions: number }, to: { messages: number; sessions: number }) {
  const { db } = database;
  const addSessions = to.sessions - from.sessions;
  const addMessages = to.messages - from.messages;
  if (database.dialect === 'sqlite') {
    await sql`
      with recursive seq(n) as (select cast(${from.sessions + 1} as integer) union all select n + 1 from seq where n < ${to.sessions})
      insert into public_chat_sessions (session_id, client_ip, user_agent, thread_id, message_count, prompt_tokens, completion_tokens, total_tokens,
        active, verified, first_seen_at, last_seen_at, expires_at, created_at, updated_at)
      select 'bench-' || n, '10.' || (n % 250) || '.' || (n / 250 % 250) || '.1', 'bench', 'thread_' || n, 10, 100, 50, 150, 1, 1,
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 29 + 1) || ' days'),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 29 + 1) || ' days', '+20 minutes'),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 29) || ' days'),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 29 + 1) || ' days'),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 29 + 1) || ' days')
      from seq`.execute(db);
    await sql`
      with recursive seq(n) as (select cast(${from.messages + 1} as integer) union all select n + 1 from seq where n < ${to.messages})
      insert into public_chat_messages (session_id, role, content, response, state, prompt_tokens, completion_tokens, total_tokens, client_ip,
        run_status, processing_duration_ms, created_at, updated_at)
      select 'bench-' || (n % cast(${to.sessions} as integer) + 1), case when n % 2 = 0 then 'user' else 'assistant' end, 'question ' || n, 'answer', 'completed', 10, 5, 15,
        '10.0.0.1', 'completed', 1200,
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 29 + 1) || ' days'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 29 + 1) || ' days')
      from seq`.execute(db);
  } else {
    await sql`
      insert into public_chat_sessions (session_id, client_ip, user_agent, thread_id, message_count, prompt_tokens, completion_tokens, total_tokens,
        active, verified, first_seen_at, last_seen_at, expires_at, created_at, updated_at)
      select 'bench-' || n, '10.' || (n % 250) || '.' || (n / 250 % 250) || '.1', 'bench', 'thread_' || n, 10, 100, 50, 150, true, true,
        now() - make_interval(days => n % 29 + 1), now() - make_interval(days => n % 29 + 1) + interval '20 minutes',
        now() - make_interval(days => n % 29), now() - make_interval(days => n % 29 + 1), now() - make_interval(days => n % 29 + 1)
      from generate_series(${from.sessions + 1}::int, ${to.sessions}::int) as n`.execute(db);
    // Fresh statistics before the messages go in: their foreign-key checks are
    // planned on what PostgreSQL believes the sessions table holds (100 rows
    // would mean a sequential scan per message).
    await sql`analyze public_chat_sessions`.execute(db);
    await sql`
      insert into public_chat_messages (session_id, role, content, response, state, prompt_tokens, completion_tokens, total_tokens, client_ip,
        run_status, processing_duration_ms, created_at, updated_at)
      select 'bench-' || (n % cast(${to.sessions} as integer) + 1), case when n % 2 = 0 then 'user' else 'assistant' end, 'question ' || n, 'answer', 'completed', 10, 5, 15,
        '10.0.0.1', 'completed', 1200, now() - make_interval(days => n % 29 + 1), now() - make_interval(days => n % 29 + 1)
      from generate_series(${from.messages + 1}::int, ${to.messages}::int) as n`.execute(db);
    await sql`analyze`.execute(db);
  }
  await bumpCounters(db, {
    session_count: addSessions,
    thread_count: addSessions,
    message_count: addMessages,
    'state:completed': addMessages,
    'run_status:completed': addMessages / 2,
    prompt_tokens: addSessions * 100,
    completion_tokens: addSessions * 50,
    total_tokens: addSessions * 150,
    processing_ms_sum: (addMessages / 2) * 1200,
    processing_count: addMessages / 2,
    session_duration_ms_sum: addSessions * 20 * 60_000,
  });
}

/** Today's traffic: the same handful of messages in both runs. */
async function seedToday(database: Database) {
  const now = new Date().toISOString();
  const rows = Array.from({ length: TODAY_MESSAGES }, (_, i) => ({
    session_id: 'bench-1',
    role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
    content: 'today',
    state: 'completed',
    created_at: now,
    updated_at: now,
  }));
  for (let i = 0; i < rows.length; i += 50) await database.db.insertInto('public_chat_messages').values(rows.slice(i, i + 50)).execute();
}

/** /api/status with 1,000,000 messages and 100,000 sessions against 1,000 messages, same run and database. */
export async function benchStatus(engine: Engine): Promise<BenchResult> {
  const { deps, app, cleanup } = await engine.open();
  try {
    const cookie = await signIn(app);
    const status = async () => {
      const reply = await app.inject({ method: 'GET', url: '/api/status', headers: { cookie } });
      if (reply.statusCode !== 200) throw new Error(`/api/status answered ${reply.statusCode}: ${reply.body}`);
    };
    await seed(deps.database, { messages: 0, sessions: 0 }, SMALL);
    await seedToday(deps.database);
    const small = await median(status, ITERATIONS);
    const seedStart = Date.now();
    await seed(deps.database, SMALL, LARGE);
    const seedSeconds = (Date.now() - seedStart) / 1000;
    const large = await median(status, ITERATIONS);
    return {
      name: `/api/status on ${engine.name}`,
      measure: `median of ${ITERATIONS} requests with ${count(LARGE.messages)} messages and ${count(LARGE.sessions)} sessions`,
      value: large,
      baseline: small,
      baselineMeasure: `same with ${count(SMALL.messages)} messages and ${SMALL.sessions} sessions`,
      unit: 'ms',
      ratio: large / small,
      maxRatio: 1.5,
      notes: [`${TODAY_MESSAGES} of the messages are from today in both runs; seeding the large set took ${seedSeconds.toFixed(1)} s`],
    };
  } finally {
    await cleanup();
  }
}
