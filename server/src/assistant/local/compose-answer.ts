import { instantOf, zonedParts } from '../../time-zone.ts';
import type { Source } from '../provider.ts';
import { endOf, inWindow, titleWordsOf, type Hit, type KnowledgeIndex, type Passage, type ScheduleItem, type WeightedTerm } from './knowledge-index.ts';
import { readQuestion, type QueryTerm, type QuestionReading } from './read-question.ts';
import { fold, generalRarity, isFormatWord, stem, synonymsOf, words } from './text.ts';
import type { TimeWindow } from './time-window.ts';

/** Events listed in full before "and N more". */
const MAX_LISTED = 8;
/** Events shown with their description and speakers. */
const DETAILED_UP_TO = 2;
const MAX_DESCRIPTION_CHARS = 200;
const MAX_QUOTE_CHARS = 500;
/** A match must cover this share of the question's weight (rare words weigh most). */
const MIN_COVERAGE = 0.6;
const MIN_PASSAGE_COVERAGE = 0.5;
/** Hits covering less than the best by more than this are left out. */
const COVERAGE_SPREAD = 0.15;
/** Hits scoring below this share of the best one are left out. */
const RELATIVE_SCORE_FLOOR = 0.35;
/** "What's next?" without other limits looks this far ahead. */
const NEXT_HOURS = 3;
const SYNONYM_WEIGHT = 0.6;
/** Hits weighed for an answer, best BM25 scores first. */
const MAX_CONSIDERED = 400;
/** A word matched through a synonym covers this share of its weight. */
const SYNONYM_COVERAGE = 0.85;
const FUZZY_COVERAGE = 0.7;
/** With nothing of the kind on the topic, the weight of a word for the kind of event ("workshop") beside the topic. */
const FORMAT_BESIDE_TOPIC_WEIGHT = 0.5;

export const OFFLINE_HELP =
  "I'm the convention's offline assistant: I answer from the schedule and the convention's own files. Ask me about a panel, a guest, a room or a time — for example \"What's on in Hall B tonight?\" or \"When is the costume contest?\"";

export interface ComposedAnswer {
  text: string;
  sources: Source[];
}

interface Context {
  index: KnowledgeIndex;
  reading: QuestionReading;
  now: Date;
  timeZone: string;
  format: TimeFormat;
}

/**
 * The offline answer to a question: the events that answer it with day,
 * time (convention zone) and room, or the passage of a file that does,
 * quoting only what answers; short and scannable, with its sources. Never
 * invents: with no match it says so.
 */
export function composeAnswer(question: string, index: KnowledgeIndex, now: Date, fallbackTimeZone: string, previous: Source | null = null): ComposedAnswer {
  const timeZone = index.timeZone ?? fallbackTimeZone;
  if (index.size === 0) {
    return { text: "I don't have the convention's schedule or any of its files yet, so I can't answer that. Please check back soon.", sources: [] };
  }
  // "Thanks!": a reply in kind, not the help.
  if (isThanks(question)) return { text: THANKS_REPLY, sources: [] };
  // "Help", "what can you do?": what it answers, with examples.
  if (isHelpRequest(question)) return { text: OFFLINE_HELP, sources: [] };
  const reading = readQuestion(question, index, now, timeZone);
  const context: Context = { index, reading, now, timeZone, format: timeFormat(timeZone) };
  // "What time is it?": the convention's clock, the one every answer's times are in.
  if (TIME_NOW_QUESTION.test(reading.words.join(' '))) return { text: `It is **${context.format.when(now)}** at the convention.`, sources: [] };
  const { time, rooms, guests, tracks, relation } = reading;
  const scheduleWords = reading.terms.length > 0 || rooms.length > 0 || guests.length > 0 || tracks.length > 0;
  /** No event, place, person or time is named. */
  const nothingNamed = !scheduleWords && !time.window && !time.mode && !relation;
  // "How long is it?", "is it still on?" after an answer about an event: that event.
  const earlier = nothingNamed && previous && reading.words.some((word) => BACK_REFERENCES.has(word)) ? eventOf(index, previous) : null;
  if (earlier) return renderEvents(context, [earlier], { listing: false });
  // "When does the con end?": nothing but the convention itself is named.
  if (nothingNamed && reading.asks.convention) {
    const answer = answerConvention(context, reading.asks.convention);
    if (answer) return answer;
  }
  // "Is the con open on Monday?", "what time do doors open tomorrow?": the convention's hours on that day.
  if (reading.asks.convention && !scheduleWords && !relation && time.window) {
    const answer = answerConventionHours(context, reading.asks.convention, time.window);
    if (answer) return answer;
  }
  // "What's on?": what is on now (or next, or when the convention starts).
  if (nothingNamed && index.events.length > 0 && reading.words.some((word) => ON_WORDS.has(word)) && reading.words.every((word) => WHATS_ON_WORDS.has(word))) {
    return answerNow(context, () => true);
  }
  // "Show me the schedule", "how many events are there?": the schedule in a few lines.
  const aboutChanges = reading.asks.status || reading.asks.changes;
  if (nothingNamed && !aboutChanges && index.events.length > 0 && reading.words.some((word) => SCHEDULE_WORDS.has(word))) return answerOverview(context);
  if (nothingNamed && reading.passageTerms.length === 0) {
    return { text: OFFLINE_HELP, sources: [] };
  }
  // "What tracks are there?", "which rooms are there?": the schedule's own names.
  if (nothingNamed) {
    const kind = reading.words.includes('tracks') ? 'tracks' : reading.words.some((word) => PLACE_WORDS.has(word)) ? 'rooms' : null;
    if (kind) {
      const answer = answerNames(context, kind);
      if (answer) return answer;
    }
  }

  if (relation) {
    const answer = answerRelation(context, relation);
    if (answer) return answer;
  }

  // "Who are the guests of honour?": the guests the schedule features, with what they do next.
  if (asksForGuests(reading)) {
    const answer = answerGuests(context);
    if (answer) return answer;
  }

  // "What got cancelled?", "any changes in Hall B today?": the schedule's changes, nothing else named.
  if (reading.asks.changes && reading.terms.length === 0) return answerChanges(context, reading.asks.statusAbout);

  // What the schedule says.
  const filters = scheduleFilters(context);
  const trackOnly = tracks.length > 0 && reading.terms.every((term) => tracks.some((track) => words(track).includes(term.word)));
  const terms = trackOnly ? [] : reading.terms;
  let events: ScheduleItem[] = [];
  let eventCoverage = 0;
  let listing = false;
  if (terms.length > 0) {
    const found = searchEvents(context, terms, filters.all);
    events = found.events;
    eventCoverage = found.coverage;
    // "Where is Mira Okafor signing?": the guest's events even when the other words match none of them.
    if (events.length === 0 && guests.length > 0) {
      events = index.events.filter(filters.all);
      eventCoverage = events.length ? 1 : 0;
      listing = true;
    }
  } else if (rooms.length || guests.length || tracks.length || time.window || time.mode || reading.asks.order) {
    events = index.events.filter(filters.all);
    eventCoverage = events.length ? 1 : 0;
    listing = true;
  }

  // "When is the last panel today?", "when is the last photo op?": of what answers, the events that start first or
  // last — unless the word is the events' own ("First-Time Con-Goers Orientation") or they all start at once.
  const orderApplies = () =>
    listing ||
    (!events.some((event) => words(event.title).some((word) => ORDER_TITLE_WORDS.has(word))) && new Set(events.map((event) => event.start.getTime())).size > 1);
  if (reading.asks.order && orderApplies()) {
    const held = events.filter((event) => event.status !== 'cancelled');
    if (held.length > 0) {
      const starts = held.map((event) => event.start.getTime());
      const wanted = starts.reduce((best, start) => (reading.asks.order === 'first' ? Math.min(best, start) : Math.max(best, start)));
      const body = renderEvents(context, held.filter((event) => event.start.getTime() === wanted), { listing: true });
      const scope = [placeLabel(context).trim(), time.window?.label ?? ''].filter(Boolean).join(' ');
      return { text: `${reading.asks.order === 'first' ? 'First' : 'Last'} to start${scope ? ` ${scope}` : ''}:\n\n${body.text}`, sources: body.sources };
    }
  }

  if (time.mode === 'now' && terms.length === 0) return answerNow(context, filters.place);
  if (time.mode === 'next') return answerNext(context, events, terms.length > 0 || rooms.length > 0 || guests.length > 0 || tracks.length > 0);

  // What the files say.
  const passage = findPassage(context);
  const scheduleSignals = Boolean(time.window || rooms.length || guests.length || tracks.length);
  // "What's in the Main Hall on Sunday?" with nothing there is answered by the schedule, not by a file that names the hall.
  const pureListing = terms.length === 0 && scheduleSignals;
  const usePassage = passage && !pureListing && (events.length === 0 || (!scheduleSignals && !listing && passage.coverage > eventCoverage + COVERAGE_SPREAD));
  const alsoPassage = passage && !usePassage && events.length > 0 && !scheduleSignals && !listing && passage.coverage >= eventCoverage - 0.05;

  if (usePassage) return renderPassageAnswer(passage!);
  if (events.length === 0) return notFound(context, terms, filters);

  const body = renderEvents(context, events, { listing: listing || terms.length === 0 });
  if (alsoPassage) {
    const quote = renderPassageAnswer(passage!);
    return { text: `${body.text}\n\n${quote.text}`, sources: [...body.sources, ...quote.sources] };
  }
  return body;
}

