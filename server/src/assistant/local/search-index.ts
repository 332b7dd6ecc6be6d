/**
 * A full-text index with BM25 ranking per field, for the offline
 * assistant: documents are added once, then the index is sealed and
 * searched. It answers the searches MiniSearch answered here before — words
 * combined with AND or OR, a boost per field and per query word, longer
 * words a query word starts ("prefix") and words a typo or two away
 * ("fuzzy"), scored the same way (BM25 with k 1.2, b 0.7, d 0.5, times the
 * number of query words a document matched) — with its postings in typed
 * arrays. MiniSearch keeps a Map per distinct word, per field of it and per
 * node of its word tree, about a kilobyte per word: a 50,000-event schedule
 * has about 100,000 of them. Here a word costs its string and a few bytes
 * per document that holds it.
 */

export interface SearchIndexOptions {
  fields: readonly string[];
  /** How much a match in each field counts (1 when not given). */
  boost?: Readonly<Record<string, number>>;
  /** A field's text as words. */
  tokenize: (text: string) => string[];
  /** A word as it is indexed and searched, or null when it is not (a stop word). */
  processTerm: (word: string) => string | null;
}

export interface SearchOptions {
  /** How much a query term (processed) counts; 1 when not given. */
  boostTerm?: (term: string) => number;
  /** The edit distance a query term may be matched within, or false. */
  fuzzy?: (term: string) => number | false;
  /** Whether longer indexed terms starting with the query term match. */
  prefix?: (term: string) => boolean;
  /** Weights of a fuzzy and of a prefix match against an exact one. */
  weights?: { fuzzy: number; prefix: number };
  /** Documents (by number) that may be found. */
  filter?: (id: number) => boolean;
}

export interface SearchHit {
  /** The document's number: the order it was added in, from 0. */
  id: number;
  score: number;
  /** The query terms it matched. */
  queryTerms: string[];
  /** The indexed terms that matched them (the same, a longer one, or one a typo away). */
  matches: string[];
}

interface Scored {
  score: number;
  terms: string[];
  matches: string[];
}

const BM25 = { k: 1.2, b: 0.7, d: 0.5 };
const DEFAULT_WEIGHTS = { fuzzy: 0.45, prefix: 0.375 };
const MAX_FIELD_LENGTH = 0xffff;
const MAX_FREQUENCY = 0xffff;

/** A typed array that grows as values are appended. */
class Growing<T extends Uint32Array<ArrayBuffer> | Uint16Array<ArrayBuffer> | Uint8Array<ArrayBuffer>> {
  array: T;
  length = 0;
  readonly make: (size: number) => T;
  constructor(make: (size: number) => T) {
    this.make = make;
    this.array = make(1024);
  }
  push(value: number): void {
    if (this.length === this.array.length) {
      const bigger = this.make(Math.ceil(this.array.length * 1.5));
      bigger.set(this.array);
      this.array = bigger;
    }
    this.array[this.length++] = value;
  }
  /** The values, in an array of their exact length. */
  done(): T {
    return this.array.slice(0, this.length) as T;
  }
}

export class SearchIndex {
  readonly #fields: readonly string[];
  readonly #boosts: Float64Array;
  readonly #tokenize: (text: string) => string[];
  readonly #processTerm: (word: string) => string | null;
  #documentCount = 0;
  readonly #averageFieldLength: Float64Array;

