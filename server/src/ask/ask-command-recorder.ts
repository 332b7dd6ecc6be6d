import type { Logger } from 'pino';
import type { RunState } from '../assistant/provider.ts';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import type { UsersService } from '../users/users.service.ts';
import type { AnswerFailure, AnswerOutcome, AskRecorder, AskStep } from './ask-pipeline.ts';
import * as queries from './ask-commands.queries.ts';

/**
 * Stores an ask command's progress for the pipeline: its state and step at
 * every step (DESIGN §6), the provider ids as they arrive (so a restart
 * resumes it), and the outcome — only while this process still owns it.
 * A new conversation's thread also becomes the user's.
 */
export class AskCommandRecorder implements AskRecorder {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #users: UsersService;
  readonly #owner: string;
  readonly #command: queries.AskCommandRow;
  /** The command as last stored (the outcome included, once there is one). */
  stored: queries.AskCommandRow;

  constructor(options: { database: Database; clock: Clock; logger: Logger; users: UsersService; owner: string; command: queries.AskCommandRow }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#users = options.users;
    this.#owner = options.owner;
    this.#command = options.command;
    this.stored = options.command;
  }

  async #update(changes: Omit<queries.AskCommandChanges, 'updated_at'>): Promise<boolean> {
    const row = await queries.updateOwnedCommand(this.#database.db, this.#command.id, this.#owner, { ...changes, updated_at: this.#clock.now().toISOString() });
    if (!row) {
      this.#logger.warn({ askCommandId: this.#command.id }, 'another process took this ask command over');
      return false;
    }
    this.stored = row;
    return true;
  }

  async step(step: AskStep): Promise<void> {
    await this.#update({ state: 'in_progress', step });
  }

  async threadCreated(threadId: string): Promise<void> {
    if (await this.#update({ thread_id: threadId })) await this.#users.setThread(this.#command.user_id, threadId);
  }

  async messageCreated(messageId: string): Promise<void> {
    await this.#update({ message_id: messageId });
  }

  async runCreated(run: RunState): Promise<void> {
    await this.#update({ run_id: run.id, run_status: run.status });
  }

  async completed(outcome: AnswerOutcome): Promise<void> {
    await this.#update({
      state: 'completed',
      step: 'list_message',
      thread_id: outcome.threadId,
      run_id: outcome.runId,
      run_status: outcome.runStatus,
      response: outcome.answer.text,
      sources: JSON.stringify(outcome.answer.sources),
      ...outcome.usage,
      processing_duration_ms: outcome.processingMs,
      finished_at: outcome.finishedAt.toISOString(),
      error: null,
      owner: null,
      lease_expires_at: null,
    });
  }

  async failed(failure: AnswerFailure): Promise<void> {
    await this.#update({
      state: 'failed',
      run_id: failure.runId,
      run_status: failure.runStatus,
      error: failure.logMessage,
      ...failure.usage,
      processing_duration_ms: failure.processingMs,
      finished_at: failure.finishedAt.toISOString(),
      owner: null,
      lease_expires_at: null,
    });
  }
}