interface Filters {
  /** Room, track, guest and time. */
  all: (event: ScheduleItem) => boolean;
  /** Room, track and guest only. */
  place: (event: ScheduleItem) => boolean;
  window: TimeWindow | null;
}

function scheduleFilters({ reading }: Context): Filters {
  const rooms = new Set(reading.rooms);
  const tracks = new Set(reading.tracks);
  const guests = reading.guests.map((guest) => ({ name: guest, folded: words(guest).join(' ') }));
  const onlyTrack = reading.tracks.length > 0 && reading.terms.every((term) => reading.tracks.some((track) => words(track).includes(term.word)));
  const place = (event: ScheduleItem) =>
    (rooms.size === 0 || (event.room !== null && rooms.has(event.room))) &&
    (!onlyTrack || (event.track !== null && tracks.has(event.track))) &&
    (guests.length === 0 || guests.some((guest) => event.speakers.includes(guest.name) || event.foldedTitle.includes(guest.folded)));
  const window = reading.time.window;
  return { place, window, all: (event) => place(event) && (!window || inWindow(event, window)) };
}

/** The events that match the words, best first, with how much of the question they cover. */
function searchEvents(context: Context, terms: QueryTerm[], filter: (event: ScheduleItem) => boolean): { events: ScheduleItem[]; coverage: number } {
  const hits = context.index.searchEvents(weighted(terms), filter);
  const ranked = rank(context, hits, terms, 'events');
  if (ranked.length === 0) return { events: [], coverage: 0 };
  return { events: ranked.map((hit) => hit.item), coverage: ranked[0]!.coverage };
}

function weighted(terms: QueryTerm[]): WeightedTerm[] {
  const result = new Map<string, WeightedTerm>();
  terms.forEach((term, group) => {
    result.set(term.word, { word: term.word, weight: 1, exact: false, group });
    for (const synonym of term.also) if (!result.has(synonym)) result.set(synonym, { word: synonym, weight: SYNONYM_WEIGHT, exact: true, group });
  });
  return [...result.values()];
}

/**
 * Keeps the hits that cover most of the question (weighing each word by
 * how rare it is, so "How long is the Mothra screening?" needs "mothra"),
 * best first, an event whose whole title the question names before others.
 */
