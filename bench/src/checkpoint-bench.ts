import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as chat from '@concierge/server/src/chat/chat.queries.ts';
import { openDatabase, type Database } from '@concierge/server/src/db/database.ts';
import { migrateToLatest } from '@concierge/server/src/db/migrate.ts';
import { count } from './engines.ts';
import { percentile, type BenchResult } from './report.ts';

const ANSWERS = 4_000;
const ROUNDS = 3;
const ANSWER_TEXT = 'The opening ceremony starts at 10:00 in Hall A. '.repeat(20);

interface Measured {
  /** Every commit's time on the event loop (ms). */
  commits: number[];
  elapsedMs: number;
}

/**
 * The writes of `ANSWERS` public chat answers, one after another, as the
 * hot path makes them (the question with its session and counters, the two
 * progress marks, the answer with its session and counters: five commits),
 * timing each commit. SQLite's statements are synchronous, so a commit's time
 * is time the event loop can do nothing else.
 */
async function writeAnswers(database: Database): Promise<Measured> {
  const { db } = database;
  const commits: number[] = [];
  const timed = async (write: () => Promise<unknown>) => {
    const started = performance.now();
    await write();
    commits.push(performance.now() - started);
  };
  const now = () => new Date().toISOString();
  const started = performance.now();
  for (let i = 0; i < ANSWERS; i++) {
    const sessionId = `bench-${i % 200}`;
    let id = 0;
    await timed(() =>
      database.transaction(async (trx) => {
        id = await chat.insertMessage(trx, {
          session_id: sessionId,
          role: 'user',
          content: `When does the opening ceremony start? (${i})`,
          state: 'processing',
          client_ip: '10.0.0.1',
          user_agent: 'bench',
          owner: 'bench',
          now: now(),
        });
        await chat.touchSession(trx, sessionId, { client_ip: '10.0.0.1', user_agent: 'bench' }, now(), now());
        await chat.bumpCounters(trx, { message_count: 1, 'state:processing': 1, question_count: 1 });
      }),
    );
    await timed(() => chat.updateOwnedMessage(db, id, 'bench', { provider_message_id: `msg_${i}`, step: 'creating_run', updated_at: now() }));
    await timed(() => chat.updateOwnedMessage(db, id, 'bench', { run_id: `run_${i}`, run_status: 'queued', step: 'polling_run', updated_at: now() }));
    await timed(() =>
      database.transaction(async (trx) => {
        await chat.updateOwnedMessage(trx, id, 'bench', { response: ANSWER_TEXT, state: 'completed', owner: null, updated_at: now() });
        await chat.insertMessage(trx, { session_id: sessionId, role: 'assistant', content: ANSWER_TEXT, state: 'completed', client_ip: '10.0.0.1', user_agent: 'bench', now: now() });
        await chat.recordExchangeOnSession(trx, sessionId, { prompt_tokens: 900, completion_tokens: 120, total_tokens: 1020, error: null }, now());
        await chat.bumpCounters(trx, { message_count: 1, 'state:processing': -1, 'state:completed': 2, 'run_status:completed': 1, total_tokens: 1020 });
      }),
    );
  }
  return { commits, elapsedMs: performance.now() - started };
}

async function fresh(checkpointThread: boolean): Promise<{ database: Database; drop: () => Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'concierge-checkpoint-bench-'));
  const database = await openDatabase(`sqlite:${path.join(dir, 'bench.db')}`, { checkpointThread });
  await migrateToLatest(database);
  const at = new Date().toISOString();
  for (let s = 0; s < 200; s++) {
    await chat.insertSession(database.db, { session_id: `bench-${s}`, client_ip: null, user_agent: null, referer: null, verified: true, now: at, expires_at: at });
  }
  return {
    database,
    drop: async () => {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const median = (values: number[]) => percentile(values, 0.5);

/**
 * SQLite's checkpoints on a thread of their own (the server's default,
 * SqliteCheckpointer) against SQLite's own, run by the commit that crosses
 * 1,000 pages of log on the event loop: the longest commit and the time per
 * answer's writes, on a database file in the temporary directory.
 */
export async function benchCheckpoints(report: (result: BenchResult) => void): Promise<void> {
  const rounds: Record<'thread' | 'own', Measured[]> = { thread: [], own: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of ['thread', 'own'] as const) {
      const { database, drop } = await fresh(side === 'thread');
      try {
        const measured = await writeAnswers(database);
        rounds[side].push(measured);
        console.log(
          `      round ${round + 1} ${side === 'thread' ? 'checkpoint thread' : "SQLite's own    "}: ${count(ANSWERS)} answers' writes in ${(measured.elapsedMs / 1000).toFixed(2)} s, ` +
            `commit p99 ${percentile(measured.commits, 0.99).toFixed(2)} ms, p99.9 ${percentile(measured.commits, 0.999).toFixed(2)} ms, max ${Math.max(...measured.commits).toFixed(2)} ms`,
        );
      } finally {
        await drop();
      }
    }
  }
  const figure = (side: 'thread' | 'own', of: (measured: Measured) => number) => median(rounds[side].map(of));
  const longest = (measured: Measured) => Math.max(...measured.commits);
  const p99 = (measured: Measured) => percentile(measured.commits, 0.99);
  const p999 = (measured: Measured) => percentile(measured.commits, 0.999);
  const perAnswer = (measured: Measured) => measured.elapsedMs / ANSWERS;
  const what = `${count(ANSWERS)} answers' writes one after another (5 commits each), ${ROUNDS} interleaved rounds (medians)`;
  const ms = (of: (measured: Measured) => number) => `${figure('thread', of).toFixed(2)} ms against ${figure('own', of).toFixed(2)} ms`;
  /** One figure with the thread (the default) against SQLite's own checkpoints, both medians of the rounds. */
  const compare = (name: string, measure: string, of: (measured: Measured) => number, digits: number, notes?: string[]) =>
    report({
      name,
      measure: `${measure}, checkpoints on their own thread (the default), ${what}`,
      value: Number(figure('thread', of).toFixed(digits)),
      baseline: Number(figure('own', of).toFixed(digits)),
      baselineMeasure: "SQLite's own checkpoints (the commit that crosses 1,000 pages runs one)",
      unit: 'ms',
      ratio: figure('thread', of) / figure('own', of),
      maxRatio: 1,
      notes,
    });
  compare('SQLite: p99 commit on the event loop', 'p99 time of a commit', p99, 2, [`p99.9: ${ms(p999)}`, `longest: ${ms(longest)}`]);
  compare("SQLite: event-loop time of an answer's writes", "time of one answer's writes", perAnswer, 3);
}
