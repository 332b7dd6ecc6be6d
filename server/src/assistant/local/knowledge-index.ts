import MiniSearch, { type SearchResult } from 'minisearch';
import { knowledgeTitle, readChangeMarker, readEventMarker, readTimezoneMarker, stripMarkers, type ChangeMarker } from '../knowledge-format.ts';
import { localDayOf, TIME_WORDS, type TimeWindow } from './time-window.ts';
import { fold, stem, termOf, tokenize, words } from './text.ts';

/**
 * The offline assistant's knowledge: the schedule's events (read from the
 * crawler's document, with their feed ids, rooms, tracks, speakers and
 * changes) and the passages of every other file (split by headings and
 * paragraphs), each in a full-text index with BM25 ranking per field, plus
 * the vocabularies that let a question name a room, a track or a guest.
 */

export interface ScheduleItem {
  kind: 'event';
  id: number;
  uid: string | null;
  title: string;
  /** The title's words, folded (for "does the question name the whole title?"). */
  titleWords: string[];
  /** The title folded, words separated by single spaces. */
  foldedTitle: string;
  start: Date;
  end: Date | null;
  room: string | null;
  track: string | null;
  speakers: string[];
  language: string | null;
  description: string;
  status: 'confirmed' | 'tentative' | 'cancelled';
  /** The latest change the schedule recorded for it (moved, cancelled, added). */
  change: ChangeMarker | null;
  fileId: string;
}

export interface Passage {
  kind: 'passage';
  id: number;
  fileId: string;
  filename: string;
  fileTitle: string;
  /** The headings above it, outermost first. */
  headings: string[];
  /** The passage as Markdown, markers removed. */
  text: string;
}

export interface KnowledgeFile {
  id: string;
  filename: string;
  content: string;
}

export interface Hit<T> {
  item: T;
  score: number;
  /** The query terms (stems) it matched. */
  terms: string[];
  /** The indexed terms that matched them (the same, a longer word, or one a typo away). */
  matches: string[];
}

export const DEFAULT_EVENT_MINUTES = 60;
const MAX_PASSAGE_CHARS = 1200;
const FACT = /^\s*[-*]\s+\**([A-Za-z][A-Za-z ]{1,20}?)\**\s*:\**\s*(.+)$/;
const SCHEDULE_HEADING_TIME = /^(?:all day|\d{1,2}:\d\d(?:\s*[–-]\s*\d{1,2}:\d\d)?)\s*·\s*/i;

/** Field boosts: a word in the title says most about an event, one in its description least. */
const EVENT_BOOST = { title: 4, speakers: 3, track: 1.5, room: 1.2, description: 1 };
const PASSAGE_BOOST = { headings: 3, text: 1 };

const searchOptions = {
  prefix: (term: string) => term.length >= 5,
  fuzzy: (term: string) => (/\d/.test(term) ? false : term.length >= 9 ? 2 : term.length >= 5 ? 1 : false),
  maxFuzzy: 2,
  weights: { fuzzy: 0.5, prefix: 0.4 },
};

interface Vocabulary {
  /** Folded room name → the schedule's own spelling. */
  rooms: Map<string, string>;
  tracks: Map<string, string>;
  speakers: Map<string, string>;
  /** Adjacent word pairs of event titles ("game night"), to tell a title's words from time words. */
  titleBigrams: Set<string>;
  /** Every word of an event title. */
  titleWords: Set<string>;
}

export class KnowledgeIndex {
  readonly events: ScheduleItem[] = [];
  readonly passages: Passage[] = [];
  /** The convention's zone as the schedule document states it. */
  readonly timeZone: string | undefined;
  /** Local days (yyyy-mm-dd) that have events, in order. */
  readonly eventDays: string[];
  readonly vocabulary: Vocabulary = { rooms: new Map(), tracks: new Map(), speakers: new Map(), titleBigrams: new Set(), titleWords: new Set() };
  readonly #eventSearch: MiniSearch<ScheduleItem>;
  readonly #passageSearch: MiniSearch<Passage>;
  /** How many events (passages) hold each term, for weighing a question's words. */
  readonly #eventTermCount = new Map<string, number>();
  readonly #passageTermCount = new Map<string, number>();

