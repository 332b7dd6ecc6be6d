// Helpers shared by the root npm scripts (start, test, dev). They run on the
// Node 24 that npm puts first on PATH from the `node` package.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Newest modification time of a file or of any file below a folder. */
function newestMtime(target) {
  if (!existsSync(target)) return 0;
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const entry of readdirSync(target)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    newest = Math.max(newest, newestMtime(path.join(target, entry)));
  }
  return newest;
}

/** True when web/dist is missing or older than anything it is built from. */
export function webBuildIsStale() {
  const built = path.join(ROOT, 'web/dist/index.html');
  if (!existsSync(built)) return true;
  const sources = ['web/src', 'web/index.html', 'web/public', 'web/vite.config.ts', 'web/package.json', 'contract/src'];
  const newestSource = Math.max(...sources.map((source) => newestMtime(path.join(ROOT, source))));
  return newestSource > statSync(built).mtimeMs;
}

/** Runs a command with inherited output; resolves to its exit code. */
export function run(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit', cwd: ROOT, ...options });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', (error) => {
      console.error(`${command}: ${error.message}`);
      resolve(1);
    });
  });
}

/** Builds the web app with Vite when it is missing or stale; resolves to true on success. */
export async function buildWebIfStale() {
  if (!webBuildIsStale()) return true;
  console.log('Building the web app (web/dist is missing or older than its sources)…');
  const code = await run(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build'], { cwd: path.join(ROOT, 'web') });
  return code === 0;
}

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

async function asAdmin(statement) {
  const client = new pg.Client({ connectionString: LOCAL_PG });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * Runs `fn(url)` on a fresh database of the local PostgreSQL server
 * (127.0.0.1:5432, user postgres), dropped afterwards; resolves to
 * `{ result, where }`, or null when there is no such server.
 */
export async function withFreshPostgres(fn) {
  if (!(await canConnect(LOCAL_PG))) return null;
  const name = `concierge_test_${randomBytes(4).toString('hex')}`;
  await asAdmin(`create database ${name}`);
  try {
    const result = await fn(`postgres://postgres@127.0.0.1:5432/${name}`);
    return { result, where: `fresh database ${name} on 127.0.0.1:5432` };
  } finally {
    await asAdmin(`drop database if exists ${name} with (force)`).catch(() => {});
  }
}
