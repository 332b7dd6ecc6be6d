import type { Updateable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DiscordGatewayTable } from '../db/schema/ask.ts';

const ROW = 1;

/** The shared gateway row, created on first use. */
export async function gatewayRow(db: Db, now: string) {
  await db
    .insertInto('discord_gateway')
    .values({ id: ROW, updated_at: now })
    .onConflict((conflict) => conflict.column('id').doNothing())
    .execute();
  return db.selectFrom('discord_gateway').selectAll().where('id', '=', ROW).executeTakeFirstOrThrow();
}

export type GatewayRow = Awaited<ReturnType<typeof gatewayRow>>;

/**
 * Marks the gateway as `owner`'s: the leader (cluster/leadership.ts) takes it
 * when it starts the bot, whoever held it before (a dead leader's process
 * no longer writes), until `until` — a heartbeat the Status screen reads,
 * not a lease anyone waits for.
 */
export async function takeGateway(db: Db, claim: { owner: string; until: string; now: string }): Promise<void> {
  await gatewayRow(db, claim.now);
  await db.updateTable('discord_gateway').set({ owner: claim.owner, lease_expires_at: claim.until }).where('id', '=', ROW).execute();
}

/**
 * Renews the holder's heartbeat; false when another process has taken the
 * gateway meanwhile (this one lost the leadership and must leave it).
 */
export async function renewGateway(db: Db, claim: { owner: string; until: string }): Promise<boolean> {
  const result = await db.updateTable('discord_gateway').set({ lease_expires_at: claim.until }).where('id', '=', ROW).where('owner', '=', claim.owner).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Lets the gateway go (a stopping process), so another takes it at once. */
export const releaseGateway = (db: Db, owner: string) =>
  db.updateTable('discord_gateway').set({ owner: null, lease_expires_at: null }).where('id', '=', ROW).where('owner', '=', owner).execute();

/** Records how the gateway is, only while `owner` holds it (a process that lost it says nothing). */
export const setGatewayState = (db: Db, owner: string | null, changes: Omit<Updateable<DiscordGatewayTable>, 'id' | 'owner' | 'lease_expires_at'>) =>
  db
    .updateTable('discord_gateway')
    .set(changes)
    .where('id', '=', ROW)
    .$if(owner !== null, (qb) => qb.where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '=', owner!)])))
    .execute();

export const setOperatorDisconnected = (db: Db, value: boolean, now: string) =>
  db.updateTable('discord_gateway').set({ operator_disconnected: value, updated_at: now }).where('id', '=', ROW).execute();

/** Adds to the gateway's counters (kept in the database: the Status figures are every process's). */
export const bumpGateway = (db: Db, deltas: { connects?: number; disconnects?: number; messages_handled?: number }) =>
  db
    .updateTable('discord_gateway')
    .set((eb) => ({
      connects: eb('connects', '+', deltas.connects ?? 0),
      disconnects: eb('disconnects', '+', deltas.disconnects ?? 0),
      messages_handled: eb('messages_handled', '+', deltas.messages_handled ?? 0),
    }))
    .where('id', '=', ROW)
    .execute();

export const setCommandsHash = (db: Db, hash: string, now: string) =>
  db.updateTable('discord_gateway').set({ commands_hash: hash, updated_at: now }).where('id', '=', ROW).execute();

// ---- feedback on answers ------------------------------------------------------------------------

/** Records a vote; false when this user already gave this type on this answer (one vote per user per type). */
export async function insertVote(db: Db, vote: { ask_command_id: number; user_id: string; type: string; description: string | null }, now: string): Promise<boolean> {
  const result = await db
    .insertInto('ask_command_feedback')
    .values({ ...vote, created_at: now, updated_at: now })
    .onConflict((conflict) => conflict.columns(['ask_command_id', 'user_id', 'type']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** The votes on an answer, by type. */
export async function voteCounts(db: Db, askCommandId: number): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('ask_command_feedback')
    .select(['type', (eb) => eb.fn.countAll<number>().as('count')])
    .where('ask_command_id', '=', askCommandId)
    .groupBy('type')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.type, Number(row.count)]));
}

/** One user's votes on an answer, newest first. */
export const userVotes = (db: Db, askCommandId: number, userId: string) =>
  db
    .selectFrom('ask_command_feedback')
    .select(['id', 'type'])
    .where('ask_command_id', '=', askCommandId)
    .where('user_id', '=', userId)
    .orderBy('id', 'desc')
    .execute();

export const deleteVote = (db: Db, id: number) => db.deleteFrom('ask_command_feedback').where('id', '=', id).execute();

export async function undoCount(db: Db, askCommandId: number, userId: string): Promise<number> {
  const row = await db.selectFrom('ask_command_feedback_undos').select('count').where('ask_command_id', '=', askCommandId).where('user_id', '=', userId).executeTakeFirst();
  return row?.count ?? 0;
}

export const countUndo = (db: Db, askCommandId: number, userId: string, now: string) =>
  db
    .insertInto('ask_command_feedback_undos')
    .values({ ask_command_id: askCommandId, user_id: userId, count: 1, updated_at: now })
    .onConflict((conflict) => conflict.columns(['ask_command_id', 'user_id']).doUpdateSet((eb) => ({ count: eb('ask_command_feedback_undos.count', '+', 1), updated_at: now })))
    .execute();