  /**
   * Builds the index in chunks, yielding between them, so a worker answering
   * from the previous index keeps answering while a big schedule is indexed.
   */
  static async build(files: readonly KnowledgeFile[], fallbackTimeZone: string): Promise<KnowledgeIndex> {
    const index = new KnowledgeIndex(files, fallbackTimeZone, { deferIndexing: true });
    await index.#eventSearch.addAllAsync(index.events, { chunkSize: 1000 });
    await index.#passageSearch.addAllAsync(index.passages, { chunkSize: 1000 });
    return index;
  }

  constructor(files: readonly KnowledgeFile[], fallbackTimeZone: string, options: { deferIndexing?: boolean } = {}) {
    this.timeZone = files.map((file) => readTimezoneMarker(file.content)).find(Boolean);
    for (const file of files) readFile(file, this.events, this.passages);
    this.events.sort((a, b) => a.start.getTime() - b.start.getTime() || a.title.localeCompare(b.title));
    this.events.forEach((event, index) => (event.id = index));
    const zone = this.timeZone ?? fallbackTimeZone;
    this.eventDays = [...new Set(this.events.map((event) => localDayOf(event.start, zone)))].sort();

    for (const event of this.events) {
      if (event.room) this.vocabulary.rooms.set(fold(event.room).trim(), event.room);
      if (event.track) this.vocabulary.tracks.set(fold(event.track).trim(), event.track);
      for (const speaker of event.speakers) this.vocabulary.speakers.set(words(speaker).join(' '), speaker);
      const titleWords = words(event.title);
      for (const word of titleWords) this.vocabulary.titleWords.add(word);
      for (let i = 0; i + 1 < titleWords.length; i++) this.vocabulary.titleBigrams.add(`${titleWords[i]} ${titleWords[i + 1]}`);
    }

    this.#eventSearch = new MiniSearch<ScheduleItem>({
      fields: ['title', 'speakers', 'track', 'room', 'description'],
      storeFields: [],
      tokenize,
      processTerm: (term) => termOf(term),
      extractField: (event, field) => {
        if (field === 'speakers') return event.speakers.join(' ');
        if (field === 'id') return event.id as unknown as string;
        return String((event as unknown as Record<string, unknown>)[field] ?? '');
      },
      searchOptions: { ...searchOptions, boost: EVENT_BOOST },
    });
    this.#passageSearch = new MiniSearch<Passage>({
      fields: ['headings', 'text'],
      storeFields: [],
      tokenize,
      processTerm: (term) => termOf(term),
      extractField: (passage, field) => (field === 'headings' ? passage.headings.join(' ') : field === 'id' ? (passage.id as unknown as string) : passage.text),
      searchOptions: { ...searchOptions, boost: PASSAGE_BOOST },
    });
    if (!options.deferIndexing) {
      this.#eventSearch.addAll(this.events);
      this.#passageSearch.addAll(this.passages);
    }
    for (const event of this.events) countTerms(this.#eventTermCount, [event.title, event.speakers.join(' '), event.track ?? '', event.room ?? '', event.description]);
    for (const passage of this.passages) countTerms(this.#passageTermCount, [passage.headings.join(' '), passage.text]);
  }

  get size(): number {
    return this.events.length + this.passages.length;
  }

  /** Events matching any of the terms, best first (BM25 over title, speakers, track, room and description). */
  searchEvents(terms: readonly WeightedTerm[], filter?: (event: ScheduleItem) => boolean): Hit<ScheduleItem>[] {
    return this.#run(this.#eventSearch, terms, filter ? (result) => filter(this.events[result.id as number]!) : undefined).map((hit) => ({
      ...hit,
      item: this.events[hit.id]!,
    }));
  }

  /** Passages of the files matching any of the terms, best first. */
  searchPassages(terms: readonly WeightedTerm[]): Hit<Passage>[] {
    return this.#run(this.#passageSearch, terms).map((hit) => ({ ...hit, item: this.passages[hit.id]! }));
  }

  #run<T>(search: MiniSearch<T>, terms: readonly WeightedTerm[], filter?: (result: SearchResult) => boolean) {
    if (terms.length === 0) return [];
    // MiniSearch hands boostTerm the processed term (the stem).
    const weights = new Map(terms.flatMap((term) => [[term.word, term.weight] as const, [stem(term.word), term.weight] as const]));
    // Typo tolerance and longer words only for a word the knowledge does not have as it is:
    // a known word is matched as it is (and a common one across 50,000 events stays cheap).
    const exact = new Set(terms.filter((term) => term.exact || this.knows(stem(term.word))).flatMap((term) => [term.word, stem(term.word)]));
    const options = {
      boostTerm: (term: string) => weights.get(term) ?? 1,
      fuzzy: (term: string) => (exact.has(term) ? false : searchOptions.fuzzy(term)),
      prefix: (term: string) => !exact.has(term) && searchOptions.prefix(term),
      filter,
    };
    // Passages holding every word (or one meaning the same) first; any of them only when none does.
    const groups = new Map<number, string[]>();
    for (const term of terms) groups.set(term.group, [...(groups.get(term.group) ?? []), term.word]);
    let results: SearchResult[] = [];
    if (groups.size > 1) {
      const all = { combineWith: 'AND' as const, queries: [...groups.values()].map((words) => ({ combineWith: 'OR' as const, queries: [words.join(' ')] })) };
      results = search.search(all, options);
    }
    if (results.length === 0) results = search.search(terms.map((term) => term.word).join(' '), { ...options, combineWith: 'OR' });
    return results.map((result) => ({ id: result.id as number, score: result.score, terms: result.queryTerms, matches: Object.keys(result.match) }));
  }

  /**
   * How much a term says, from how rare it is (inverse document frequency,
   * as BM25 weighs it). A word the knowledge never uses weighs as much as
   * the rarest one.
   */
  weight(stemmed: string, among: 'events' | 'passages'): number {
    const counts = among === 'events' ? this.#eventTermCount : this.#passageTermCount;
    const total = among === 'events' ? this.events.length : this.passages.length;
    const count = counts.get(stemmed) ?? 1;
    return Math.log(1 + (total - count + 0.5) / (count + 0.5));
  }

  /** Whether any event or passage uses the term (or one a typo away is likely: prefix of 5+). */
  knows(stemmed: string): boolean {
    return this.#eventTermCount.has(stemmed) || this.#passageTermCount.has(stemmed);
  }

  /** Events in a window of time, earliest first. */
  eventsIn(window: TimeWindow, filter: (event: ScheduleItem) => boolean = () => true): ScheduleItem[] {
    return this.events.filter((event) => inWindow(event, window) && filter(event));
  }

  /** Whether two adjacent words of a question are two adjacent words of an event title. */
  isTitleBigram(first: string, second: string): boolean {
    return this.vocabulary.titleBigrams.has(`${first} ${second}`);
  }
}

