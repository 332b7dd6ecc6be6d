/**
 * CPU profiles of the server's thread during the chat benchmark's rounds, and
 * where their time goes.
 *
 * `BENCH_PROFILE=<dir> npm run bench -- chat` writes one profile per timed
 * round (`<engine>-<side>-<round>.cpuprofile`, for Chromium's DevTools or
 * this file). Sampling slows the server, so the figures of such a run are
 * not the benchmark's. Then
 *
 *   node bench/src/cpu-profile.ts <product.cpuprofile> <bare.cpuprofile> [answers]
 *
 * prints the milliseconds per answer (a round's answers, 1,000 by default)
 * each spent by source: a package, a folder of the server, a Node module, or
 * one of V8's own entries (garbage collection, a native call such as
 * node:sqlite's `run`), largest difference first.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Samples the thread's CPU between start() and stop(name), writing `<dir>/<name>.cpuprofile`. */
export class RoundProfiler {
  readonly #session = new Session();
  readonly #dir: string;

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    this.#dir = dir;
  }

  async start(): Promise<void> {
    this.#session.connect();
    await this.#session.post('Profiler.enable');
    await this.#session.post('Profiler.setSamplingInterval', { interval: 200 });
    await this.#session.post('Profiler.start');
  }

  async stop(name: string): Promise<void> {
    const { profile } = await this.#session.post('Profiler.stop');
    writeFileSync(path.join(this.#dir, `${name}.cpuprofile`), JSON.stringify(profile));
    this.#session.disconnect();
  }
}

/** V8's entries without a script whose time is worth its own line. */
const NATIVE_ENTRIES = new Set(['(garbage collector)', '(program)', '(idle)', 'run', 'all', 'prepare', 'writev', 'runMicrotasks', 'postMessage']);

/** The source a sampled function belongs to. */
function sourceOf({ functionName, url }: ProfileNode['callFrame']): string {
  if (!url) return NATIVE_ENTRIES.has(functionName) ? `(native ${functionName})` : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const server = /\/(server\/src\/[^/]+)/.exec(url);
  if (server) return server[1]!.replace(/\.ts$/, '');
  if (url.includes('undici')) return 'node:undici';
  return url.startsWith('node:') ? url : path.basename(url);
}

/** Microseconds of samples by source, the profiler's own calls left out. */
export function timeBySource(profile: Profile): Map<string, number> {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const time = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const source = sourceOf(nodes.get(id)!.callFrame);
    if (source === 'node:inspector') return;
    time.set(source, (time.get(source) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return time;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [productFile, bareFile, answersArg] = process.argv.slice(2);
  if (!productFile || !bareFile) {
    console.error('usage: node bench/src/cpu-profile.ts <product.cpuprofile> <bare.cpuprofile> [answers]');
    process.exit(2);
  }
  const answers = Number(answersArg ?? 1000);
  const [product, bare] = [productFile, bareFile].map((file) => timeBySource(JSON.parse(readFileSync(file, 'utf8')) as Profile));
  const perAnswer = (us: number | undefined) => ((us ?? 0) / 1000 / answers).toFixed(3).padStart(7);
  const busy = (time: Map<string, number>) => [...time].filter(([source]) => source !== '(native (idle))').reduce((total, [, us]) => total + us, 0);
  console.log('ms per answer  product     bare     diff');
  console.log(`busy          ${perAnswer(busy(product!))}  ${perAnswer(busy(bare!))}  ${perAnswer(busy(product!) - busy(bare!))}`);
  const sources = [...new Set([...product!.keys(), ...bare!.keys()])];
  const difference = (source: string) => (product!.get(source) ?? 0) - (bare!.get(source) ?? 0);
  for (const source of sources.sort((a, b) => difference(b) - difference(a)).slice(0, 40)) {
    console.log(`${' '.repeat(14)}${perAnswer(product!.get(source))}  ${perAnswer(bare!.get(source))}  ${perAnswer(difference(source))}  ${source}`);
  }
}
