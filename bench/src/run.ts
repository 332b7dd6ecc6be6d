/**
 * `npm run bench`: speed and size targets, each reported as a ratio against a
 * baseline measured in the same run (never as absolute timings), so results
 * compare across machines. Writes bench/results/latest.json.
 *
 *   npm run bench                 every benchmark
 *   npm run bench -- bundle       only those whose name contains "bundle"
 *   npm run bench -- lists sessions   the list benchmark on tables whose name contains "sessions"
 *   npm run bench -- chat quick   the chat hot path with 20 sessions and short rounds (options: see chat-bench.ts)
 *   npm run bench -- burst 2000   the overload burst with 2,000 questions instead of 10,000
 *   npm run bench -- checkpoints  SQLite's checkpoints on their own thread against SQLite's own
 *   npm run bench -- delay quick  the answer delay at 2 s of provider latency only (the whole takes about 3 minutes)
 *   BENCH_PROFILE=<dir> npm run bench -- chat   CPU profiles of the server's thread per round (see cpu-profile.ts)
 *   BENCH_PROFILE=<dir> npm run bench -- burst  CPU profiles of the server process's threads, written as it stops
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchBurst } from './burst-bench.ts';
import { benchChat, chatBenchOptions } from './chat-bench.ts';
import { benchChatPage } from './chat-page.ts';
import { benchCheckpoints } from './checkpoint-bench.ts';
import { benchCrawl } from './crawl-bench.ts';
import { benchDelay, delayBenchOptions } from './delay-bench.ts';
import { formatResult, passed, type BenchResult } from './report.ts';
import { availableEngines, sqliteEngine } from './engines.ts';
import { benchLists } from './list-bench.ts';
import { benchStatus } from './status-bench.ts';
import { benchUploads } from './upload-bench.ts';
import { benchUsers } from './users-bench.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const results: BenchResult[] = [];
/** Prints a result as soon as it is measured (the list benchmarks take minutes). */
const report = (result: BenchResult) => {
  results.push(result);
  console.log(formatResult(result));
};

const BENCHMARKS: { name: string; run: () => Promise<void> }[] = [
  {
    // The chat page on a phone: first-load bytes against the absolute budget, and Lighthouse (npm run bench -- bundle).
    name: 'bundle',
    run: async () => {
      // Measure the app as built from these sources (scripts/lib.mjs builds it when stale, as npm start does).
      const { buildWebIfStale } = (await import('../../scripts/lib.mjs' as string)) as { buildWebIfStale: () => Promise<boolean> };
      if (!(await buildWebIfStale())) throw new Error('the web app did not build');
      await benchChatPage(sqliteEngine(), report);
    },
  },
  {
    name: 'status',
    run: async () => {
      for (const engine of await availableEngines('/api/status')) report(await benchStatus(engine));
    },
  },
  {
    name: 'chat',
    run: async () => {
      const options = chatBenchOptions(process.argv.slice(3));
      for (const engine of await availableEngines('the chat hot path')) await benchChat(engine, report, options);
    },
  },
  {
    // SQLite's checkpoints on a thread of their own against SQLite's own on the event loop (npm run bench -- checkpoints).
    name: 'checkpoints',
    run: () => benchCheckpoints(report),
  },
  {
    // 10,000 questions at once (npm run bench -- burst [N]).
    name: 'burst',
    run: async () => {
      const questions = Number(process.argv[3] ?? 10_000);
      for (const engine of await availableEngines('the burst')) await benchBurst(engine, report, { questions });
    },
  },
  {
    // How late answers arrive after the provider finishes, streamed and polled, at 2 s and 60 s of provider latency.
    name: 'delay',
    run: async () => {
      const options = delayBenchOptions(process.argv.slice(3));
      for (const engine of await availableEngines('the answer delay')) await benchDelay(engine, report, options);
    },
  },
  {
    name: 'crawl',
    run: async () => {
      for (const engine of await availableEngines('the crawl')) await benchCrawl(engine, report);
    },
  },
  {
    // 100 parallel 20 MB uploads: the server's memory and /healthz (npm run bench -- uploads).
    name: 'uploads',
    run: () => benchUploads(report),
  },
  {
    // The Users page with its stats: 100,000 users, a million ask commands (npm run bench -- users).
    name: 'users',
    run: async () => {
      for (const engine of await availableEngines('the users page')) await benchUsers(engine, report);
    },
  },
  {
    name: 'lists',
    run: async () => {
      for (const engine of await availableEngines('the monitoring lists')) await benchLists(engine, report, process.argv[3]);
    },
  },
];

const filter = process.argv[2];
for (const bench of BENCHMARKS.filter((candidate) => !filter || candidate.name.includes(filter))) {
  console.log(`--- ${bench.name}`);
  await bench.run();
}
mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(path.join(ROOT, 'bench/results/latest.json'), `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`);
const failures = results.filter((result) => !passed(result));
console.log(`\n${results.length - failures.length}/${results.length} within target`);
process.exit(failures.length > 0 ? 1 : 0);