export interface WeightedTerm {
  /** The word as the question has it (MiniSearch stems it). */
  word: string;
  weight: number;
  /** Matched only as it is (a synonym: no typo tolerance, or "dinner" would find "winner"). */
  exact: boolean;
  /** The question's word it stands for (a word and its synonyms share one). */
  group: number;
}

function countTerms(counts: Map<string, number>, fields: string[]): void {
  const seen = new Set<string>();
  for (const field of fields) {
    for (const word of words(field)) {
      const term = termOf(word);
      if (term) seen.add(term);
    }
  }
  for (const term of seen) counts.set(term, (counts.get(term) ?? 0) + 1);
}

export function endOf(event: ScheduleItem): Date {
  return event.end ?? new Date(event.start.getTime() + DEFAULT_EVENT_MINUTES * 60_000);
}

export function inWindow(event: ScheduleItem, window: TimeWindow): boolean {
  const start = event.start.getTime();
  if (!window.overlaps) return start >= window.from.getTime() && start < window.to.getTime();
  return start < window.to.getTime() && endOf(event).getTime() > window.from.getTime();
}

/** Cuts a knowledge file into schedule events (where it marks them) and passages. */
function readFile(file: KnowledgeFile, events: ScheduleItem[], allPassages: Passage[]): void {
  const fileTitle = knowledgeTitle(file.filename);
  const eventCount = events.length;
  // A schedule document's own text (its heading, the list of recent changes) is no passage to quote.
  const passages: Passage[] = [];
  const changes = new Map<string, ChangeMarker>();
  const headings: string[] = [];
  let block: string[] = [];
  let blockHeading: string | null = null;

  const addPassage = (text: string) => {
    const clean = stripMarkers(text).trim();
    if (!clean) return;
    passages.push({ kind: 'passage', id: 0, fileId: file.id, filename: file.filename, fileTitle, headings: headings.filter(Boolean), text: clean });
  };

  const flush = () => {
    const lines = block;
    block = [];
    const raw = lines.join('\n');
    const marker = raw.includes('<!--') ? readEventMarker(raw) : undefined;
    if (marker && blockHeading !== null) {
      events.push(readEvent(blockHeading, marker, lines, file.id));
      return;
    }
    // Plain text: one passage per paragraph group, never longer than MAX_PASSAGE_CHARS.
    let paragraph: string[] = [];
    let size = 0;
    for (const line of lines) {
      const change = line.includes('<!--') ? readChangeMarker(line) : undefined;
      if (change) changes.set(change.uid, change);
      if (line.trim() === '' && size > MAX_PASSAGE_CHARS / 3) {
        addPassage(paragraph.join('\n'));
        paragraph = [];
        size = 0;
        continue;
      }
      if (size + line.length > MAX_PASSAGE_CHARS && paragraph.length) {
        addPassage(paragraph.join('\n'));
        paragraph = [];
        size = 0;
      }
      paragraph.push(line);
      size += line.length + 1;
    }
    addPassage(paragraph.join('\n'));
  };

  for (const line of file.content.replace(/\r\n?/g, '\n').split('\n')) {
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = heading[1]!.length;
      headings.length = Math.min(headings.length, level - 1);
      while (headings.length < level - 1) headings.push('');
      blockHeading = heading[2]!.trim();
      headings.push(blockHeading);
      continue;
    }
    block.push(line);
  }
  flush();
  for (const event of events.slice(eventCount)) {
    if (event.uid && changes.has(event.uid)) event.change = changes.get(event.uid)!;
  }
  if (events.length > eventCount) return;
  for (const passage of passages) allPassages.push({ ...passage, id: allPassages.length });
}

