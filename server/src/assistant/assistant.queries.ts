import { sql } from 'kysely';
import type { Database, Db } from '../db/database.ts';
import { onQueryThread } from '../db/query-thread.ts';
import { StatementTemplate } from '../db/statement-template.ts';
import { PROVIDER_LOG_TABLE, type ProviderStep } from '../db/schema/assistant.ts';

export interface ProviderLogRow {
  session_id: string | null;
  public_chat_message_id: number | null;
  ask_command_id?: number | null;
  client_ip: string | null;
  user_agent: string | null;
  operation: string | null;
  request_started: string;
  request_ended: string;
  request_body: string | null;
  response_body: string | null;
  response_headers: string | null;
  error: string | null;
}

/** Rows written in one statement at most on PostgreSQL by insertProviderLogBatch (14 parameters each, well under its 65,535). */
const MAX_ROWS_IN_ONE_STATEMENT = 1000;

const stored = (rows: ProviderLogRow[]) => rows.map((row) => ({ ask_command_id: null, ...row, created_at: row.request_ended, updated_at: row.request_ended }));

type StoredRow = ReturnType<typeof stored>[number];

const insertStored = (db: Db, step: ProviderStep, rows: StoredRow[]) => db.insertInto(PROVIDER_LOG_TABLE[step]).values(rows);

/** The INSERT of each log table, built once per number of rows (StatementTemplate). */
const insertStatements = new Map(
  (Object.keys(PROVIDER_LOG_TABLE) as ProviderStep[]).map((step) => [step, new StatementTemplate((db, { rows }: { rows: StoredRow[] }) => insertStored(db, step, rows))]),
);

/** Several rows of one log table in one templated statement. */
const insertLogRows = (db: Db, step: ProviderStep, rows: ProviderLogRow[]) => insertStatements.get(step)!.execute(db, { rows: stored(rows) });

/** Several rows of one log table in one statement (ProviderLogWriter's batches). */
export const insertProviderLogs = onQueryThread('assistant.insertProviderLogs', async (database: Database, { step, rows }: { step: ProviderStep; rows: ProviderLogRow[] }): Promise<void> => {
  if (rows.length === 0) return;
  await insertLogRows(database.db, step, rows);
}, { atTurnEnd: true });

/**
 * Several log tables' rows in one statement (PostgreSQL), each table's INSERT
 * a data-modifying CTE, the last the statement's own; built once per shape
 * (the tables, in their order, and their row counts), as a busy process's
 * batches keep coming in a few shapes.
 */
const batchStatement = new StatementTemplate((db, tables: Partial<Record<ProviderStep, StoredRow[]>>) => {
  const inserts = (Object.entries(tables) as [ProviderStep, StoredRow[]][]).map(([step, rows]) => insertStored(db, step, rows));
  const ctes = inserts.slice(0, -1).map((insert, i) => sql`${sql.id(`logged_${i}`)} as (${insert})`);
  return sql`with ${sql.join(ctes)} ${inserts.at(-1)!}`;
});

/**
 * Rows of several log tables written together, all or none: on PostgreSQL
 * one statement (each table's INSERT a data-modifying CTE) rather than a
 * transaction of a round trip per table and two more; a transaction on
 * SQLite, and for an uncommonly large batch.
 */
export const insertProviderLogBatch = onQueryThread('assistant.insertProviderLogBatch', async (database: Database, chunks: { step: ProviderStep; rows: ProviderLogRow[] }[]): Promise<void> => {
  const filled = chunks.filter((chunk) => chunk.rows.length > 0);
  const rows = filled.reduce((total, chunk) => total + chunk.rows.length, 0);
  // A table's rows in one INSERT each, so that they take their ids in order (the CTEs of a statement run in no set order).
  const oneChunkPerTable = new Set(filled.map((chunk) => chunk.step)).size === filled.length;
  if (database.dialect === 'postgres' && filled.length > 1 && oneChunkPerTable && rows <= MAX_ROWS_IN_ONE_STATEMENT) {
    await batchStatement.execute(database.db, Object.fromEntries(filled.map((chunk) => [chunk.step, stored(chunk.rows)])));
    return;
  }
  await database.transaction(async (trx) => {
    for (const chunk of filled) await insertLogRows(trx, chunk.step, chunk.rows);
  });
}, { atTurnEnd: true });

export async function insertProviderLog(db: Db, step: ProviderStep, row: ProviderLogRow): Promise<void> {
  await db
    .insertInto(PROVIDER_LOG_TABLE[step])
    .values({ ...row, created_at: row.request_ended, updated_at: row.request_ended })
    .execute();
}
