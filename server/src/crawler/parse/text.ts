const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', ndash: '–', mdash: '—', hellip: '…', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“' };

/** Plain text from a description that may hold HTML (Sched and Guidebook exports do). */
export function htmlToText(value: string): string {
  return value
    .replace(/<\s*br\s*\/?>/gi, '\n')
    .replace(/<\s*\/\s*(p|div|li|h[1-6])\s*>/gi, '\n')
    .replace(/<\s*li[^>]*>/gi, '• ')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x?[0-9a-f]+|[a-z]+);/gi, (whole, code: string) => {
      if (code.startsWith('#x') || code.startsWith('#X')) return String.fromCodePoint(parseInt(code.slice(2), 16));
      if (code.startsWith('#')) return String.fromCodePoint(Number(code.slice(1)));
      return ENTITIES[code.toLowerCase()] ?? whole;
    })
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** "CANCELLED: Title", "[Cancelled] Title", "Title (CANCELLED)" → the title and whether it says cancelled. */
export function cleanTitle(raw: string): { title: string; cancelled: boolean } {
  const pattern = /^\s*(?:\[\s*cancel+ed\s*\]|\(\s*cancel+ed\s*\)|cancel+ed\s*[:\-–—])\s*|\s*(?:\(\s*cancel+ed\s*\)|\[\s*cancel+ed\s*\])\s*$/gi;
  const title = raw.replace(pattern, '').trim();
  return { title: title || raw.trim(), cancelled: title !== raw.trim() };
}

/** Names from "A, B and C" / "A; B" / "A & B". */
export function splitNames(value: string): string[] {
  return value
    .split(/\s*(?:,|;|\band\b|&)\s*/i)
    .map((name) => name.trim())
    .filter(Boolean);
}

export const uniqueNames = (names: string[]) => [...new Map(names.map((name) => [name.toLowerCase(), name])).values()];

/** A "Speakers: …" line in a description: the names, and the description without it. */
export function speakersFromDescription(description: string): { speakers: string[]; rest: string } {
  const lines = description.split('\n');
  const index = lines.findIndex((line) => /^\s*(speakers?|panell?ists?|hosted by|hosts?|guests?|with)\s*:/i.test(line));
  if (index === -1) return { speakers: [], rest: description };
  const names = splitNames(lines[index]!.replace(/^[^:]*:/, ''));
  lines.splice(index, 1);
  return { speakers: names, rest: lines.join('\n').trim() };
}

/**
 * The same text in a string of its own. V8 keeps a part of a longer string
 * as a slice of it, so one event's title would keep a whole piece of the
 * feed in memory; a fresh copy lets the feed go.
 */
export const ownCopy = <T extends string | null | undefined>(value: T): T => (typeof value === 'string' ? (` ${value}`.slice(1) as T) : value);
