// `npm test`: every suite that can run on this machine.
//
//   server on SQLite       always
//   server on PostgreSQL   with TEST_DATABASE_URL, or a local server at
//                          127.0.0.1:5432 (user postgres), in a fresh database
//   browser (e2e)          when Chromium is installed (/usr/bin/chromium or CHROMIUM_PATH)
//
// A suite that cannot run is reported as skipped with the reason; with CI=true
// a skipped suite fails the run. Extra arguments go to Vitest
// (`npm test -- server/src/auth`).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { buildWebIfStale, ROOT, run, withFreshPostgres } from './lib.mjs';

const inCi = process.env.CI === 'true' || process.env.CI === '1';
const extraArgs = process.argv.slice(2);
const vitest = (project, env = {}) =>
  run(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--project', project, ...extraArgs], {
    env: { ...process.env, ...env },
  });

const results = [];
const record = (suite, outcome, detail = '') => results.push({ suite, outcome, detail });

// 1. Server on SQLite.
record('server on SQLite', (await vitest('server-sqlite')) === 0 ? 'passed' : 'FAILED');

// 2. Server on PostgreSQL.
if (process.env.TEST_DATABASE_URL) {
  const code = await vitest('server-postgres', { TEST_DATABASE_URL: process.env.TEST_DATABASE_URL });
  record('server on PostgreSQL', code === 0 ? 'passed' : 'FAILED', 'TEST_DATABASE_URL');
} else {
  const outcome = await withFreshPostgres((url) => vitest('server-postgres', { TEST_DATABASE_URL: url }));
  if (outcome) record('server on PostgreSQL', outcome.result === 0 ? 'passed' : 'FAILED', outcome.where);
  else record('server on PostgreSQL', 'skipped', 'no TEST_DATABASE_URL and no PostgreSQL at 127.0.0.1:5432 (user postgres)');
}

// 3. Browser tests.
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
if (!existsSync(chromium)) {
  record('browser (e2e)', 'skipped', `no Chromium at ${chromium} (apt-get install chromium)`);
} else if (!(await buildWebIfStale())) {
  record('browser (e2e)', 'FAILED', 'the web app did not build');
} else {
  const code = await vitest('e2e', { CHROMIUM_PATH: chromium });
  record('browser (e2e)', code === 0 ? 'passed' : 'FAILED', chromium);
}

console.log('\nTest suites:');
for (const { suite, outcome, detail } of results) {
  console.log(`  ${outcome.padEnd(8)} ${suite}${detail ? ` (${detail})` : ''}`);
}
const failed = results.some((result) => result.outcome === 'FAILED');
const skipped = results.some((result) => result.outcome === 'skipped');
if (skipped && inCi) console.log('\nCI=true: a skipped suite fails the run.');
process.exit(failed || (skipped && inCi) ? 1 : 0);
