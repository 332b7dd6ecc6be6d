/**
 * `npm run bench`: speed and size targets, each reported as a ratio against a
 * baseline measured in the same run (never as absolute timings), so results
 * compare across machines. Writes bench/results/latest.json.
 *
 *   npm run bench                 every benchmark
 *   npm run bench -- bundle       only those whose name contains "bundle"
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { measureChatFirstLoad } from './bundle-size.ts';
import { formatResult, passed, type BenchResult } from './report.ts';
import { benchStatus, findPostgres, postgresEngine, sqliteEngine } from './status-bench.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const BENCHMARKS: { name: string; run: () => Promise<BenchResult[]> }[] = [
  { name: 'bundle', run: async () => [await measureChatFirstLoad(path.join(ROOT, 'web/dist'), path.join(ROOT, 'bench/baseline'))] },
  {
    name: 'status',
    run: async () => {
      const results = [await benchStatus(sqliteEngine())];
      const postgres = await findPostgres();
      if (postgres) results.push(await benchStatus(postgresEngine(postgres)));
      else console.log('PostgreSQL not reachable (BENCH_DATABASE_URL, TEST_DATABASE_URL or 127.0.0.1:5432): status measured on SQLite only');
      return results;
    },
  },
];

const filter = process.argv[2];
const results: BenchResult[] = [];
for (const bench of BENCHMARKS.filter((candidate) => !filter || candidate.name.includes(filter))) {
  console.log(`--- ${bench.name}`);
  for (const result of await bench.run()) {
    results.push(result);
    console.log(formatResult(result));
  }
}
mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(path.join(ROOT, 'bench/results/latest.json'), `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`);
const failures = results.filter((result) => !passed(result));
console.log(`\n${results.length - failures.length}/${results.length} within target`);
process.exit(failures.length > 0 ? 1 : 0);