function rank<T extends ScheduleItem | Passage>(context: Context, hits: Hit<T>[], terms: QueryTerm[], among: 'events' | 'passages', formatWeight = 1): (Hit<T> & { coverage: number })[] {
  const { index } = context;
  // "Is there a cooking demo?": when a question says what about ("cooking"), a match on its words for
  // the kind of event alone ("demo") answers nothing; a question about a kind alone ("any quizzes?") is answered by it.
  const topics = terms.filter((term) => !isFormatWord(term.stem));
  // A word the knowledge never uses weighs by how rare it is in everyday English ("phone" little, "quidditch" fully).
  const weights = terms.map(
    (term) =>
      (index.knows(term.stem) || term.also.some((other) => index.knows(other)) ? index.weight(term.stem, among, term.also) : maxWeight(index, among) * generalRarity(term.stem)) *
      (topics.includes(term) ? 1 : formatWeight),
  );
  const total = weights.reduce((sum, weight) => sum + weight, 0) || 1;
  const questionWords = new Set(context.reading.words);
  // A title word is named by the word itself, another form of it or a word meaning the same ("cosplay contest" names the Costume Contest).
  const namedStems = new Set(terms.flatMap((term) => [term.stem, ...term.also.map(stem)]));
  const names = (word: string) => questionWords.has(word) || namedStems.has(stem(word));
  // The best few hundred by BM25 are all that can be shown; coverage is weighed for those.
  const considered = hits.length > MAX_CONSIDERED ? [...hits].sort((a, b) => b.score - a.score).slice(0, MAX_CONSIDERED) : hits;
  const scored = considered.map((hit) => {
    const matched = new Set(hit.terms);
    let covered = 0;
    let topical = topics.length === 0;
    terms.forEach((term, position) => {
      // A typo-tolerant match counts for less than the word itself (or a longer word it starts).
      const exact = hit.matches.some((found) => found.startsWith(term.stem));
      let share = 0;
      if (matched.has(term.stem)) share = exact ? 1 : FUZZY_COVERAGE;
      else if (term.also.some((synonym) => matched.has(synonym) || matched.has(stem(synonym)))) share = SYNONYM_COVERAGE;
      covered += weights[position]! * share;
      if (share > 0 && topics.includes(term)) topical = true;
    });
    if (!topical) return { ...hit, score: 0, coverage: 0 };
    let score = hit.score;
    if (hit.item.kind === 'event') {
      const title = titleWordsOf(hit.item);
      if (title.length > 0 && title.every(names)) score *= 2;
    }
    return { ...hit, score, coverage: covered / total };
  });
  // Sentences asked of the files carry more incidental words than questions about an event.
  const minimum = among === 'passages' ? MIN_PASSAGE_COVERAGE : MIN_COVERAGE;
  const eligible = scored.filter((hit) => hit.coverage >= minimum - 1e-9);
  // Nothing of the kind asked about on the topic: what is on the topic, of any kind ("any armor workshops?" → an armor session).
  const kinds = terms.length - topics.length;
  if (eligible.length === 0 && formatWeight === 1 && kinds > 0 && topics.length > 0 && among === 'events') return rank(context, hits, terms, among, FORMAT_BESIDE_TOPIC_WEIGHT);
  if (eligible.length === 0) return [];
  const bestCoverage = Math.max(...eligible.map((hit) => hit.coverage));
  const close = eligible.filter((hit) => hit.coverage >= bestCoverage - COVERAGE_SPREAD);
  const bestScore = Math.max(...close.map((hit) => hit.score));
  return close.filter((hit) => hit.score >= bestScore * RELATIVE_SCORE_FLOOR).sort((a, b) => b.coverage - a.coverage || b.score - a.score);
}

const maxWeight = (index: KnowledgeIndex, among: 'events' | 'passages') => {
  const total = among === 'events' ? index.events.length : index.passages.length;
  return Math.log(1 + (total - 1 + 0.5) / 1.5);
};

/** "What comes after the costume contest (in Hall B)?" */
function answerRelation(context: Context, relation: NonNullable<QuestionReading['relation']>): ComposedAnswer | null {
  const { index, reading } = context;
  const anchorTerms = relation.terms.filter((term) => !term.generic);
  if (anchorTerms.length === 0) return null;
  const filters = scheduleFilters(context);
  const anchors = rank(context, index.searchEvents(weighted(anchorTerms), filters.all), anchorTerms, 'events');
  const anchor = anchors[0]?.item;
  if (!anchor) return null;
  const rooms = reading.rooms.length ? new Set(reading.rooms) : anchor.room ? new Set([anchor.room]) : null;
  // The convention day of the anchor: from 06:00 to 06:00 the next morning (a night runs past midnight).
  const dayStart = conventionDayStart(anchor.start, context.timeZone);
  const dayEnd = dayStart + 24 * 3_600_000;
  const sameDay = (event: ScheduleItem) => event.start.getTime() >= dayStart && event.start.getTime() < dayEnd;
  const around = (within: Set<string> | null) => {
    const candidates = index.events.filter((event) => event !== anchor && event.status !== 'cancelled' && (!within || (event.room !== null && within.has(event.room))));
    return relation.kind === 'after'
      ? candidates.filter((event) => event.start.getTime() >= anchor.start.getTime() + 60_000 && endOf(event) > endOf(anchor) && sameDay(event)).slice(0, 3)
      : candidates.filter((event) => event.start.getTime() < anchor.start.getTime() && sameDay(event)).slice(-3);
  };
  const chosen = around(rooms);
  const where = rooms ? ` in ${[...rooms].join(' or ')}` : '';
  const lead = `${relation.kind === 'after' ? 'After' : 'Before'} ${eventLine(context, anchor, { compact: true }).replace(/^- /, '')}:`;
  const list = (events: ScheduleItem[]) => events.map((event) => eventLine(context, event, { compact: true })).join('\n');
  if (chosen.length === 0) {
    const none = `Nothing else is scheduled${where} ${relation.kind === 'after' ? 'after it that day' : 'before it that day'}.`;
    // The room was the event's own, not asked for: what is on elsewhere.
    const elsewhere = rooms && reading.rooms.length === 0 ? around(null) : [];
    return {
      text: elsewhere.length ? `${lead}\n\n${none} Elsewhere:\n\n${list(elsewhere)}` : `${lead}\n\n${none}`,
      sources: [eventSource(anchor), ...elsewhere.map(eventSource)],
    };
  }
  return { text: `${lead}\n\n${list(chosen)}`, sources: [eventSource(anchor), ...chosen.map(eventSource)] };
}

const THANKS_REPLY = "You're welcome! Ask me anything else about the convention — a panel, a guest, a room or a time.";
const THANKS_WORDS = new Set(['thanks', 'thank', 'thx', 'thnx', 'ty', 'tysm', 'cheers', 'ta']);
const THANKS_FILLER = new Set(
  'you u so much very lots lot a for that the help helped helps info great ok okay cool awesome perfect nice brilliant got it bye goodbye again heaps'.split(' '),
);

const HELP_FILLER = new Set('help me please pls plz what can could you do i ask how does this work use it with'.split(' '));

/** A message that only asks for help ("help", "help me please", "what can you help with?"). */
function isHelpRequest(question: string): boolean {
  const said = words(question);
  return said.includes('help') && said.every((word) => HELP_FILLER.has(word));
}

const TIME_NOW_QUESTION = /^(what time is it|what is the time|whats the time|what s the time|time)( now| right now| there| at the con)?$/;

