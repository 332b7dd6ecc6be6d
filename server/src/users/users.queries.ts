import { ASK_COMMAND_STATES } from '@concierge/contract';
import { sql, type Expression, type SqlBool, type Updateable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { UserTable } from '../db/schema/ask.ts';

export const findUser = (db: Db, id: string) => db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();

export type UserRow = NonNullable<Awaited<ReturnType<typeof findUser>>>;

/**
 * Records a user seen on Discord: created on first sight, names kept up to
 * date after. `donated` is only ever switched on here (by the donor role);
 * taking it away is an operator's decision. Returns the row and whether it is new.
 */
export async function upsertSeenUser(
  db: Db,
  user: { id: string; username: string; global_name: string | null; bot: boolean; donated: boolean },
  now: string,
): Promise<{ user: UserRow; created: boolean }> {
  const inserted = await db
    .insertInto('users')
    .values({ ...user, created_at: now, updated_at: now })
    .onConflict((conflict) => conflict.column('id').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { user: inserted, created: true };
  const updated = await db
    .updateTable('users')
    .set((eb) => ({
      username: user.username,
      global_name: user.global_name,
      bot: user.bot,
      donated: user.donated ? true : eb.ref('donated'),
      updated_at: now,
    }))
    .where('id', '=', user.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { user: updated, created: false };
}

export const listUsers = (db: Db, page: { order: 'asc' | 'desc'; limit: number; offset: number }) =>
  db
    .selectFrom('users')
    .selectAll()
    .where('deleted_at', 'is', null)
    .orderBy('username', page.order)
    .orderBy('id', page.order)
    .limit(page.limit)
    .offset(page.offset)
    .execute();

export async function countUsers(db: Db): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export const updateUser = (db: Db, id: string, changes: Omit<Updateable<UserTable>, 'id' | 'created_at'> & { updated_at: string }) =>
  db.updateTable('users').set(changes).where('id', '=', id).returningAll().executeTakeFirst();

/** Clears the user's conversation (the next question starts a new one) and counts the /forget. */
export const forgetThread = (db: Db, id: string, now: string) =>
  db
    .updateTable('users')
    .set((eb) => ({ thread_id: null, forget_count: eb('forget_count', '+', 1), updated_at: now }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();

export const setUserThread = (db: Db, id: string, threadId: string, now: string) =>
  db.updateTable('users').set({ thread_id: threadId, updated_at: now }).where('id', '=', id).execute();

/** A command counts as billable once it used tokens or its run completed. */
const billable = sql<SqlBool>`(total_tokens > 0 or run_status = 'completed')`;
/** Queued or being answered: it counts against the limit until it ends. */
const pending = sql<SqlBool>`(state in ('queued', 'in_progress'))`;

const sumWhere = (condition: Expression<SqlBool>, value: Expression<number> = sql<number>`1`) =>
  sql<number>`sum(case when ${condition} then ${value} else 0 end)`;

export interface WindowFigures {
  attempted: number;
  billable: number;
  pending: number;
  oldest_counted: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  whisper_count: number;
  thread_count: number;
  state_counts: Record<string, number>;
}

/**
 * Ask command usage of many users over two sliding windows in one grouped
 * query (SPEC §3 "ask_command_usage"): attempted, billable and pending
 * commands, tokens, whispers, threads and states. A command made exactly a
 * window's length ago is out of it. Reads the (user_id, created_at) index.
 */
export async function usageByUser(
  db: Db,
  userIds: string[],
  windows: { short: string; long: string },
): Promise<Map<string, { short: WindowFigures; long: WindowFigures }>> {
  const result = new Map<string, { short: WindowFigures; long: WindowFigures }>();
  if (userIds.length === 0) return result;
  const since = { short: windows.short, long: windows.long };
  const inWindow = (name: 'short' | 'long') => sql<SqlBool>`created_at > ${since[name]}`;
  let query = db.selectFrom('ask_commands').select('user_id').where('user_id', 'in', userIds).where('created_at', '>', windows.long).groupBy('user_id');
  for (const name of ['short', 'long'] as const) {
    const within = inWindow(name);
    query = query.select([
      sumWhere(within).as(`${name}_attempted`),
      sumWhere(sql<SqlBool>`${within} and ${billable}`).as(`${name}_billable`),
      sumWhere(sql<SqlBool>`${within} and ${pending} and not ${billable}`).as(`${name}_pending`),
      sql<string | null>`min(case when ${within} and (${billable} or ${pending}) then created_at end)`.as(`${name}_oldest_counted`),
      sumWhere(within, sql.ref('prompt_tokens')).as(`${name}_prompt_tokens`),
      sumWhere(within, sql.ref('completion_tokens')).as(`${name}_completion_tokens`),
      sumWhere(within, sql.ref('total_tokens')).as(`${name}_total_tokens`),
      sumWhere(sql<SqlBool>`${within} and whisper`).as(`${name}_whisper_count`),
      sql<number>`count(distinct case when ${within} then thread_id end)`.as(`${name}_thread_count`),
      ...ASK_COMMAND_STATES.map((state) => sumWhere(sql<SqlBool>`${within} and state = ${state}`).as(`${name}_state_${state}`)),
    ]);
  }
  const rows = (await query.execute()) as Record<string, unknown>[];
  for (const row of rows) {
    const figures = (name: 'short' | 'long'): WindowFigures => {
      const number = (key: string) => Number(row[`${name}_${key}`] ?? 0);
      const oldest = row[`${name}_oldest_counted`];
      return {
        attempted: number('attempted'),
        billable: number('billable'),
        pending: number('pending'),
        oldest_counted: oldest === null || oldest === undefined ? null : oldest instanceof Date ? oldest.toISOString() : String(oldest),
        prompt_tokens: number('prompt_tokens'),
        completion_tokens: number('completion_tokens'),
        total_tokens: number('total_tokens'),
        whisper_count: number('whisper_count'),
        thread_count: number('thread_count'),
        state_counts: Object.fromEntries(ASK_COMMAND_STATES.map((state) => [state, number(`state_${state}`)]).filter(([, count]) => count !== 0)),
      };
    };
    result.set(String(row.user_id), { short: figures('short'), long: figures('long') });
  }
  return result;
}

/** Feedback each user gave, by type, in one grouped query. */
export async function reportsByUser(db: Db, userIds: string[]): Promise<Map<string, Record<string, number>>> {
  const result = new Map<string, Record<string, number>>();
  if (userIds.length === 0) return result;
  const rows = await db
    .selectFrom('ask_command_feedback')
    .select(['user_id', 'type', (eb) => eb.fn.countAll<number>().as('count')])
    .where('user_id', 'in', userIds)
    .groupBy(['user_id', 'type'])
    .execute();
  for (const row of rows) result.set(row.user_id, { ...result.get(row.user_id), [row.type]: Number(row.count) });
  return result;
}

/** All feedback on ask command answers, by type. */
export async function reportsByType(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('ask_command_feedback')
    .select(['type', (eb) => eb.fn.countAll<number>().as('count')])
    .groupBy('type')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.type, Number(row.count)]));
}

/** A user's ask commands, newest (or oldest) first, with their names. */
export const userHistory = (db: Db, userId: string, page: { sort: 'asc' | 'desc'; limit: number; offset: number }) =>
  db
    .selectFrom('ask_commands as command')
    .innerJoin('users as user', 'user.id', 'command.user_id')
    .select([
      'command.id as ask_command_id',
      'user.username',
      'user.global_name',
      'command.user_id',
      'command.prompt',
      'command.response',
      'command.error',
      'command.created_at',
      'command.run_id',
      'command.state',
      'command.step',
      'command.thread_id',
      'command.run_status',
      'command.interaction_id',
      'command.context',
      'command.whisper',
    ])
    .where('command.user_id', '=', userId)
    .orderBy('command.created_at', page.sort)
    .orderBy('command.id', page.sort)
    .limit(page.limit)
    .offset(page.offset)
    .execute();

/** The votes on some commands' answers. */
export const feedbackOn = (db: Db, commandIds: number[]) =>
  db
    .selectFrom('ask_command_feedback')
    .select(['id', 'ask_command_id', 'user_id', 'type', 'description', 'created_at'])
    .where('ask_command_id', 'in', commandIds.length ? commandIds : [-1])
    .orderBy('id')
    .execute();
