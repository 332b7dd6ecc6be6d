import type { Generated } from 'kysely';

/** A Discord user the bot has seen (SPEC §3 "User"); the per-user fields override the global configuration when set. */
export interface UserTable {
  /** The Discord user id (snowflake). */
  id: string;
  username: string;
  global_name: string | null;
  bot: Generated<boolean>;
  content: string | null;
  /** The user's conversation; null starts a new one on the next question (/forget). */
  thread_id: string | null;
  priority: Generated<boolean>;
  ignored: Generated<boolean>;
  donated: Generated<boolean>;
  request_limit_6h: number | null;
  request_limit_24h: number | null;
  openai_truncation_strategy_type: 'auto' | 'last_messages' | null;
  openai_truncation_strategy_last_messages: number | null;
  openai_max_completion_tokens: number | null;
  openai_max_prompt_tokens: number | null;
  assistant_additional_instructions: string | null;
  assistant_poll_interval: string | null;
  assistant_max_poll_interval: string | null;
  forget_count: Generated<number>;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/** An ask command (SPEC §3 "Ask command record"): a question from a front other than the public chat, worked on as a queue row. */
export interface AskCommandTable {
  id: Generated<number>;
  user_id: string;
  state: string;
  step: string;
  prompt: string;
  whisper: Generated<boolean>;
  thread_id: string | null;
  /** The provider's id of the question in the thread. */
  message_id: string | null;
  run_id: string | null;
  run_status: string | null;
  priority: Generated<boolean>;
  attempts: Generated<number>;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  total_tokens: Generated<number>;
  custom_id: string | null;
  disable_good: Generated<boolean>;
  disable_outdated: Generated<boolean>;
  disable_hallucinated: Generated<boolean>;
  disable_other: Generated<boolean>;
  show_good: Generated<boolean>;
  show_outdated: Generated<boolean>;
  show_hallucinated: Generated<boolean>;
  show_other: Generated<boolean>;
  show_undo: Generated<boolean>;
  interaction_id: string | null;
  /** The platform's id of the message that carries the answer. */
  discord_message_id: string | null;
  token: string | null;
  token_expires: string | null;
  application_id: string | null;
  /** The command: ask or whisper. */
  type: string;
  guild_id: string | null;
  channel_id: string | null;
  context: string | null;
  content: string | null;
  started_at: string | null;
  finished_at: string | null;
  acknowledged: Generated<boolean>;
  response: string | null;
  /** JSON array of the sources the answer cites. */
  sources: string | null;
  error: string | null;
  processing_duration_ms: number | null;
  /** The process answering it, and until when its claim holds (DESIGN §9). */
  owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A vote on an ask command's answer (one per voter and type). */
export interface AskCommandFeedbackTable {
  id: Generated<number>;
  ask_command_id: number;
  user_id: string;
  type: string;
  description: string | null;
  created_at: string;
  updated_at: string;
}

/** A Discord message addressed to the bot (a mention or a reply), SPEC §3. */
export interface DiscordMessageTable {
  id: Generated<number>;
  message_id: string;
  content: string | null;
  channel_id: string | null;
  guild_id: string | null;
  user_id: string | null;
  username: string | null;
  global_name: string | null;
  interaction_id: string | null;
  referenced_message_id: string | null;
  /** The message as received (JSON). */
  payload: string | null;
  created_at: string;
  updated_at: string;
}

/** Provider tokens spent per convention day, for the daily token budget. */
export interface TokenSpendTable {
  day: string;
  tokens: number;
  exhausted_at: string | null;
  updated_at: string;
}

/** The Discord gateway, shared by every process (one row, id 1): who holds it, how it is, and its counters. */
export interface DiscordGatewayTable {
  id: number;
  /** The process running the gateway (the leader), and until when its claim holds. */
  owner: string | null;
  lease_expires_at: string | null;
  /** An operator pressed Disconnect; the bot stays off until Connect. */
  operator_disconnected: Generated<boolean>;
  connected: Generated<boolean>;
  /** off, connecting, connected, disconnected, failed. */
  state: Generated<string>;
  /** Why the bot is not connected, in words for the Status screen. */
  reason: string | null;
  connected_at: string | null;
  connects: Generated<number>;
  disconnects: Generated<number>;
  messages_handled: Generated<number>;
  /** The command definitions last registered with Discord (a hash), so a start registers only after a change. */
  commands_hash: string | null;
  updated_at: string;
}

/** How many times a user took back feedback on an answer. */
export interface AskCommandFeedbackUndoTable {
  ask_command_id: number;
  user_id: string;
  count: Generated<number>;
  updated_at: string;
}
