import type { AssistantService } from './assistant.service.ts';
import type { KnowledgeService } from './knowledge.service.ts';

/**
 * The offline assistant standing by behind OpenAI for the spending cap:
 * when the day's token budget is spent, questions are answered from the
 * schedule and files by it. Its store mirrors the knowledge documents,
 * brought up to date just before it answers.
 */
export class OfflineFallback {
  readonly assistant: AssistantService;
  readonly #knowledge: KnowledgeService;
  readonly #mirrored = { signature: null as string | null };
  #syncing: Promise<void> | null = null;

  constructor(options: { assistant: AssistantService; knowledge: KnowledgeService }) {
    this.assistant = options.assistant;
    this.#knowledge = options.knowledge;
  }

  /** Brings its store up to date with the knowledge documents (one sync at a time). */
  ready(): Promise<void> {
    this.#syncing ??= this.#knowledge.mirrorTo(this.assistant, this.#mirrored).finally(() => {
      this.#syncing = null;
    });
    return this.#syncing;
  }

  close(): Promise<void> {
    return this.assistant.provider.close?.() ?? Promise.resolve();
  }
}