/** A message that only thanks ("thanks!", "thank you so much", "ok thx"). */
function isThanks(question: string): boolean {
  const said = words(question);
  return said.some((word) => THANKS_WORDS.has(word)) && said.every((word) => THANKS_WORDS.has(word) || THANKS_FILLER.has(word));
}

/** "What's on?", "anything happening?": nothing asked but what is on. */
const ON_WORDS = new Set(['on', 'happening', 'going']);
const WHATS_ON_WORDS = new Set(['what', 'whats', 'is', 'are', 'on', 'happening', 'going', 'there', 'theres', 'any', 'anything', 'something', 'here', 'at', 'the', 'con', 'convention']);
/** Words for the schedule as a whole ("show me the schedule", "how many events are there?"). */
const SCHEDULE_WORDS = new Set(['schedule', 'program', 'programme', 'events', 'lineup', 'agenda', 'timetable', 'panels', 'sessions', 'talks', 'list', 'everything', 'weekend']);

/** The schedule in a few lines: how many events, from when to when, each day's count, its places and tracks. */
function answerOverview(context: Context): ComposedAnswer {
  const { index, format, timeZone } = context;
  const span = conventionSpan(index);
  if (!span) return { text: `Every event in the schedule has been cancelled (${index.events.length}).`, sources: [] };
  const { held, first, last } = span;
  const cancelled = index.events.length - held.length;
  const dayOf = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', day: 'numeric', month: 'short' });
  const perDay = new Map<string, number>();
  for (const event of held) {
    const day = dayOf.format(event.start).replace(',', '');
    perDay.set(day, (perDay.get(day) ?? 0) + 1);
  }
  const days = [...perDay].slice(0, MAX_NAMES).map(([day, n]) => `- **${day}** — ${count(n, 'event', 'events')}`);
  if (perDay.size > MAX_NAMES) days.push(`\n…and ${perDay.size - MAX_NAMES} more days.`);
  const rooms = new Set(held.flatMap((event) => (event.room ? [event.room] : []))).size;
  const tracks = new Set(held.flatMap((event) => (event.track ? [event.track] : []))).size;
  const lead = `The schedule has **${count(held.length, 'event', 'events')}** from ${format.when(first)} to ${format.when(last)}${cancelled ? ` (and ${count(cancelled, 'cancelled one', 'cancelled ones')})` : ''}:`;
  const where = [rooms ? count(rooms, 'place', 'places') : '', tracks ? count(tracks, 'track', 'tracks') : ''].filter(Boolean).join(' and ');
  const hint = `${where ? `They are in ${where}. ` : ''}Ask about a day ("what's on Saturday?"), a time ("what's on at 3pm?"), a room, a track or a guest.`;
  return { text: `${lead}\n\n${days.join('\n')}\n\n${hint}`, sources: [] };
}

/** "1 event", "1,200 events". */
const count = (n: number, one: string, many: string) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/** Words of "the first / last" that a title may hold as its own ("First-Time Con-Goers Orientation", "Last Call"). */
const ORDER_TITLE_WORDS = new Set(['first', 'earliest', 'last', 'final']);

/** Plural words for the places a schedule names ("which rooms are there?"). */
const PLACE_WORDS = new Set(['rooms', 'stages', 'halls', 'venues', 'locations']);
const SINGLE_PLACE_WORDS = new Set(['room', 'stage', 'hall', 'venue', 'location', 'area', 'place', 'spot']);
/** Names listed in full before "and N more". */
const MAX_NAMES = 40;

/** The schedule's tracks or rooms, each with how many events it has. */
function answerNames(context: Context, kind: 'tracks' | 'rooms'): ComposedAnswer | null {
  const counts = new Map<string, number>();
  for (const event of context.index.events) {
    const name = kind === 'tracks' ? event.track : event.room;
    if (name && event.status !== 'cancelled') counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  if (counts.size === 0) return null;
  const names = [...counts].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));
  const lines = names.slice(0, MAX_NAMES).map(([name, count]) => `- **${name}** — ${count} ${count === 1 ? 'event' : 'events'}`);
  if (names.length > MAX_NAMES) lines.push(`\n…and ${names.length - MAX_NAMES} more.`);
  const lead = kind === 'tracks' ? `The schedule has ${names.length} tracks:` : `The schedule's events are in ${names.length} places:`;
  const example = names[0]![0];
  const hint = kind === 'tracks' ? `Ask "what's on in the ${example} track today?" for one of them.` : `Ask "what's on in ${example} today?" for one of them.`;
  return { text: `${lead}\n\n${lines.join('\n')}\n\n${hint}`, sources: [] };
}

/** Words of a question about the convention's guests as a whole ("who are the special guests of honour?"). */
const GUEST_STEMS = new Set(['guest', 'goh', 'celebrity', 'celebrities'].map(stem));
const GUEST_QUALIFIER_STEMS = new Set(['honor', 'honour', 'honored', 'honoured', 'special', 'featured', 'celebrity', 'celebrities', 'vip', 'famous'].map(stem));

function asksForGuests(reading: QuestionReading): boolean {
  const { terms, guests, rooms, tracks, relation, time } = reading;
  if (guests.length || rooms.length || tracks.length || relation || time.mode) return false;
  // The guests as a whole: "guests", or one "guest of honour"; "is there a guest room?" is about a room.
  const whole = reading.words.some((word) => word === 'guests' || word === 'gohs' || word === 'celebrities') || terms.some((term) => GUEST_QUALIFIER_STEMS.has(term.stem));
  const aPlace = reading.words.some((word) => PLACE_WORDS.has(word) || SINGLE_PLACE_WORDS.has(word));
  return whole && !aPlace && terms.some((term) => GUEST_STEMS.has(term.stem)) && terms.every((term) => GUEST_STEMS.has(term.stem) || GUEST_QUALIFIER_STEMS.has(term.stem));
}

/**
 * The guests the schedule features — the people an event's title names
 * ("Spotlight: Mira Okafor", "Story Time with Aiko Tanaka"), else everyone
 * on its events, busiest first — each with how many events they have
 * (within the time asked about) and their next one.
 */
