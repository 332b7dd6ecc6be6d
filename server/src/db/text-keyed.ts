/**
 * Values kept by statement text, found by the text's length and then
 * compared. Kysely builds every text anew by concatenation; as a Map key it
 * is flattened and hashed whole on each query (15–18 µs for one of the hot
 * path's 3 KB CTEs; 2 % of the server's CPU on PostgreSQL), where comparing
 * it with the one or two kept texts of its length takes a third of that
 * (and stops at the first difference).
 */
export class TextKeyed<V> {
  readonly #byLength = new Map<number, { text: string; value: V }[]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(text: string): V | undefined {
    return this.#entry(text)?.value;
  }

  set(text: string, value: V): void {
    const entry = this.#entry(text);
    if (entry) {
      entry.value = value;
      return;
    }
    const entries = this.#byLength.get(text.length);
    if (entries) entries.push({ text, value });
    else this.#byLength.set(text.length, [{ text, value }]);
    this.#size++;
  }

  delete(text: string): void {
    const entries = this.#byLength.get(text.length);
    const at = entries ? entries.findIndex((entry) => entry.text === text) : -1;
    if (at < 0) return;
    entries!.splice(at, 1);
    if (entries!.length === 0) this.#byLength.delete(text.length);
    this.#size--;
  }

  clear(): void {
    this.#byLength.clear();
    this.#size = 0;
  }

  #entry(text: string): { text: string; value: V } | undefined {
    const entries = this.#byLength.get(text.length);
    if (entries) for (const entry of entries) if (entry.text === text) return entry;
    return undefined;
  }
}
