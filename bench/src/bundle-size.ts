import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { BenchResult } from './report.ts';

const gz = (file: string) => gzipSync(readFileSync(file), { level: 9 }).length;

/** The JS files index.html loads before anything shows: the entry script and the chunks it preloads. */
function firstLoadFiles(distDir: string): string[] {
  const html = readFileSync(path.join(distDir, 'index.html'), 'utf8');
  const files = new Set<string>();
  for (const match of html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="([^"]+\.js)"/g)) {
    files.add(path.join(distDir, match[1]!.replace(/^\/ui\//, '').replace(/^\//, '')));
  }
  return [...files];
}

/** Builds the baseline page (React + ReactDOM + one MUI button) with the app's own bundler settings. */
async function buildBaseline(root: string): Promise<string> {
  const { build } = await import('vite');
  const { default: react } = await import('@vitejs/plugin-react');
  const outDir = mkdtempSync(path.join(tmpdir(), 'concierge-bench-baseline-'));
  await build({ root, base: '/', logLevel: 'silent', plugins: [react()], build: { outDir, emptyOutDir: true } });
  return outDir;
}

/**
 * How much JavaScript a visitor's phone downloads before the public chat
 * shows (gzipped), against the floor any page of this stack pays — React,
 * ReactDOM and a themed MUI component — built in the same run.
 */
export async function measureChatFirstLoad(distDir: string, baselineRoot: string): Promise<BenchResult> {
  if (!existsSync(path.join(distDir, 'index.html'))) throw new Error(`${distDir}/index.html is missing: run \`npm run build\` first`);
  const chat = firstLoadFiles(distDir);
  const baselineDir = await buildBaseline(baselineRoot);
  try {
    const baselineFiles = firstLoadFiles(baselineDir);
    const value = chat.reduce((total, file) => total + gz(file), 0);
    const baseline = baselineFiles.reduce((total, file) => total + gz(file), 0);
    const allJs = readdirSync(path.join(distDir, 'assets')).filter((file) => file.endsWith('.js'));
    const whole = allJs.reduce((total, file) => total + gz(path.join(distDir, 'assets', file)), 0);
    return {
      name: 'public chat first-load JavaScript',
      measure: 'gzipped JS the chat page loads before it shows',
      value: Math.round(value / 1024),
      baseline: Math.round(baseline / 1024),
      baselineMeasure: 'React + ReactDOM + one MUI button, same bundler',
      unit: 'KiB',
      ratio: value / baseline,
      maxRatio: 3,
      notes: [
        `first-load files: ${chat.map((file) => path.basename(file)).join(', ')}`,
        `the whole app (console included): ${Math.round(whole / 1024)} KiB gzipped; the chat page loads ${Math.round((value / whole) * 100)}% of it`,
      ],
    };
  } finally {
    rmSync(baselineDir, { recursive: true, force: true });
  }
}