function answerGuests(context: Context): ComposedAnswer | null {
  const { index, now, format } = context;
  const filters = scheduleFilters(context);
  const held = index.events.filter((event) => event.status !== 'cancelled' && filters.all(event));
  const eventsOf = new Map<string, ScheduleItem[]>();
  for (const event of held) {
    for (const speaker of event.speakers) {
      const theirs = eventsOf.get(speaker);
      if (theirs) theirs.push(event);
      else eventsOf.set(speaker, [event]);
    }
  }
  const featured = [...eventsOf.keys()].filter((name) => index.vocabulary.featured.has(name));
  const names = featured.length ? featured.sort((a, b) => a.localeCompare(b)) : [...eventsOf.keys()].sort((a, b) => eventsOf.get(b)!.length - eventsOf.get(a)!.length || a.localeCompare(b));
  if (names.length === 0) return null;
  const scope = context.reading.time.window ? ` ${context.reading.time.window.label}` : '';
  const lines = names.slice(0, MAX_NAMES).map((name) => {
    const events = eventsOf.get(name)!;
    const next = events.find((event) => event.start > now);
    return `- **${name}** — ${count(events.length, 'event', 'events')}${next ? `; next: ${next.title}, ${format.when(next.start)}` : ''}`;
  });
  if (names.length > MAX_NAMES) lines.push(`\n…and ${names.length - MAX_NAMES} more.`);
  const lead = featured.length ? `The schedule's guests${scope}:` : `The people on the schedule${scope}, busiest first:`;
  return { text: `${lead}\n\n${lines.join('\n')}\n\nAsk "when is ${names[0]} on?" for all of one guest's events.`, sources: [] };
}

/** A feed's own note that an event moved, at the start of its description: "MOVED to Hall C (was Hall A). …". */
const MOVED_NOTE = /^\s*(?:moved|rescheduled|relocated|room change|time change|new (?:time|room))\b[^.(]*(?:\(was ([^)]+)\))?/i;

/**
 * How an event moved, as the crawler recorded it (where and when it was)
 * or as the feed's own note says: "moved (was Sat 14 Mar, 10:00 CDT)"; null
 * when it has not (or is cancelled).
 */
function movedNote(format: TimeFormat, event: ScheduleItem): string | null {
  if (event.status === 'cancelled') return null;
  if (event.change?.kind === 'moved_time' || event.change?.kind === 'moved_room') {
    const was = [event.change.wasStart ? format.when(event.change.wasStart) : '', event.change.wasRoom ? `in ${event.change.wasRoom}` : ''].filter(Boolean).join(' ');
    return `moved${was ? ` (was ${was})` : ''}`;
  }
  const note = MOVED_NOTE.exec(event.description);
  if (!note) return null;
  return `moved${note[1] ? ` (was ${note[1].trim()})` : ''}`;
}

/**
 * The schedule's changes within what the question names (a room, a guest,
 * a time): the events cancelled, the ones moved (with where and when they
 * were) and, asked about changes in general, the ones added since the
 * schedule before.
 */
function answerChanges(context: Context, about: QuestionReading['asks']['statusAbout']): ComposedAnswer {
  const filters = scheduleFilters(context);
  const scope = [placeLabel(context).trim(), context.reading.time.window?.label ?? ''].filter(Boolean).join(' ');
  const within = context.index.events.filter(filters.all);
  const groups: { heading: string; events: ScheduleItem[] }[] = [];
  if (about !== 'moved') groups.push({ heading: 'Cancelled', events: within.filter((event) => event.status === 'cancelled') });
  if (about !== 'cancelled') groups.push({ heading: 'Moved', events: within.filter((event) => movedNote(context.format, event) !== null) });
  if (about === 'changed') groups.push({ heading: 'Added', events: within.filter((event) => event.status !== 'cancelled' && event.change?.kind === 'added') });
  const found = groups.filter((group) => group.events.length > 0);
  if (found.length === 0) {
    const what = about === 'cancelled' ? 'has been cancelled' : about === 'moved' ? 'has moved' : 'has been cancelled or moved';
    return { text: `Nothing${scope ? ` ${scope}` : ''} ${what}: every event is on as the schedule lists it.`, sources: [] };
  }
  const sections: string[] = [];
  const sources: Source[] = [];
  for (const group of found) {
    const body = renderEvents(context, group.events, { listing: true });
    sections.push(`${group.heading}${scope ? ` ${scope}` : ''}:\n\n${body.text}`);
    sources.push(...body.sources);
  }
  return { text: sections.join('\n\n'), sources };
}

/**
 * The events not cancelled (of those `within` keeps), and when the
 * convention runs by them: from the first one's start to the last one's end
 * (found in a loop: a schedule may have more events than a call takes
 * arguments). Null when none is held.
 */
function conventionSpan(index: KnowledgeIndex, within: (event: ScheduleItem) => boolean = () => true): { held: ScheduleItem[]; first: Date; last: Date } | null {
  const held = index.events.filter((event) => event.status !== 'cancelled' && within(event));
  if (held.length === 0) return null;
  let last = Number.NEGATIVE_INFINITY;
  for (const event of held) last = Math.max(last, endOf(event).getTime());
  return { held, first: held[0]!.start, last: new Date(last) };
}

const CEREMONY = stem('ceremony');
const CEREMONY_KIND = { start: stem('opening'), end: stem('closing') };

/**
 * When the convention starts and ends, as its schedule has it: from its
 * first event's start to its last event's end, with the opening or closing
 * ceremony when the schedule has one.
 */
function answerConvention(context: Context, kind: 'start' | 'end' | 'span'): ComposedAnswer | null {
  const { index, now, format } = context;
  const span = conventionSpan(index);
  if (!span) return null;
  const { held, first, last } = span;
  const [from, to] = [`**${format.when(first)}**`, `**${format.when(last)}**`];
  const started = now >= first;
  let lead: string;
  if (now >= last) lead = `The convention is over: it ran from ${from} to ${to}.`;
  else if (kind === 'start') lead = `The convention ${started ? 'started' : 'starts'} ${from} and runs until ${to}.`;
  else if (kind === 'end') lead = `The convention ends ${to}, when its last event finishes${started ? '' : ` (it starts ${format.when(first)})`}.`;
  else lead = started ? `The convention runs until ${to} (it started ${format.when(first)}).` : `The convention runs from ${from} to ${to}.`;
  const kinds = kind === 'span' ? [CEREMONY_KIND.start, CEREMONY_KIND.end] : [CEREMONY_KIND[kind]];
  const ceremonies = kinds.flatMap((wanted) => {
    const found = held.find((event) => {
      const stems = words(event.title).map(stem);
      return stems.includes(CEREMONY) && stems.includes(wanted);
    });
    return found ? [found] : [];
  });
  if (ceremonies.length === 0) return { text: lead, sources: [] };
  const lines = ceremonies.map((event) => eventLine(context, event, { compact: ceremonies.length > 1 }));
  return { text: `${lead}\n\n${lines.join('\n')}`, sources: ceremonies.map(eventSource) };
}

