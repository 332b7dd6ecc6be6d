import { existsSync } from 'node:fs';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import type { Database } from './database.ts';

/** Kysely's own bookkeeping: the target's migrator keeps its own. */
const MIGRATION_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);
/** PostgreSQL takes at most 65,535 bound parameters per statement. */
const MAX_PARAMETERS = 60_000;
const MAX_BATCH_ROWS = 1_000;

export interface TableCopy {
  table: string;
  rows: number;
}

/**
 * Writes a consistent copy of a live SQLite database to `file` (SQLite's
 * online `VACUUM INTO`): readers and writers carry on meanwhile, and the copy
 * is a complete database file, ready to be put in place of the original.
 */
export async function backupSqlite(database: Database, file: string): Promise<void> {
  if (database.dialect !== 'sqlite') throw new Error('backup works on SQLite; back up PostgreSQL with pg_dump (see the README)');
  const target = path.resolve(file);
  if (existsSync(target)) throw new Error(`${target} already exists; choose a new file name`);
  if (!existsSync(path.dirname(target))) throw new Error(`the folder ${path.dirname(target)} does not exist`);
  await sql`vacuum into ${target}`.execute(database.db);
}

/** The application's tables in a SQLite database, read from the database itself. */
async function sqliteTables(db: Kysely<unknown>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`.execute(db);
  return rows.map((row) => row.name).filter((name) => !MIGRATION_TABLES.has(name));
}

/** Parents before children: each table after the tables its foreign keys point at. */
async function inDependencyOrder(db: Kysely<unknown>, tables: string[]): Promise<string[]> {
  const parents = new Map<string, Set<string>>();
  for (const table of tables) {
    const { rows } = await sql<{ table: string }>`select "table" from pragma_foreign_key_list(${table})`.execute(db);
    parents.set(table, new Set(rows.map((row) => row.table).filter((parent) => parent !== table)));
  }
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const ready = tables.filter((table) => !placed.has(table) && [...parents.get(table)!].every((parent) => placed.has(parent) || !parents.has(parent)));
    if (ready.length === 0) throw new Error(`foreign keys form a cycle among: ${tables.filter((table) => !placed.has(table)).join(', ')}`);
    for (const table of ready) {
      ordered.push(table);
      placed.add(table);
    }
  }
  return ordered;
}

interface TargetColumn {
  name: string;
  type: string;
  serial: boolean;
}

async function postgresColumns(db: Kysely<unknown>, table: string): Promise<TargetColumn[]> {
  const { rows } = await sql<{ column_name: string; data_type: string; column_default: string | null }>`
    select column_name, data_type, column_default from information_schema.columns
    where table_schema = current_schema() and table_name = ${table} order by ordinal_position`.execute(db);
  return rows.map((row) => ({ name: row.column_name, type: row.data_type, serial: (row.column_default ?? '').startsWith('nextval(') }));
}

async function count(db: Kysely<unknown>, table: string): Promise<number> {
  const { rows } = await sql<{ count: number | string }>`select count(*) as count from ${sql.id(table)}`.execute(db);
  return Number(rows[0]!.count);
}

/** A SQLite value as the PostgreSQL column expects it. */
function convert(value: unknown, column: TargetColumn): unknown {
  if (value === null || value === undefined) return null;
  if (column.type === 'boolean') return value === true || value === 1 || value === 1n || value === '1';
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value);
  return value;
}

/**
 * Refuses a target that already holds this product's tables (or anything
 * under the source's table names): copy-to fills a new database, never
 * merges into or overwrites a live one. Run before migrating the target.
 */
export async function checkTargetIsNew(source: Database, target: Database): Promise<void> {
  const names = new Set([...(await sqliteTables(source.db as unknown as Kysely<unknown>)), ...MIGRATION_TABLES]);
  const { rows } = await sql<{ name: string }>`
    select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(target.db as unknown as Kysely<unknown>);
  const taken = rows.map((row) => row.name).filter((name) => names.has(name)).sort();
  if (taken.length > 0) {
    throw new Error(`the target already has tables (${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ', …' : ''}); copy-to fills a new, empty database only`);
  }
}

