import { distance } from 'fastest-levenshtein';
import type { KnowledgeIndex } from './knowledge-index.ts';
import { generalRarity, GENERIC_WORDS, IDIOMS, joinAmpersands, PHRASE_SYNONYMS, spelledOut, STOP_WORDS, stem, synonymsOf, words } from './text.ts';
import { readTimeWindow, TIME_WORDS, type TimeReading } from './time-window.ts';

/**
 * What an attendee's question asks, read against the knowledge it will be
 * answered from: the words to search for, and the filters the question sets
 * — a time, a room, a track or a guest named as the schedule names them,
 * "after/before" an event — and what it wants to know (how long, whether it
 * is still on, who).
 */
export interface QuestionReading {
  /** The question's folded words. */
  words: string[];
  /** The words to search the schedule for (filler, time words and names used as filters left out). */
  terms: QueryTerm[];
  /** The words to search the files for: everything but filler. */
  passageTerms: QueryTerm[];
  time: TimeReading;
  /** The schedule's own names of the rooms the question names. */
  rooms: string[];
  tracks: string[];
  guests: string[];
  /** "What comes after the costume contest?": the words naming the other event. */
  relation: { kind: 'after' | 'before'; terms: QueryTerm[] } | null;
  asks: {
    howLong: boolean;
    status: boolean;
    /** With `status`, what the question fears ("is X cancelled?", "has X moved?", "any changes to X?") or only whether it is on. */
    statusAbout: 'cancelled' | 'moved' | 'changed' | 'on';
    /** "What got cancelled?", "any schedule changes?": asks about the schedule's changes, in the words of a done change. */
    changes: boolean;
    who: boolean;
    /** "When does the con end?": the convention itself, when it starts, ends, or both. */
    convention: 'start' | 'end' | 'span' | null;
    /** "When is the last panel today?": the first or last of what is listed. */
    order: 'first' | 'last' | null;
  };
}

export interface QueryTerm {
  word: string;
  stem: string;
  /** Stems meaning the same ("signing" → autograph; "board game" → tabletop). */
  also: string[];
  /** Filler in a question about the schedule ("panel", "happening"): dropped when better words remain. */
  generic: boolean;
  /** The words the question said, where the term stands for a set phrase ("lost and found" for "lost"). */
  said?: string;
}

/** How rare in everyday English a first name must be to stand for a guest on its own (SUBTLEX-US; "Juan" 0.66, "Rose" 0.32). */
const FIRST_NAME_RARITY = 0.6;
const RELATION_WORDS: Record<string, 'after' | 'before'> = { after: 'after', following: 'after', before: 'before', preceding: 'before', prior: 'before' };
const WEAK_STATUS_WORDS = new Set(['still', 'happening', 'off', 'change', 'move']);
/** Words for the convention itself, and for its start and end ("when does the con open / wrap up?"). */
const CONVENTION_WORDS = new Set(['con', 'cons', 'convention', 'fest', 'festival', 'expo']);
/** "When do (the) doors open?" asks when the convention opens, unless an event is named. */
const DOOR_WORDS = new Set(['door', 'doors']);
const START_WORDS = new Set(['start', 'starts', 'started', 'starting', 'begin', 'begins', 'began', 'beginning', 'open', 'opens', 'opening', 'kick', 'kicks', 'commence', 'commences', 'first']);
const END_WORDS = new Set(['end', 'ends', 'ended', 'ending', 'finish', 'finishes', 'close', 'closes', 'closing', 'over', 'wrap', 'wraps', 'last', 'final']);
const SPAN_WORDS = new Set(['when', 'whens', 'dates', 'days', 'long']);
const ORDER_WORDS: Record<string, 'first' | 'last' | undefined> = { first: 'first', earliest: 'first', last: 'last', final: 'last' };
const CANCEL_WORDS = new Set(['cancelled', 'canceled', 'cancel', 'cancellation', 'cancellations', 'cancelations']);
const MOVE_WORDS = new Set(['moved', 'move', 'rescheduled', 'reschedule', 'postponed', 'delayed', 'relocated']);
const CHANGE_WORDS = new Set(['changed', 'change', 'changes']);
const STATUS_WORDS = new Set([...CANCEL_WORDS, ...MOVE_WORDS, ...CHANGE_WORDS, 'still', 'happening', 'off']);
/** A change done, not one to make: "what got cancelled?" asks about the schedule, "how do I cancel?" does not. */
const CHANGE_DONE_WORDS = new Set(['cancelled', 'canceled', 'cancellations', 'cancelations', 'moved', 'rescheduled', 'postponed', 'delayed', 'relocated', 'changed', 'changes']);

