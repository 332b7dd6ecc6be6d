import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { ASK_COMMAND_STATES } from '@concierge/contract';
import fastifyCompress from '@fastify/compress';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql, type RawBuilder } from 'kysely';
import pg from 'pg';
import type { Database } from '@concierge/server/src/db/database.ts';
import { count, interleavedMedians, signIn, type Engine, type OpenProduct } from './engines.ts';
import type { BenchResult } from './report.ts';

const USERS = 100_000;
const COMMANDS = 1_000_000;
const VOTES = 20_000;
/** A command every quarter second, ending now: a million span the last 2.9 days, so the 6 h and 24 h windows are busy. */
const COMMAND_SPACING_SECONDS = 0.25;
const ROUNDS = 100;
const FIRST_ID = 100_000_000_000_000_000n;

type Param = string | number;

/** The pages the Users screen asks for: the first page (25), and a page of 100 halfway down, newest names first. */
const PAGES = [
  { name: 'first page of 25', query: { order: 'asc', limit: 25, offset: 0 } },
  { name: `page of 100 at offset ${count(USERS / 2)}, descending`, query: { order: 'desc', limit: 100, offset: USERS / 2 } },
] as const;

/** 100,000 users, a million ask commands among them and 20,000 votes, with SQL alone. */
async function seed(database: Database): Promise<number> {
  const started = Date.now();
  const { db, dialect } = database;
  const now = Date.now() / 1000;
  const stamp = dialect === 'postgres' ? sql`now()` : sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
  const first = sql.raw(FIRST_ID.toString());
  const userId = (n: RawBuilder<unknown>) => (dialect === 'postgres' ? sql`(${first}::bigint + ${n})::text` : sql`cast(${first} + ${n} as text)`);
  const padded = (n: RawBuilder<unknown>) => (dialect === 'postgres' ? sql`lpad(${n}::text, 6, '0')` : sql`substr('000000' || ${n}, -6)`);
  const series = (to: number, body: RawBuilder<unknown>) =>
    dialect === 'postgres'
      ? sql`${body} from generate_series(1, ${sql.lit(to)}) as n`
      : sql`with recursive seq(n) as (select 1 union all select n + 1 from seq where n < ${sql.lit(to)}) ${body} from seq`;
  const n = sql`n`;
  const bool = (condition: RawBuilder<unknown>) => (dialect === 'postgres' ? condition : sql`(case when ${condition} then 1 else 0 end)`);
  await series(
    USERS,
    sql`insert into users (id, username, global_name, bot, priority, ignored, donated, created_at, updated_at)
      select ${userId(n)}, 'user' || ${padded(n)}, 'User ' || n, ${bool(sql`false`)}, ${bool(sql`n % 50 = 0`)}, ${bool(sql`false`)}, ${bool(sql`n % 20 = 0`)},
        ${stamp}, ${stamp}`,
  ).execute(db);
  const at =
    dialect === 'postgres'
      ? sql`to_timestamp(${now}::double precision - n * ${COMMAND_SPACING_SECONDS}::double precision)`
      : sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${now} - n * ${COMMAND_SPACING_SECONDS}, 'unixepoch')`;
  await series(
    COMMANDS,
    sql`insert into ask_commands (user_id, state, step, prompt, whisper, thread_id, run_id, run_status, prompt_tokens, completion_tokens, total_tokens, type,
        response, error, created_at, updated_at)
      select ${userId(sql`(n % ${sql.lit(USERS)} + 1)`)},
        case when n % 20 = 0 then 'failed' when n % 101 = 0 then 'rate_limited' else 'completed' end, 'feedback_open', 'question ' || n,
        ${bool(sql`n % 7 = 0`)}, 'thread_' || (n % ${sql.lit(USERS)}), 'run_' || n,
        case when n % 20 = 0 then 'failed' when n % 101 = 0 then null else 'completed' end,
        case when n % 20 = 0 or n % 101 = 0 then 0 else 100 end, case when n % 20 = 0 or n % 101 = 0 then 0 else 50 end,
        case when n % 20 = 0 or n % 101 = 0 then 0 else 150 end, 'ask',
        case when n % 20 = 0 or n % 101 = 0 then null else 'answer ' || n end, case when n % 20 = 0 then 'OpenAI 500 error' end, ${at}, ${at}`,
  ).execute(db);
  await series(
    VOTES,
    sql`insert into ask_command_feedback (ask_command_id, user_id, type, description, created_at, updated_at)
      select n * ${sql.lit(COMMANDS / VOTES)}, ${userId(sql`(n * 7 % ${sql.lit(USERS)} + 1)`)}, case when n % 4 = 0 then 'outdated' else 'good' end, null, ${stamp}, ${stamp}`,
  ).execute(db);
  if (dialect === 'postgres') {
    for (const table of ['users', 'ask_commands', 'ask_command_feedback']) await sql`analyze ${sql.table(table)}`.execute(db);
  }
  return (Date.now() - started) / 1000;
}

/**
 * The same page by hand: the page of users, the total, one grouped query for
 * both windows' usage and one for the votes, the figures the screen reads
 * put on each user.
 */
function bareUsersPage(run: (text: string, params: Param[]) => Promise<Record<string, unknown>[]>, limit6h: number) {
  return async (query: { order: string; limit: number; offset: number }) => {
    const order = query.order === 'desc' ? 'desc' : 'asc';
    const [users, total] = await Promise.all([
      run(`select * from users where deleted_at is null order by username ${order}, id ${order} limit $1 offset $2`, [query.limit, query.offset]),
      run('select count(*) as count from users where deleted_at is null', []),
    ]);
    const ids = users.map((user) => String(user.id));
    const now = Date.now();
    const short = new Date(now - 6 * 3_600_000).toISOString();
    const long = new Date(now - 24 * 3_600_000).toISOString();
    const params: Param[] = [];
    const p = (value: Param) => (params.push(value), `$${params.length}`);
    const columns: string[] = [];
    for (const [name, since] of [
      ['short', short],
      ['long', long],
    ] as const) {
      const within = () => `created_at > ${p(since)}`;
      const billable = `(total_tokens > 0 or run_status = 'completed')`;
      const pending = `(state in ('queued', 'in_progress'))`;
      columns.push(
        `sum(case when ${within()} then 1 else 0 end) as ${name}_attempted`,
        `sum(case when ${within()} and ${billable} then 1 else 0 end) as ${name}_billable`,
        `sum(case when ${within()} and ${pending} and not ${billable} then 1 else 0 end) as ${name}_pending`,
        `min(case when ${within()} and (${billable} or ${pending}) then created_at end) as ${name}_oldest_counted`,
        `sum(case when ${within()} then prompt_tokens else 0 end) as ${name}_prompt_tokens`,
        `sum(case when ${within()} then completion_tokens else 0 end) as ${name}_completion_tokens`,
        `sum(case when ${within()} then total_tokens else 0 end) as ${name}_total_tokens`,
        `sum(case when ${within()} and whisper then 1 else 0 end) as ${name}_whisper_count`,
        `count(distinct case when ${within()} then thread_id end) as ${name}_thread_count`,
        ...ASK_COMMAND_STATES.map((state) => `sum(case when ${within()} and state = '${state}' then 1 else 0 end) as ${name}_state_${state}`),
      );
    }
    const idList = ids.map((id) => p(id)).join(', ');
    const usageSql = `select user_id, ${columns.join(', ')} from ask_commands where user_id in (${idList}) and created_at > ${p(long)} group by user_id`;
    const voteParams = [...ids];
    const [usage, votes] = await Promise.all([
      ids.length ? run(usageSql, params) : Promise.resolve([]),
      ids.length
        ? run(`select user_id, type, count(*) as count from ask_command_feedback where user_id in (${ids.map((_, i) => `$${i + 1}`).join(', ')}) group by user_id, type`, voteParams)
        : Promise.resolve([]),
    ]);
    const usageOf = new Map(usage.map((row) => [String(row.user_id), row]));
    const body = users.map((user) => {
      const row = usageOf.get(String(user.id)) ?? {};
      const limit = user.request_limit_6h === null ? limit6h : Number(user.request_limit_6h);
      const reports: Record<string, number> = {};
      for (const vote of votes) if (vote.user_id === user.id) reports[String(vote.type)] = Number(vote.count);
      return {
        ...user,
        stats: { usage: row, reports },
        billable_6h: Number(row.short_billable ?? 0),
        attempted_6h: Number(row.short_attempted ?? 0),
        limit_6h: limit,
        billable_24h: Number(row.long_billable ?? 0),
        attempted_24h: Number(row.long_attempted ?? 0),
        limit_24h: user.request_limit_24h === null ? 4 * limit : Number(user.request_limit_24h),
      };
    });
    return { body, total: Number(total[0]!.count) };
  };
}

/** A bare Fastify server on its own connection to the same database, serving the hand-written page. */
async function bareServer(product: OpenProduct) {
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
      return statement.all(...params.map((value): SQLInputValue => value)) as Record<string, unknown>[];
    };
    close = async () => db.close();
  } else {
    const pool = new pg.Pool({ connectionString: location.url, max: 4, options: `-c search_path=${location.schema}` });
    run = async (text, params) => (await pool.query(text, params)).rows;
    close = () => pool.end();
  }
  const page = bareUsersPage(run, product.deps.config.get().user_ask_command_limit_6h);
  const app: FastifyInstance = Fastify({ logger: false });
  // Compressed as the product's replies are (server/src/app.ts): a page with its stats is about 30 KB of JSON,
  // and compressing it costs more than its SQL, so both sides pay it alike.
  await app.register(fastifyCompress, { threshold: 1024, encodings: ['br', 'gzip'], globalDecompression: false });
  app.get<{ Querystring: { order?: string; limit?: string; offset?: string } }>('/bare', async (request, reply) => {
    const { body, total } = await page({ order: request.query.order ?? 'asc', limit: Number(request.query.limit ?? 25), offset: Number(request.query.offset ?? 0) });
    reply.header('x-total-count', String(total));
    return body;
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: async () => (await app.close(), await close()) };
}

/**
 * A GET over HTTP asking for a compressed reply as a browser does, checked
 * once for a compressed, full page with the true total and the stats before
 * timing starts.
 */
async function pageRequest(url: string, limit: number, headers: Record<string, string> = {}): Promise<() => Promise<void>> {
  headers = { 'accept-encoding': 'gzip, deflate', ...headers };
  const first = await fetch(url, { headers });
  const text = await first.text();
  if (first.status !== 200) throw new Error(`${url} answered ${first.status}: ${text}`);
  if (first.headers.get('content-encoding') !== 'gzip') throw new Error(`${url} answered without compression`);
  const rows = JSON.parse(text) as { billable_24h?: number }[];
  if (rows.length !== limit) throw new Error(`${url} returned ${rows.length} users, not ${limit}`);
  if (first.headers.get('x-total-count') !== String(USERS)) throw new Error(`${url} gave the total ${first.headers.get('x-total-count')}`);
  if (!rows.some((row) => (row.billable_24h ?? 0) > 0)) throw new Error(`${url} has no usage figures: the seeded commands are not in the windows`);
  return async () => {
    await (await fetch(url, { headers })).text();
  };
}

/**
 * GET /api/users with its stats (SPEC §2 Users) with 100,000 users and a
 * million ask commands, against a bare Fastify route running the same
 * hand-written SQL on the same database, timed in interleaved rounds.
 */
export async function benchUsers(engine: Engine, report: (result: BenchResult) => void): Promise<void> {
  const product = await engine.open();
  try {
    await product.deps.config.update({ user_ask_command_limit_6h: 10 });
    const seedSeconds = await seed(product.deps.database);
    const cookie = await signIn(product.app);
    const url = await product.app.listen({ host: '127.0.0.1', port: 0 });
    const bare = await bareServer(product);
    try {
      const runs: Record<string, () => Promise<void>> = {};
      for (const [i, page] of PAGES.entries()) {
        const query = new URLSearchParams({ include_stats: 'true', order: page.query.order, limit: String(page.query.limit), offset: String(page.query.offset) });
        runs[`product${i}`] = await pageRequest(`${url}/api/users?${query}`, page.query.limit, { cookie });
        runs[`bare${i}`] = await pageRequest(`${bare.url}/bare?${query}`, page.query.limit);
      }
      const times = await interleavedMedians(runs, ROUNDS);
      for (const [i, page] of PAGES.entries()) {
        const value = times[`product${i}`]!;
        const baseline = times[`bare${i}`]!;
        report({
          name: `/api/users ${page.name} with stats, on ${engine.name}: against hand-written SQL`,
          measure: `median of ${ROUNDS} requests with ${count(USERS)} users and ${count(COMMANDS)} ask commands`,
          value,
          baseline,
          baselineMeasure: 'bare Fastify route, the same hand-written SQL (page, total, one grouped usage query, one grouped votes query), same rows, compressed alike',
          unit: 'ms',
          ratio: value / baseline,
          maxRatio: 2,
          notes: i === 0 ? [`seeding took ${seedSeconds.toFixed(1)} s`] : [],
        });
      }
    } finally {
      await bare.close();
    }
  } finally {
    await product.cleanup();
  }
}
