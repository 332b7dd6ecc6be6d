/**
 * The offline assistant's index, in a worker thread: it reads the knowledge
 * files, builds the full-text index (in chunks, answering from the previous
 * index meanwhile) and composes answers, so neither a 50,000-event schedule
 * nor a question holds the server's main thread.
 *
 * Messages in: load (every file), add, remove, answer; each is answered with
 * its id and a result or an error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { composeAnswer } from './compose-answer.ts';
import { KnowledgeIndex, type KnowledgeFile } from './knowledge-index.ts';
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

const files = new Map<string, KnowledgeFile>();
let index = new KnowledgeIndex([], fallbackTimeZone);
/** Rebuilds run one after another; the newest set of files wins. */
let rebuilding: Promise<void> = Promise.resolve();

function rebuild(): Promise<void> {
  rebuilding = rebuilding.then(async () => {
    index = await KnowledgeIndex.build([...files.values()], fallbackTimeZone);
  });
  return rebuilding;
}

async function handle(request: KnowledgeRequest): Promise<unknown> {
  switch (request.type) {
    case 'load':
      files.clear();
      for (const file of request.files) files.set(file.id, file);
      await rebuild();
      return { files: files.size, events: index.events.length, passages: index.passages.length };
    case 'add':
      files.set(request.file.id, request.file);
      await rebuild();
      return { files: files.size, events: index.events.length, passages: index.passages.length };
    case 'remove':
      files.delete(request.fileId);
      await rebuild();
      return { files: files.size };
    case 'answer':
      return composeAnswer(request.question, index, new Date(request.now), request.timeZone);
  }
}

port.on('message', (message: KnowledgeMessage) => {
  handle(message.request).then(
    (result) => port.postMessage({ id: message.id, ok: true, result } satisfies KnowledgeReply),
    (error: unknown) => port.postMessage({ id: message.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies KnowledgeReply),
  );
});