const YES_NO_WORDS = new Set(['is', 'are', 'will', 'does', 'do', 'can']);

/**
 * The convention's hours in the day (or part of one) asked about, by its
 * events there: from the first one's start to the last one's end, with the
 * first to start — or, asked about the end, the last to finish. Null when
 * nothing is held then (the caller's not-found says when the convention runs)
 * or the time asked about is a moment, not a day.
 */
function answerConventionHours(context: Context, kind: 'start' | 'end' | 'span', window: TimeWindow): ComposedAnswer | null {
  const { index, now, format, reading } = context;
  if (window.to.getTime() - window.from.getTime() < 3_600_000) return null;
  const span = conventionSpan(index, (event) => inWindow(event, window));
  if (!span) return null;
  const { held, first, last } = span;
  const over = last <= now;
  // "Is the con open on Monday?" is answered yes first (of a day still to come or under way).
  const label = !over && YES_NO_WORDS.has(reading.words[0] ?? '') ? `Yes: ${window.label}` : capitalize(window.label);
  const lead = `${label} the schedule ${over ? 'ran' : 'runs'} **${format.span(first, last)}**.`;
  const chosen =
    kind === 'end' ? held.filter((event) => endOf(event).getTime() === last.getTime()) : held.filter((event) => event.start.getTime() === first.getTime());
  const body = renderEvents(context, chosen, { listing: true });
  return { text: `${lead} ${kind === 'end' ? 'Last to finish' : 'First up'}:\n\n${body.text}`, sources: body.sources };
}

function conventionDayStart(date: Date, timeZone: string): number {
  const local = zonedParts(new Date(date.getTime() - 6 * 3_600_000), timeZone);
  return instantOf({ year: local.year, month: local.month, day: local.day, hour: 6 }, timeZone).getTime();
}

/** "What's on now?": what runs now; with nothing now, what is next, or when the convention starts. */
function answerNow(context: Context, place: (event: ScheduleItem) => boolean): ComposedAnswer {
  const { index, now } = context;
  const where = placeLabel(context);
  const running = index.events.filter((event) => place(event) && event.status !== 'cancelled' && event.start <= now && endOf(event) > now);
  if (running.length > 0) {
    const body = renderEvents(context, running, { listing: true, until: true });
    return { text: `Happening now${where}:\n\n${body.text}`, sources: body.sources };
  }
  const upcoming = index.events.filter((event) => place(event) && event.status !== 'cancelled' && event.start > now);
  const first = index.events.find((event) => event.status !== 'cancelled');
  if (first && first.start > now && (!upcoming[0] || upcoming[0].start.getTime() === first.start.getTime() || place(first))) {
    const body = renderEvents(context, upcoming.filter((event) => event.start.getTime() === upcoming[0]!.start.getTime()), { listing: true });
    return { text: `Nothing is on yet: the convention starts ${context.format.when(first.start)}. First up${where}:\n\n${body.text}`, sources: body.sources };
  }
  if (upcoming.length === 0) {
    const last = index.events.at(-1);
    return {
      text: last ? `Nothing is on${where} now, and nothing more is scheduled${where}: the last event ended ${context.format.when(endOf(last))}.` : `Nothing is on${where} right now.`,
      sources: [],
    };
  }
  const nextStart = upcoming[0]!.start.getTime();
  const next = upcoming.filter((event) => event.start.getTime() === nextStart);
  const body = renderEvents(context, next, { listing: true });
  return { text: `Nothing is on${where} right now. Next up:\n\n${body.text}`, sources: body.sources };
}

/** "What's next?" / "What starts soon in Hall B?" / "When is the next autograph session?" */
function answerNext(context: Context, matching: ScheduleItem[], narrowed: boolean): ComposedAnswer {
  const { now } = context;
  const where = placeLabel(context);
  const upcoming = matching.filter((event) => event.start > now && event.status !== 'cancelled').sort((a, b) => a.start.getTime() - b.start.getTime());
  if (upcoming.length === 0) {
    if (context.reading.terms.length > 0) return notFound(context, context.reading.terms, scheduleFilters(context), 'coming up');
    const when = context.reading.time.window ? ` ${context.reading.time.window.label}` : '';
    // "Anything left today?" late in the day: what still runs, if nothing more starts.
    const running = matching.filter((event) => event.status !== 'cancelled' && event.start <= now && endOf(event) > now);
    if (running.length === 0) return { text: `Nothing more is scheduled${where}${when}.`, sources: [] };
    const body = renderEvents(context, running, { listing: true, until: true });
    return { text: `Nothing more starts${where}${when}. Still on:\n\n${body.text}`, sources: body.sources };
  }
  // "In the next hour" sets how far ahead to look; without it, a question that names nothing looks NEXT_HOURS ahead.
  const horizon = context.reading.time.horizon;
  // "What's next tonight?", "anything left today?": the rest of that time, however far.
  const window = context.reading.time.window;
  const ahead = horizon ? horizon.minutes * 60_000 : narrowed || window ? Number.POSITIVE_INFINITY : NEXT_HOURS * 3_600_000;
  const soon = upcoming.filter((event) => event.start.getTime() <= now.getTime() + ahead);
  const shown = soon.length ? soon : upcoming.filter((event) => event.start.getTime() === upcoming[0]!.start.getTime());
  const body = renderEvents(context, shown, { listing: true });
  const within = horizon?.label ?? `in the next ${NEXT_HOURS} hours`;
  const lead =
    soon.length === 0 && horizon
      ? `Nothing${where} starts ${within}. Next up:`
      : window && !horizon
        ? `Still to come${where} ${window.label}:`
        : soon.length && (horizon || !narrowed)
          ? `Starting ${within}${where}:`
          : `Coming up${where}:`;
  return { text: `${lead}\n\n${body.text}`, sources: body.sources };
}

function placeLabel({ reading }: Context): string {
  const parts: string[] = [];
  if (reading.rooms.length) parts.push(`in ${reading.rooms.join(' or ')}`);
  if (reading.guests.length) parts.push(`with ${reading.guests.join(' or ')}`);
  const onlyTrack = reading.tracks.length > 0 && reading.terms.every((term) => reading.tracks.some((track) => words(track).includes(term.word)));
  if (onlyTrack) parts.push(`in the ${reading.tracks.join(' or ')} track`);
  return parts.length ? ` ${parts.join(' ')}` : '';
}

