import type { Generated } from 'kysely';

/** One row per call to the assistant provider (SPEC §3 "AI provider log entry"). */
export interface ProviderLogTable {
  id: Generated<number>;
  session_id: string | null;
  public_chat_message_id: number | null;
  /** Set when the call was made for an ask command rather than a public chat question. */
  ask_command_id: number | null;
  client_ip: string | null;
  user_agent: string | null;
  /** For vector store calls: which operation (list_stores, upload_file, …). */
  operation: string | null;
  request_started: string;
  request_ended: string | null;
  request_body: string | null;
  response_body: string | null;
  response_headers: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** The assistant steps of SPEC, each logged in its own table. */
export const PROVIDER_LOG_TABLE = {
  create_thread: 'openai_create_thread_logs',
  create_message: 'openai_create_message_logs',
  create_run: 'openai_create_run_logs',
  retrieve_run: 'openai_retrieve_run_logs',
  list_messages: 'openai_list_messages_logs',
  vector_store: 'openai_vector_store_logs',
} as const;
export type ProviderStep = keyof typeof PROVIDER_LOG_TABLE;
export type ProviderLogTableName = (typeof PROVIDER_LOG_TABLE)[ProviderStep];

export interface LocalThreadTable {
  id: string;
  created_at: string;
}

export interface LocalMessageTable {
  id: string;
  thread_id: string;
  run_id: string | null;
  role: 'user' | 'assistant';
  content: string;
  sources: string | null;
  created_at: string;
}

export interface LocalRunTable {
  id: string;
  thread_id: string;
  status: string;
  prompt_tokens: number;
  completion_tokens: number;
  error: string | null;
  created_at: string;
}

export interface LocalVectorStoreTable {
  id: string;
  name: string;
  created_at: string;
}

export interface LocalFileTable {
  id: string;
  vector_store_id: string;
  filename: string;
  bytes: number;
  content: string;
  created_at: string;
}

/** A document the assistant knows (the crawler's schedule or an operator's upload), whatever the provider. */
export interface KnowledgeDocumentTable {
  id: Generated<number>;
  kind: 'schedule' | 'upload';
  title: string;
  filename: string;
  bytes: number;
  provider: string | null;
  provider_file_id: string | null;
  provider_status: Generated<'pending' | 'ready' | 'failed'>;
  provider_error: string | null;
  synced_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A part of a stored file's content ('document:<id>' or 'local_file:<id>'), in order. */
export interface ContentPartTable {
  owner: string;
  part: number;
  data: Uint8Array;
}
