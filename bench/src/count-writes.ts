/**
 * Counts the SQL statements one public chat question costs (`node bench/src/count-writes.ts`):
 * the product on SQLite against the fake OpenAI at zero latency, a session verified, then
 * questions asked (streamed) one after another; every statement the server prepares is counted by kind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { NodeSqliteDatabase } from '@concierge/server/src/db/sqlite-adapter.ts';
import { startServer } from '@concierge/server/src/server.ts';
import { startFakeOpenAI } from '@concierge/server/src/test-support/fake-openai/fake-openai.ts';

const seen: string[] = [];
const prepare = NodeSqliteDatabase.prototype.prepare;
NodeSqliteDatabase.prototype.prepare = function (this: NodeSqliteDatabase, sql: string) {
  seen.push(sql);
  return prepare.call(this, sql);
};

const fake = await startFakeOpenAI({ knobs: { latencyMs: 0, runDurationMs: 0 } });
const store = await new OpenAI({ apiKey: fake.apiKey, baseURL: fake.url }).vectorStores.create({ name: 'Count' });
const dir = mkdtempSync(path.join(tmpdir(), 'concierge-count-'));
const server = await startServer(
  { LOG_LEVEL: 'silent', PORT: '0', DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`, OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_VECTOR_STORE_ID: store.id, MAX_CONCURRENT_RUNS: '100' },
  { runCrawler: false },
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
  rmSync(dir, { recursive: true, force: true });
}
