/**
 * The offline assistant's index, in a worker thread: it reads the knowledge
 * files, builds the full-text index and composes answers, so neither a
 * 50,000-event schedule nor a question holds the server's main thread.
 *
 * A file is read once, when it comes, and its bytes are let go: the
 * schedule document's events get an index of their own, the other files'
 * passages share one. A new schedule document replaces the schedule: the
 * old one is let go before the new one is indexed, so two never sit in
 * memory together, and a question asked meanwhile waits for the new
 * schedule (a few seconds at 50,000 events) rather than being answered
 * from the old one. Adding or removing a FAQ re-indexes only the passages.
 * Deleting the schedule while an older schedule document remains asks the
 * host to load the files again.
 *
 * Messages in: load (every file), add, remove, answer; each is answered with
 * its id and a result or an error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Source } from '../provider.ts';
import { composeAnswer } from './compose-answer.ts';
import { KnowledgeIndex, PassageIndex, readKnowledgeFile, ScheduleIndex, type FileParts, type KnowledgeFile } from './knowledge-index.ts';
import { generalRarity } from './text.ts';

export type KnowledgeRequest =
  | { type: 'load'; files: KnowledgeFile[] }
  | { type: 'add'; file: KnowledgeFile }
  | { type: 'remove'; fileId: string }
  | { type: 'answer'; question: string; now: string; timeZone: string; previous: Source | null };

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

/** Schedule documents by id, oldest first: the newest is the schedule. */
const scheduleFiles = new Set<string>();
/** The passages of every other file, by file id, in the order the files came. */
const passageFiles = new Map<string, FileParts>();
let schedule: { fileId: string; index: ScheduleIndex } | null = null;
let passages = new PassageIndex([]);
let index = new KnowledgeIndex();
/** Changes run one after another; a question waits for the ones before it. */
let changes: Promise<void> = Promise.resolve();

function change<T>(work: () => Promise<T> | T): Promise<T> {
  const run = changes.then(work);
  // A change that failed does not stop the ones after it.
  changes = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
}

/**
 * Reads a file into the knowledge: a schedule document becomes the
 * schedule (the current one is let go before it is read). Nothing keeps
 * the file's bytes once it is read.
 */
async function take(file: KnowledgeFile): Promise<void> {
  if (!mayBeSchedule(file)) return addPassages(readKnowledgeFile(file));
  schedule = null;
  index = new KnowledgeIndex(null, passages);
  const parts = readKnowledgeFile(file);
  // Markers but no events: an ordinary file after all.
  if (parts.events.length === 0) return addPassages(parts);
  scheduleFiles.add(file.id);
  schedule = { fileId: file.id, index: await ScheduleIndex.build(parts, fallbackTimeZone) };
  index = new KnowledgeIndex(schedule.index, passages);
}

function addPassages(parts: FileParts): void {
  passageFiles.set(parts.fileId, parts);
  passages = new PassageIndex([...passageFiles.values()]);
  index = new KnowledgeIndex(schedule?.index ?? null, passages);
}

async function handle(request: KnowledgeRequest): Promise<unknown> {
  switch (request.type) {
    case 'load':
      return change(async () => {
        scheduleFiles.clear();
        passageFiles.clear();
        schedule = null;
        passages = new PassageIndex([]);
        index = new KnowledgeIndex();
        const candidates = request.files.filter(mayBeSchedule);
        for (const file of request.files) if (!candidates.includes(file)) passageFiles.set(file.id, readKnowledgeFile(file));
        passages = new PassageIndex([...passageFiles.values()]);
        index = new KnowledgeIndex(null, passages);
        // The newest schedule document is the schedule; the older ones are only remembered.
        for (let at = candidates.length - 1; at >= 0; at--) {
          if (schedule) scheduleFiles.add(candidates[at]!.id);
          else await take(candidates[at]!);
        }
        return { files: scheduleFiles.size + passageFiles.size, events: index.events.length, passages: index.passages.length };
      });
    case 'add':
      return change(async () => {
        await take(request.file);
        return { files: scheduleFiles.size + passageFiles.size, events: index.events.length, passages: index.passages.length };
      });
    case 'remove':
      return change(() => {
        if (passageFiles.delete(request.fileId)) {
          passages = new PassageIndex([...passageFiles.values()]);
          index = new KnowledgeIndex(schedule?.index ?? null, passages);
        }
        scheduleFiles.delete(request.fileId);
        if (schedule?.fileId !== request.fileId) return { reload: false };
        schedule = null;
        index = new KnowledgeIndex(null, passages);
        // An older schedule document takes over: the host loads the files again to read it.
        return { reload: scheduleFiles.size > 0 };
      });
    case 'answer':
      await changes;
      return composeAnswer(request.question, index, new Date(request.now), request.timeZone, request.previous);
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
