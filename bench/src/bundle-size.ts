import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { BenchResult } from './report.ts';

const gz = (file: string) => gzipSync(readFileSync(file), { level: 9 }).length;

/**
 * How much JavaScript a visitor's phone downloads before the public chat
 * shows: the entry script and the chunks index.html preloads, gzipped. The
 * baseline is all of the app's JavaScript (admin screens included), so the
 * ratio says how much of the app the chat page avoids loading.
 */
export function measureChatFirstLoad(distDir: string): BenchResult {
  const indexFile = path.join(distDir, 'index.html');
  if (!existsSync(indexFile)) throw new Error(`${indexFile} is missing: run \`npm run build\` first`);
  const html = readFileSync(indexFile, 'utf8');
  const firstLoad = new Set<string>();
  for (const match of html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="([^"]+\.js)"/g)) {
    firstLoad.add(path.join(distDir, match[1]!.replace(/^\/ui\//, '')));
  }
  const assets = path.join(distDir, 'assets');
  const allJs = readdirSync(assets)
    .filter((file) => file.endsWith('.js'))
    .map((file) => path.join(assets, file));
  const value = [...firstLoad].reduce((total, file) => total + gz(file), 0);
  const baseline = allJs.reduce((total, file) => total + gz(file), 0);
  return {
    name: 'public chat first-load JavaScript',
    measure: 'gzipped JS the chat page loads before it shows',
    value: Math.round(value / 1024),
    baseline: Math.round(baseline / 1024),
    baselineMeasure: 'gzipped JS of the whole app',
    unit: 'KiB',
    ratio: value / baseline,
    maxRatio: 0.8,
    notes: [`first-load files: ${[...firstLoad].map((file) => path.basename(file)).join(', ')}`],
  };
}
