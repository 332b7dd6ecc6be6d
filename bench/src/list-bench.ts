import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql, type RawBuilder } from 'kysely';
import pg from 'pg';
import type { Database } from '@concierge/server/src/db/database.ts';
import { count, interleavedMedians, signIn, type Engine, type OpenProduct } from './engines.ts';
import type { BenchResult } from './report.ts';

const SMALL = 20_000;
const LARGE = 1_000_000;
const DEEP_OFFSET = 10_000;
const PAGE = 25;
/** Interleaved rounds timed (after as many warm-up rounds). */
const ROUNDS = 100;
/** One row every two seconds, ending now: a million rows span about 23 days. */
const ROW_SECONDS = 2;

type Dialect = Database['dialect'];
type Param = string | number | boolean;

/**
 * One monitoring list under test: how to grow its table, the filter its
 * pages use, and the hand-written SQL a bare route runs for the same rows.
 * Filters keep most rows (about 90 % or all), so a page at offset 10,000
 * holds 25 rows even with 20,000 rows in the table.
 */
interface ListCase {
  table: string;
  route: string;
  rowsKey: string;
  /** The filter, for the report. */
  filter: string;
  /** The filter as query parameters; `days` is the span of the seeded rows (convention dates). */
  query(days: { from: string; to: string }): string;
  /** Rows the table under test refers to (a few, in other tables). */
  prepare?(database: Database): Promise<void>;
  /** `insert … select` of rows `from`+1 … `to`; `n` is the row number, `at` its creation time. */
  insert(dialect: Dialect, seq: { n: RawBuilder<number>; at: RawBuilder<string> }): RawBuilder<unknown>;
  /** The bare route's query; its last two parameters are limit and offset. */
  bareSql: string;
  bareParams: (window: { from: string; before: string }) => Param[];
  /** Second query the product route makes for the same page (messages: their feedback). */
  bareFollowUp?(run: (text: string, params: Param[]) => Promise<Record<string, unknown>[]>, rows: Record<string, unknown>[]): Promise<Record<string, unknown>[]>;
}

const MESSAGE_COLUMNS =
  'id, session_id, role, content, response, state, prompt_tokens, completion_tokens, total_tokens, client_ip, user_agent, openai_message_id, run_id, run_status, processing_duration_ms, response_latency_ms, created_at, updated_at, error';
const LOG_COLUMNS = 'id, session_id, public_chat_message_id, client_ip, user_agent, request_started, request_ended, request_body, response_body, response_headers, error, created_at, updated_at';
const FEEDBACK_COLUMNS = 'id, public_chat_message_id, session_id, type, description, detail, client_ip, user_agent, created_at';
const SESSION_COLUMNS =
  'id, session_id, client_ip, user_agent, referer, thread_id, message_count, total_tokens, verified, first_seen_at, last_seen_at, expires_at, created_at, updated_at, error';

