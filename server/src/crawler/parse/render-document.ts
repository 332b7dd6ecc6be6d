import { changeMarker, eventMarker, timezoneMarker } from '../../assistant/knowledge-format.ts';
import { localDay } from '../../time-zone.ts';
import type { ScheduleChange } from './diff.ts';
import type { ParsedSchedule, ScheduleEvent } from './schedule-event.ts';

const fmt = (timeZone: string, options: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat('en-GB', { timeZone, ...options });

/**
 * The schedule as a Markdown document for the assistant's knowledge (OpenAI's
 * file_search does not read .ics) and for a person: one section per day, one
 * entry per event with its time, room, track, speakers and description, times
 * in the convention's zone, recent changes first. Hidden markers carry exact
 * times for the offline assistant (assistant/knowledge-format.ts).
 */
export function renderScheduleDocument(schedule: ParsedSchedule, options: RenderOptions): string {
  return [...renderScheduleDocumentPieces(schedule, options)].join('');
}

interface RenderOptions {
  timeZone: string;
  title: string;
  generatedAt: Date;
  changes?: ScheduleChange[];
}

/** Events rendered per piece. */
const EVENTS_PER_PIECE = 500;

/**
 * The same document in pieces of a few hundred events, so a 50,000-event
 * schedule is never one string (nor half a million lines) at once.
 */
export function* renderScheduleDocumentPieces(schedule: ParsedSchedule, options: RenderOptions): Generator<string> {
  const { timeZone } = options;
  const time = fmt(timeZone, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const dayTitle = fmt(timeZone, { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' });
  const shortWhen = fmt(timeZone, { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const lines: string[] = [
    `# ${options.title}`,
    '',
    `All times are local convention time (${timeZone}). Schedule as of ${shortWhen.format(options.generatedAt)}.`,
    timezoneMarker(timeZone),
    '',
  ];

  const changes = options.changes ?? [];
  if (changes.length > 0) {
    lines.push('## Recent changes', '');
    for (const [position, change] of changes.entries()) {
      if (position > 0 && position % EVENTS_PER_PIECE === 0) {
        yield `${lines.join('\n')}\n`;
        lines.length = 0;
      }
      lines.push(`- ${describeChange(change, shortWhen)} ${changeMarker({ kind: change.kind, uid: change.uid, wasStart: change.before?.start, wasRoom: change.before?.location })}`);
    }
    lines.push('');
  }

  const byDay = new Map<string, ScheduleEvent[]>();
  for (const event of schedule.events) {
    const day = localDay(event.start, timeZone);
    const events = byDay.get(day);
    if (events) events.push(event);
    else byDay.set(day, [event]);
  }
  let inPiece = 0;
  for (const events of byDay.values()) {
    lines.push(`## ${dayTitle.format(events[0]!.start)}`, '');
    for (const event of events) {
      if (++inPiece > EVENTS_PER_PIECE) {
        yield `${lines.join('\n')}\n`;
        lines.length = 0;
        inPiece = 1;
      }
      const span = event.allDay ? 'All day' : `${time.format(event.start)}${event.end ? `–${time.format(event.end)}` : ''}`;
      lines.push(`### ${span} · ${event.title}${event.status === 'cancelled' ? ' (CANCELLED)' : ''}`);
      lines.push(eventMarker(event.start, event.end, { uid: event.uid, status: event.status }));
      if (event.location) lines.push(`- Where: ${event.location}`);
      if (event.track) lines.push(`- Track: ${event.track}`);
      if (event.type) lines.push(`- Type: ${event.type}`);
      if (event.speakers.length) lines.push(`- Speakers: ${event.speakers.join(', ')}`);
      if (event.language) lines.push(`- Language: ${event.language}`);
      if (event.status === 'cancelled') lines.push('- Status: Cancelled');
      if (event.description) lines.push('', event.description);
      lines.push('');
    }
  }
  yield `${lines.join('\n').trimEnd()}\n`;
}

function describeChange(change: ScheduleChange, when: Intl.DateTimeFormat): string {
  const at = (placement: ScheduleChange['after']) => (placement ? `${when.format(new Date(placement.start))}${placement.location ? ` in ${placement.location}` : ''}` : '');
  switch (change.kind) {
    case 'cancelled':
      return `Cancelled: ${change.title} (was ${at(change.before)})`;
    case 'reinstated':
      return `Back on: ${change.title}, ${at(change.after)}`;
    case 'moved_time':
    case 'moved_room':
      return `Moved: ${change.title} now ${at(change.after)} (was ${at(change.before)})`;
    case 'added':
      return `Added: ${change.title}, ${at(change.after)}`;
    case 'removed':
      return `Removed: ${change.title} (was ${at(change.before)})`;
  }
}