/**
 * Copies every table of a SQLite database into a new PostgreSQL database
 * just migrated to the same schema (see checkTargetIsNew); rows the
 * migrations seeded there (the zeroed Status counters) give way to the
 * source's. The tables are
 * read from the source itself (so tables added later are copied too), in
 * foreign-key order, in batches, inside one transaction on each side (a
 * consistent snapshot of the source; all or nothing on the target). Id
 * sequences are moved past the copied ids, and every table's row count is
 * compared before the copy is committed.
 */
export async function copySqliteToPostgres(source: Database, target: Database, progress: (copied: TableCopy) => void = () => {}): Promise<TableCopy[]> {
  if (source.dialect !== 'sqlite') throw new Error('the source must be a SQLite database (DATABASE_URL=sqlite:…)');
  if (target.dialect !== 'postgres') throw new Error('the target must be a PostgreSQL database (postgres://…)');

  return source.db.transaction().execute(async (sourceTrx) => {
    const from = sourceTrx as unknown as Kysely<unknown>;
    const tables = await inDependencyOrder(from, await sqliteTables(from));

    const columns = new Map<string, TargetColumn[]>();
    for (const table of tables) {
      const targetColumns = await postgresColumns(target.db as unknown as Kysely<unknown>, table);
      if (targetColumns.length === 0) throw new Error(`the target has no table ${table}; is it migrated to the same version?`);
      const { rows } = await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(from);
      const missing = rows.map((row) => row.name).filter((name) => !targetColumns.some((column) => column.name === name));
      if (missing.length > 0) throw new Error(`the target's ${table} has no column ${missing.join(', ')}`);
      columns.set(table, targetColumns.filter((column) => rows.some((row) => row.name === column.name)));
    }

    return target.db.transaction().execute(async (targetTrx) => {
      const to = targetTrx as unknown as Kysely<unknown>;
      const copies: TableCopy[] = [];
      for (const table of [...tables].reverse()) await sql`delete from ${sql.id(table)}`.execute(to);
      for (const table of tables) {
        const tableColumns = columns.get(table)!;
        const batch = Math.max(1, Math.min(MAX_BATCH_ROWS, Math.floor(MAX_PARAMETERS / tableColumns.length)));
        const names = sql.join(tableColumns.map((column) => sql.id(column.name)));
        let copied = 0;
        // Keyset over SQLite's rowid: every row once, in storage order, without OFFSET's rescans.
        let after: number | bigint = -1;
        for (;;) {
          const { rows } = await sql<Record<string, unknown> & { __rowid: number }>`
            select rowid as __rowid, ${names} from ${sql.id(table)} where rowid > ${after} order by rowid limit ${batch}`.execute(from);
          if (rows.length === 0) break;
          const values = rows.map((row) => sql`(${sql.join(tableColumns.map((column) => sql`${convert(row[column.name], column)}`))})`);
          await sql`insert into ${sql.id(table)} (${names}) values ${sql.join(values)}`.execute(to);
          copied += rows.length;
          after = rows.at(-1)!.__rowid;
        }
        for (const column of tableColumns.filter((candidate) => candidate.serial)) {
          await sql`select setval(pg_get_serial_sequence(${table}, ${column.name}), coalesce((select max(${sql.id(column.name)}) from ${sql.id(table)}), 0) + 1, false)`.execute(to);
        }
        const expected = await count(from, table);
        const landed = await count(to, table);
        if (landed !== expected || copied !== expected) throw new Error(`${table}: ${expected} rows in the source but ${landed} in the target; nothing was committed`);
        copies.push({ table, rows: landed });
        progress({ table, rows: landed });
      }
      return copies;
    });
  });
}
