import { z } from 'zod';

/**
 * The live Watch feed (SPEC §2 Watch, §3 Watch message, DESIGN §9 "Watch"):
 * `POST /api/ws/token` gives a single-use token, `GET /ws?token=` upgrades
 * with it, the server says WATCH_CONNECTED_TEXT and then sends one
 * WatchMessage (JSON text) per answer.
 */

/** A token is good for one connection, this long after it was issued. */
export const WATCH_TOKEN_TTL_MS = 60_000;

/** The server's first text on a new connection. */
export const WATCH_CONNECTED_TEXT = 'Connection established';

/** Why the server closed a Watch connection (the websocket close code). */
export const WATCH_CLOSE = {
  /** The server is shutting down. */
  goingAway: 1001,
  /** The client fell too far behind: it was dropped rather than buffered without bound. */
  tooSlow: 1013,
  /** The admin session the token was issued for ended (signed out, expired, password reset). */
  sessionEnded: 4001,
} as const;

/** The Watch screen keeps at most this many messages. */
export const WATCH_MAX_ITEMS = 500;

export const WsTokenReplySchema = z.object({
  token: z.string(),
  /** When the token stops being accepted (ISO 8601). */
  expires: z.string(),
  username: z.string(),
});
export type WsTokenReply = z.infer<typeof WsTokenReplySchema>;

/** One answer as the Watch feed shows it (SPEC §3); public chat answers as DESIGN §9 describes. */
export const WatchMessageSchema = z.object({
  user_id: z.string(),
  username: z.string(),
  global_name: z.string(),
  prompt: z.string(),
  response: z.string(),
  error: z.string(),
  created_at: z.string(),
  run_id: z.string(),
  thread_id: z.string(),
  run_status: z.string(),
  state: z.string(),
  step: z.string(),
  /** 0 for a public chat answer. */
  ask_command_id: z.number().int(),
  interaction_id: z.string(),
  /** `public_chat` for the public chat; the Discord context (guild, bot_dm, private_channel) for ask commands. */
  context: z.string(),
  /** A /whisper answer: operators see it, no public channel does. */
  private: z.boolean(),
});
export type WatchMessage = z.infer<typeof WatchMessageSchema>;

/** The context of a public chat answer in the Watch feed. */
export const PUBLIC_CHAT_CONTEXT = 'public_chat';
