import type { ListQuery } from '@concierge/contract';
import { sql, type Expression, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { invalidField } from '../errors.ts';
import { zonedTime } from '../time-zone.ts';

export interface DateRange {
  /** Inclusive lower bound (ISO). */
  from?: string;
  /** Exclusive upper bound (ISO): the end filter is inclusive, so this is just past it. */
  before?: string;
}

/**
 * The list's date range from either spelling (`date_from`/`date_to` or
 * `start_date`/`end_date`), as instants. Values without a zone are read in
 * the convention's zone; a date alone covers that whole day.
 */
export function dateRange(query: ListQuery, timeZone: string): DateRange {
  const fromText = query.date_from ?? query.start_date;
  const toText = query.date_to ?? query.end_date;
  const range: DateRange = {};
  if (fromText) range.from = isoText(toInstant(fromText, timeZone, 'start', query.date_from ? 'date_from' : 'start_date'));
  if (toText) range.before = isoText(toInstant(toText, timeZone, 'end', query.date_to ? 'date_to' : 'end_date'));
  if (range.from && range.before && range.from >= range.before) {
    throw invalidField(query.date_to ? 'date_to' : 'end_date', 'must be after the start of the range');
  }
  return range;
}

/**
 * The last instant written as plain ISO text: past the year 9999
 * `toISOString()` gives `+010000-…`, which SQLite compares wrongly as text and
 * PostgreSQL refuses. No row is stamped that late, so clamping changes no result.
 */
const LAST_INSTANT = '9999-12-31T23:59:59.999Z';
const isoText = (instant: Date): string => (instant.getUTCFullYear() > 9999 ? LAST_INSTANT : instant.toISOString());

/** True when year-month-day (and hour:minute) name a real calendar date and time. */
function isRealDate(text: string): boolean {
  const match = /^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d))?/.exec(text);
  if (!match) return false;
  const [year, month, day, hour, minute] = match.slice(1).map((part) => Number(part ?? 0)) as [number, number, number, number, number];
  const probe = new Date(Date.UTC(year, month - 1, day));
  return probe.getUTCFullYear() === year && probe.getUTCMonth() === month - 1 && probe.getUTCDate() === day && hour < 24 && minute < 60;
}

function toInstant(text: string, timeZone: string, edge: 'start' | 'end', field: string): Date {
  if (!isRealDate(text)) throw invalidField(field, 'is not a real date or time');
  const dateOnly = /^(\d{4})-(\d\d)-(\d\d)$/.exec(text);
  if (dateOnly) {
    const [year, month, day] = [Number(dateOnly[1]), Number(dateOnly[2]), Number(dateOnly[3])];
    const start = zonedTime(year, month, day + (edge === 'end' ? 1 : 0), 0, timeZone);
    if (Number.isNaN(start.getTime())) throw invalidField(field, 'is not a real date');
    return start;
  }
  const hasZone = /(Z|[+-]\d\d:?\d\d)$/.test(text);
  const normalized = text.replace(' ', 'T');
  let instant: Date;
  if (hasZone) {
    instant = new Date(normalized);
  } else {
    const match = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?$/.exec(normalized);
    if (!match) throw invalidField(field, 'must be an ISO 8601 date or date-time');
    const base = zonedTime(Number(match[1]), Number(match[2]), Number(match[3]), Number(match[4]), timeZone);
    const extraMs = Number(match[5]) * 60_000 + Number(match[6] ?? 0) * 1000 + Number((match[7] ?? '0').padEnd(3, '0').slice(0, 3));
    instant = new Date(base.getTime() + extraMs);
  }
  if (Number.isNaN(instant.getTime())) throw invalidField(field, 'is not a real date or time');
  // An inclusive end given to the minute covers that whole minute.
  if (edge === 'end') instant = new Date(instant.getTime() + (/T\d\d:\d\d$/.test(normalized) ? 60_000 : 1));
  return instant;
}

/** Case-insensitive "contains" on a column, the same on SQLite and PostgreSQL (LIKE wildcards in the value are literal). */
export function containsText(column: string, value: string): RawBuilder<SqlBool> {
  const pattern = `%${value.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;
}

/** `column` (a boolean) is true or false, written as a literal so partial indexes on it apply (SQLite ignores them for a bound `= ?`). */
export const isTrue = (column: string, value: boolean): Expression<SqlBool> =>
  value ? sql<SqlBool>`${sql.ref(column)}` : sql<SqlBool>`not ${sql.ref(column)}`;

/** `column is [not] null` as an expression, for has_error filters. */
export const isPresent = (column: string, present: boolean): Expression<SqlBool> =>
  present ? sql<SqlBool>`${sql.ref(column)} is not null` : sql<SqlBool>`${sql.ref(column)} is null`;

/** A list page as the endpoints take it: the date range, the order and the slice. */
export interface ListPage {
  range: DateRange;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/**
 * The date range, order and slice every list applies the same way. Rows are
 * ordered by their time column, then id, and each list table has an index on
 * exactly (time, id): a range filter and the order are then one index walk,
 * so a page costs the same whatever the table's size and however wide the
 * range (ordering by id alone left a wide range to a sort of every match).
 */
export const paged =
  (page: ListPage, time: string, id = 'id') =>
  <QB extends SelectQueryBuilder<any, any, any>>(qb: QB): QB =>
    qb
      .$if(page.range.from !== undefined, (q) => q.where(sql.ref(time), '>=', page.range.from))
      .$if(page.range.before !== undefined, (q) => q.where(sql.ref(time), '<', page.range.before))
      .orderBy(sql.ref(time), page.order)
      .orderBy(sql.ref(id), page.order)
      .limit(page.limit)
      .offset(page.offset) as QB;
