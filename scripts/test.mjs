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
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { buildWebIfStale, ROOT, run } from './lib.mjs';

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
const LOCAL_PG = 'postgres://postgres@127.0.0.1:5432/postgres';
async function canConnect(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
async function withAdmin(fn) {
  const client = new pg.Client({ connectionString: LOCAL_PG });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
if (process.env.TEST_DATABASE_URL) {
  const code = await vitest('server-postgres', { TEST_DATABASE_URL: process.env.TEST_DATABASE_URL });
  record('server on PostgreSQL', code === 0 ? 'passed' : 'FAILED', 'TEST_DATABASE_URL');
} else if (await canConnect(LOCAL_PG)) {
  const name = `concierge_test_${randomBytes(4).toString('hex')}`;
  await withAdmin((client) => client.query(`create database ${name}`));
  try {
    const code = await vitest('server-postgres', { TEST_DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}` });
    record('server on PostgreSQL', code === 0 ? 'passed' : 'FAILED', `fresh database ${name} on 127.0.0.1:5432`);
  } finally {
    await withAdmin((client) => client.query(`drop database if exists ${name} with (force)`)).catch(() => {});
  }
} else {
  record('server on PostgreSQL', 'skipped', 'no TEST_DATABASE_URL and no PostgreSQL at 127.0.0.1:5432 (user postgres)');
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
