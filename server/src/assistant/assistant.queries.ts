import type { Db } from '../db/database.ts';
import { PROVIDER_LOG_TABLE, type ProviderStep } from '../db/schema/assistant.ts';

export interface ProviderLogRow {
  session_id: string | null;
  public_chat_message_id: number | null;
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

export async function insertProviderLog(db: Db, step: ProviderStep, row: ProviderLogRow): Promise<void> {
  await db
    .insertInto(PROVIDER_LOG_TABLE[step])
    .values({ ...row, created_at: row.request_ended, updated_at: row.request_ended })
    .execute();
}
