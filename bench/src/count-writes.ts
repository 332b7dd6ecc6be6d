/**
 * Counts the SQL statements one public chat question costs
 * (`node bench/src/count-writes.ts [postgres]`): the product on SQLite (or,
 * with `postgres`, on a scratch database of TEST_DATABASE_URL, default the
 * local server) against the fake OpenAI at zero latency, a session
 * verified, then questions asked (streamed) one after another; every
 * statement the server prepares (SQLite) or sends (PostgreSQL: each one a
 * round trip) is counted by kind. The server runs without its query thread,
 * so that every statement goes through this thread's connection.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import pg from 'pg';
import { NodeSqliteDatabase } from '@concierge/server/src/db/sqlite-adapter.ts';
import { startServer } from '@concierge/server/src/server.ts';
import { startFakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';
import { createScratchDatabase } from '@concierge/server/src/test-support/server-process.ts';

const onPostgres = process.argv.includes('postgres');
const seen: string[] = [];
if (onPostgres) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0];
    seen.push(typeof config === 'string' ? config : ((config as { text?: string } | undefined)?.text ?? String(config)));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
} else {
  const prepare = NodeSqliteDatabase.prototype.prepare;
  NodeSqliteDatabase.prototype.prepare = function (this: NodeSqliteDatabase, sql: string) {
    seen.push(sql);
    return prepare.call(this, sql);
  };
}

const fake = await startFakeOpenAI({ knobs: { latencyMs: 0, runDurationMs: 0 } });
const store = await new OpenAI({ apiKey: fake.apiKey, baseURL: fake.url }).vectorStores.create({ name: 'Count' });
const dir = mkdtempSync(path.join(tmpdir(), 'concierge-count-'));
const scratch = onPostgres ? await createScratchDatabase(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres') : null;
const server = await startServer(
  {
    LOG_LEVEL: 'silent',
    PORT: '0',
    DATABASE_URL: scratch?.url ?? `sqlite:${path.join(dir, 'db.sqlite')}`,
    OPENAI_API_KEY: fake.apiKey,
    OPENAI_BASE_URL: fake.url,
    OPENAI_VECTOR_STORE_ID: store.id,
    MAX_CONCURRENT_RUNS: '100',
  },
  // The hot path's operations run here, on the connection whose statements are counted, rather than on the query
  // thread (its own connection, out of this thread's sight): the same statements either way.
  { runCrawler: false, queryThread: false },
);
try {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const verify = await fetch(`${server.url}/public/chat/turnstile/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"token":""}' });
  const cookie = verify.headers.get('set-cookie')!.split(';')[0]!;
  for (let question = 1; question <= 3; question++) {
    await server.deps.counters.flush();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    seen.length = 0;
    const reply = await fetch(`${server.url}/public/chat/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', cookie },
      body: JSON.stringify({ message: `When is the masquerade? (${question})` }),
    });
    const text = await reply.text();
    if (!text.includes('"success":true')) console.log(`   not answered: ${text.slice(-300)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const statements = [...seen];
    const writes = statements.filter((sql) => /^\s*(insert|update|delete)/i.test(sql));
    console.log(`question ${question}: ${statements.length} statements, ${writes.length} writes, ${statements.filter((s) => /^\s*(begin|commit|savepoint|release)/i.test(s)).length} transaction statements`);
    for (const sql of statements) console.log(`   ${sql.replace(/\s+/g, ' ').slice(0, 140)}`);
  }
} finally {
  await server.close();
  await fake.close();
  await scratch?.drop();
  rmSync(dir, { recursive: true, force: true });
}