function notFound(context: Context, terms: QueryTerm[], filters: Filters, when?: string): ComposedAnswer {
  const { reading, index } = context;
  const about = terms.length ? ` about “${terms.map((term) => term.said ?? term.word).join(' ')}”` : '';
  const scope = [placeLabel(context).trim(), when ?? reading.time.window?.label ?? ''].filter(Boolean).join(' ');
  // Matches outside the window asked about are worth a word ("not on Friday, but on Saturday").
  if (terms.length > 0 && (reading.time.window || reading.rooms.length)) {
    const elsewhere = searchEvents(context, terms, reading.time.window ? filters.place : () => true).events.slice(0, 3);
    if (elsewhere.length > 0) {
      const list = elsewhere.map((event) => eventLine(context, event, { compact: true })).join('\n');
      return {
        text: `I couldn't find anything${about}${scope ? ` ${scope}` : ''}. The schedule has it at another time or place:\n\n${list}`,
        sources: elsewhere.map(eventSource),
      };
    }
  }
  if (terms.length === 0) {
    // A time before the convention or after it: say when it runs.
    const window = reading.time.window;
    const span = window && conventionSpan(index);
    if (window && span) {
      const { first, last } = span;
      if (window.to <= first) return { text: `Nothing is scheduled ${scope}: the convention starts ${context.format.when(first)}.`, sources: [] };
      if (window.from >= last) return { text: `Nothing is scheduled ${scope}: the convention ended ${context.format.when(last)}.`, sources: [] };
    }
    return { text: `I couldn't find anything${scope ? ` ${scope}` : ''} in the schedule.`, sources: [] };
  }
  const hint = index.events.length ? ' Try other words — a panel title, a guest or a room — or ask at the info desk.' : '';
  return { text: `I couldn't find anything${about}${scope ? ` ${scope}` : ''} in the convention's schedule or files.${hint}`, sources: [] };
}

function renderEvents(context: Context, events: ScheduleItem[], options: { listing: boolean; until?: boolean }): ComposedAnswer {
  // A window's own events (those starting in it) before the ones already running when it opens:
  // "what's on tonight?" asked in the afternoon is about the evening's programme.
  const opens = context.reading.time.window?.from.getTime() ?? Number.NEGATIVE_INFINITY;
  const before = (event: ScheduleItem) => (event.start.getTime() < opens ? 1 : 0);
  let ordered = options.listing
    ? [...events].sort((a, b) => before(a) - before(b) || a.start.getTime() - b.start.getTime() || a.title.localeCompare(b.title))
    : groupSameTitles(events);
  // A list too long to show whole, with no time asked about, shows what is still to come before what is over:
  // "what's in room 104?" on Saturday afternoon is not answered with Friday's events.
  const over = (event: ScheduleItem) => endOf(event) <= context.now;
  const cut = ordered.length > MAX_LISTED && !context.reading.time.window;
  if (cut) ordered = [...ordered.filter((event) => !over(event)), ...ordered.filter(over)];
  const shown = ordered.slice(0, MAX_LISTED);
  const detailed = shown.length <= DETAILED_UP_TO;
  const lines: string[] = [];
  // One event asked about by name: say plainly what became of it.
  if (!options.listing && shown.length >= 1) {
    const lead = statusLead(context, shown[0]!, shown);
    if (lead) lines.push(lead);
  }
  for (const event of shown) lines.push(eventLine(context, event, { compact: !detailed, until: options.until }));
  const more = ordered.length - shown.length;
  if (more > 0 && cut && ordered.slice(MAX_LISTED).every(over) && !shown.every(over)) lines.push(`\n…and ${more} more that already happened.`);
  else if (more > 0) lines.push(`\n…and ${more} more — ask about a day, a time or a room to narrow it down.`);
  return { text: lines.join('\n'), sources: shown.map(eventSource) };
}

/**
 * What became of the event asked about, in the question's terms: cancelled,
 * over (when every one listed is, or the question asks whether it is still
 * on), moved, or — asked — not cancelled, not moved, still on.
 */
function statusLead({ reading, now, format }: Context, first: ScheduleItem, shown: ScheduleItem[]): string | null {
  const title = `**${first.title}**`;
  const { status, statusAbout } = reading.asks;
  if (first.status === 'cancelled') return `${title} has been cancelled.`;
  // "When does the dealers room close?" of a moment ("Dealers Room Opens"): its text tells, not that the moment passed.
  const asksEnd = reading.asks.howLong && !first.end;
  if (endOf(first) <= now && !asksEnd && (status || shown.every((event) => endOf(event) <= now))) return `${title} already happened.`;
  if (!status) return null;
  if (movedNote(format, first)) {
    if (statusAbout === 'on') return `Yes, ${title} is still on, but it has moved.`;
    return statusAbout === 'cancelled' ? `No, ${title} has not been cancelled, but it has moved.` : `Yes, ${title} has moved.`;
  }
  if (statusAbout === 'cancelled') return `No, ${title} has not been cancelled.`;
  if (statusAbout === 'moved') return `No, ${title} has not moved.`;
  if (statusAbout === 'changed') return `No, ${title} has not changed.`;
  return `Yes, ${title} is still on.`;
}

/** Keeps ranking order, but puts the other sessions of the same title right after the first, in time order. */
function groupSameTitles(events: ScheduleItem[]): ScheduleItem[] {
  const byTitle = new Map<string, ScheduleItem[]>();
  for (const event of events) byTitle.set(event.title, [...(byTitle.get(event.title) ?? []), event]);
  const result: ScheduleItem[] = [];
  for (const group of byTitle.values()) result.push(...group.sort((a, b) => a.start.getTime() - b.start.getTime()));
  return result;
}

/** "- **Costume Contest** — Sat 14 Mar, 19:00–21:00 CDT · Main Stage", then who and what, for a short list. */
function eventLine(context: Context, event: ScheduleItem, options: { compact: boolean; until?: boolean }): string {
  const { format, now, reading } = context;
  const facts: string[] = [];
  const span = options.until ? `until ${format.clock(endOf(event))}` : format.span(event.start, event.end);
  if (event.room) facts.push(event.room);
  if (reading.asks.howLong && event.end) facts.push(duration(event.start, event.end));
  let status = '';
  if (event.status === 'cancelled') status = ' — **Cancelled**';
  else if (endOf(event) <= now) status = ' — _already happened_';
  const moved = movedNote(format, event);
  if (moved) status += ` — _${moved}_`;
  const line = [`- **${event.title}** — ${span}${facts.length ? ` · ${facts.join(' · ')}` : ''}${status}`];
  const showPeople = event.speakers.length > 0 && (!options.compact || reading.asks.who || reading.guests.length > 0);
  const extras: string[] = [];
  if (showPeople) extras.push(`with ${event.speakers.join(', ')}`);
  if (!options.compact && event.track) extras.push(`${event.track} track`);
  const language = languageName(event.language);
  if (!options.compact && language && language !== 'English') extras.push(`in ${language}`);
  if (extras.length) line.push(`  ${capitalize(extras.join(' · '))}`);
  if (!options.compact && event.description) line.push(`  ${firstSentences(event.description, MAX_DESCRIPTION_CHARS)}`);
  // Hard line breaks (two trailing spaces): who, and what it is about, each on a line of their own.
  return line.join('  \n');
}

