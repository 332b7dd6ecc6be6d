/**
 * Profiles of the server's thread during the chat benchmark's rounds, and
 * where their time or their memory goes.
 *
 * `BENCH_PROFILE=<dir> npm run bench -- chat` writes one CPU profile per
 * timed round (`<engine>-<side>-<round>.cpuprofile`, for Chromium's DevTools
 * or this file); with `BENCH_PROFILE_KIND=heap` as well, a sampled
 * allocation profile instead (`.heapprofile`: every object allocated in the
 * round, kept or not), and with `BENCH_PROFILE_KIND=promoted` one of only the
 * objects that outlived a scavenge (`-promoted.heapprofile`: what the old
 * generation and its major collections pay for). Either slows the server, so
 * the figures of such a run are not the benchmark's. Then
 *
 *   node bench/src/cpu-profile.ts <product profile> <bare profile> [answers]
 *
 * prints per answer (a round's answers, 1,000 by default) the milliseconds
 * of CPU, or the kilobytes allocated, by source: a package, a folder of the
 * server, a Node module, or one of V8's own entries (garbage collection, a
 * native call such as node:sqlite's `run`), largest difference first.
 * Allocation is steadier from run to run than time, and what the product
 * allocates beyond the bare route is what its garbage collection pays for.
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

/** V8's sampled allocation profile: a tree of call frames, each with the bytes allocated in it. */
interface HeapProfileNode {
  callFrame: ProfileNode['callFrame'];
  selfSize: number;
  children: HeapProfileNode[];
}

/** `promoted`: a heap profile of only the objects that outlived a scavenge (what the old generation and its collections pay for). */
export type ProfileKind = 'cpu' | 'heap' | 'promoted';

/** Profiles the thread between start() and stop(name), writing `<dir>/<name>.cpuprofile` or `.heapprofile`. */
export class RoundProfiler {
  readonly #session = new Session();
  readonly #dir: string;
  readonly #kind: ProfileKind;

  constructor(dir: string, kind: ProfileKind = 'cpu') {
    mkdirSync(dir, { recursive: true });
    this.#dir = dir;
    this.#kind = kind;
  }

  async start(): Promise<void> {
    this.#session.connect();
    if (this.#kind !== 'cpu') {
      await this.#session.post('HeapProfiler.enable');
      // Every KB on average, counting what the next garbage collection takes as well as what stays ('heap'), or
      // only what outlives a scavenge and so is promoted ('promoted').
      const young = this.#kind === 'heap';
      await this.#session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMinorGC: young, includeObjectsCollectedByMajorGC: true });
      return;
    }
    await this.#session.post('Profiler.enable');
    await this.#session.post('Profiler.setSamplingInterval', { interval: 200 });
    await this.#session.post('Profiler.start');
  }

  async stop(name: string): Promise<void> {
    const { profile } = this.#kind === 'cpu' ? await this.#session.post('Profiler.stop') : await this.#session.post('HeapProfiler.stopSampling');
    const file = this.#kind === 'cpu' ? `${name}.cpuprofile` : `${name}${this.#kind === 'promoted' ? '-promoted' : ''}.heapprofile`;
    writeFileSync(path.join(this.#dir, file), JSON.stringify(profile));
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

/** Bytes allocated by source. */
export function bytesBySource(profile: { head: HeapProfileNode }): Map<string, number> {
  const bytes = new Map<string, number>();
  const visit = (node: HeapProfileNode) => {
    const source = sourceOf(node.callFrame);
    if (source !== 'node:inspector') bytes.set(source, (bytes.get(source) ?? 0) + node.selfSize);
    node.children.forEach(visit);
  };
  visit(profile.head);
  return bytes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [productFile, bareFile, answersArg] = process.argv.slice(2);
  if (!productFile || !bareFile) {
    console.error('usage: node bench/src/cpu-profile.ts <product profile> <bare profile> [answers]');
    process.exit(2);
  }
  const answers = Number(answersArg ?? 1000);
  const heap = productFile.endsWith('.heapprofile');
  const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Profile & { head: HeapProfileNode };
  const [product, bare] = [productFile, bareFile].map((file) => (heap ? bytesBySource(read(file)) : timeBySource(read(file))));
  // Microseconds of CPU or bytes allocated, shown per answer in milliseconds or kilobytes.
  const perAnswer = (amount: number | undefined) => ((amount ?? 0) / (heap ? 1024 : 1000) / answers).toFixed(heap ? 1 : 3).padStart(7);
  const busy = (time: Map<string, number>) => [...time].filter(([source]) => source !== '(native (idle))').reduce((total, [, us]) => total + us, 0);
  console.log(`${heap ? 'KB' : 'ms'} per answer  product     bare     diff`);
  console.log(`${(heap ? 'allocated' : 'busy').padEnd(14)}${perAnswer(busy(product!))}  ${perAnswer(busy(bare!))}  ${perAnswer(busy(product!) - busy(bare!))}`);
  const sources = [...new Set([...product!.keys(), ...bare!.keys()])];
  const difference = (source: string) => (product!.get(source) ?? 0) - (bare!.get(source) ?? 0);
  for (const source of sources.sort((a, b) => difference(b) - difference(a)).slice(0, 40)) {
    console.log(`${' '.repeat(14)}${perAnswer(product!.get(source))}  ${perAnswer(bare!.get(source))}  ${perAnswer(difference(source))}  ${source}`);
  }
}
