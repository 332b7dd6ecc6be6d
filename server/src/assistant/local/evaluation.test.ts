import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env.ts';
import { createTestContext, manualClock, type TestContext } from '../../test-support/test-context.ts';

/**
 * The offline assistant's evaluation on a convention it was not built
 * around: a frab/pretalx schedule.json with its own rooms, tracks and
 * phrasing, the convention's FAQ, and questions the schedule cannot answer
 * (server/sample-data/evaluation/). Scored strictly: an answer is right only
 * with every expected fact (title, day, time and room, or the FAQ's fact)
 * and, for a day- or room-scoped question, no event of another day or room.
 * Items at odd positions are held out: their failures are never printed, so
 * work on the assistant cannot be steered by them.
 */

interface Item {
  question: string;
  expect?: string[];
  scope?: { days?: string[]; rooms?: string[] };
}

interface Evaluation {
  now: string;
  changes: { title: string; room?: string; shift_minutes?: number; cancel?: boolean }[];
  sets: Record<'schedule' | 'faq' | 'unanswerable', Item[]>;
}

const DIR = path.join(REPO_ROOT, 'server/sample-data/evaluation');
const EVALUATION: Evaluation = JSON.parse(readFileSync(path.join(DIR, 'questions.json'), 'utf8'));
const SCHEDULE = readFileSync(path.join(DIR, 'harborlight-schedule.json'), 'utf8');
const FAQ = readFileSync(path.join(DIR, 'harborlight-faq.md'));

/** The target for every set and half. */
const TARGET = 0.95;
/**
 * The held-out halves are reported against the same target; the test holds
 * them only to this floor, so a regression fails the suite without the
 * held-out questions ever being tuned for.
 */
const HELD_OUT_FLOOR = 0.8;
const SET_NAMES = { schedule: 'second schedule (frab/pretalx JSON)', faq: 'FAQ questions', unanswerable: 'questions the schedule cannot answer' } as const;

const EVENT_LINE = /^- \*\*/;
const DAY_OF_LINE = /— (Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d/;

/** Why an answer is wrong, or null when it is right. */
export function judge(item: Item, unanswerable: boolean, text: string): string | null {
  const lower = text.toLowerCase();
  if (unanswerable) return lower.includes("couldn't find") ? null : 'should say that nothing was found';
  const missing = (item.expect ?? []).filter((fact) => !lower.includes(fact.toLowerCase()));
  if (missing.length) return `missing ${missing.map((fact) => `“${fact}”`).join(', ')}`;
  if (lower.includes("couldn't find")) return 'says nothing was found';
  for (const line of text.split('\n').filter((candidate) => EVENT_LINE.test(candidate))) {
    const day = DAY_OF_LINE.exec(line)?.[1];
    if (item.scope?.days && (!day || !item.scope.days.includes(day))) return `lists an event of another day: ${line}`;
    if (item.scope?.rooms && !item.scope.rooms.some((room) => line.includes(`· ${room}`))) return `lists an event of another room: ${line}`;
  }
  return null;
}

/** The schedule after the changes of the second crawl (a move, a new time, a cancellation). */
function changedSchedule(): string {
  const document = JSON.parse(SCHEDULE);
  for (const day of document.schedule.conference.days) {
    for (const [room, events] of Object.entries(day.rooms as Record<string, Record<string, unknown>[]>)) {
      for (const event of events) {
        const change = EVALUATION.changes.find((candidate) => candidate.title === event.title);
        if (!change) continue;
        if (change.room) event.room = change.room;
        if (change.cancel) event.title = `CANCELLED: ${event.title as string}`;
        if (change.shift_minutes) {
          const start = new Date(new Date(event.date as string).getTime() + change.shift_minutes * 60_000);
          const local = new Date(start.getTime() + 60 * 60_000); // the fixture's zone is UTC+1 in October
          event.date = `${local.toISOString().slice(0, 19)}+01:00`;
          event.start = local.toISOString().slice(11, 16);
        }
        void room;
      }
    }
  }
  return JSON.stringify(document);
}

describe('the offline assistant on a second convention, its FAQ and questions it cannot answer', () => {
  let ctx: TestContext;
  let dir: string;
  const time = manualClock(new Date(EVALUATION.now));

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'concierge-evaluation-'));
    const feed = path.join(dir, 'schedule.json');
    writeFileSync(feed, SCHEDULE);
    ctx = await createTestContext({ clock: time.clock, env: { CRAWLER_URL: feed } });
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
    expect((await ctx.deps.crawler.refresh(false)).kind).toBe('stored');
    writeFileSync(feed, changedSchedule());
    const second = await ctx.deps.crawler.refresh(false);
    expect(second).toMatchObject({ kind: 'stored' });
    await ctx.deps.assistant.uploadFile({ filename: 'harborlight-faq.md', data: FAQ });
  });
  afterAll(async () => {
    await ctx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`answers the worked-on half of each set at ${TARGET * 100}% or better, and reports the held-out half`, async () => {
    const rows: { set: string; half: string; right: number; total: number }[] = [];
    const shown: string[] = [];
    for (const [set, items] of Object.entries(EVALUATION.sets) as [keyof Evaluation['sets'], Item[]][]) {
      const score = { dev: { right: 0, total: 0 }, held: { right: 0, total: 0 } };
      for (const [position, item] of items.entries()) {
        const half = position % 2 === 0 ? score.dev : score.held;
        const { answer } = await ctx.deps.assistant.ask({ sessionId: 'evaluation' }, null, item.question);
        const problem = judge(item, set === 'unanswerable', answer.text);
        half.total++;
        if (!problem) half.right++;
        else if (half === score.dev) shown.push(`✗ [${set}] ${item.question}\n    ${problem}\n    got: ${answer.text.replace(/\n/g, '\n         ')}`);
      }
      rows.push({ set: SET_NAMES[set], half: 'worked on', ...score.dev }, { set: SET_NAMES[set], half: 'held out', ...score.held });
    }
    const table = rows.map((row) => `  ${row.set.padEnd(40)} ${row.half.padEnd(10)} ${`${row.right}/${row.total}`.padStart(6)}  ${String(Math.round((row.right / row.total) * 100)).padStart(3)}%`);
    console.log(['Offline assistant evaluation (target ≥ 95% on each set):', ...table].join('\n'));
    if (shown.length) console.log(shown.join('\n'));
    expect(EVALUATION.sets.schedule.length).toBeGreaterThanOrEqual(40);
    expect(EVALUATION.sets.faq.length).toBeGreaterThanOrEqual(20);
    expect(EVALUATION.sets.unanswerable.length).toBeGreaterThanOrEqual(10);
    for (const row of rows) {
      expect(row.right / row.total, `${row.set}, ${row.half}`).toBeGreaterThanOrEqual(row.half === 'held out' ? HELD_OUT_FLOOR : TARGET);
    }
  }, 120_000);
});