const LANGUAGES = new Intl.DisplayNames(['en'], { type: 'language' });
function languageName(code: string | null): string | null {
  if (!code) return null;
  try {
    return LANGUAGES.of(code) ?? code;
  } catch {
    return code;
  }
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function duration(start: Date, end: Date): string {
  const minutes = Math.round((end.getTime() - start.getTime()) / 60_000);
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return hours ? `${hours} h${rest ? ` ${rest} min` : ''}` : `${rest} min`;
}

/** Words for what an earlier answer was about ("there" is not: "is there anything on?" asks afresh). */
const BACK_REFERENCES = new Set(['it', 'its', 'that', 'they', 'them']);

/** The schedule's event an earlier answer cited, if the schedule still has it. */
function eventOf(index: KnowledgeIndex, source: Source): ScheduleItem | null {
  const at = source.starts_at ? Date.parse(source.starts_at) : Number.NaN;
  return (
    index.events.find(
      (event) => event.start.getTime() === at && (source.event_uid ? event.uid === source.event_uid : event.title === source.title),
    ) ?? null
  );
}

function eventSource(event: ScheduleItem): Source {
  const source: Source = { kind: 'event', title: event.title, starts_at: event.start.toISOString() };
  if (event.uid) source.event_uid = event.uid;
  if (event.end) source.ends_at = event.end.toISOString();
  if (event.room) source.location = event.room;
  return source;
}

/** The file passage that best answers the question, if one does. */
function findPassage(context: Context): { passage: Passage; coverage: number; terms: QueryTerm[] } | null {
  const { index, reading } = context;
  // Time words name no passage, but help pick the line that answers ("on Saturday").
  const terms = reading.passageTerms.filter((term) => !term.generic || reading.passageTerms.every((other) => other.generic));
  const core = terms.filter((term) => !isTimeWord(term.word));
  const search = core.length ? core : terms;
  if (search.length === 0 || index.passages.length === 0) return null;
  const ranked = rank(context, index.searchPassages(weighted(terms)), search, 'passages');
  const best = ranked[0];
  // Every word of the question picks the lines to quote ("on Saturday" picks Saturday's hours).
  return best ? { passage: best.item, coverage: best.coverage, terms: reading.passageTerms } : null;
}

const isTimeWord = (word: string) => /^(monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tonight|tomorrow|morning|afternoon|evening|night)s?$/.test(word);

function renderPassageAnswer(found: { passage: Passage; terms: QueryTerm[] }): ComposedAnswer {
  const { passage, terms } = found;
  const quote = bestLines(passage.text, terms);
  const heading = passage.headings.at(-1);
  const quoted = quote
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return {
    text: `${heading ? `**${heading}**\n\n` : ''}${quoted}`,
    sources: [{ kind: 'file', title: passage.fileTitle, file_id: passage.fileId, filename: passage.filename }],
  };
}

/** The lines or sentences of a passage that hold the question's words (all of a short passage). */
function bestLines(text: string, terms: QueryTerm[]): string {
  const lines = text.split('\n').filter((line) => line.trim());
  const units = lines.length > 1 ? lines : text.split(/(?<=[.!?])\s+/);
  if (units.length === 1 || (lines.length === 1 && text.length <= 320)) return text;
  const wanted = new Set(terms.flatMap((term) => [term.stem, ...term.also]));
  const scores = units.map((unit) => new Set(words(unit).map(stem).filter((word) => wanted.has(word))).size);
  const best = Math.max(...scores);
  if (best === 0) return truncate(text, MAX_QUOTE_CHARS);
  const picked: string[] = [];
  let size = 0;
  units.forEach((unit, position) => {
    if (scores[position]! >= Math.max(1, best / 2) && size + unit.length <= MAX_QUOTE_CHARS) {
      picked.push(unit.trim());
      size += unit.length;
    }
  });
  return picked.join(lines.length > 1 ? '\n' : ' ') || truncate(text, MAX_QUOTE_CHARS);
}

function firstSentences(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const sentences = flat.split(/(?<=[.!?])\s+/);
  let result = '';
  for (const sentence of sentences) {
    if ((result + sentence).length > max) break;
    result = result ? `${result} ${sentence}` : sentence;
  }
  return result || truncate(flat, max);
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const lastSpace = cut.lastIndexOf(' ');
  return `${cut.slice(0, lastSpace > max * 0.6 ? lastSpace : max).trimEnd()}…`;
}

interface TimeFormat {
  /** "Sat 14 Mar, 19:00–21:00 CDT" */
  span(start: Date, end: Date | null): string;
  /** "Sat 14 Mar, 19:00 CDT" */
  when(date: Date): string;
  /** "21:00" */
  clock(date: Date): string;
}

/** Times as DESIGN §9 shows them to people: convention zone, 24-hour, with the zone's abbreviation. */
export function timeFormat(timeZone: string): TimeFormat {
  const day = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', day: 'numeric', month: 'short' });
  const clock = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const zoneName = (date: Date) => {
    const name = (locale: string) =>
      new Intl.DateTimeFormat(locale, { timeZone, timeZoneName: 'short' }).formatToParts(date).find((part) => part.type === 'timeZoneName')?.value ?? '';
    const american = name('en-US');
    return /^GMT[+-]/.test(american) ? name('en-GB') : american;
  };
  const dayText = (date: Date) => day.format(date).replace(',', '');
  return {
    span: (start, end) => `${dayText(start)}, ${clock.format(start)}${end ? `–${clock.format(end)}` : ''} ${zoneName(start)}`,
    when: (date) => `${dayText(date)}, ${clock.format(date)} ${zoneName(date)}`,
    clock: (date) => clock.format(date),
  };
}

export { fold };
