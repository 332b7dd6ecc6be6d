/**
 * Once a turn of the event loop has run long (`longTurnMs` since its first
 * piece of work) and `perTurn` pieces have started in it, lets no more
 * start; they wait, in the order they asked, for the turns after it
 * (`setImmediate`, so the loop reads its sockets in between), `perTurn` a
 * turn. A short turn is left alone: pacing it would only add a turn to each
 * piece's wait.
 *
 * Why: against a provider that answers at once, the answers running at the
 * peak move in step. Each of their replies arrives in the same turn, and
 * each answer's next request (the SDK building it, its headers, the call
 * log) was made in that turn too: a turn of tens of milliseconds in which
 * nothing else is read, a health check included. Paced, the requests of a
 * crowd go out `perTurn` at a time, their replies come back spread over as
 * many turns, and a turn stays short.
 */
export class TurnPacer {
  readonly #perTurn: number;
  readonly #longTurnMs: number;
  readonly #waiting: (() => void)[] = [];
  /** Pieces of work started in this turn. */
  #started = 0;
  /** When this turn's first piece of work asked (performance.now()). */
  #turnStarted = 0;
  #turnEnding = false;

  constructor(perTurn: number, options: { longTurnMs?: number } = {}) {
    if (!(perTurn >= 1)) throw new RangeError(`A turn must let at least one piece of work start (${perTurn})`);
    this.#perTurn = perTurn;
    this.#longTurnMs = options.longTurnMs ?? 0;
  }

  /** Pieces of work waiting for a later turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Nothing (go on at once) while nobody is waiting and this turn is short
   * or has started fewer than `perTurn`; else a promise that resolves in
   * the first later turn with room.
   */
  pace(): Promise<void> | undefined {
    this.#endTurnSoon();
    if (this.#waiting.length === 0 && (this.#started < this.#perTurn || performance.now() - this.#turnStarted < this.#longTurnMs)) {
      this.#started++;
      return undefined;
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #endTurnSoon(): void {
    if (this.#turnEnding) return;
    this.#turnEnding = true;
    this.#turnStarted = performance.now();
    setImmediate(this.#endTurn);
  }

  /** At the end of a turn, the next turn's room goes to those waiting, oldest first. */
  readonly #endTurn = () => {
    this.#turnEnding = false;
    const letIn = this.#waiting.splice(0, this.#perTurn);
    // Those let in start now: they count against the turn that follows.
    this.#started = letIn.length;
    for (const resolve of letIn) resolve();
    if (this.#waiting.length > 0 || letIn.length > 0) this.#endTurnSoon();
  };
}
