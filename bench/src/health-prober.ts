/**
 * Health checks asked from a thread of their own, so the time measured is
 * the server's and not the bench's own event loop, busy sending a crowd's
 * requests (or gigabytes of uploads) at the same moment.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

export interface HealthChecks {
  url: string;
  /** Client-side time (ms) of each check. */
  times: number[];
  /** Checks that got no 200 (or no reply within a minute). */
  failures: number;
}

interface ProberData {
  kind: 'health-prober';
  urls: string[];
  everyMs: number;
}

/** Asks each of `urls` one at a time, every `everyMs` after the last reply, until `stop()`. */
export function startHealthProber(urls: string[], everyMs: number): { stop(): Promise<HealthChecks[]> } {
  const worker = new Worker(new URL(import.meta.url), { workerData: { kind: 'health-prober', urls, everyMs } satisfies ProberData });
  return {
    stop: () =>
      new Promise((resolve, reject) => {
        worker.once('error', reject);
        worker.once('message', (checks: HealthChecks[]) => {
          void worker.terminate();
          resolve(checks);
        });
        worker.postMessage('stop');
      }),
  };
}

if (!isMainThread && (workerData as ProberData | undefined)?.kind === 'health-prober') {
  const { urls, everyMs } = workerData as ProberData;
  let running = true;
  const checks = urls.map((url): HealthChecks => ({ url, times: [], failures: 0 }));
  parentPort!.once('message', () => (running = false));
  const probing = checks.map(async (check) => {
    while (running) {
      const started = performance.now();
      try {
        const response = await fetch(check.url, { signal: AbortSignal.timeout(60_000) });
        await response.arrayBuffer();
        if (response.status !== 200) check.failures++;
      } catch {
        check.failures++;
      }
      check.times.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  });
  void Promise.all(probing).then(() => parentPort!.postMessage(checks));
}