export function readQuestion(question: string, index: KnowledgeIndex, now: Date, timeZone: string): QuestionReading {
  // A short word in the plural that the knowledge only has in the singular ("photo ops", "DJs"): the stemmer leaves
  // words of three letters alone, so the singular is taken here.
  const tokens = spelledOut(words(joinAmpersands(question))).map((word) =>
    word.length === 3 && word.endsWith('s') && !index.knows(word) && index.knows(word.slice(0, -1)) ? word.slice(0, -1) : word,
  );
  const used = new Set<number>();

  // A time word inside an event's name ("Board Game Night", "Morning Yoga") is part of the name.
  const titleWord = (position: number) => {
    if (!TIME_WORDS.has(tokens[position]!)) return false;
    let from = position;
    let to = position;
    while (from > 0 && index.isTitleBigram(tokens[from - 1]!, tokens[from]!)) from--;
    while (to + 1 < tokens.length && index.isTitleBigram(tokens[to]!, tokens[to + 1]!)) to++;
    for (let i = from; i <= to; i++) if (!TIME_WORDS.has(tokens[i]!) && !STOP_WORDS.has(tokens[i]!)) return true;
    return false;
  };
  const time = readTimeWindow(tokens, now, timeZone, index.eventDays, titleWord);
  for (const position of time.used) used.add(position);

  const rooms = matchNames(tokens, index.vocabulary.rooms, used, { partial: true, titleWords: index.vocabulary.titleWords });
  const tracks = matchNames(tokens, index.vocabulary.tracks, used, { partial: false, titleWords: index.vocabulary.titleWords });
  const guests = matchGuests(tokens, index, used);
  // "When can I meet Mira?": meeting a guest is any of their events, not a meetup.
  if (guests.length) tokens.forEach((word, position) => word === 'meet' && used.add(position));

  const relationAt = tokens.findIndex((word, position) => word in RELATION_WORDS && !used.has(position));
  let relation: QuestionReading['relation'] = null;
  if (relationAt !== -1) {
    const anchor: QueryTerm[] = [];
    for (let position = relationAt + 1; position < tokens.length && !used.has(position); position++) {
      const term = toTerm(tokens[position]!, []);
      if (term) anchor.push(term);
      used.add(position);
    }
    used.add(relationAt);
    if (anchor.length) relation = { kind: RELATION_WORDS[tokens[relationAt]!]!, terms: anchor };
  }

  // "Where is the lost and found?", "anything for families?": the schedule is searched for what the phrase means.
  const idioms: QueryTerm[] = [];
  const idiomWord = (word: string, token: string, at: number) => !used.has(at) && (word === '#' ? /^\d+$/.test(token) : token === word);
  for (const idiom of IDIOMS) {
    for (const start of phraseStarts(tokens, idiom.words, idiomWord)) {
      for (let offset = 0; offset < idiom.words.length; offset++) used.add(start + offset);
      idioms.push({ ...toTerm(idiom.means)!, said: tokens.slice(start, start + idiom.words.length).join(' ') });
    }
  }

  // "What time do doors open tomorrow?": the doors are the convention's, not a word to search for.
  tokens.forEach((word, position) => {
    const next = tokens[position + 1];
    if (DOOR_WORDS.has(word) && next && (START_WORDS.has(next) || END_WORDS.has(next))) used.add(position);
  });

  // "the last panel", "the first thing tomorrow": an order, not a word to search for.
  const orderAt = tokens.findIndex((word, position) => ORDER_WORDS[word] && tokens[position - 1] === 'the' && !used.has(position));
  if (orderAt !== -1) used.add(orderAt);

  const text = tokens.join(' ');
  const asks = {
    howLong: /\bhow long\b|\bduration\b|\blength\b|\b(when|what time) (does|do|will) .* (end|finish|close)\b|\bhow many (hours|minutes)\b/.test(text),
    // "Is X happening?" asks whether it is still on; "what's happening in Hall B?" does not.
    status: tokens.some((word) => STATUS_WORDS.has(word) && !WEAK_STATUS_WORDS.has(word)) || /\bstill (on|happening|going ahead)\b/.test(text) || /^(is|are|will) .*\b(happening|on)$/.test(text),
    statusAbout: tokens.some((word) => CANCEL_WORDS.has(word))
      ? ('cancelled' as const)
      : tokens.some((word) => MOVE_WORDS.has(word))
        ? ('moved' as const)
        : tokens.some((word) => CHANGE_WORDS.has(word))
          ? ('changed' as const)
          : ('on' as const),
    changes: tokens.some((word) => CHANGE_DONE_WORDS.has(word)),
    who: tokens.includes('who') || tokens.includes('whos'),
    convention: conventionAsked(tokens, used),
    order: orderAt === -1 ? null : ORDER_WORDS[tokens[orderAt]!]!,
  };

  // Phrases with synonyms of their own ("board game" → tabletop).
  const phraseSynonyms = new Map<number, string[]>();
  for (const phrase of PHRASE_SYNONYMS) {
    for (const start of phraseStarts(tokens, phrase.words, (word, token) => stem(token) === stem(word))) {
      for (let offset = 0; offset < phrase.words.length; offset++) phraseSynonyms.set(start + offset, [...(phraseSynonyms.get(start + offset) ?? []), ...phrase.stems]);
    }
  }
  // Two words the knowledge writes as one ("star gazing" for stargazing, "photo shoot", "meet up").
  for (let position = 0; position + 1 < tokens.length; position++) {
    const [first, second] = [tokens[position]!, tokens[position + 1]!];
    if (STOP_WORDS.has(first) || STOP_WORDS.has(second) || /\d/.test(first + second)) continue;
    const joined = stem(first + second);
    const alike = synonymsOf(joined);
    if (!index.knows(joined) && alike.length === 0) continue;
    for (const at of [position, position + 1]) phraseSynonyms.set(at, [...(phraseSynonyms.get(at) ?? []), joined, ...alike]);
  }

  const all: QueryTerm[] = [];
  const passageTerms: QueryTerm[] = [];
  tokens.forEach((word, position) => {
    const term = toTerm(word, phraseSynonyms.get(position));
    if (!term) return;
    if (!tracks.length || !used.has(position)) passageTerms.push(term);
    if (used.has(position) && !(tracks.length && isTrackWord(word, tracks))) return;
    if (asks.status && STATUS_WORDS.has(word)) return;
    all.push(term);
  });
  all.push(...idioms);
  const specific = all.filter((term) => !term.generic);
  const terms = dedupe(specific.length ? specific : []);
  return { words: tokens, terms, passageTerms: dedupe(passageTerms), time, rooms, tracks, guests, relation, asks };
}

