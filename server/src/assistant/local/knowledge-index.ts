import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { knowledgeTitle, readChangeMarker, readEventMarker, readTimezoneMarker, stripMarkers, type ChangeMarker } from '../knowledge-format.ts';
import { localDayOf, TIME_WORDS, type TimeWindow } from './time-window.ts';
import { SearchIndex, type SearchOptions } from './search-index.ts';
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
  /** The title folded, words separated by single spaces. */
  foldedTitle: string;
  start: Date;
  end: Date | null;
  room: string | null;
  track: string | null;
  /** The kind of session ("Workshop", "Screening"), when the schedule says. */
  type: string | null;
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
  /** The file's text, or its UTF-8 bytes (a big schedule: read a line at a time, never one giant string). */
  content: string | Uint8Array;
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
const EVENT_BOOST = { title: 4, speakers: 3, track: 1.5, type: 1.5, room: 1.2, description: 1 };
const PASSAGE_BOOST = { headings: 3, text: 1 };

const EVENT_FIELDS = ['title', 'speakers', 'track', 'type', 'room', 'description'] as const;
const PASSAGE_FIELDS = ['headings', 'text'] as const;
const eventFields = (event: ScheduleItem) => [event.title, event.speakers.join(' '), event.track ?? '', event.type ?? '', event.room ?? '', event.description];
const passageFields = (passage: Passage) => [passage.headings.join(' '), passage.text];
/** Documents indexed between two yields to the worker's event loop while a big schedule is indexed. */
const INDEX_CHUNK = 1000;

const fuzzyDistance = (term: string) => (/\d/.test(term) ? false : term.length >= 9 ? 2 : term.length >= 5 ? 1 : false);
const matchesLonger = (term: string) => term.length >= 5;
const MATCH_WEIGHTS = { fuzzy: 0.5, prefix: 0.4 };

interface Vocabulary {
  /** Folded room name → the schedule's own spelling. */
  rooms: Map<string, string>;
  tracks: Map<string, string>;
  speakers: Map<string, string>;
  /** The guests an event's title names ("Spotlight: Mira Okafor"), as the schedule spells them: its featured guests. */
  featured: Set<string>;
  /** The featured guests by their folded first name ("mira" → Mira Okafor). */
  featuredByFirstName: Map<string, string[]>;
  /** Adjacent word pairs of event titles ("game night"), to tell a title's words from time words. */
  titleBigrams: Set<string>;
  /** Every word of an event title. */
  titleWords: Set<string>;
}

/** What a knowledge file holds for the index: the events of a schedule document, or the passages of any other file. */
export interface FileParts {
  fileId: string;
  events: ScheduleItem[];
  passages: Passage[];
  /** The zone the file states (a schedule document does). */
  timeZone: string | undefined;
}

/** Reads a knowledge file: a schedule document's events, or another file's passages. */
export function readKnowledgeFile(file: KnowledgeFile): FileParts {
  const events: ScheduleItem[] = [];
  const passages: Passage[] = [];
  readFile(file, events, passages);
  return { fileId: file.id, events, passages, timeZone: readTimezoneMarker(beginningOf(file.content)) };
}

/** The schedule's events, in time order, with their search index and the names a question can use. */
export class ScheduleIndex {
  readonly events: ScheduleItem[];
  /** The convention's zone as the schedule document states it. */
  readonly timeZone: string | undefined;
  /** Local days (yyyy-mm-dd) that have events, in order. */
  readonly eventDays: string[];
  readonly vocabulary: Vocabulary = { rooms: new Map(), tracks: new Map(), speakers: new Map(), featured: new Set(), featuredByFirstName: new Map(), titleBigrams: new Set(), titleWords: new Set() };
  readonly search = new SearchIndex({ fields: EVENT_FIELDS, boost: EVENT_BOOST, tokenize, processTerm: termOf });

  /**
   * Indexes a schedule in chunks, yielding between them, so the worker
   * stays responsive while 50,000 events are indexed.
   */
  static async build(parts: FileParts, fallbackTimeZone: string): Promise<ScheduleIndex> {
    const schedule = new ScheduleIndex(parts, fallbackTimeZone);
    for (let from = 0; from < schedule.events.length; from += INDEX_CHUNK) {
      for (const event of schedule.events.slice(from, from + INDEX_CHUNK)) schedule.search.add(eventFields(event));
      await yieldToEventLoop();
    }
    schedule.search.seal();
    return schedule;
  }

