import { DatabaseSync } from 'node:sqlite';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { insertProviderLogs } from '../assistant/assistant.queries.ts';
import { createTestContext, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { answeredWithin } from './database.ts';
import { migrateToLatest } from './migrate.ts';
import { NodeSqliteDatabase } from './sqlite-adapter.ts';

describe(`data layer on ${testDatabaseKind()}`, () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  const now = () => new Date().toISOString();

  it('commits a transaction that resolves and rolls back one that throws', async () => {
    const { database } = ctx.deps;
    await database.transaction((trx) =>
      trx.insertInto('app_settings').values({ name: 'kept', value: '1', created_at: now() }).execute(),
    );
    await expect(
      database.transaction(async (trx) => {
        await trx.insertInto('app_settings').values({ name: 'dropped', value: '1', created_at: now() }).execute();
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    const names = await database.db.selectFrom('app_settings').select('name').where('name', 'in', ['kept', 'dropped']).execute();
    expect(names.map((row) => row.name)).toEqual(['kept']);
  });

  it('keeps statements from elsewhere out of an open transaction, and transactions apart', async () => {
    const { database } = ctx.deps;
    const setting = (name: string) => ({ name, value: '1', created_at: now() });
    let outside: Promise<unknown> | undefined;
    let second: Promise<unknown> | undefined;
    await expect(
      database.transaction(async (trx) => {
        await trx.insertInto('app_settings').values(setting('inside')).execute();
        // Issued while the transaction is open and awaiting: neither may become part of it.
        outside = database.db.insertInto('app_settings').values(setting('outside')).execute();
        second = database.transaction((other) => other.insertInto('app_settings').values(setting('second')).execute());
        await new Promise((resolve) => setTimeout(resolve, 20));
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    await Promise.all([outside, second]);
    const names = await database.db.selectFrom('app_settings').select('name').where('name', 'in', ['inside', 'outside', 'second']).orderBy('name').execute();
    expect(names.map((row) => row.name)).toEqual(['outside', 'second']);
  });

  it.runIf(testDatabaseKind() === 'sqlite')('commits the writes of one turn together, each settling once it is on disk, a rollback undoing only its own', async () => {
    const { database } = ctx.deps;
    const setting = (name: string) => ({ name, value: '1', created_at: now() });
    // Another connection sees only what is committed.
    const reader = new DatabaseSync(ctx.database.url.slice('sqlite:'.length), { readOnly: true });
    const committed = () => reader.prepare("select name from app_settings where name like 'turn %' order by name").all().map((row) => row.name);
    try {
      const settled = (write: Promise<unknown>) => write.then(committed);
      const first = settled(database.db.insertInto('app_settings').values(setting('turn 1')).execute());
      const kept = settled(database.transaction((trx) => trx.insertInto('app_settings').values(setting('turn 2')).execute()));
      const dropped = database.transaction(async (trx) => {
        await trx.insertInto('app_settings').values(setting('turn 3')).execute();
        throw new Error('changed my mind');
      });
      const last = settled(database.db.updateTable('app_settings').set({ value: '2' }).where('name', '=', 'turn 1').execute());
      await expect(dropped).rejects.toThrow('changed my mind');
      // The first write settled with the later ones already on disk, in the same commit; the rolled-back one is not there.
      expect(await first).toEqual(['turn 1', 'turn 2']);
      expect(await kept).toEqual(['turn 1', 'turn 2']);
      expect(await last).toEqual(['turn 1', 'turn 2']);
      expect(reader.prepare("select value from app_settings where name = 'turn 1'").get()).toEqual({ value: '2' });
      // A read sees the turn's writes before they are committed, as the same connection always has.
      const pending = database.db.insertInto('app_settings').values(setting('turn 4')).execute();
      const read = await database.db.selectFrom('app_settings').select('name').where('name', '=', 'turn 4').execute();
      expect(read).toEqual([{ name: 'turn 4' }]);
      expect(committed()).not.toContain('turn 4');
      await pending;
      expect(committed()).toContain('turn 4');
    } finally {
      reader.close();
    }
  });

  it.runIf(testDatabaseKind() === 'sqlite')('runs what waited for an open transaction in the order it came, one transaction at a time', async () => {
    const { database } = ctx.deps;
    const insert = (db: typeof database.db | Parameters<Parameters<typeof database.transaction>[0]>[0], name: string) =>
      db.insertInto('app_settings').values({ name, value: '1', created_at: now() }).execute();
    const { promise: held, resolve: release } = Promise.withResolvers<void>();
    const first = database.transaction(async (trx) => {
      await insert(trx, 'queued 0');
      await held;
    });
    await new Promise((resolve) => setImmediate(resolve));
    // All issued while the first transaction holds the connection, alternating statements and transactions.
    const waiting = [
      insert(database.db, 'queued 1'),
      database.transaction(async (trx) => {
        await insert(trx, 'queued 2');
        await new Promise((resolve) => setTimeout(resolve, 5));
        await insert(trx, 'queued 3');
      }),
      insert(database.db, 'queued 4'),
      database.transaction((trx) => insert(trx, 'queued 5')),
      insert(database.db, 'queued 6'),
    ];
    release();
    await Promise.all([first, ...waiting]);
    // SQLite numbers a table's rows in the order they were inserted.
    const { rows } = await sql<{ name: string }>`select name from app_settings where name like 'queued %' order by rowid`.execute(database.db);
    expect(rows.map((row) => row.name)).toEqual(['queued 0', 'queued 1', 'queued 2', 'queued 3', 'queued 4', 'queued 5', 'queued 6']);
  });

  it.runIf(testDatabaseKind() === 'sqlite')('begins again a transaction SQLite refused busy before its busy timeout, and fails at once on other errors', async () => {
    const { database } = ctx.deps;
    // SQLite's refusals as node:sqlite throws them: SQLITE_BUSY, then SQLITE_BUSY_SNAPSHOT (an extended code).
    const refusal = (errcode: number) => Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode });
    const refusals: number[] = [];
    let begins = 0;
    const prepare = NodeSqliteDatabase.prototype.prepare;
    NodeSqliteDatabase.prototype.prepare = function (this: NodeSqliteDatabase, text: string) {
      const statement = prepare.call(this, text);
      if (text !== 'begin immediate') return statement;
      begins++;
      const errcode = refusals.shift();
      if (errcode === undefined) return statement;
      return Object.assign(Object.create(statement) as typeof statement, {
        run: () => {
          throw refusal(errcode);
        },
      });
    };
    try {
      const setting = (name: string) => ({ name, value: '1', created_at: now() });
      refusals.push(5, 5);
      await database.db.insertInto('app_settings').values(setting('after two refusals')).execute();
      await database.transaction((trx) => trx.insertInto('app_settings').values(setting('in a transaction')).execute());
      expect(begins).toBe(4);
      refusals.push(517);
      await expect(database.db.insertInto('app_settings').values(setting('never')).execute()).rejects.toMatchObject({ errcode: 517 });
      expect(begins).toBe(5);
    } finally {
      NodeSqliteDatabase.prototype.prepare = prepare;
    }
    const names = await database.db.selectFrom('app_settings').select('name').where('name', 'in', ['after two refusals', 'in a transaction', 'never']).orderBy('name').execute();
    expect(names.map((row) => row.name)).toEqual(['after two refusals', 'in a transaction']);
  });

  // Kysely streams from SQLite as its own driver did; PostgreSQL would need pg-cursor, which the product does not use.
  it.runIf(testDatabaseKind() === 'sqlite')('streams rows from SQLite', async () => {
    const { db } = ctx.deps.database;
    await db.insertInto('app_settings').values(['streamed 1', 'streamed 2'].map((name) => ({ name, value: '1', created_at: now() }))).execute();
    const names: string[] = [];
    for await (const row of db.selectFrom('app_settings').select('name').where('name', 'like', 'streamed %').orderBy('name').stream()) names.push(row.name);
    expect(names).toEqual(['streamed 1', 'streamed 2']);
  });

  it('enforces foreign keys and cascades deletes', async () => {
    const { db } = ctx.deps.database;
    const admin = await db
      .insertInto('admin_users')
      .values({ username: 'fk-test', password_hash: 'x', created_at: now(), updated_at: now() })
      .returning('id')
      .executeTakeFirstOrThrow();
    const session = { client_ip: null, user_agent: null, created_at: now(), last_seen_at: now(), expires_at: now(), absolute_expires_at: now() };
    await expect(db.insertInto('admin_sessions').values({ id: 'orphan', admin_user_id: admin.id + 1000, ...session }).execute()).rejects.toThrow();
    await db.insertInto('admin_sessions').values({ id: 'owned', admin_user_id: admin.id, ...session }).execute();
    await db.deleteFrom('admin_users').where('id', '=', admin.id).execute();
    expect(await db.selectFrom('admin_sessions').select('id').where('id', '=', 'owned').execute()).toEqual([]);
  });

  it('returns booleans, numbers and ISO timestamps in the same shapes on both engines', async () => {
    const row = await ctx.deps.database.db.selectFrom('runtime_config').selectAll().executeTakeFirstOrThrow();
    expect(typeof row.paused).toBe('boolean');
    expect(typeof row.public_chat_requests_per_minute).toBe('number');
    expect(row.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  });

  it('runs the migrations again without changing anything', async () => {
    const before = await ctx.deps.database.db.selectFrom('runtime_config').selectAll().execute();
    await migrateToLatest(ctx.deps.database);
    const after = await ctx.deps.database.db.selectFrom('runtime_config').selectAll().execute();
    expect(after).toEqual(before);
    expect(after).toHaveLength(1);
  });

  // The indexes on a call log's chat message and ask command hold only the rows that have one (a chat answer's logs
  // have no ask command); a lookup by equality must still be answered from them.
  it('finds call logs by ask command and chat message through their partial indexes', async () => {
    const { database } = ctx.deps;
    const plans: string[] = [];
    for (const [column, value] of [['ask_command_id', 5], ['public_chat_message_id', 7]] as const) {
      const lookup = sql`select id from openai_create_run_logs where ${sql.ref(column)} = ${value}`;
      if (database.dialect === 'sqlite') {
        const rows = (await sql<{ detail: string }>`explain query plan ${lookup}`.execute(database.db)).rows;
        plans.push(rows.map((row) => row.detail).join('; '));
      } else {
        // With sequential scans priced out, a plan without the index would still scan: the test sees which.
        const rows = await database.transaction(async (trx) => {
          await sql`set local enable_seqscan = off`.execute(trx);
          return (await sql<{ 'QUERY PLAN': string }>`explain ${lookup}`.execute(trx)).rows;
        });
        plans.push(rows.map((row) => row['QUERY PLAN']).join('; '));
      }
    }
    expect(plans).toEqual([expect.stringMatching(/openai_create_run_logs_ask_command_idx/), expect.stringMatching(/openai_create_run_logs_message_idx/)]);
  });

  it.runIf(testDatabaseKind() === 'sqlite')('opens SQLite in WAL mode with foreign keys and a busy timeout', async () => {
    const { db } = ctx.deps.database;
    const pragma = async (name: string) => Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as object)[0];
    expect(await pragma('journal_mode')).toBe('wal');
    expect(await pragma('foreign_keys')).toBe(1);
    expect(await pragma('busy_timeout')).toBe(5000);
  });

  // A reply is I/O, read after the timers of the same turn of the event loop: a busy server once timed out pings
  // the database had answered in time. A client of its own sends the query at once (a pooled query waits a turn
  // for its connection), so the reply is on its way while the event loop is held up.
  it.runIf(testDatabaseKind() === 'postgres')('does not time out an answer that came while the event loop was busy', async () => {
    const client = new pg.Client({ connectionString: ctx.database.url });
    await client.connect();
    try {
      for (let i = 0; i < 3; i++) {
        const answer = answeredWithin(client.query('select 1 as one'), 50);
        const busyUntil = Date.now() + 300;
        while (Date.now() < busyUntil); // the event loop held up, as by a crowd of requests
        await expect(answer).resolves.toMatchObject({ rows: [{ one: 1 }] });
      }
    } finally {
      await client.end();
    }
  });

  it('times out an answer that does not come', async () => {
    await expect(answeredWithin(new Promise(() => {}), 50)).rejects.toThrow('database did not answer within 50 ms');
    await expect(answeredWithin(new Promise((resolve) => setTimeout(resolve, 10, 'in time')), 50)).resolves.toBe('in time');
  });

  it.runIf(testDatabaseKind() === 'postgres')('opens at most DATABASE_POOL_SIZE connections in each of its two pools, each named for pg_stat_activity', async () => {
    const small = await createTestContext({ env: { DATABASE_POOL_SIZE: '3' } });
    try {
      const { database } = small.deps;
      const schema = small.database.schema;
      const connections = async (name: string) => {
        const { rows } = await sql<{ count: number }>`select count(*)::int as count from pg_stat_activity where application_name = ${`${name} (${schema})`}`.execute(ctx.deps.database.db);
        return rows[0]!.count;
      };
      // Eight statements at once on the event loop's pool: three run, the rest wait for a connection.
      const sleeping = Array.from({ length: 8 }, () => sql`select pg_sleep(0.2)`.execute(database.db));
      await vi.waitFor(async () => expect(await connections('concierge')).toBe(3));
      await Promise.all(sleeping);
      expect(await connections('concierge')).toBe(3);

      // Eight calls posted to the query thread together: its own pool, as large.
      const at = new Date().toISOString();
      const row = { session_id: null, public_chat_message_id: null, client_ip: null, user_agent: null, operation: null, request_started: at, request_ended: at, request_body: '{}', response_body: '{}', response_headers: null, error: null };
      await Promise.all(Array.from({ length: 8 }, () => insertProviderLogs(database, { step: 'create_message', rows: [row] })));
      expect(await connections('concierge query thread')).toBe(3);
      expect(await database.db.selectFrom('openai_create_message_logs').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()).toEqual({ count: 8 });
    } finally {
      await small.close();
    }
  });

  it.runIf(testDatabaseKind() === 'postgres')('migrates its own schema while another schema of the database holds the same tables', async () => {
    // ctx's schema is fully migrated; a second copy in a new schema must still create its own bookkeeping tables.
    const second = await createTestContext();
    try {
      const { rows } = await sql<{ count: number }>`select count(*)::int as count from kysely_migration`.execute(second.deps.database.db);
      expect(rows[0]!.count).toBeGreaterThan(0);
      expect(second.database.schema).not.toBe(ctx.database.schema);
    } finally {
      await second.close();
    }
  });
});
