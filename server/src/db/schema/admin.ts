import type { Generated } from 'kysely';

export interface AdminUserTable {
  id: Generated<number>;
  username: string;
  password_hash: string;
  created_at: string;
  updated_at: string;
}

export interface AdminSessionTable {
  /** SHA-256 (hex) of the session token; the token itself lives only in the cookie. */
  id: string;
  admin_user_id: number;
  client_ip: string | null;
  user_agent: string | null;
  created_at: string;
  last_seen_at: string;
  /** Sliding: moved forward while the session is used. */
  expires_at: string;
  /** Hard limit no activity can extend. */
  absolute_expires_at: string;
}

/** Failed sign-in attempts in the current window, keyed by client IP, username+IP, account or device. */
export interface LoginThrottleTable {
  key: string;
  window_start: string;
  failures: number;
  /** An account's next attempt from an unknown device waits until then (null: no wait). */
  blocked_until: string | null;
}

/** Process-wide values kept in the database (e.g. the generated session secret). */
export interface AppSettingTable {
  name: string;
  value: string;
  created_at: string;
}

/** A single-use Watch token (DESIGN §9): its SHA-256, the admin session it belongs to, and when it stops being accepted. */
export interface WatchTokenTable {
  id: string;
  session_id: string;
  username: string;
  created_at: string;
  expires_at: string;
}
