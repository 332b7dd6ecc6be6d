import { Migrator } from 'kysely/migration';
import type { Logger } from 'pino';
import type { Database } from './database.ts';
import { migrationsFor } from './migrations/index.ts';

/** Brings the schema up to date; throws (and applies nothing further) when a migration fails. */
export async function migrateToLatest(database: Database, logger?: Logger): Promise<void> {
  const migrations = migrationsFor(database.dialect);
  const migrator = new Migrator({
    db: database.db,
    provider: { getMigrations: async () => migrations },
  });
  const { error, results } = await migrator.migrateToLatest();
  for (const result of results ?? []) {
    if (result.status === 'Success') logger?.info({ migration: result.migrationName }, 'migration applied');
    else if (result.status === 'Error') logger?.error({ migration: result.migrationName }, 'migration failed');
  }
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