/**
 * Where a phrase starts among the question's words, each word of it matched
 * by `same` (its word, the question's token there, and that position). A
 * match found is checked before the next position is, so `same` may look at
 * what an earlier match marked.
 */
function* phraseStarts(tokens: readonly string[], phrase: readonly string[], same: (word: string, token: string, at: number) => boolean): Generator<number> {
  for (let start = 0; start + phrase.length <= tokens.length; start++) {
    if (phrase.every((word, offset) => same(word, tokens[start + offset]!, start + offset))) yield start;
  }
}

function conventionAsked(tokens: readonly string[], used: ReadonlySet<number>): QuestionReading['asks']['convention'] {
  // "When does it start?" with nothing named: the convention, when no earlier answer's event is what "it" means
  // (composeAnswer looks for one first).
  const about = (word: string) => START_WORDS.has(word) || END_WORDS.has(word) || SPAN_WORDS.has(word);
  const it = tokens.includes('it') && tokens.some(about) && tokens.every((word) => STOP_WORDS.has(word) || about(word) || word === 'it');
  if (!it && !tokens.some((word, position) => CONVENTION_WORDS.has(word) || (DOOR_WORDS.has(word) && used.has(position)))) return null;
  if (tokens.some((word) => END_WORDS.has(word))) return 'end';
  if (tokens.some((word) => START_WORDS.has(word))) return 'start';
  // "Is the con on Sunday?" asks whether it runs then.
  return tokens.some((word) => SPAN_WORDS.has(word)) || /^(is|are|will)$/.test(tokens[0] ?? '') ? 'span' : null;
}

