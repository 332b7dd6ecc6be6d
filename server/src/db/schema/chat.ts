import type { Generated } from 'kysely';

export interface PublicChatSessionTable {
  id: Generated<number>;
  /** The random id in the visitor's cookie. */
  session_id: string;
  client_ip: string | null;
  user_agent: string | null;
  referer: string | null;
  thread_id: string | null;
  message_count: Generated<number>;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  total_tokens: Generated<number>;
  active: Generated<boolean>;
  verified: Generated<boolean>;
  verified_at: string | null;
  in_flight_since: string | null;
  /** The newest message id before the current conversation began ("New conversation"); history shows only later ones. */
  conversation_after_id: number | null;
  first_seen_at: string;
  last_seen_at: string;
  expires_at: string;
  error: string | null;
  created_at: string;
  updated_at: string;
}

export type ChatRole = 'user' | 'assistant';

export interface PublicChatMessageTable {
  id: Generated<number>;
  session_id: string;
  role: ChatRole;
  content: string;
  response: string | null;
  state: string;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  total_tokens: Generated<number>;
  client_ip: string | null;
  user_agent: string | null;
  openai_message_id: string | null;
  run_id: string | null;
  run_status: string | null;
  processing_duration_ms: number | null;
  response_latency_ms: number | null;
  client_message_id: string | null;
  sources: string | null;
  error: string | null;
  /** The thread the question was asked on, and the provider's id of the question in it (for resuming). */
  thread_id: string | null;
  provider_message_id: string | null;
  /** The pipeline step reached (DESIGN §6). */
  step: string | null;
  attempts: Generated<number>;
  /** The process answering it, and until when its claim holds (DESIGN §9). */
  owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface PublicChatFeedbackTable {
  id: Generated<number>;
  public_chat_message_id: number;
  session_id: string;
  type: string;
  description: string | null;
  detail: string | null;
  client_ip: string | null;
  user_agent: string | null;
  created_at: string;
  updated_at: string;
}

export interface PublicChatRateLimitTable {
  id: Generated<number>;
  /** `session:<id>` or `ip:<address>` (DESIGN §7); also `feedback:<session id>` (feedback posts) and `verify:<address>` (verification attempts). */
  identifier: string;
  client_ip: string | null;
  window_start: string;
  window_end: string;
  request_count: number;
  max_requests: number;
  limited: Generated<boolean>;
  limited_at: string | null;
  notes: string | null;
  created_at: string;
  updated_at: string;
}

/** Verification tokens already presented once (SHA-256), so none is accepted twice. */
export interface SpentVerificationTokenTable {
  token_hash: string;
  created_at: string;
}

/**
 * Running totals the Status screen reads, kept in the same transactions as
 * the rows they count. A counter is the sum of its rows: on PostgreSQL each
 * connection adds to a shard of its own (chat.queries `bumpCounters`).
 */
export interface PublicChatCounterTable {
  name: string;
  shard: Generated<number>;
  value: number;
}

/** Every client address ever seen (for the distinct count). */
export interface PublicChatClientIpTable {
  client_ip: string;
  created_at: string;
}

/** Every session identifier that ever hit the rate limit (for the distinct count). */
export interface PublicChatLimitedIdentifierTable {
  identifier: string;
  created_at: string;
}
