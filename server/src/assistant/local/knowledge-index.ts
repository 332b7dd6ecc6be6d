import MiniSearch from 'minisearch';
import { readEventMarker, readTimezoneMarker, stripMarkers } from '../knowledge-format.ts';
import { zonedParts } from '../../time-zone.ts';
import type { TimeWindow } from './time-window.ts';

/** A searchable passage of one knowledge file. */
export interface Passage {
  id: number;
  fileId: string;
  filename: string;
  /** The headings above the passage, outermost first. */
  headings: string[];
  title: string;
  /** The passage as Markdown, markers removed. */
  text: string;
  start: Date | null;
  end: Date | null;
}

export interface KnowledgeFile {
  id: string;
  filename: string;
  content: string;
}

export interface SearchHit {
  passage: Passage;
  score: number;
}

/** Longest passage cut from running text; headings always start a new one. */
const MAX_PASSAGE_CHARS = 900;
const DEFAULT_EVENT_MINUTES = 60;

/** Words that carry no meaning for a search in a question about a convention. */
const STOP_WORDS = new Set(
  `a an and are as at be by can could do does did for from get go going have how i im i'm in into is it its me my of on or our so
  tell that the their them there these they this to us was we what whats what's when where which who whom whose why will with would
  you your please any anything some something show find know about list give happen happens thing things event events
  con convention schedule there's is's also get panel panels session still doing does at the con`.split(/\s+/),
);

/** A light stemmer for index and query alike: plurals match singulars ("games" finds "Game Night"). */
export function stem(term: string): string {
  if (term.length > 4 && term.endsWith('ies')) return `${term.slice(0, -3)}y`;
  if (term.length > 3 && term.endsWith('s') && !term.endsWith('ss') && !term.endsWith('us')) return term.slice(0, -1);
  return term;
}

const processTerm = (term: string) => stem(term.toLowerCase());

/** Cuts Markdown or plain text into passages along headings and paragraphs. */
export function splitIntoPassages(file: KnowledgeFile, firstId: number): Passage[] {
  const passages: Passage[] = [];
  const headings: string[] = [];
  let buffer: string[] = [];

  const flush = () => {
    const raw = buffer.join('\n').trim();
    buffer = [];
    if (!raw) return;
    const marker = readEventMarker(raw);
    const text = stripMarkers(raw).trim();
    if (!text && !marker) return;
    passages.push({
      id: firstId + passages.length,
      fileId: file.id,
      filename: file.filename,
      headings: [...headings],
      title: headings.at(-1) ?? file.filename,
      text,
      start: marker?.start ?? null,
      end: marker?.end ?? null,
    });
  };

  for (const line of file.content.replace(/\r\n?/g, '\n').split('\n')) {
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = heading[1]!.length;
      headings.length = Math.min(headings.length, level - 1);
      while (headings.length < level - 1) headings.push('');
      headings.push(heading[2]!.trim());
      continue;
    }
    const currentLength = buffer.reduce((total, part) => total + part.length + 1, 0);
    if (line.trim() === '' && currentLength > MAX_PASSAGE_CHARS / 2 && !readEventMarker(buffer.join('\n'))) flush();
    else if (currentLength + line.length > MAX_PASSAGE_CHARS && !readEventMarker(buffer.join('\n'))) flush();
    buffer.push(line);
  }
  flush();
  return passages.map((passage) => ({ ...passage, headings: passage.headings.filter(Boolean) }));
}

/** The words of a question worth searching for. */
export function searchTerms(question: string, ignore: readonly string[] = []): string[] {
  const ignored = new Set(ignore);
  return question
    .toLowerCase()
    .replace(/[^\p{L}\p{N}'\s-]/gu, ' ')
    .split(/\s+/)
    .map((word) => word.replace(/^['-]+|['-]+$/g, '').replace(/'s$/, ''))
    .filter((word) => word && !STOP_WORDS.has(word) && !ignored.has(word));
}

/**
 * A full-text index (MiniSearch) over the passages of the vector store's
 * files, with the time of each schedule event, so questions can be answered
 * by words, by time, or both.
 */
export class KnowledgeIndex {
  readonly passages: Passage[];
  /** The convention's zone as the schedule document states it. */
  readonly timeZone: string | undefined;
  /** Local days (yyyy-mm-dd) that have events. */
  readonly eventDays: string[];
  readonly #search: MiniSearch<Passage>;

  constructor(files: readonly KnowledgeFile[], fallbackTimeZone: string) {
    this.passages = [];
    for (const file of files) this.passages.push(...splitIntoPassages(file, this.passages.length));
    this.timeZone = files.map((file) => readTimezoneMarker(file.content)).find(Boolean);
    const zone = this.timeZone ?? fallbackTimeZone;
    this.eventDays = [
      ...new Set(
        this.passages
          .filter((passage) => passage.start)
          .map((passage) => {
            const parts = zonedParts(passage.start!, zone);
            return `${parts.year}-${String(parts.month).padStart(2, '0')}-${String(parts.day).padStart(2, '0')}`;
          }),
      ),
    ].sort();
    this.#search = new MiniSearch<Passage>({
      processTerm,
      fields: ['title', 'text', 'context'],
      storeFields: [],
      extractField: (passage, field) =>
        field === 'context' ? passage.headings.join(' ') : String((passage as unknown as Record<string, unknown>)[field] ?? ''),
    });
    this.#search.addAll(this.passages);
  }

  get size(): number {
    return this.passages.length;
  }

  /** Passages matching the words (all of them if possible, else most), best first. */
  search(terms: readonly string[]): SearchHit[] {
    if (terms.length === 0) return [];
    const query = terms.join(' ');
    const options = {
      boost: { title: 3, context: 1.5 },
      prefix: (term: string) => term.length >= 4,
      fuzzy: (term: string) => (term.length >= 6 ? 0.2 : false),
    };
    let results = this.#search.search(query, { ...options, combineWith: 'AND' });
    if (results.length === 0 && terms.length > 1) {
      results = this.#search.search(query, { ...options, combineWith: 'OR' });
      // Without a passage matching every word, keep those that match most of them.
      const needed = terms.length <= 2 ? terms.length : Math.ceil(terms.length * 0.6);
      results = results.filter((result) => result.queryTerms.length >= needed);
    }
    return results.map((result) => ({ passage: this.passages[result.id as number]!, score: result.score }));
  }

  /** Schedule events in a time window, earliest first. */
  eventsIn(window: TimeWindow): Passage[] {
    return this.passages
      .filter((passage) => passage.start && inWindow(passage, window))
      .sort((a, b) => a.start!.getTime() - b.start!.getTime());
  }
}

export function inWindow(passage: Passage, window: TimeWindow): boolean {
  if (!passage.start) return false;
  const start = passage.start.getTime();
  if (!window.overlaps) return start >= window.from.getTime() && start < window.to.getTime();
  const end = passage.end?.getTime() ?? start + DEFAULT_EVENT_MINUTES * 60_000;
  return start < window.to.getTime() && end > window.from.getTime();
}