function toTerm(word: string, phraseSynonyms: string[] = []): QueryTerm | null {
  if (STOP_WORDS.has(word) || word.length < 2) {
    // A phrase of filler words that means something ("get there": directions) stands for its meaning.
    const [meaning, ...alike] = phraseSynonyms;
    return meaning ? { word: meaning, stem: meaning, also: alike, generic: false } : null;
  }
  const stemmed = stem(word);
  return {
    word,
    stem: stemmed,
    also: [...new Set([...synonymsOf(stemmed), ...phraseSynonyms])].filter((other) => other !== stemmed),
    generic: GENERIC_WORDS.has(word) || TIME_WORDS.has(word),
  };
}

const dedupe = (terms: QueryTerm[]) => [...new Map(terms.map((term) => [term.stem, term])).values()];

const isTrackWord = (word: string, tracks: string[]) => tracks.some((track) => words(track).includes(word));

/**
 * Names (rooms, tracks) the question spells out, as the schedule spells
 * them. With `partial`, a name's leading words are enough when they are
 * distinctive ("Hall B" for "Hall B (Level 2)"): two words, or one with a digit.
 */
function matchNames(tokens: string[], vocabulary: Map<string, string>, used: Set<number>, options: { partial: boolean; titleWords: ReadonlySet<string> }): string[] {
  const exact: { name: string; at: number; length: number }[] = [];
  const partial: { name: string; at: number; length: number }[] = [];
  const wordCounts = new Map<string, number>();
  for (const folded of vocabulary.keys()) for (const word of new Set(words(folded))) wordCounts.set(word, (wordCounts.get(word) ?? 0) + 1);
  const find = (phrase: string[]) => {
    if (phrase.length === 0) return -1;
    outer: for (let start = 0; start + phrase.length <= tokens.length; start++) {
      for (let offset = 0; offset < phrase.length; offset++) {
        if (tokens[start + offset] !== phrase[offset] || used.has(start + offset)) continue outer;
      }
      return start;
    }
    return -1;
  };
  for (const [folded, name] of vocabulary) {
    let nameWords = words(folded);
    if (nameWords[0] === 'the') nameWords = nameWords.slice(1);
    const at = find(nameWords);
    if (at !== -1 && !(nameWords.length === 1 && (STOP_WORDS.has(nameWords[0]!) || TIME_WORDS.has(nameWords[0]!)))) {
      exact.push({ name, at, length: nameWords.length });
      continue;
    }
    if (!options.partial) continue;
    // The name before any "(…)", " - …" or ", …" part, then its leading words.
    let main = words(folded.split(/\s[-–(]|[(,/]/)[0]!);
    if (main[0] === 'the') main = main.slice(1);
    let matched = false;
    for (let length = Math.min(main.length, nameWords.length); length >= 1 && !matched; length--) {
      const phrase = main.slice(0, length);
      const distinctive = phrase.length >= 2 || /\d/.test(phrase[0]!);
      if (!distinctive) break;
      const where = find(phrase);
      if (where !== -1) {
        partial.push({ name, at: where, length });
        matched = true;
      }
    }
    if (matched) continue;
    // Its words in another order ("the Tejo auditorium"), or one word that no other room and no title has and that is no everyday word ("Alfama").
    const positions = main.map((word) => tokens.findIndex((token, position) => token === word && !used.has(position)));
    if (main.length >= 2 && positions.every((position) => position !== -1)) {
      for (const position of positions) partial.push({ name, at: position, length: 1 });
      continue;
    }
    for (const [offset, word] of main.entries()) {
      const position = positions[offset]!;
      if (position === -1 || word.length < 4 || STOP_WORDS.has(word) || TIME_WORDS.has(word) || GENERIC_WORDS.has(word) || options.titleWords.has(word)) continue;
      if ((wordCounts.get(word) ?? 0) === 1 && generalRarity(stem(word)) >= 0.6) partial.push({ name, at: position, length: 1 });
    }
  }
  const chosen = exact.length ? exact : partial;
  if (chosen.length === 0) return [];
  // The longest phrase wins ("Hall B Annex" over "Hall B").
  const longest = Math.max(...chosen.map((match) => match.length));
  const winners = chosen.filter((match) => match.length === longest || partial.includes(match));
  const names = new Set(winners.map((match) => match.name));
  for (const match of chosen) if (names.has(match.name)) for (let i = 0; i < match.length; i++) used.add(match.at + i);
  return [...names];
}

/**
 * Guests the question names: a full name (a typo per long word allowed), or
 * a last name only one guest has.
 */
function matchGuests(tokens: string[], index: KnowledgeIndex, used: Set<number>): string[] {
  const found = new Map<string, number[]>();
  const lastNames = new Map<string, string[]>();
  const close = (a: string, b: string) => a === b || (a.length >= 5 && b.length >= 5 && a[0] === b[0] && distance(a, b) <= 1);
  for (const [folded, name] of index.vocabulary.speakers) {
    const nameWords = folded.split(' ').filter(Boolean);
    if (nameWords.length === 0) continue;
    if (nameWords.length > 1) {
      const last = nameWords.at(-1)!;
      lastNames.set(last, [...(lastNames.get(last) ?? []), name]);
    }
    for (let start = 0; start + nameWords.length <= tokens.length; start++) {
      if (nameWords.every((word, offset) => !used.has(start + offset) && close(tokens[start + offset]!, word))) {
        found.set(name, nameWords.map((_, offset) => start + offset));
        break;
      }
    }
  }
  const alone = (word: string, position: number) => !used.has(position) && word.length >= 4 && !STOP_WORDS.has(word) && !GENERIC_WORDS.has(word) && !TIME_WORDS.has(word);
  if (found.size === 0) {
    tokens.forEach((word, position) => {
      const names = alone(word, position) ? lastNames.get(word) : undefined;
      if (names?.length === 1) found.set(names[0]!, [position]);
    });
  }
  // "When can I meet Mira?": a first name only one featured guest has, and no everyday word ("Rose", "Mark").
  if (found.size === 0) {
    tokens.forEach((word, position) => {
      const names = alone(word, position) ? index.vocabulary.featuredByFirstName.get(word) : undefined;
      if (names?.length === 1 && generalRarity(stem(word)) >= FIRST_NAME_RARITY) found.set(names[0]!, [position]);
    });
  }
  for (const positions of found.values()) for (const position of positions) used.add(position);
  return [...found.keys()];
}
