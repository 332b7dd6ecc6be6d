import type { ExpressionBuilder, Insertable, Updateable } from 'kysely';
import { containsText, paged, type ListPage as Page } from '../admin/list-query.ts';
import type { Db, Dialect } from '../db/database.ts';
import type { DB } from '../db/schema/index.ts';
import type { AskCommandTable, DiscordMessageTable } from '../db/schema/ask.ts';

export type NewAskCommand = Omit<Insertable<AskCommandTable>, 'id' | 'created_at' | 'updated_at'>;
export type AskCommandChanges = Omit<Updateable<AskCommandTable>, 'id' | 'created_at'> & { updated_at: string };

export async function insertCommand(db: Db, command: NewAskCommand, now: string) {
  return db
    .insertInto('ask_commands')
    .values({ ...command, created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export const findCommand = (db: Db, id: number) => db.selectFrom('ask_commands').selectAll().where('id', '=', id).executeTakeFirst();

export type AskCommandRow = NonNullable<Awaited<ReturnType<typeof findCommand>>>;

export const updateCommand = (db: Db, id: number, changes: AskCommandChanges) =>
  db.updateTable('ask_commands').set(changes).where('id', '=', id).returningAll().executeTakeFirst();

/** Updates a command only while `owner` holds it; undefined when another process took it over. */
export const updateOwnedCommand = (db: Db, id: number, owner: string, changes: AskCommandChanges) =>
  db.updateTable('ask_commands').set(changes).where('id', '=', id).where('owner', '=', owner).returningAll().executeTakeFirst();

/** The user's commands that are queued or being answered. */
export async function pendingCount(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('ask_commands')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('user_id', '=', userId)
    .where('state', 'in', ['queued', 'in_progress'])
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * Takes the next command off the queue for `owner`: priority users first,
 * then the oldest, skipping users who already have one in flight. On
 * PostgreSQL the row is locked with SKIP LOCKED so concurrent workers never
 * take the same one; a unique index on (user_id) for in-flight rows holds
 * "one in flight per user" even so (the loser of that race gets an error
 * and tries again).
 */
export async function claimNext(db: Db, dialect: Dialect, claim: { owner: string; until: string; now: string; priorityOnly: boolean }) {
  const next = db
    .selectFrom('ask_commands as candidate')
    .select('candidate.id')
    .where('candidate.state', '=', 'queued')
    .$if(claim.priorityOnly, (qb) => qb.where('candidate.priority', '=', true))
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('ask_commands as busy')
            .select('busy.id')
            .whereRef('busy.user_id', '=', 'candidate.user_id')
            .where('busy.state', '=', 'in_progress'),
        ),
      ),
    )
    .orderBy('candidate.priority', 'desc')
    .orderBy('candidate.id', 'asc')
    .limit(1)
    .$if(dialect === 'postgres', (qb) => qb.forUpdate().skipLocked());
  return db
    .updateTable('ask_commands')
    .set((eb) => ({
      state: 'in_progress',
      owner: claim.owner,
      lease_expires_at: claim.until,
      attempts: eb('attempts', '+', 1),
      started_at: eb.fn.coalesce('started_at', eb.val(claim.now)),
      updated_at: claim.now,
    }))
    .where('id', '=', next)
    .where('state', '=', 'queued')
    .returningAll()
    .executeTakeFirst();
}

/*
 * The looks every process makes every few seconds (the queue, its leases,
 * a stopped process's commands) usually find nothing. Each looks with a
 * read first and writes only when there is something to write: on SQLite an
 * UPDATE takes the file's write lock even when it changes no row, and it
 * waits for the query thread's write in progress, blocking the event loop
 * meanwhile; the query thread then waits for this turn's commit.
 */

/** Whether any command waits in the queue. */
export async function anyQueued(db: Db): Promise<boolean> {
  const row = await db.selectFrom('ask_commands').select('id').where('state', '=', 'queued').limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Commands `owner` is answering. */
const heldBy = (owner: string) => (eb: ExpressionBuilder<DB, 'ask_commands'>) => eb.and([eb('state', '=', 'in_progress'), eb('owner', '=', owner)]);

/** Keeps the owner's claim on the commands it is answering (DESIGN §9). */
export async function renewLeases(db: Db, owner: string, until: string): Promise<number> {
  const held = await db.selectFrom('ask_commands').select('id').where(heldBy(owner)).limit(1).executeTakeFirst();
  if (!held) return 0;
  const result = await db.updateTable('ask_commands').set({ lease_expires_at: until }).where(heldBy(owner)).executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Commands in flight whose owner is gone: not `owner`'s, and their lease ran out before `now` (when `everyone`, whatever their lease). */
const abandoned =
  (scope: { owner: string; now: string; everyone: boolean }) =>
  (eb: ExpressionBuilder<DB, 'ask_commands'>) =>
    eb.and([
      eb('state', '=', 'in_progress'),
      // A process never takes back its own commands: it renews their leases itself.
      eb.or([eb('owner', 'is', null), eb('owner', '!=', scope.owner)]),
      ...(scope.everyone ? [] : [eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', scope.now)])]),
    ]);

/**
 * Puts back on the queue the commands whose owner is gone (a lease that ran
 * out, or when `everyone`, any not held by `owner`), keeping what they
 * reached: the worker resumes them from their stored run. Returns their ids.
 */
export async function requeueAbandoned(db: Db, scope: { owner: string; now: string; everyone: boolean }): Promise<number[]> {
  const any = await db.selectFrom('ask_commands').select('id').where(abandoned(scope)).limit(1).executeTakeFirst();
  if (!any) return [];
  const rows = await db
    .updateTable('ask_commands')
    .set({ state: 'queued', owner: null, lease_expires_at: null, updated_at: scope.now })
    .where(abandoned(scope))
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/**
 * Queued commands that can no longer be answered in time: a new run would
 * start within the safety margin of the token's end, or the token has ended.
 * They become expired; returns them.
 */
export const expireQueued = (db: Db, cut: { startBefore: string; now: string }) =>
  db
    .updateTable('ask_commands')
    .set({ state: 'expired', error: 'The interaction expired before the answer could be sent', finished_at: cut.now, updated_at: cut.now })
    .where('state', '=', 'queued')
    .where('token_expires', 'is not', null)
    .where((eb) => eb.or([eb('token_expires', '<=', cut.now), eb.and([eb('run_id', 'is', null), eb('token_expires', '<', cut.startBefore)])]))
    .returningAll()
    .execute();

export async function queuedCount(db: Db): Promise<number> {
  const row = await db
    .selectFrom('ask_commands')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('state', '=', 'queued')
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export interface AskCommandFilters {
  user_id?: string;
  state?: string;
  whisper?: boolean;
}

const filtered = (db: Db, filters: AskCommandFilters & { range: Page['range'] }) =>
  db
    .selectFrom('ask_commands as command')
    .$if(filters.user_id !== undefined, (qb) => qb.where('command.user_id', '=', filters.user_id!))
    .$if(filters.state !== undefined, (qb) => qb.where('command.state', '=', filters.state!))
    .$if(filters.whisper !== undefined, (qb) => qb.where('command.whisper', '=', filters.whisper!))
    .$if(filters.range.from !== undefined, (qb) => qb.where('command.created_at', '>=', filters.range.from!))
    .$if(filters.range.before !== undefined, (qb) => qb.where('command.created_at', '<', filters.range.before!));

/** A page of ask commands with their user's names (the interaction token is never read out). */
export const listCommands = (db: Db, filters: AskCommandFilters & Page) =>
  filtered(db, filters)
    .innerJoin('users as user', 'user.id', 'command.user_id')
    .selectAll('command')
    .select(['user.username', 'user.global_name'])
    .$call(paged({ ...filters, range: {} }, 'command.created_at', 'command.id'))
    .execute();

export async function countCommands(db: Db, filters: AskCommandFilters & { range: Page['range'] }): Promise<number> {
  const row = await filtered(db, filters)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export interface DiscordMessageFilters {
  user_id?: string;
  channel_id?: string;
}

const filteredMessages = (db: Db, filters: DiscordMessageFilters) =>
  db
    .selectFrom('discord_messages')
    .$if(filters.user_id !== undefined, (qb) => qb.where('user_id', '=', filters.user_id!))
    .$if(filters.channel_id !== undefined, (qb) => qb.where(containsText('channel_id', filters.channel_id!)));

export const listDiscordMessages = (db: Db, filters: DiscordMessageFilters & Page) =>
  filteredMessages(db, filters).selectAll().$call(paged(filters, 'created_at')).execute();

export async function countDiscordMessages(db: Db, filters: DiscordMessageFilters & { range: Page['range'] }): Promise<number> {
  const row = await filteredMessages(db, filters)
    .$if(filters.range.from !== undefined, (qb) => qb.where('created_at', '>=', filters.range.from!))
    .$if(filters.range.before !== undefined, (qb) => qb.where('created_at', '<', filters.range.before!))
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export const insertDiscordMessage = (
  db: Db,
  message: Omit<Insertable<DiscordMessageTable>, 'id' | 'created_at' | 'updated_at'>,
  now: string,
) =>
  db
    .insertInto('discord_messages')
    .values({ ...message, created_at: now, updated_at: now })
    .onConflict((conflict) => conflict.column('message_id').doNothing())
    .execute();
