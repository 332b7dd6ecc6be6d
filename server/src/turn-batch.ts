/**
 * Gathers what callers ask for during one turn of the event loop and does it
 * in one go at the start of the next (`setImmediate`): under load, the
 * answers that end in the same turn share one statement instead of making a
 * round trip each. Every caller's promise settles with that one write; when
 * it fails, each of them sees the error.
 *
 * A write does not wait for the one before it: the items of two batches
 * must not depend on each other's order.
 */
export class TurnBatch<T> {
  readonly #write: (items: T[]) => Promise<void>;
  #items: T[] = [];
  #next: Promise<void> | null = null;

  constructor(write: (items: T[]) => Promise<void>) {
    this.#write = write;
  }

  add(item: T): Promise<void> {
    this.#items.push(item);
    this.#next ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        const items = this.#items;
        this.#items = [];
        this.#next = null;
        this.#write(items).then(resolve, reject);
      });
    });
    return this.#next;
  }
}