  private constructor(parts: FileParts, fallbackTimeZone: string) {
    this.events = parts.events;
    this.timeZone = parts.timeZone;
    this.events.sort((a, b) => a.start.getTime() - b.start.getTime() || a.title.localeCompare(b.title));
    this.events.forEach((event, index) => (event.id = index));
    const zone = this.timeZone ?? fallbackTimeZone;
    this.eventDays = [...new Set(this.events.map((event) => localDayOf(event.start, zone)))].sort();
    for (const event of this.events) {
      if (event.room) this.vocabulary.rooms.set(fold(event.room).trim(), event.room);
      if (event.track) this.vocabulary.tracks.set(fold(event.track).trim(), event.track);
      for (const speaker of event.speakers) {
        const folded = words(speaker).join(' ');
        this.vocabulary.speakers.set(folded, speaker);
        if (folded.includes(' ') && event.foldedTitle.includes(folded) && !this.vocabulary.featured.has(speaker)) {
          this.vocabulary.featured.add(speaker);
          const first = folded.split(' ')[0]!;
          this.vocabulary.featuredByFirstName.set(first, [...(this.vocabulary.featuredByFirstName.get(first) ?? []), speaker]);
        }
      }
      const titleWords = event.foldedTitle ? event.foldedTitle.split(' ') : [];
      // Words with digits ("101", "4312") never tell a room's name from a title's.
      for (const word of titleWords) if (!/\d/.test(word)) this.vocabulary.titleWords.add(word);
      // Only a title with a time word in it can make a question's time word part of a name.
      if (titleWords.some((word) => TIME_WORDS.has(word))) {
        for (let i = 0; i + 1 < titleWords.length; i++) this.vocabulary.titleBigrams.add(`${titleWords[i]} ${titleWords[i + 1]}`);
      }
    }
  }
}

/** The passages of every file but the schedule, with their search index. */
export class PassageIndex {
  readonly passages: Passage[] = [];
  readonly search = new SearchIndex({ fields: PASSAGE_FIELDS, boost: PASSAGE_BOOST, tokenize, processTerm: termOf });

  constructor(files: readonly FileParts[]) {
    for (const file of files) for (const passage of file.passages) this.passages.push({ ...passage, id: this.passages.length });
    for (const passage of this.passages) this.search.add(passageFields(passage));
    this.search.seal();
  }
}

const NO_PASSAGES = new PassageIndex([]);

/**
 * The offline assistant's knowledge as questions see it: the schedule (the
 * newest schedule document's events) and the passages of the other files.
 */
export class KnowledgeIndex {
  readonly #schedule: ScheduleIndex | null;
  readonly #passages: PassageIndex;
  readonly events: ScheduleItem[];
  readonly passages: Passage[];
  readonly timeZone: string | undefined;
  readonly eventDays: string[];
  readonly vocabulary: Vocabulary;

  /** An index of the files: the last schedule document among them is the schedule. */
  static async build(files: readonly KnowledgeFile[], fallbackTimeZone: string): Promise<KnowledgeIndex> {
    const parts = files.map(readKnowledgeFile);
    const schedule = parts.findLast((part) => part.events.length > 0);
    return new KnowledgeIndex(
      schedule ? await ScheduleIndex.build(schedule, fallbackTimeZone) : null,
      new PassageIndex(parts.filter((part) => part.events.length === 0)),
    );
  }

  constructor(schedule: ScheduleIndex | null = null, passages: PassageIndex = NO_PASSAGES) {
    this.#schedule = schedule;
    this.#passages = passages;
    this.events = schedule?.events ?? [];
    this.passages = passages.passages;
    this.timeZone = schedule?.timeZone;
    this.eventDays = schedule?.eventDays ?? [];
    this.vocabulary = schedule?.vocabulary ?? { rooms: new Map(), tracks: new Map(), speakers: new Map(), featured: new Set(), featuredByFirstName: new Map(), titleBigrams: new Set(), titleWords: new Set() };
  }

  get size(): number {
    return this.events.length + this.passages.length;
  }