function readEvent(heading: string, marker: NonNullable<ReturnType<typeof readEventMarker>>, lines: string[], fileId: string): ScheduleItem {
  const facts = new Map<string, string>();
  const description: string[] = [];
  let inFacts = true;
  for (const line of lines) {
    if (line.includes('<!--')) continue;
    const fact = inFacts ? FACT.exec(line) : null;
    if (fact) {
      facts.set(fact[1]!.trim().toLowerCase(), fact[2]!.trim());
      continue;
    }
    if (line.trim() === '' && facts.size > 0) inFacts = false;
    if (line.trim()) {
      inFacts = false;
      description.push(line.trim());
    }
  }
  let title = heading.replace(SCHEDULE_HEADING_TIME, '');
  const cancelledInTitle = /\s*\((?:cancelled|canceled)\)\s*$/i.test(title);
  title = title.replace(/\s*\((?:cancelled|canceled)\)\s*$/i, '').trim();
  const status = facts.get('status')?.toLowerCase() ?? '';
  const speakers = facts.get('speakers') ?? facts.get('speaker') ?? facts.get('with') ?? facts.get('hosts') ?? facts.get('host') ?? '';
  return {
    kind: 'event',
    id: 0,
    uid: marker.uid,
    title,
    titleWords: words(title).filter((word) => word.length > 1),
    foldedTitle: words(title).join(' '),
    start: marker.start,
    end: marker.end,
    room: facts.get('where') ?? facts.get('room') ?? facts.get('location') ?? null,
    track: facts.get('track') ?? facts.get('category') ?? null,
    speakers: speakers
      .split(/\s*,\s*/)
      .map((name) => name.trim())
      .filter(Boolean),
    language: facts.get('language') ?? null,
    description: description.join('\n'),
    status: marker.status === 'cancelled' || cancelledInTitle || status.startsWith('cancel') ? 'cancelled' : marker.status,
    change: null,
    fileId,
  };
}

/** The words of a title, for matching a question's words against names. */
export const titleWords = (title: string) => words(title).filter((word) => !TIME_WORDS.has(word));

export { stem };
