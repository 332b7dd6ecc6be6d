import type { ConfigFields } from '@concierge/contract';
import type { Db } from '../db/database.ts';
import type { RuntimeConfigTable } from '../db/schema/index.ts';

export const CONFIG_ROW_ID = 1;

export function findConfigRow(db: Db): Promise<RuntimeConfigTable | undefined> {
  return db.selectFrom('runtime_config').selectAll().where('id', '=', CONFIG_ROW_ID).executeTakeFirst();
}

/** Inserts the row with `defaults` unless it exists; never overwrites an edited configuration. */
export async function seedConfigRow(db: Db, defaults: ConfigFields, now: string): Promise<void> {
  await db
    .insertInto('runtime_config')
    .values({ ...defaults, id: CONFIG_ROW_ID, created_at: now, updated_at: now })
    .onConflict((conflict) => conflict.column('id').doNothing())
    .execute();
}

export async function updateConfigRow(db: Db, changes: Partial<ConfigFields>, now: string): Promise<RuntimeConfigTable> {
  return db
    .updateTable('runtime_config')
    .set({ ...changes, updated_at: now })
    .where('id', '=', CONFIG_ROW_ID)
    .returningAll()
    .executeTakeFirstOrThrow();
}
