import type { ChatReply } from '@concierge/contract';

/**
 * An answer being produced in this process, for everyone following it: the
 * request that asked, and any retry of it (DESIGN §9: a retry follows the
 * answer in flight). A follower gets the text so far as one piece, then each
 * new piece, then the reply.
 */
export class LiveAnswer {
  #text = '';
  readonly #followers = new Set<(delta: string) => void>();
  readonly #reply: Promise<ChatReply>;

  constructor(reply: Promise<ChatReply>) {
    this.#reply = reply;
    // Followers see the outcome through follow(); nobody following is not an unhandled rejection.
    reply.catch(() => {});
  }

  /** The text produced so far. */
  get text(): string {
    return this.#text;
  }

  /** A piece of the answer as the provider produced it. */
  push(delta: string): void {
    this.#text += delta;
    for (const follower of this.#followers) {
      try {
        follower(delta);
      } catch {
        // A follower that cannot take more (its connection went away) is its own business; the answer carries on.
      }
    }
  }

  /** The reply once the answer is over; `onText` gets the text so far at once, then each new piece. */
  async follow(onText?: (delta: string) => void): Promise<ChatReply> {
    if (!onText) return this.#reply;
    if (this.#text) onText(this.#text);
    this.#followers.add(onText);
    try {
      return await this.#reply;
    } finally {
      this.#followers.delete(onText);
    }
  }
}
