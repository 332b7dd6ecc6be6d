// Helpers shared by the root npm scripts (start, test, dev). They run on the
// Node 24 that npm puts first on PATH from the `node` package.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