  /** Events matching any of the terms, best first (BM25 over title, speakers, track, room and description). */
  searchEvents(terms: readonly WeightedTerm[], filter?: (event: ScheduleItem) => boolean): Hit<ScheduleItem>[] {
    if (!this.#schedule) return [];
    return this.#run(this.#schedule.search, terms, filter ? (id) => filter(this.events[id]!) : undefined).map((hit) => ({ ...hit, item: this.events[hit.id]! }));
  }

  /** Passages of the files matching any of the terms, best first. */
  searchPassages(terms: readonly WeightedTerm[]): Hit<Passage>[] {
    return this.#run(this.#passages.search, terms).map((hit) => ({ ...hit, item: this.passages[hit.id]! }));
  }

  #run(search: SearchIndex, terms: readonly WeightedTerm[], filter?: (id: number) => boolean) {
    if (terms.length === 0) return [];
    // The index hands boostTerm the processed term (the stem).
    const weights = new Map(terms.flatMap((term) => [[term.word, term.weight] as const, [stem(term.word), term.weight] as const]));
    // Typo tolerance and longer words only for a word the knowledge does not have as it is:
    // a known word is matched as it is (and a common one across 50,000 events stays cheap).
    const exact = new Set(terms.filter((term) => term.exact || this.knows(stem(term.word))).flatMap((term) => [term.word, stem(term.word)]));
    const options: SearchOptions = {
      boostTerm: (term) => weights.get(term) ?? 1,
      fuzzy: (term) => (exact.has(term) ? false : fuzzyDistance(term)),
      prefix: (term) => !exact.has(term) && matchesLonger(term),
      weights: MATCH_WEIGHTS,
      filter,
    };
    // Passages holding every word (or one meaning the same) first; any of them only when none does.
    const groups = new Map<number, string[]>();
    for (const term of terms) groups.set(term.group, [...(groups.get(term.group) ?? []), term.word]);
    let results = groups.size > 1 ? search.search([...groups.values()], 'AND', options) : [];
    if (results.length === 0) results = search.search([terms.map((term) => term.word)], 'OR', options);
    return results.map((result) => ({ id: result.id, score: result.score, terms: result.queryTerms, matches: result.matches }));
  }

  /**
   * How much a term says, from how rare it and the words meaning the same
   * (`alike`) are (inverse document frequency, as BM25 weighs it). A word
   * the knowledge never uses weighs as much as the rarest one.
   */
  weight(stemmed: string, among: 'events' | 'passages', alike: readonly string[] = []): number {
    const total = among === 'events' ? this.events.length : this.passages.length;
    const search = among === 'events' ? this.#schedule?.search : this.#passages.search;
    // A word weighs as its meaning does: "class" as rare as "workshop" is in this knowledge, not as the absent word.
    const count = Math.max(search?.documentsWith(stemmed) ?? 0, ...alike.map((other) => search?.documentsWith(other) ?? 0)) || 1;
    return Math.log(1 + (total - count + 0.5) / (count + 0.5));
  }