const boolean = (dialect: Dialect, expression: RawBuilder<unknown>) => (dialect === 'postgres' ? expression : sql`(case when ${expression} then 1 else 0 end)`);
const plusSeconds = (dialect: Dialect, at: RawBuilder<string>, seconds: number) =>
  dialect === 'postgres' ? sql`(${at} + make_interval(secs => ${seconds}))` : sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${at}, '+${sql.raw(String(seconds))} seconds')`;

async function insertSessions(database: Database, total: number) {
  await database.db
    .insertInto('public_chat_sessions')
    .values(
      Array.from({ length: total }, (_, i) => ({
        session_id: `parent-${i + 1}`,
        first_seen_at: new Date().toISOString(),
        last_seen_at: new Date().toISOString(),
        expires_at: new Date().toISOString(),
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
      })),
    )
    .execute();
}

const CASES: ListCase[] = [
  {
    table: 'public_chat_messages',
    route: '/api/public_chat_messages',
    rowsKey: 'messages',
    filter: 'date_from & date_to (the whole convention)',
    query: (days) => `date_from=${days.from}&date_to=${days.to}`,
    prepare: (database) => insertSessions(database, 100),
    insert: (dialect, { n, at }) => sql`
      insert into public_chat_messages (session_id, role, content, response, state, prompt_tokens, completion_tokens, total_tokens, client_ip,
        run_status, processing_duration_ms, created_at, updated_at)
      select 'parent-' || (n % 100 + 1), case when n % 2 = 0 then 'user' else 'assistant' end, 'question ' || n, 'answer ' || n, 'completed',
        10, 5, 15, '10.0.0.1', 'completed', 1200, ${at}, ${at}`,
    bareSql: `select ${MESSAGE_COLUMNS} from public_chat_messages where created_at >= $1 and created_at < $2 order by created_at desc, id desc limit $3 offset $4`,
    bareParams: ({ from, before }) => [from, before],
    async bareFollowUp(run, rows) {
      const ids = rows.filter((row) => row.role === 'user').map((row) => Number(row.id));
      const feedback = ids.length
        ? await run(`select ${FEEDBACK_COLUMNS} from public_chat_feedback where public_chat_message_id in (${ids.map((_, i) => `$${i + 1}`).join(', ')}) order by id`, ids)
        : [];
      return rows.map((row) => {
        const items = feedback.filter((item) => item.public_chat_message_id === row.id);
        return { ...row, feedback_count: items.length, feedback: items };
      });
    },
  },
  {
    table: 'public_chat_sessions',
    route: '/api/public_chat_sessions',
    rowsKey: 'sessions',
    filter: 'has_error=false (9 rows in 10)',
    query: () => 'has_error=false',
    insert: (dialect, { n, at }) => sql`
      insert into public_chat_sessions (session_id, client_ip, user_agent, thread_id, message_count, prompt_tokens, completion_tokens, total_tokens,
        active, verified, first_seen_at, last_seen_at, expires_at, error, created_at, updated_at)
      select 'bench-' || n, '10.0.' || (n % 250) || '.1', 'bench', 'thread_' || n, 4, 40, 20, 60, ${boolean(dialect, sql`true`)}, ${boolean(dialect, sql`true`)},
        ${at}, ${plusSeconds(dialect, at, 600)}, ${plusSeconds(dialect, at, 2400)}, case when n % 10 = 0 then 'provider failed' end, ${at}, ${at}`,
    bareSql: `select ${SESSION_COLUMNS}, expires_at > $1 as active from public_chat_sessions where error is null order by created_at desc, id desc limit $2 offset $3`,
    bareParams: () => [new Date().toISOString()],
  },
  {
    table: 'public_chat_rate_limits',
    route: '/api/public_chat_rate_limits',
    rowsKey: 'rate_limits',
    filter: 'limited=false (9 rows in 10)',
    query: () => 'limited=false',
    insert: (dialect, { n, at }) => sql`
      insert into public_chat_rate_limits (identifier, client_ip, window_start, window_end, request_count, max_requests, limited, limited_at, created_at, updated_at)
      select 'session:bench-' || n, '10.0.0.1', ${at}, ${plusSeconds(dialect, at, 60)}, case when n % 10 = 0 then 11 else 3 end, 10,
        ${boolean(dialect, sql`n % 10 = 0`)}, case when n % 10 = 0 then ${at} end, ${at}, ${at}`,
    bareSql: `select * from public_chat_rate_limits where not limited order by created_at desc, id desc limit $1 offset $2`,
    bareParams: () => [],
  },
  {
    table: 'openai_create_run_logs',
    route: '/api/public_chat_openai_create_run',
    rowsKey: 'logs',
    filter: 'has_error=false (9 rows in 10)',
    query: () => 'has_error=false',
    insert: (dialect, { n, at }) => sql`
      insert into openai_create_run_logs (session_id, public_chat_message_id, client_ip, user_agent, operation, request_started, request_ended,
        request_body, response_body, response_headers, error, created_at, updated_at)
      select 'bench-' || (n % 1000), n, '10.0.0.1', 'bench', 'responses.create', ${at}, ${plusSeconds(dialect, at, 1)},
        '{"background":true}', '{"id":"resp_' || n || '","status":"queued"}', '{"x-request-id":"req_' || n || '"}',
        case when n % 10 = 0 then 'OpenAI 500 error' end, ${at}, ${at}`,
    bareSql: `select ${LOG_COLUMNS} from openai_create_run_logs where error is null order by created_at desc, id desc limit $1 offset $2`,
    bareParams: () => [],
  },
  {
    table: 'public_chat_feedback',
    route: '/api/public/chat/feedback',
    rowsKey: 'feedback',
    filter: 'type=good (4 rows in 5)',
    query: () => 'type=good',
    async prepare(database) {
      await insertSessions(database, 10);
      const now = new Date().toISOString();
      const rows = Array.from({ length: 1000 }, (_, i) => ({
        session_id: `parent-${(i % 10) + 1}`,
        role: 'user' as const,
        content: `question ${i}`,
        state: 'completed',
        created_at: now,
        updated_at: now,
      }));
      for (let i = 0; i < rows.length; i += 100) await database.db.insertInto('public_chat_messages').values(rows.slice(i, i + 100)).execute();
    },
    // A session gives one feedback per type per message: each row is another visitor's.
    insert: (_dialect, { n, at }) => sql`
      insert into public_chat_feedback (public_chat_message_id, session_id, type, description, client_ip, user_agent, created_at, updated_at)
      select n % 1000 + 1, 'visitor-' || n, case when n % 5 = 0 then 'outdated' else 'good' end, 'note ' || n, '10.0.0.1', 'bench', ${at}, ${at}`,
    bareSql: `select ${FEEDBACK_COLUMNS} from public_chat_feedback where type = $1 order by created_at desc, id desc limit $2 offset $3`,
    bareParams: () => ['good'],
  },
];

/** Grows `table` from `from` to `to` rows, row n created at start + n × ROW_SECONDS. */
async function grow(database: Database, listCase: ListCase, startSeconds: number, from: number, to: number) {
  const { db, dialect } = database;
  if (dialect === 'sqlite') {
    const n = sql<number>`n`;
    const at = sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', ${startSeconds} + n * ${ROW_SECONDS}, 'unixepoch')`;
    await sql`with recursive seq(n) as (select cast(${from + 1} as integer) union all select n + 1 from seq where n < ${to})
      ${listCase.insert(dialect, { n, at })} from seq`.execute(db);
  } else {
    const n = sql<number>`n`;
    const at = sql<string>`to_timestamp(${startSeconds}::bigint + n * ${ROW_SECONDS})`;
    await sql`${listCase.insert(dialect, { n, at })} from generate_series(${from + 1}::int, ${to}::int) as n`.execute(db);
    await sql`analyze ${sql.table(listCase.table)}`.execute(db);
  }
}

