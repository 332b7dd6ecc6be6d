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
//
// The closing summary names every failed test with the first lines of its
// error, so that the end of a long CI log says what failed in every suite.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildWebIfStale, ROOT, run, withFreshPostgres } from './lib.mjs';

const inCi = process.env.CI === 'true' || process.env.CI === '1';
const extraArgs = process.argv.slice(2);
const reports = mkdtempSync(path.join(tmpdir(), 'concierge-test-'));
const reportOf = (project) => path.join(reports, `${project}.json`);
const vitest = (project, env = {}) =>
  run(
    process.execPath,
    [
      path.join(ROOT, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--project',
      project,
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${reportOf(project)}`,
      ...extraArgs,
    ],
    { env: { ...process.env, ...env } },
  );

/** Failed tests from a suite's JSON report: `file › test` and the first lines of the error. */
function failuresOf(project) {
  let report;
  try {
    report = JSON.parse(readFileSync(reportOf(project), 'utf8'));
  } catch {
    return [];
  }
  const firstLines = (text) =>
    text
      .split('\n')
      .filter((line) => line.trim() && !line.includes('node_modules') && !line.includes('<anonymous>'))
      .slice(0, 4)
      .join('\n      ');
  const failures = [];
  for (const file of report.testResults ?? []) {
    const where = path.relative(ROOT, file.name);
    const failed = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
    for (const test of failed) {
      failures.push(`${where} › ${test.fullName}\n      ${firstLines((test.failureMessages ?? []).join('\n'))}`);
    }
    // A file can fail outside its tests (a hook, an import).
    if (failed.length === 0 && file.status === 'failed') failures.push(`${where}\n      ${firstLines(file.message ?? '')}`);
  }
  return failures;
}

const results = [];
/** `project`: the Vitest project that ran, whose report names the failed tests (none when the suite did not get that far). */
const record = (suite, outcome, detail = '', project = undefined) =>
  results.push({ suite, outcome, detail, failures: outcome === 'FAILED' && project ? failuresOf(project) : undefined });

// 1. Server on SQLite.
record('server on SQLite', (await vitest('server-sqlite')) === 0 ? 'passed' : 'FAILED', '', 'server-sqlite');

// 2. Server on PostgreSQL.
if (process.env.TEST_DATABASE_URL) {
  const code = await vitest('server-postgres', { TEST_DATABASE_URL: process.env.TEST_DATABASE_URL });
  record('server on PostgreSQL', code === 0 ? 'passed' : 'FAILED', 'TEST_DATABASE_URL', 'server-postgres');
} else {
  const outcome = await withFreshPostgres((url) => vitest('server-postgres', { TEST_DATABASE_URL: url }));
  if (outcome) record('server on PostgreSQL', outcome.result === 0 ? 'passed' : 'FAILED', outcome.where, 'server-postgres');
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
  record('browser (e2e)', code === 0 ? 'passed' : 'FAILED', chromium, 'e2e');
}

console.log('\nTest suites:');
for (const { suite, outcome, detail, failures } of results) {
  console.log(`  ${outcome.padEnd(8)} ${suite}${detail ? ` (${detail})` : ''}`);
  if (failures?.length === 0) console.log('      no failed test in its report: see the log above for errors outside tests');
  for (const failure of failures ?? []) console.log(`    ✗ ${failure}`);
}
rmSync(reports, { recursive: true, force: true });
const failed = results.some((result) => result.outcome === 'FAILED');
const skipped = results.some((result) => result.outcome === 'skipped');
if (skipped && inCi) console.log('\nCI=true: a skipped suite fails the run.');
process.exit(failed || (skipped && inCi) ? 1 : 0);