  /** Whether any event or passage uses the term. */
  knows(stemmed: string): boolean {
    return Boolean(this.#schedule?.search.has(stemmed)) || this.#passages.search.has(stemmed);
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
  /** The word as the question has it (the index stems it). */
  word: string;
  weight: number;
  /** Matched only as it is (a synonym: no typo tolerance, or "dinner" would find "winner"). */
  exact: boolean;
  /** The question's word it stands for (a word and its synonyms share one). */
  group: number;
}

export function endOf(event: ScheduleItem): Date {
  return event.end ?? new Date(event.start.getTime() + DEFAULT_EVENT_MINUTES * 60_000);
}

export function inWindow(event: ScheduleItem, window: TimeWindow): boolean {
  const start = event.start.getTime();
  if (!window.overlaps) return start >= window.from.getTime() && start < window.to.getTime();
  return start < window.to.getTime() && endOf(event).getTime() > window.from.getTime();
}

/** Where a schedule document states its zone: near its top. */
const MARKER_WITHIN = 64 * 1024;

const beginningOf = (content: string | Uint8Array) =>
  typeof content === 'string' ? content.slice(0, MARKER_WITHIN) : Buffer.from(content.buffer, content.byteOffset, Math.min(content.byteLength, MARKER_WITHIN)).toString('utf8');

/**
 * A file's lines. Bytes are decoded a line at a time, so what the index
 * keeps of a line (a title, a room) keeps only that line, not the file.
 */
function* linesOf(content: string | Uint8Array): Generator<string> {
  if (typeof content === 'string') {
    yield* content.replace(/\r\n?/g, '\n').split('\n');
    return;
  }
  const bytes = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  for (let start = 0; start <= bytes.length; ) {
    let end = bytes.indexOf(10, start);
    if (end === -1) end = bytes.length;
    const stop = end > start && bytes[end - 1] === 13 ? end - 1 : end;
    yield bytes.toString('utf8', start, stop);
    start = end + 1;
  }
}

/** Cuts a knowledge file into schedule events (where it marks them) and passages. */
function readFile(file: KnowledgeFile, events: ScheduleItem[], allPassages: Passage[]): void {
  const fileTitle = knowledgeTitle(file.filename);
  // Rooms, tracks and names repeat across thousands of events: one string each.
  const strings = new Map<string, string>();
  const intern = (text: string) => {
    const known = strings.get(text);
    if (known !== undefined) return known;
    strings.set(text, text);
    return text;
  };
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
      events.push(readEvent(blockHeading, marker, lines, file.id, intern));
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

  // In a FAQ, each question heads its answer ("Q: Can I bring my dog?", "**Is there Wi-Fi?**",
  // or a short line of its own ending in "?"), under the Markdown headings above it.
  const questionsHeadAnswers = !mayHoldEvents(file.content);
  let markdownDepth = 0;
  let previous = '';
  for (const line of linesOf(file.content)) {
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = heading[1]!.length;
      headings.length = Math.min(headings.length, level - 1);
      while (headings.length < level - 1) headings.push('');
      blockHeading = heading[2]!.trim();
      headings.push(blockHeading);
      markdownDepth = headings.length;
      previous = line;
      continue;
    }
    const question = questionsHeadAnswers ? questionOf(line, previous) : null;
    if (question) {
      flush();
      headings.length = markdownDepth;
      blockHeading = question;
      headings.push(question);
      previous = line;
      continue;
    }
    block.push(line);
    previous = line;
  }
  flush();
  for (const event of events.slice(eventCount)) {
    if (event.uid && changes.has(event.uid)) event.change = changes.get(event.uid)!;
  }
  if (events.length > eventCount) return;
  allPassages.push(...passages);
}

const QUESTION_LINE = /^\s*(?:Q|Question)\s*[:.)–-]\s*(.+\S)\s*$/i;
const BOLD_QUESTION = /^\s*(?:\*\*|__)(.+\?)(?:\*\*|__)\s*$/;
const MAX_QUESTION_CHARS = 160;

/**
 * A FAQ's question in a line: "Q: …", a bold "**…?**", or a short line of
 * its own (after a blank line) that ends with "?".
 */
function questionOf(line: string, previous: string): string | null {
  const marked = QUESTION_LINE.exec(line) ?? BOLD_QUESTION.exec(line);
  if (marked) return marked[1]!.trim();
  const trimmed = line.trim();
  if (trimmed.endsWith('?') && trimmed.length <= MAX_QUESTION_CHARS && previous.trim() === '' && !/^[-*>|]/.test(trimmed)) return trimmed;
  return null;
}

/** Whether a file has schedule event markers (a schedule document's lines are never FAQ questions). */
function mayHoldEvents(content: string | Uint8Array): boolean {
  return typeof content === 'string' ? content.includes('<!-- event ') : Buffer.from(content.buffer, content.byteOffset, content.byteLength).includes('<!-- event ');
}

function readEvent(heading: string, marker: NonNullable<ReturnType<typeof readEventMarker>>, lines: string[], fileId: string, intern: (text: string) => string): ScheduleItem {
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
  const fact = (...names: string[]) => {
    for (const name of names) {
      const value = facts.get(name);
      if (value !== undefined) return intern(value);
    }
    return null;
  };
  return {
    kind: 'event',
    id: 0,
    uid: marker.uid,
    title,
    foldedTitle: words(title).join(' '),
    start: marker.start,
    end: marker.end,
    room: fact('where', 'room', 'location'),
    track: fact('track', 'category'),
    type: fact('type', 'kind', 'format'),
    speakers: speakers
      .split(/\s*,\s*/)
      .map((name) => name.trim())
      .filter(Boolean)
      .map(intern),
    language: fact('language'),
    description: description.join('\n'),
    status: marker.status === 'cancelled' || cancelledInTitle || status.startsWith('cancel') ? 'cancelled' : marker.status,
    change: null,
    fileId,
  };
}

/** The words of an event's title of two letters or more, folded (for "does the question name the whole title?"). */
export const titleWordsOf = (event: ScheduleItem) => (event.foldedTitle ? event.foldedTitle.split(' ').filter((word) => word.length > 1) : []);

/** The words of a title, for matching a question's words against names. */
export const titleWords = (title: string) => words(title).filter((word) => !TIME_WORDS.has(word));

export { stem };
