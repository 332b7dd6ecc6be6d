import type { Source } from '@concierge/contract';

/** Where an assistant message stands. */
export type AnswerStatus =
  /** Asked, nothing arrived yet: "{product} is thinking...". */
  | 'waiting'
  /** Chunks are arriving. */
  | 'streaming'
  | 'done'
  /** The visitor pressed Stop; the text is what had arrived. */
  | 'stopped'
  /** The text is SPEC §8's error for the failure. */
  | 'error';

/** SPEC §3 "Client chat message", plus what the chat screen needs to show and retry it. */
export interface ChatMessage {
  id: string;
  role: 'user' | 'assistant';
  text: string;
  timestamp: string;
  status?: AnswerStatus;
  feedbackId?: number;
  feedbackSubmitted?: boolean;
  sources?: Source[];
  /** An error whose text is the operator's markdown (the paused message), not one of SPEC's plain texts. */
  markdown?: boolean;
  /** The question an answer (or its failure) belongs to, for Retry. */
  question?: string;
  /** The stored exchange (its feedback_id) a message restored from the history belongs to. */
  exchangeId?: number;
  /** The welcome message: its example prompts, and the server's rendering of it. */
  welcome?: { examples: string[]; html: string | null };
}

export const newId = () => (typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);
