import { formatPeopleTime, type Source } from '@concierge/contract';
import type { Quota } from '../users/users.service.ts';

/** Discord's limit on a message's content. */
export const MESSAGE_LIMIT = 2000;
/** Sources listed under an answer; the rest are counted. */
const MAX_SOURCES = 8;
/** Room kept in every part for a code fence closed at its end and opened again in the next. */
const FENCE_RESERVE = 16;

const FENCE = /^\s*```/;

/**
 * Splits text into messages of at most `limit` characters without cutting
 * anything: at paragraph breaks first, then at line breaks, then (for a
 * single line longer than a message) after sentences, then between words;
 * only a run of characters longer than a whole message is cut where it must
 * be. A code block that spans two parts is closed at the end of the first
 * and opened again (same language) at the start of the next, so both render.
 */
export function splitMessage(text: string, limit = MESSAGE_LIMIT): string[] {
  const trimmed = text.trim();
  if (trimmed.length <= limit) return trimmed ? [trimmed] : [];
  const budget = limit - FENCE_RESERVE;
  const pieces: string[] = [];
  let current = '';
  const flush = () => {
    if (current) pieces.push(current);
    current = '';
  };
  const add = (piece: string, separator: string) => {
    if (!current) current = piece;
    else if (current.length + separator.length + piece.length <= budget) current += separator + piece;
    else {
      flush();
      current = piece;
    }
  };
  for (const paragraph of trimmed.split(/\n{2,}/)) {
    if (paragraph.length <= budget) {
      add(paragraph, '\n\n');
      continue;
    }
    // A paragraph longer than a message: its lines, each line (if need be) in smaller pieces.
    const lines = paragraph.split('\n');
    lines.forEach((line, index) => {
      const separator = index === 0 ? '\n\n' : '\n';
      for (const [pieceIndex, piece] of splitLine(line, budget).entries()) add(piece, pieceIndex === 0 ? separator : ' ');
    });
  }
  flush();
  return balanceFences(pieces);
}

/** A line longer than `budget`: after sentences, then between words, cut only where a word is longer than the budget. */
function splitLine(line: string, budget: number): string[] {
  if (line.length <= budget) return [line];
  const words = line.split(/(?<=[.!?])\s+|\s+/);
  const out: string[] = [];
  let current = '';
  for (let word of words) {
    while (word.length > budget) {
      if (current) out.push(current);
      current = '';
      out.push(word.slice(0, budget));
      word = word.slice(budget);
    }
    if (!current) current = word;
    else if (current.length + 1 + word.length <= budget) current += ` ${word}`;
    else {
      out.push(current);
      current = word;
    }
  }
  if (current) out.push(current);
  return out;
}

function balanceFences(pieces: string[]): string[] {
  let openFence: string | null = null;
  return pieces.map((piece) => {
    let text = openFence !== null ? `${openFence}\n${piece}` : piece;
    for (const line of piece.split('\n')) {
      if (!FENCE.test(line)) continue;
      // Reopened with its language when that is short enough to fit the reserve.
      const opener = line.trim();
      openFence = openFence === null ? (opener.length <= 11 ? opener : '```') : null;
    }
    if (openFence !== null) text += '\n```';
    return text;
  });
}

/** The sources an answer cites, as one small line under it (events with their time and room): "-# Sources: …". */
export function sourcesBlock(sources: Source[], timeZone: string): string {
  if (sources.length === 0) return '';
  const items = sources.slice(0, MAX_SOURCES).map((source) => {
    if (source.kind !== 'event') return source.title;
    const details = [source.starts_at ? formatPeopleTime(source.starts_at, timeZone) : null, source.location || null].filter(Boolean).join(', ');
    return details ? `${source.title} (${details})` : source.title;
  });
  if (sources.length > MAX_SOURCES) items.push(`and ${sources.length - MAX_SOURCES} more`);
  return `-# Sources: ${items.join(' · ')}`;
}

/** The usage footer under an answer: questions left in the 6 h window (and the 24 h one when it is the tighter). */
export function usageFooter(quota: Quota): string {
  const left6h = Math.max(0, quota.limit6h - quota.used6h);
  const tighter = quota.available < left6h ? ` (${quota.available} left in 24 h)` : '';
  return `-# ${left6h} of ${quota.limit6h} questions left in the next 6 h${tighter}`;
}

/** An answer as Discord messages: the text, its sources and the usage footer, split without cutting anything. */
export function answerParts(answer: { text: string; sources: Source[] }, options: { timeZone: string; quota: Quota | null }): string[] {
  const sections = [answer.text.trim(), sourcesBlock(answer.sources, options.timeZone), options.quota ? usageFooter(options.quota) : ''].filter(Boolean);
  return splitMessage(sections.join('\n\n'));
}
