import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { UPLOAD_LIMITS } from '@concierge/server/src/assistant/upload.ts';
import { cookiesOf, ServerProcess } from '@concierge/server/src/test-support/server-process.ts';
import { startHealthProber } from './health-prober.ts';
import type { BenchResult } from './report.ts';

const UPLOADS = 100;
const FILE_BYTES = 20_000_000;
const HEALTH_SAMPLES = 40;
const ADMIN = { username: 'bench', password: 'bench bench bench' };
const BOUNDARY = 'concierge-bench-boundary';

/** Resident and peak resident memory of a process, in MB (Linux /proc). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

async function healthMs(origin: string): Promise<number> {
  const start = performance.now();
  const response = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(60_000) });
  await response.arrayBuffer();
  return performance.now() - start;
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

/**
 * One upload of `content` as `name`, written in 64 KB slices over its own
 * connection; the same content buffer serves every upload, so the bench
 * itself holds one copy however many are in flight.
 */
/** Keep-alive connections, as a browser's (a refused upload's connection is closed by the server with its 503). */
const agent = new Agent({ keepAlive: true, maxSockets: UPLOADS + 1 });

function upload(origin: string, cookie: string, name: string, content: Buffer): Promise<number> {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/markdown\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const url = new URL('/api/openai/vector_store/upload', origin);
  return new Promise((resolve) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { cookie, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': head.length + content.length + tail.length },
      },
      (answer) => {
        answer.resume();
        answer.on('end', () => resolve(answer.statusCode ?? 0));
      },
    );
    // A refused upload's reply can come while its body is still being sent; an error after the reply changes nothing.
    outgoing.on('error', () => resolve(0));
    void (async () => {
      const write = (chunk: Buffer) => (outgoing.write(chunk) ? Promise.resolve() : new Promise<void>((done) => outgoing.once('drain', done)));
      await write(head);
      for (let offset = 0; offset < content.length && !outgoing.destroyed; offset += 64 * 1024) await write(content.subarray(offset, offset + 64 * 1024));
      outgoing.end(tail);
    })();
  });
}

/**
 * 100 parallel 20 MB uploads against the product in a process of its own
 * (SQLite, offline assistant): the server's peak resident memory against
 * its resident memory at rest, and /healthz during the uploads against
 * /healthz at rest. Before uploads were streamed to a temporary file and
 * bounded, this held 1.2 GB and /healthz took 8 s.
 */
export async function benchUploads(report: (result: BenchResult) => void): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'concierge-upload-bench-'));
  const server = new ServerProcess('upload bench', { DATABASE_URL: `sqlite:${path.join(dir, 'bench.db')}`, LOG_LEVEL: 'warn', CONVENTION_TIMEZONE: 'UTC' });
  try {
    await server.ready();
    const origin = server.origin;
    const pid = server.pid!;
    await server.fetch('/setup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ADMIN, confirm_password: ADMIN.password }) });
    const login = await server.fetch('/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
    if (!login.ok) throw new Error(`sign-in failed: ${login.status}`);
    const cookie = cookiesOf(login);

    // At rest, after a first small upload has loaded every code path.
    const warm = await upload(origin, cookie, 'warm-up.md', Buffer.from('# Warm up\n\nQ: Where is Hall B?\nUpstairs.\n'));
    if (warm !== 200) throw new Error(`the warm-up upload got ${warm}`);
    const idle: number[] = [];
    for (let i = 0; i < HEALTH_SAMPLES; i++) idle.push(await healthMs(origin));
    const atRest = memoryOf(pid).rss;

    const line = 'Q: Where is the cloakroom? A: By the main entrance, next to the information desk.\n';
    const content = Buffer.alloc(FILE_BYTES, line);
    let peakRss = atRest;
    let running = true;
    const started = performance.now();
    const memorySampler = (async () => {
      while (running) {
        peakRss = Math.max(peakRss, memoryOf(pid).rss);
        await sleep(50);
      }
    })();
    const prober = startHealthProber([`${origin}/healthz`], 50);
    const statuses = await Promise.all(Array.from({ length: UPLOADS }, (_, index) => upload(origin, cookie, `guide-${index}.md`, content)));
    const seconds = (performance.now() - started) / 1000;
    running = false;
    await memorySampler;
    const [checks] = await prober.stop();
    const during = checks!.times;
    peakRss = Math.max(peakRss, memoryOf(pid).peak);

    const tally = new Map<number, number>();
    for (const status of statuses) tally.set(status, (tally.get(status) ?? 0) + 1);
    const outcome = [...tally].sort(([a], [b]) => a - b).map(([status, n]) => `${n} × ${status === 0 ? 'connection cut' : status}`).join(', ');
    const notes = [
      `${UPLOADS} parallel uploads of ${FILE_BYTES / 1e6} MB in ${seconds.toFixed(1)} s: ${outcome} (at most ${UPLOAD_LIMITS.maxInFlight} received at once; the others are told 503 with Retry-After)`,
    ];
    report({
      name: 'uploads: peak memory under 100 parallel 20 MB uploads',
      measure: 'peak resident memory of the server',
      value: Math.round(peakRss),
      baseline: Math.round(atRest),
      baselineMeasure: 'resident memory at rest',
      unit: 'MB',
      ratio: peakRss / atRest,
      maxRatio: 4,
      maxValue: 600,
      notes,
    });
    const idleMedian = percentile(idle, 50);
    const worst = Math.max(...during);
    report({
      name: 'uploads: /healthz during 100 parallel 20 MB uploads',
      measure: `slowest /healthz of ${during.length} during the uploads (p95 ${percentile(during, 95).toFixed(1)} ms)`,
      value: Math.round(worst * 10) / 10,
      baseline: Math.round(idleMedian * 10) / 10,
      baselineMeasure: `median /healthz at rest (${HEALTH_SAMPLES} samples)`,
      unit: 'ms',
      ratio: worst / idleMedian,
      maxRatio: Number.POSITIVE_INFINITY,
      maxValue: 1000,
      notes: [
        'target: the slowest /healthz under 1 s (it took 8 s before uploads were bounded); the ratio is shown, not judged (a few-ms baseline)',
        `${checks!.failures} of ${during.length} checks failed`,
        `machine load average during the run: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores`,
      ],
    });
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