  // While documents are added.
  #termIds: Map<string, number> | null = new Map();
  #building: {
    term: Growing<Uint32Array<ArrayBuffer>>;
    document: Growing<Uint32Array<ArrayBuffer>>;
    field: Growing<Uint8Array<ArrayBuffer>>;
    frequency: Growing<Uint16Array<ArrayBuffer>>;
    fieldLength: Growing<Uint16Array<ArrayBuffer>>;
    documentsWith: Growing<Uint32Array<ArrayBuffer>>;
  } | null;

  // Once sealed: terms in sorted order; postings of term t in field f at slot t × fields + f.
  #terms: string[] = [];
  #slotStart = new Uint32Array(1);
  #postingDocument = new Uint32Array(0);
  #postingFrequency = new Uint16Array(0);
  #fieldLength = new Uint16Array(0);
  /** How many documents hold each term, in any field. */
  #documentsWith = new Uint32Array(0);

  constructor(options: SearchIndexOptions) {
    this.#fields = options.fields;
    this.#boosts = Float64Array.from(options.fields, (field) => options.boost?.[field] || 1);
    this.#tokenize = options.tokenize;
    this.#processTerm = options.processTerm;
    this.#averageFieldLength = new Float64Array(options.fields.length);
    this.#building = {
      term: new Growing((size) => new Uint32Array(size)),
      document: new Growing((size) => new Uint32Array(size)),
      field: new Growing((size) => new Uint8Array(size)),
      frequency: new Growing((size) => new Uint16Array(size)),
      fieldLength: new Growing((size) => new Uint16Array(size)),
      documentsWith: new Growing((size) => new Uint32Array(size)),
    };
  }

  get documentCount(): number {
    return this.#documentCount;
  }

  /** Adds a document (its fields' texts, in the order of `fields`); returns its number. */
  add(values: readonly string[]): number {
    const building = this.#building;
    const termIds = this.#termIds;
    if (!building || !termIds) throw new Error('The search index is sealed');
    const document = this.#documentCount++;
    const inDocument = new Set<number>();
    for (let field = 0; field < this.#fields.length; field++) {
      const tokens = this.#tokenize(values[field] ?? '');
      // A field's length is its number of distinct words, filler included (as MiniSearch counts it).
      const length = new Set(tokens).size;
      building.fieldLength.push(Math.min(length, MAX_FIELD_LENGTH));
      this.#averageFieldLength[field] = (this.#averageFieldLength[field]! * document + length) / (document + 1);
      const frequencies = new Map<number, number>();
      for (const token of tokens) {
        const term = this.#processTerm(token);
        if (!term) continue;
        let id = termIds.get(term);
        if (id === undefined) {
          id = termIds.size;
          termIds.set(term, id);
          building.documentsWith.push(0);
        }
        frequencies.set(id, (frequencies.get(id) ?? 0) + 1);
      }
      for (const [id, frequency] of frequencies) {
        building.term.push(id);
        building.document.push(document);
        building.field.push(field);
        building.frequency.push(Math.min(frequency, MAX_FREQUENCY));
        inDocument.add(id);
      }
    }
    for (const id of inDocument) building.documentsWith.array[id]!++;
    return document;
  }

  /** Ends adding: the postings are sorted by term and field into compact arrays. */
  seal(): void {
    const building = this.#building;
    const termIds = this.#termIds;
    if (!building || !termIds) return;
    const fieldCount = this.#fields.length;
    this.#terms = [...termIds.keys()].sort();
    const newId = new Uint32Array(termIds.size);
    this.#terms.forEach((term, position) => (newId[termIds.get(term)!] = position));
    this.#termIds = null;
    const documentsWith = new Uint32Array(this.#terms.length);
    for (let old = 0; old < newId.length; old++) documentsWith[newId[old]!] = building.documentsWith.array[old]!;
    this.#documentsWith = documentsWith;

    const count = building.term.length;
    const slotStart = new Uint32Array(this.#terms.length * fieldCount + 1);
    for (let posting = 0; posting < count; posting++) slotStart[newId[building.term.array[posting]!]! * fieldCount + building.field.array[posting]! + 1]!++;
    for (let slot = 1; slot < slotStart.length; slot++) slotStart[slot]! += slotStart[slot - 1]!;
    const next = slotStart.slice(0, -1);
    const postingDocument = new Uint32Array(count);
    const postingFrequency = new Uint16Array(count);
    // Postings were added in document order, so each slot's documents come out in order.
    for (let posting = 0; posting < count; posting++) {
      const at = next[newId[building.term.array[posting]!]! * fieldCount + building.field.array[posting]!]!++;
      postingDocument[at] = building.document.array[posting]!;
      postingFrequency[at] = building.frequency.array[posting]!;
    }
    this.#slotStart = slotStart;
    this.#postingDocument = postingDocument;
    this.#postingFrequency = postingFrequency;
    this.#fieldLength = building.fieldLength.done();
    this.#building = null;
  }

  /** Whether a (processed) term is in the index. */
  has(term: string): boolean {
    return this.#find(term) !== -1;
  }

  /** How many documents hold the (processed) term, in any field. */
  documentsWith(term: string): number {
    const position = this.#find(term);
    return position === -1 ? 0 : this.#documentsWith[position]!;
  }

  /**
   * Documents matching the groups of words: with `AND`, every group (each
   * group: any of its words); with `OR`, any word. Best first.
   */
  search(groups: readonly (readonly string[])[], combineWith: 'AND' | 'OR', options: SearchOptions = {}): SearchHit[] {
    this.seal();
    const perGroup = groups.map((words) => this.#searchWords(words, options));
    let combined: Map<number, Scored>;
    if (perGroup.length === 0) combined = new Map();
    else combined = perGroup.reduce(combineWith === 'AND' ? and : or);
    const hits: SearchHit[] = [];
    for (const [id, { score, terms, matches }] of combined) {
      if (options.filter && !options.filter(id)) continue;
      // A document matching more of the query's words counts for more.
      hits.push({ id, score: score * (terms.length || 1), queryTerms: terms, matches });
    }
    return hits.sort((a, b) => b.score - a.score);
  }

  /** Any of the words (the results of each combined with OR). */
  #searchWords(words: readonly string[], options: SearchOptions): Map<number, Scored> {
    const terms: string[] = [];
    for (const word of words) {
      for (const token of this.#tokenize(word)) {
        const term = this.#processTerm(token);
        if (term) terms.push(term);
      }
    }
    if (terms.length === 0) return new Map();
    return terms.map((term) => this.#searchTerm(term, options)).reduce(or);
  }

  #searchTerm(term: string, options: SearchOptions): Map<number, Scored> {
    const weights = options.weights ?? DEFAULT_WEIGHTS;
    const boost = options.boostTerm?.(term) ?? 1;
    const results = new Map<number, Scored>();
    const exact = this.#find(term);
    if (exact !== -1) this.#score(term, exact, 1, boost, results);
    const fuzzy = options.fuzzy?.(term) || 0;
    const near = fuzzy > 0 ? this.#within(term, fuzzy) : new Map<number, number>();
    if (options.prefix?.(term)) {
      for (let position = this.#lowerBound(term); position < this.#terms.length && this.#terms[position]!.startsWith(term); position++) {
        const longer = this.#terms[position]!;
        const distance = longer.length - term.length;
        if (distance === 0) continue;
        // A word that is both a longer word and a typo away counts as the longer word.
        near.delete(position);
        this.#score(term, position, (weights.prefix * longer.length) / (longer.length + 0.3 * distance), boost, results);
      }
    }
    for (const [position, distance] of near) {
      if (distance === 0) continue;
      const other = this.#terms[position]!;
      this.#score(term, position, (weights.fuzzy * other.length) / (other.length + distance), boost, results);
    }
    return results;
  }

  /** BM25 of every document holding the indexed term at `position`, added to `results`. */
  #score(queryTerm: string, position: number, weight: number, boost: number, results: Map<number, Scored>): void {
    const fieldCount = this.#fields.length;
    const matched = this.#terms[position]!;
    for (let field = 0; field < fieldCount; field++) {
      const slot = position * fieldCount + field;
      const from = this.#slotStart[slot]!;
      const to = this.#slotStart[slot + 1]!;
      if (from === to) continue;
      const matching = to - from;
      const inverseFrequency = Math.log(1 + (this.#documentCount - matching + 0.5) / (matching + 0.5));
      const average = this.#averageFieldLength[field]!;
      const factor = weight * boost * this.#boosts[field]!;
      for (let posting = from; posting < to; posting++) {
        const document = this.#postingDocument[posting]!;
        const frequency = this.#postingFrequency[posting]!;
        const length = this.#fieldLength[document * fieldCount + field]!;
        const raw = inverseFrequency * (BM25.d + (frequency * (BM25.k + 1)) / (frequency + BM25.k * (1 - BM25.b + (BM25.b * length) / average)));
        const score = factor * raw;
        const result = results.get(document);
        if (result) {
          result.score += score;
          if (!result.terms.includes(queryTerm)) result.terms.push(queryTerm);
          if (!result.matches.includes(matched)) result.matches.push(matched);
        } else {
          results.set(document, { score, terms: [queryTerm], matches: [matched] });
        }
      }
    }
  }

  /** The sorted position of a term, or -1. */
  #find(term: string): number {
    this.seal();
    const position = this.#lowerBound(term);
    return this.#terms[position] === term ? position : -1;
  }

  /** The first sorted position whose term is not before `term`. */
  #lowerBound(term: string, from = 0): number {
    let low = from;
    let high = this.#terms.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#terms[middle]! < term) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * Indexed terms within `maxDistance` edits (Levenshtein) of `query`, by
   * sorted position. The sorted terms are walked as a tree: terms sharing a
   * beginning share the rows of the edit-distance table computed for it, and
   * a beginning already too far from the query skips every term that has it.
   */
  #within(query: string, maxDistance: number): Map<number, number> {
    const found = new Map<number, number>();
    const columns = query.length + 1;
    const maxLength = query.length + maxDistance;
    const cap = maxDistance + 1;
    const rows = new Uint8Array((maxLength + 1) * columns);
    for (let column = 0; column < columns; column++) rows[column] = Math.min(column, cap);
    let previous = '';
    /** Rows 0..valid hold the table for the first `valid` characters of `previous`. */
    let valid = 0;
    const terms = this.#terms;
    for (let position = 0; position < terms.length; ) {
      const term = terms[position]!;
      let depth = 0;
      const limit = Math.min(valid, term.length, previous.length);
      while (depth < limit && term.charCodeAt(depth) === previous.charCodeAt(depth)) depth++;
      let stoppedAt = -1;
      for (; depth < term.length; depth++) {
        if (depth + 1 > maxLength) {
          stoppedAt = depth;
          break;
        }
        const code = term.charCodeAt(depth);
        const above = depth * columns;
        const here = above + columns;
        let smallest = (rows[here] = Math.min(depth + 1, cap));
        for (let column = 1; column < columns; column++) {
          const replace = rows[above + column - 1]! + (query.charCodeAt(column - 1) === code ? 0 : 1);
          const remove = rows[above + column]! + 1;
          const insert = rows[here + column - 1]! + 1;
          const value = Math.min(replace, remove, insert, cap);
          rows[here + column] = value;
          if (value < smallest) smallest = value;
        }
        if (smallest > maxDistance) {
          stoppedAt = depth;
          break;
        }
      }
      previous = term;
      if (stoppedAt !== -1) {
        // Every term beginning like this one up to here is as far: skip them all.
        valid = stoppedAt;
        const beginning = term.slice(0, stoppedAt + 1);
        let low = position + 1;
        let high = terms.length;
        while (low < high) {
          const middle = (low + high) >>> 1;
          if (terms[middle]!.startsWith(beginning)) low = middle + 1;
          else high = middle;
        }
        position = low;
        continue;
      }
      valid = term.length;
      const distance = rows[term.length * columns + columns - 1]!;
      if (distance <= maxDistance) found.set(position, distance);
      position++;
    }
    return found;
  }
}

function or(a: Map<number, Scored>, b: Map<number, Scored>): Map<number, Scored> {
  for (const [id, result] of b) {
    const existing = a.get(id);
    if (!existing) {
      a.set(id, result);
      continue;
    }
    existing.score += result.score;
    for (const match of result.matches) if (!existing.matches.includes(match)) existing.matches.push(match);
    for (const term of result.terms) if (!existing.terms.includes(term)) existing.terms.push(term);
  }
  return a;
}

function and(a: Map<number, Scored>, b: Map<number, Scored>): Map<number, Scored> {
  const combined = new Map<number, Scored>();
  for (const [id, result] of b) {
    const existing = a.get(id);
    if (!existing) continue;
    for (const term of result.terms) if (!existing.terms.includes(term)) existing.terms.push(term);
    for (const match of result.matches) if (!existing.matches.includes(match)) existing.matches.push(match);
    combined.set(id, { score: existing.score + result.score, terms: existing.terms, matches: existing.matches });
  }
  return combined;
}
