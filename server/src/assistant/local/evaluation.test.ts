import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env.ts';
import { createTestContext, manualClock, type TestContext } from '../../test-support/test-context.ts';

/**
 * The offline assistant's evaluation on conventions it was not built
 * around (server/sample-data/evaluation/):
 *
 * - Harborlight (the second convention): a frab/pretalx schedule.json in
 *   Lisbon, its FAQ in Markdown, and questions the schedule cannot answer.
 * - Southern Cross Fan Fest (the third): a frab schedule.xml in Melbourne
 *   whose Saturday night crosses the end of daylight saving time, its FAQ
 *   as plain-text Q/A pairs, and questions typed as on a phone.
 *
 * Scored strictly: an answer is right only with every expected fact (title,
 * day, time and room, or the FAQ's fact) and, for a day- or room-scoped
 * question, no event of another day or room. Items at odd positions are
 * held out: their failures are never printed, so work on the assistant
 * cannot be steered by them.
 */

interface Item {
  question: string;
  expect?: string[];
  scope?: { days?: string[]; rooms?: string[] };
}

type Sets = Record<'schedule' | 'faq' | 'unanswerable', Item[]>;

const DIR = path.join(REPO_ROOT, 'server/sample-data/evaluation');

/** The target for every set and half. */
const TARGET = 0.95;
/**
 * The held-out halves are reported against the same target; while it is
 * missed, the test holds them only to this floor, so a regression fails the
 * suite without the held-out questions ever being tuned for.
 */
const HELD_OUT_FLOOR = 0.8;

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

interface Row {
  set: string;
  half: 'worked on' | 'held out';
  right: number;
  total: number;
}

/** Asks every item, scores each half, and prints the scores against the target (and the worked-on half's failures). */
async function evaluate(ctx: TestContext, title: string, names: Record<keyof Sets, string>, sets: Sets): Promise<Row[]> {
  const rows: Row[] = [];
  const shown: string[] = [];
  for (const [set, items] of Object.entries(sets) as [keyof Sets, Item[]][]) {
    const score = { dev: { right: 0, total: 0 }, held: { right: 0, total: 0 } };
    for (const [position, item] of items.entries()) {
      const half = position % 2 === 0 ? score.dev : score.held;
      const { answer } = await ctx.deps.assistant.ask({ sessionId: 'evaluation' }, null, item.question);
      const problem = judge(item, set === 'unanswerable', answer.text);
      half.total++;
      if (!problem) half.right++;
      else if (half === score.dev) shown.push(`✗ [${set}] ${item.question}\n    ${problem}\n    got: ${answer.text.replace(/\n/g, '\n         ')}`);
    }
    rows.push({ set: names[set], half: 'worked on', ...score.dev }, { set: names[set], half: 'held out', ...score.held });
  }
  const percent = (row: Row) => Math.round((row.right / row.total) * 100);
  const verdict = (row: Row) =>
    row.right / row.total >= TARGET ? 'met' : row.half === 'held out' ? `MISSED (the suite holds it to an ${HELD_OUT_FLOOR * 100}% floor)` : 'MISSED';
  const table = rows.map(
    (row) => `  ${row.set.padEnd(44)} ${row.half.padEnd(10)} ${`${row.right}/${row.total}`.padStart(6)}  ${String(percent(row)).padStart(3)}%  target ${TARGET * 100}%: ${verdict(row)}`,
  );
  console.log([`Offline assistant evaluation, ${title} (target ≥ ${TARGET * 100}% on every set and half):`, ...table].join('\n'));
  if (shown.length) console.log(shown.join('\n'));
  return rows;
}

function expectScores(rows: Row[]): void {
  for (const row of rows) {
    expect(row.right / row.total, `${row.set}, ${row.half}`).toBeGreaterThanOrEqual(row.half === 'held out' ? HELD_OUT_FLOOR : TARGET);
  }
}

