import type { Db } from './database.ts';

/** Process-wide values kept in the database (`app_settings`): generated secrets, remembered ids, markers. */
export const findSetting = (db: Db, name: string) =>
  db.selectFrom('app_settings').select('value').where('name', '=', name).executeTakeFirst();

/** Stores a setting unless it already exists; returns whether this call stored it. */
export async function insertSettingOnce(db: Db, name: string, value: string, now: string): Promise<boolean> {
  const result = await db
    .insertInto('app_settings')
    .values({ name, value, created_at: now })
    .onConflict((conflict) => conflict.column('name').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/**
 * The value stored under `name`, creating it with `create()` the first time.
 * When two processes race, the first stored value wins and both return it.
 */
export async function rememberedSetting(db: Db, name: string, now: string, create: () => Promise<string>): Promise<string> {
  const existing = await findSetting(db, name);
  if (existing) return existing.value;
  await insertSettingOnce(db, name, await create(), now);
  return (await findSetting(db, name))!.value;
}

/** Stores `value` under `name`, replacing what was there. */
export const saveSetting = (db: Db, name: string, value: string, now: string) =>
  db
    .insertInto('app_settings')
    .values({ name, value, created_at: now })
    .onConflict((conflict) => conflict.column('name').doUpdateSet({ value, created_at: now }))
    .execute();
