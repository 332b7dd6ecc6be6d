/**
 * The SQLite checkpointer's thread (sqlite-checkpointer.ts): a connection of
 * its own to the database file that copies the write-ahead log back into the
 * file every interval (`pragma wal_checkpoint(PASSIVE)`), so the server's
 * event loop never waits for a checkpoint and its fsync.
 *
 * A passive checkpoint takes no lock that writers or readers wait on. Once it
 * has copied every frame, the next write starts the log from its beginning
 * again, so the log stays about as large as an interval's writes.
 */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointWorkerData {
  file: string;
  intervalMs: number;
}

/** One checkpoint's result: frames in the log, and how many of them are now in the database file. */
export interface CheckpointResult {
  logFrames: number;
  checkpointedFrames: number;
}

export type ToCheckpointWorker = { kind: 'stop' };
export type FromCheckpointWorker = { kind: 'ready' } | { kind: 'checkpointed'; result: CheckpointResult } | { kind: 'stopped' };

const { file, intervalMs } = workerData as CheckpointWorkerData;
const parent = parentPort!;

// Opening fails the thread (an 'error' the main thread sees before 'ready'); it then checkpoints as SQLite does by default.
const database = new DatabaseSync(file, { timeout: 5000 });
const checkpoint = database.prepare('pragma wal_checkpoint(PASSIVE)');

function run(): void {
  const row = checkpoint.get() as { busy: number; log: number; checkpointed: number };
  // Nothing was written since the last one: nothing to say.
  if (row.log > 0) parent.postMessage({ kind: 'checkpointed', result: { logFrames: row.log, checkpointedFrames: row.checkpointed } } satisfies FromCheckpointWorker);
}

const timer = setInterval(run, intervalMs);

parent.on('message', (message: ToCheckpointWorker) => {
  if (message.kind !== 'stop') return;
  clearInterval(timer);
  database.close();
  parent.postMessage({ kind: 'stopped' } satisfies FromCheckpointWorker);
  parent.close();
});

parent.postMessage({ kind: 'ready' } satisfies FromCheckpointWorker);