describe('the offline assistant on a second convention (Harborlight), its FAQ and questions it cannot answer', () => {
  interface Evaluation {
    now: string;
    changes: { title: string; room?: string; shift_minutes?: number; cancel?: boolean }[];
    sets: Sets;
  }
  const EVALUATION: Evaluation = JSON.parse(readFileSync(path.join(DIR, 'questions.json'), 'utf8'));
  const SCHEDULE = readFileSync(path.join(DIR, 'harborlight-schedule.json'), 'utf8');
  const FAQ = readFileSync(path.join(DIR, 'harborlight-faq.md'));

  /** The schedule after the changes of the second crawl (a move, a new time, a cancellation). */
  function changedSchedule(): string {
    const document = JSON.parse(SCHEDULE);
    for (const day of document.schedule.conference.days) {
      for (const events of Object.values(day.rooms as Record<string, Record<string, unknown>[]>)) {
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
        }
      }
    }
    return JSON.stringify(document);
  }

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
    expect(await ctx.deps.crawler.refresh(false)).toMatchObject({ kind: 'stored' });
    await ctx.deps.assistant.uploadFile({ filename: 'harborlight-faq.md', data: FAQ });
  });
  afterAll(async () => {
    await ctx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`answers the worked-on half of each set at ${TARGET * 100}% or better, and reports the held-out half against the same target`, async () => {
    expect(EVALUATION.sets.schedule.length).toBeGreaterThanOrEqual(40);
    expect(EVALUATION.sets.faq.length).toBeGreaterThanOrEqual(20);
    expect(EVALUATION.sets.unanswerable.length).toBeGreaterThanOrEqual(10);
    const rows = await evaluate(
      ctx,
      'second convention (Harborlight)',
      { schedule: 'second schedule (frab/pretalx JSON)', faq: 'its FAQ (Markdown), full sentences', unanswerable: 'questions its schedule cannot answer' },
      EVALUATION.sets,
    );
    expectScores(rows);
  }, 120_000);
});

describe('the offline assistant on a third convention (Southern Cross), asked as on a phone', () => {
  interface Evaluation {
    now: string;
    schedule: string;
    update: string;
    faq: string;
    sets: Sets;
  }
  const EVALUATION: Evaluation = JSON.parse(readFileSync(path.join(DIR, 'southern-cross-questions.json'), 'utf8'));

  let ctx: TestContext;
  let dir: string;
  const time = manualClock(new Date(EVALUATION.now));

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'concierge-evaluation-'));
    const feed = path.join(dir, 'schedule.xml');
    copyFileSync(path.join(DIR, EVALUATION.schedule), feed);
    ctx = await createTestContext({ clock: time.clock, env: { CRAWLER_URL: feed } });
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
    expect((await ctx.deps.crawler.refresh(false)).kind).toBe('stored');
    // The second crawl: a cancellation, a room change, a new time and an added panel.
    copyFileSync(path.join(DIR, EVALUATION.update), feed);
    expect(await ctx.deps.crawler.refresh(false)).toMatchObject({ kind: 'stored' });
    await ctx.deps.assistant.uploadFile({ filename: EVALUATION.faq, data: readFileSync(path.join(DIR, EVALUATION.faq)) });
  });
  afterAll(async () => {
    await ctx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`answers the worked-on half of each set at ${TARGET * 100}% or better, and reports the held-out half against the same target`, async () => {
    expect(EVALUATION.sets.schedule.length).toBeGreaterThanOrEqual(40);
    expect(EVALUATION.sets.faq.length).toBeGreaterThanOrEqual(20);
    expect(EVALUATION.sets.unanswerable.length).toBeGreaterThanOrEqual(10);
    const rows = await evaluate(
      ctx,
      'third convention (Southern Cross)',
      { schedule: 'third schedule (frab XML), phone-style', faq: 'its FAQ (plain-text Q/A), phone-style', unanswerable: 'questions its schedule cannot answer' },
      EVALUATION.sets,
    );
    expectScores(rows);
  }, 120_000);
});
