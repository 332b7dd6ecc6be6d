import type { Db } from '../db/database.ts';
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

/** Several rows of one log table in one statement (ProviderLogWriter's batches). */
export async function insertProviderLogs(db: Db, step: ProviderStep, rows: ProviderLogRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto(PROVIDER_LOG_TABLE[step])
    .values(rows.map((row) => ({ ask_command_id: null, ...row, created_at: row.request_ended, updated_at: row.request_ended })))
    .execute();
}

export async function insertProviderLog(db: Db, step: ProviderStep, row: ProviderLogRow): Promise<void> {
  await db
    .insertInto(PROVIDER_LOG_TABLE[step])
    .values({ ...row, created_at: row.request_ended, updated_at: row.request_ended })
    .execute();
}