/**
 * A bare Fastify server on its own connection to the same database: the
 * hand-written query, its rows serialised as JSON. The floor the product's
 * route (session check, validation, schema, Kysely) is measured against.
 */
async function bareServer(product: OpenProduct, listCase: ListCase, window: { from: string; before: string }) {
  const { location } = product;
  let run: (text: string, params: Param[]) => Promise<Record<string, unknown>[]>;
  let close: () => Promise<void>;
  if (location.kind === 'sqlite') {
    const db = new DatabaseSync(location.file, { readOnly: true });
    const statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
    run = async (text, params) => {
      const sqliteText = text.replace(/\$\d+/g, '?');
      let statement = statements.get(sqliteText);
      if (!statement) statements.set(sqliteText, (statement = db.prepare(sqliteText)));
      return statement.all(...params.map((value): SQLInputValue => (typeof value === 'boolean' ? Number(value) : value))) as Record<string, unknown>[];
    };
    close = async () => db.close();
  } else {
    const pool = new pg.Pool({ connectionString: location.url, max: 2, options: `-c search_path=${location.schema}` });
    run = async (text, params) => (await pool.query(text, params)).rows;
    close = () => pool.end();
  }
  const app: FastifyInstance = Fastify({ logger: false });
  app.get<{ Querystring: { offset?: string } }>('/bare', async (request) => {
    let rows = await run(listCase.bareSql, [...listCase.bareParams(window), PAGE, Number(request.query.offset ?? 0)]);
    if (listCase.bareFollowUp) rows = await listCase.bareFollowUp(run, rows);
    return { [listCase.rowsKey]: rows, returned_count: rows.length };
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: async () => (await app.close(), await close()) };
}

/** A GET over HTTP (keep-alive, as the console's requests are), checked for a full page before timing starts. */
async function pageRequest(url: string, headers: Record<string, string> = {}): Promise<() => Promise<void>> {
  const get = async () => {
    const response = await fetch(url, { headers });
    return { status: response.status, body: await response.text() };
  };
  const first = await get();
  if (first.status !== 200) throw new Error(`${url} answered ${first.status}: ${first.body}`);
  if (JSON.parse(first.body).returned_count !== PAGE) throw new Error(`${url} returned fewer than ${PAGE} rows`);
  return async () => {
    await get();
  };
}

/** The product on a fresh database with the table under test grown to `rows` rows, listening on a free port. */
async function productWith(engine: Engine, listCase: ListCase, startSeconds: number, rows: number) {
  const product = await engine.open();
  try {
    await listCase.prepare?.(product.deps.database);
    const seedStart = Date.now();
    await grow(product.deps.database, listCase, startSeconds, 0, rows);
    const seedSeconds = (Date.now() - seedStart) / 1000;
    const cookie = await signIn(product.app);
    const url = await product.app.listen({ host: '127.0.0.1', port: 0 });
    return { product, url, cookie, seedSeconds };
  } catch (error) {
    await product.cleanup();
    throw error;
  }
}

/**
 * The product's filtered list pages (first, and at offset 10,000) with
 * 20,000 and with 1,000,000 rows in the table under test (two databases),
 * and a bare route running the equivalent hand-written SQL on the same
 * 1,000,000 rows: all six timed in interleaved rounds, over HTTP.
 */
async function benchList(engine: Engine, listCase: ListCase): Promise<BenchResult[]> {
  const startSeconds = Math.floor(Date.now() / 1000) - LARGE * ROW_SECONDS;
  // The days the rows span, as the screen's date filters give them (the bench's convention zone is UTC).
  const days = { from: new Date(startSeconds * 1000).toISOString().slice(0, 10), to: new Date().toISOString().slice(0, 10) };
  const window = { from: `${days.from}T00:00:00.000Z`, before: new Date(Date.parse(`${days.to}T00:00:00Z`) + 86_400_000).toISOString() };
  const path = `${listCase.route}?${listCase.query(days)}`;

  const small = await productWith(engine, listCase, Math.floor(Date.now() / 1000) - SMALL * ROW_SECONDS, SMALL);
  try {
    const large = await productWith(engine, listCase, startSeconds, LARGE);
    try {
      const bare = await bareServer(large.product, listCase, window);
      try {
        const times = await interleavedMedians(
          {
            smallFirst: await pageRequest(`${small.url}${path}`, { cookie: small.cookie }),
            largeFirst: await pageRequest(`${large.url}${path}`, { cookie: large.cookie }),
            bareFirst: await pageRequest(`${bare.url}/bare`),
            smallDeep: await pageRequest(`${small.url}${path}&offset=${DEEP_OFFSET}`, { cookie: small.cookie }),
            largeDeep: await pageRequest(`${large.url}${path}&offset=${DEEP_OFFSET}`, { cookie: large.cookie }),
            bareDeep: await pageRequest(`${bare.url}/bare?offset=${DEEP_OFFSET}`),
          },
          ROUNDS,
        );
        return (['First', 'Deep'] as const).flatMap((which) => {
          const pageName = which === 'First' ? 'first page' : `page at offset ${count(DEEP_OFFSET)}`;
          const name = `${listCase.route} ${pageName}, ${listCase.filter}, on ${engine.name}`;
          const measure = `median of ${ROUNDS} requests with ${count(LARGE)} rows in ${listCase.table}`;
          const value = times[`large${which}`];
          return [
            {
              name: `${name}: growth`,
              measure,
              value,
              baseline: times[`small${which}`],
              baselineMeasure: `same page with ${count(SMALL)} rows`,
              unit: 'ms',
              ratio: value / times[`small${which}`],
              maxRatio: 1.5,
              notes: which === 'First' ? [`seeding ${count(LARGE)} rows took ${large.seedSeconds.toFixed(1)} s`] : [],
            },
            {
              name: `${name}: against hand-written SQL`,
              measure,
              value,
              baseline: times[`bare${which}`],
              baselineMeasure: 'bare Fastify route, hand-written indexed SQL, same rows',
              unit: 'ms',
              ratio: value / times[`bare${which}`],
              maxRatio: 2,
            },
          ];
        });
      } finally {
        await bare.close();
      }
    } finally {
      await large.product.cleanup();
    }
  } finally {
    await small.product.cleanup();
  }
}

/** Every monitoring list on `engine`, one table at a time, each on a fresh database; `only` picks tables by name. */
export async function benchLists(engine: Engine, report: (result: BenchResult) => void, only?: string): Promise<void> {
  for (const listCase of CASES.filter((candidate) => !only || candidate.table.includes(only))) {
    for (const result of await benchList(engine, listCase)) report(result);
  }
}
