import type { Source } from '../provider.ts';
import { inWindow, searchTerms, type KnowledgeIndex, type Passage } from './knowledge-index.ts';
import { readTimeWindow } from './time-window.ts';

const MAX_EVENTS = 10;
const MAX_QUOTES = 3;
const MAX_QUOTE_CHARS = 600;
const MAX_DESCRIPTION_CHARS = 240;
/** Hits scoring below this share of the best one are left out. */
const RELATIVE_SCORE_FLOOR = 0.2;

export const OFFLINE_NOTE =
  "_I'm the offline assistant: I quote the convention's schedule and files rather than writing answers myself._";

/**
 * The offline answer to a question: the best-matching passages of the
 * knowledge files as Markdown, events with their day, time and room, each
 * with its source. Never invents: with no match it says so.
 */
export function composeAnswer(question: string, index: KnowledgeIndex, now: Date, fallbackTimeZone: string): { text: string; sources: Source[] } {
  const timeZone = index.timeZone ?? fallbackTimeZone;
  const time = readTimeWindow(question, now, timeZone, index.eventDays);
  const terms = searchTerms(question, time?.words);

  if (index.size === 0) {
    return {
      text: `I don't have the convention's schedule or any files to search yet, so I can't answer that. Please check back soon.\n\n${OFFLINE_NOTE}`,
      sources: [],
    };
  }
  if (terms.length === 0 && !time) {
    return {
      text: `Ask me about a panel, a guest, a room or a time — for example "What's on in Hall B tonight?" or "When is the costume contest?"\n\n${OFFLINE_NOTE}`,
      sources: [],
    };
  }

  let passages: Passage[];
  if (terms.length > 0) {
    const hits = index.search(terms).filter((hit) => !time || inWindow(hit.passage, time.window));
    const best = hits[0]?.score ?? 0;
    // Weak matches are dropped, except passages holding the words as a phrase (a guest's name in a speaker list).
    const phrase = terms.join(' ');
    const holdsPhrase = (passage: Passage) => terms.length > 1 && `${passage.title}\n${passage.text}`.toLowerCase().includes(phrase);
    passages = hits.filter((hit) => hit.score >= best * RELATIVE_SCORE_FLOOR || holdsPhrase(hit.passage)).map((hit) => hit.passage);
  } else {
    passages = index.eventsIn(time!.window);
  }

  if (passages.length === 0) {
    const what = ['anything', terms.length > 0 ? `about “${terms.join(' ')}”` : '', time?.window.label ?? ''].filter(Boolean).join(' ');
    const hint = terms.length > 0 ? ' Try other words — a panel title, a guest or a room.' : '';
    return {
      text: `I couldn't find ${what} in the convention's schedule or files.${hint} The info desk can help with anything the schedule doesn't cover.\n\n${OFFLINE_NOTE}`,
      sources: [],
    };
  }

  const events = passages.filter((passage) => passage.start).slice(0, MAX_EVENTS);
  events.sort((a, b) => a.start!.getTime() - b.start!.getTime());
  const quotes = passages.filter((passage) => !passage.start).slice(0, events.length > 0 ? 1 : MAX_QUOTES);

  const sections: string[] = [];
  if (events.length > 0) {
    const heading = time ? `Here's what the schedule has ${time.window.label}:` : "Here's what I found in the schedule:";
    sections.push(heading, events.map((event) => renderEvent(event, timeZone)).join('\n'));
  }
  for (const quote of quotes) sections.push(renderQuote(quote));
  const sources = uniqueSources([...events, ...quotes]);
  if (events.length > 0) sections.push(`_Source: ${uniqueSources(events).map((source) => source.filename).join(', ')}_`);
  sections.push(OFFLINE_NOTE);
  return { text: sections.join('\n\n'), sources };
}

/** "- **Title** — Sat 14 Mar, 19:00–21:00 · Where: Hall B · Track: Music" and a short description. */
function renderEvent(event: Passage, timeZone: string): string {
  const facts: string[] = [];
  const description: string[] = [];
  for (const line of event.text.split('\n')) {
    const fact = /^\s*[-*]\s+\**([A-Za-z ]{2,20}?)\**:\**\s*(.+)$/.exec(line);
    if (fact) facts.push(`${fact[1]!.trim()}: ${fact[2]!.trim()}`);
    else if (line.trim()) description.push(line.trim());
  }
  const title = event.title.replace(/^\d{1,2}:\d\d\s*[–-]\s*(\d{1,2}:\d\d)?\s*·\s*/, '');
  const when = formatWhen(event.start!, event.end, timeZone);
  const summary = truncate(description.join(' '), MAX_DESCRIPTION_CHARS);
  return `- **${title}** — ${when}${facts.length ? ` · ${facts.join(' · ')}` : ''}${summary ? `\n  ${summary}` : ''}`;
}

function renderQuote(passage: Passage): string {
  const where = passage.headings.length ? ` (${passage.headings.join(' › ')})` : '';
  const quoted = truncate(passage.text, MAX_QUOTE_CHARS)
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return `From *${passage.filename}*${where}:\n\n${quoted}`;
}

function formatWhen(start: Date, end: Date | null, timeZone: string): string {
  const day = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', day: 'numeric', month: 'short' }).format(start);
  const time = (date: Date) => new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(date);
  return `${day}, ${time(start)}${end ? `–${time(end)}` : ''}`;
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const lastSpace = cut.lastIndexOf(' ');
  return `${cut.slice(0, lastSpace > max * 0.6 ? lastSpace : max).trimEnd()}…`;
}

function uniqueSources(passages: readonly Passage[]): Source[] {
  const seen = new Map<string, Source>();
  for (const passage of passages) seen.set(passage.fileId, { file_id: passage.fileId, filename: passage.filename });
  return [...seen.values()];
}
