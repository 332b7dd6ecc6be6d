/**
 * The offline assistant's index, in a worker thread: it reads the knowledge
 * files, builds the full-text index and composes answers, so neither a
 * 50,000-event schedule nor a question holds the server's main thread.
 *
 * A file is read once, when it comes: the schedule document's events get
 * an index of their own, the other files' passages share one. A new
 * schedule document replaces the schedule: the old one is let go before
 * the new one is indexed, so two never sit in memory together, and a
 * question asked meanwhile waits for the new schedule (a few seconds at
 * 50,000 events) rather than being answered from the old one. Adding or
 * removing a FAQ re-indexes only the passages.
 *
 * Messages in: load (every file), add, remove, answer; each is answered with
 * its id and a result or an error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { composeAnswer } from './compose-answer.ts';
import { KnowledgeIndex, PassageIndex, readKnowledgeFile, ScheduleIndex, type FileParts, type KnowledgeFile } from './knowledge-index.ts';
import { generalRarity } from './text.ts';

export type KnowledgeRequest =
  | { type: 'load'; files: KnowledgeFile[] }
  | { type: 'add'; file: KnowledgeFile }
  | { type: 'remove'; fileId: string }
  | { type: 'answer'; question: string; now: string; timeZone: string };

export interface KnowledgeMessage {
  id: number;
  request: KnowledgeRequest;
}

export type KnowledgeReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

const port = parentPort;
if (!port) throw new Error('knowledge-worker.ts runs as a worker thread');
const fallbackTimeZone = (workerData as { timeZone: string }).timeZone;

// The word list that weighs unknown words is read once, before the first question needs it.
setImmediate(() => generalRarity('warm'));

/** Schedule documents by id, oldest first, with their bytes: the newest is the schedule, an older one takes over if it goes. */
const scheduleFiles = new Map<string, KnowledgeFile>();
/** The passages of every other file, by file id, in the order the files came. */
const passageFiles = new Map<string, FileParts>();
let schedule: { fileId: string; index: ScheduleIndex } | null = null;
let passages = new PassageIndex([]);
let index = new KnowledgeIndex();
/** Changes run one after another; a question waits for the ones before it. */
let changes: Promise<void> = Promise.resolve();

function change(work: () => Promise<void> | void): Promise<void> {
  const run = changes.then(work);
  // A change that failed does not stop the ones after it.
  changes = run.catch(() => undefined);
  return run;
}

/** Reads a file into the knowledge; a schedule document becomes the schedule. */
async function take(file: KnowledgeFile): Promise<void> {
  if (!mayBeSchedule(file)) return addPassages(readKnowledgeFile(file));
  scheduleFiles.set(file.id, file);
  await useNewestSchedule();
}

function addPassages(parts: FileParts): void {
  passageFiles.set(parts.fileId, parts);
  passages = new PassageIndex([...passageFiles.values()]);
  index = new KnowledgeIndex(schedule?.index ?? null, passages);
}

/** Makes the newest schedule document the schedule; the current one is let go before it is read. */
async function useNewestSchedule(): Promise<void> {
  schedule = null;
  index = new KnowledgeIndex(null, passages);
  for (let newest = [...scheduleFiles.values()].at(-1); newest; newest = [...scheduleFiles.values()].at(-1)) {
    const parts = readKnowledgeFile(newest);
    if (parts.events.length > 0) {
      schedule = { fileId: newest.id, index: await ScheduleIndex.build(parts, fallbackTimeZone) };
      index = new KnowledgeIndex(schedule.index, passages);
      return;
    }
    // Markers but no events: an ordinary file after all.
    scheduleFiles.delete(newest.id);
    addPassages(parts);
  }
}

async function handle(request: KnowledgeRequest): Promise<unknown> {
  switch (request.type) {
    case 'load':
      await change(async () => {
        scheduleFiles.clear();
        passageFiles.clear();
        schedule = null;
        passages = new PassageIndex([]);
        index = new KnowledgeIndex();
        for (const file of request.files) {
          if (mayBeSchedule(file)) scheduleFiles.set(file.id, file);
          else addPassages(readKnowledgeFile(file));
        }
        await useNewestSchedule();
      });
      return { files: scheduleFiles.size + passageFiles.size, events: index.events.length, passages: index.passages.length };
    case 'add':
      await change(() => take(request.file));
      return { files: scheduleFiles.size + passageFiles.size, events: index.events.length, passages: index.passages.length };
    case 'remove':
      await change(async () => {
        if (passageFiles.delete(request.fileId)) {
          passages = new PassageIndex([...passageFiles.values()]);
          index = new KnowledgeIndex(schedule?.index ?? null, passages);
        }
        if (scheduleFiles.delete(request.fileId) && schedule?.fileId === request.fileId) await useNewestSchedule();
      });
      return { files: scheduleFiles.size + passageFiles.size };
    case 'answer':
      await changes;
      return composeAnswer(request.question, index, new Date(request.now), request.timeZone);
  }
}

/** Whether a file may be a schedule document (it has event markers); reading it says for sure. */
function mayBeSchedule(file: KnowledgeFile): boolean {
  return typeof file.content === 'string' ? file.content.includes('<!-- event ') : Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength).includes('<!-- event ');
}

port.on('message', (message: KnowledgeMessage) => {
  handle(message.request).then(
    (result) => port.postMessage({ id: message.id, ok: true, result } satisfies KnowledgeReply),
    (error: unknown) => port.postMessage({ id: message.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies KnowledgeReply),
  );
});
