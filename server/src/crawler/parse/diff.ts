import type { ScheduleEvent } from './schedule-event.ts';

export type ChangeKind = 'added' | 'removed' | 'moved_time' | 'moved_room' | 'cancelled' | 'reinstated';

interface Placement {
  start: string;
  end: string | null;
  location: string | null;
}

export interface ScheduleChange {
  kind: ChangeKind;
  uid: string;
  title: string;
  before?: Placement;
  after?: Placement;
}

const ORDER: ChangeKind[] = ['cancelled', 'moved_time', 'moved_room', 'added', 'removed', 'reinstated'];
const placement = (event: ScheduleEvent): Placement => ({ start: event.start.toISOString(), end: event.end?.toISOString() ?? null, location: event.location });
const sameRoom = (a: string | null, b: string | null) => (a ?? '').trim().toLowerCase() === (b ?? '').trim().toLowerCase();

/**
 * What changed between two versions of the schedule: added, removed,
 * cancelled (or reinstated) events, and events that moved in time or room —
 * the changes attendees most need to hear about. Events are matched by id,
 * or by title when the feed's ids changed but the title is unique on both sides.
 */
export function diffSchedules(previous: ScheduleEvent[], next: ScheduleEvent[]): ScheduleChange[] {
  const changes: ScheduleChange[] = [];
  const before = new Map(previous.map((event) => [event.uid, event]));
  const after = new Map(next.map((event) => [event.uid, event]));
  const unmatchedBefore = previous.filter((event) => !after.has(event.uid));
  const unmatchedAfter = next.filter((event) => !before.has(event.uid));

  const pairs: [ScheduleEvent, ScheduleEvent][] = next.filter((event) => before.has(event.uid)).map((event) => [before.get(event.uid)!, event]);
  const titleCount = (events: ScheduleEvent[]) => events.reduce((counts, event) => counts.set(event.title, (counts.get(event.title) ?? 0) + 1), new Map<string, number>());
  const oldTitles = titleCount(previous);
  const newTitles = titleCount(next);
  // Looked up by title (a feed whose ids all changed must not cost unmatched × unmatched comparisons).
  const unmatchedByTitle = new Map<string, ScheduleEvent>();
  for (const old of unmatchedBefore) if (!unmatchedByTitle.has(old.title)) unmatchedByTitle.set(old.title, old);
  const paired = new Set<ScheduleEvent>();
  for (const event of unmatchedAfter) {
    const match = unmatchedByTitle.get(event.title);
    if (match && oldTitles.get(event.title) === 1 && newTitles.get(event.title) === 1) {
      pairs.push([match, event]);
      paired.add(match).add(event);
    }
  }

  for (const [old, now] of pairs) {
    const base = { uid: now.uid, title: now.title, before: placement(old), after: placement(now) };
    if (old.status !== 'cancelled' && now.status === 'cancelled') changes.push({ kind: 'cancelled', ...base });
    if (old.status === 'cancelled' && now.status !== 'cancelled') changes.push({ kind: 'reinstated', ...base });
    if (old.start.getTime() !== now.start.getTime() || (old.end?.getTime() ?? null) !== (now.end?.getTime() ?? null)) changes.push({ kind: 'moved_time', ...base });
    if (!sameRoom(old.location, now.location)) changes.push({ kind: 'moved_room', ...base });
  }
  for (const event of unmatchedAfter) if (!paired.has(event)) changes.push({ kind: 'added', uid: event.uid, title: event.title, after: placement(event) });
  for (const event of unmatchedBefore) if (!paired.has(event)) changes.push({ kind: 'removed', uid: event.uid, title: event.title, before: placement(event) });
  return changes.sort((a, b) => ORDER.indexOf(a.kind) - ORDER.indexOf(b.kind) || a.title.localeCompare(b.title));
}
