import { sql } from 'kysely';
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
    // Kysely looks for its bookkeeping tables in every schema unless told
    // which: another Kysely app (or another copy of this one) in the same
    // PostgreSQL database would make it skip creating ours.
    migrationTableSchema: database.dialect === 'postgres' ? await currentSchema(database) : undefined,
  });
  const { error, results } = await migrator.migrateToLatest();
  for (const result of results ?? []) {
    if (result.status === 'Success') logger?.info({ migration: result.migrationName }, 'migration applied');
    else if (result.status === 'Error') logger?.error({ migration: result.migrationName }, 'migration failed');
  }
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

async function currentSchema(database: Database): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(database.db);
  return rows[0]!.schema;
}
