import { Worker } from 'node:worker_threads';
import type { Source } from '../provider.ts';
import type { ComposedAnswer } from './compose-answer.ts';
import type { KnowledgeFile } from './knowledge-index.ts';
import type { KnowledgeMessage, KnowledgeReply, KnowledgeRequest } from './knowledge-worker.ts';

/** A file for the worker: its content as text, or as UTF-8 bytes the worker reads a line at a time. */
export type FileForIndex = KnowledgeFile;

const WORKER_URL = new URL('./knowledge-worker.ts', import.meta.url);

/**
 * A small young generation (V8's default for a thread is 3 × 16 MB): what
 * indexing 50,000 events throws away is collected early instead of piling
 * up, and the process peaks about 100 MB lower. The old generation keeps
 * V8's bound: the index must never run out.
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 8 };

/**
 * The main thread's side of the knowledge worker (knowledge-worker.ts): sends
 * it the files and the questions, and waits for its replies. The worker is
 * started on first use and again after a crash; `close()` ends it.
 */
export class KnowledgeHost {
  readonly #timeZone: () => string;
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  /** The ids of the files the worker holds, once it has been loaded. */
  #files: Set<string> | undefined;

  constructor(options: { timeZone: () => string }) {
    this.#timeZone = options.timeZone;
  }

  /** The ids of the files the worker has, or undefined before the first load. */
  get fileIds(): ReadonlySet<string> | undefined {
    return this.#files;
  }

  async load(files: FileForIndex[]): Promise<void> {
    this.#files = new Set(files.map((file) => file.id));
    try {
      await this.#send({ type: 'load', files });
    } catch (error) {
      this.#files = undefined;
      throw error;
    }
  }

  async add(file: FileForIndex): Promise<void> {
    if (!this.#files) return; // loaded in full on first use
    this.#files.add(file.id);
    await this.#send({ type: 'add', file });
  }

  async remove(fileId: string): Promise<void> {
    if (!this.#files) return;
    this.#files.delete(fileId);
    const { reload } = (await this.#send({ type: 'remove', fileId })) as { reload: boolean };
    // The worker no longer has an older schedule document's bytes: loaded in full on next use.
    if (reload) this.#files = undefined;
  }

  answer(question: string, now: Date, timeZone: string, previous: Source | null = null): Promise<ComposedAnswer> {
    return this.#send({ type: 'answer', question, now: now.toISOString(), timeZone, previous }) as Promise<ComposedAnswer>;
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#files = undefined;
    if (worker) await worker.terminate();
  }

  #send(request: KnowledgeRequest): Promise<unknown> {
    const worker = this.#start();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, request } satisfies KnowledgeMessage);
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_URL, { name: 'knowledge', workerData: { timeZone: this.#timeZone() }, resourceLimits: WORKER_LIMITS });
    // The worker never keeps the process alive on its own.
    worker.unref();
    worker.on('message', (reply: KnowledgeReply) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if (reply.ok) pending.resolve(reply.result);
      else pending.reject(new Error(`The knowledge index failed: ${reply.error}`));
    });
    const fail = (error: Error) => {
      if (this.#worker === worker) {
        this.#worker = undefined;
        this.#files = undefined;
      }
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`The knowledge worker stopped (exit code ${code})`)));
    this.#worker = worker;
    return worker;
  }
}
