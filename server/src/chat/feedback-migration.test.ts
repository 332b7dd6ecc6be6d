import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { migrationsFor } from '../db/migrations/index.ts';
import type { Deps } from '../deps.ts';
import { freshDatabase } from '../test-support/test-context.ts';
import * as queries from './chat.queries.ts';

describe('the one-feedback-per-type migration', () => {
  it('keeps the newest of each session\'s feedback per type per message and counts again', async () => {
    const fresh = freshDatabase();
    const database = await openDatabase(fresh.url, { schema: fresh.schema });
    try {
      const migrations = migrationsFor(database.dialect);
      const schema = database.dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(database.db)).rows[0]!.s : undefined;
      const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema });
      const before = Object.keys(migrations).sort().filter((name) => name < '20261129T120000-feedback-once-per-type').at(-1)!;
      expect((await migrator.migrateTo(before)).error).toBeUndefined();

      const now = '2026-03-13T15:00:00.000Z';
      const db = database.db;
      await queries.insertSession(db, { session_id: 's1', client_ip: null, user_agent: null, referer: null, verified: true, now, expires_at: '2026-03-14T15:00:00.000Z' });
      const message = await queries.insertMessage(db, { session_id: 's1', role: 'user', content: 'Where is Hall B?', state: 'completed', client_ip: null, user_agent: null, now });
      const feedback = (type: string, description: string) => ({ public_chat_message_id: message, session_id: 's1', type, description, created_at: now, updated_at: now });
      // What the unlimited endpoint let through: a flood of one type, and one of another.
      await db.insertInto('public_chat_feedback').values([...Array.from({ length: 50 }, (_, n) => feedback('good', `flood ${n}`)), feedback('other', 'the room')]).execute();
      // The counters as that schema had them (one row per name).
      await sql`insert into public_chat_counters (name, value) values ('feedback:good', 50), ('feedback:other', 1)`.execute(db);

      await migrateToLatest(database);
      const rows = await db.selectFrom('public_chat_feedback').select(['type', 'description']).orderBy('type').execute();
      expect(rows).toEqual([
        { type: 'good', description: 'flood 49' },
        { type: 'other', description: 'the room' },
      ]);
      const counters = (await queries.readCounters(db)).filter((row) => row.name.startsWith('feedback:')).sort((a, b) => a.name.localeCompare(b.name));
      expect(counters.map((row) => [row.name, Number(row.value)])).toEqual([
        ['feedback:good', 1],
        ['feedback:other', 1],
      ]);
    } finally {
      await fresh.dispose({ database, close: () => database.close() } as unknown as Deps);
    }
  });
});
