// `npm run fuzz`: the hostile-input test (server/src/http/hostile-input.test.ts)
// at full size on both engines: FUZZ_RUNS requests per engine (20,000 unless
// set), every failure tallied rather than stopping at the first. The seed
// rotates per run (FUZZ_SEED replays one). Prints requests sent, statuses and
// every unexpected 5xx or changed row, and exits 1 if there was any.
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, run, withFreshPostgres } from './lib.mjs';

const runs = process.env.FUZZ_RUNS ?? '20000';
const seed = process.env.FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31));
const vitest = (project, env) =>
  run(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--project', project, 'server/src/http/hostile-input.test.ts'], {
    env: { ...process.env, FUZZ_RUNS: runs, FUZZ_SEED: seed, FUZZ_KEEP_GOING: '1', FUZZ_BUDGET_MS: process.env.FUZZ_BUDGET_MS ?? '3600000', ...env },
  });

const reports = [];
async function engine(project, env) {
  const report = path.join(tmpdir(), `concierge-fuzz-${project}-${process.pid}.json`);
  const code = await vitest(project, { ...env, FUZZ_REPORT: report });
  try {
    reports.push({ project, code, ...JSON.parse(readFileSync(report, 'utf8')) });
    rmSync(report, { force: true });
  } catch {
    reports.push({ project, code, sent: 0, failures: [{ label: '-', problem: 'the run ended without a report (see its output above)' }] });
  }
}

await engine('server-sqlite', {});
if (process.env.TEST_DATABASE_URL) await engine('server-postgres', {});
else if (!(await withFreshPostgres((url) => engine('server-postgres', { TEST_DATABASE_URL: url })))) {
  console.log('\nPostgreSQL: skipped (no TEST_DATABASE_URL and no PostgreSQL at 127.0.0.1:5432, user postgres)');
}

console.log(`\nHostile input, seed ${seed} (replay: FUZZ_SEED=${seed} npm run fuzz):`);
for (const report of reports) {
  const statuses = Object.entries(report.statuses ?? {}).map(([status, count]) => `${status}×${count}`).join(' ');
  console.log(`  ${report.project}: ${report.sent} requests in ${Math.round(report.seconds ?? 0)} s, ${report.unexpected5xx ?? '?'} unexpected 5xx, ${report.failures.length} failures; ${statuses}`);
  for (const failure of report.failures.slice(0, 30)) console.log(`    ${failure.problem}\n      ${failure.label}`);
}
process.exit(reports.some((report) => report.code !== 0 || report.failures.length) ? 1 : 0);
