import { createHash, randomBytes } from 'node:crypto';
import { WATCH_TOKEN_TTL_MS, type WsTokenReply } from '@concierge/contract';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/database.ts';
import * as queries from './watch.queries.ts';

/** Who a redeemed token lets in: the admin session it was issued for. */
export interface WatchGrant {
  sessionId: string;
  username: string;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * The Watch feed's tokens (DESIGN §9): single use, valid WATCH_TOKEN_TTL_MS,
 * bound to the admin session that asked for one. Kept in the database (only
 * their hash), so any process behind a load balancer accepts a token another
 * process issued.
 */
export class WatchTokens {
  readonly #database: Database;
  readonly #clock: Clock;
  /** Which of these admin sessions are still signed in (AuthService.liveSessions). */
  readonly #liveSessions: (ids: readonly string[]) => Promise<Set<string>>;

  constructor(options: { database: Database; clock: Clock; liveSessions: (ids: readonly string[]) => Promise<Set<string>> }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#liveSessions = options.liveSessions;
  }

  async issue(session: WatchGrant): Promise<WsTokenReply> {
    const now = this.#clock.now();
    const token = randomBytes(32).toString('base64url');
    const expires = new Date(now.getTime() + WATCH_TOKEN_TTL_MS).toISOString();
    const db = this.#database.db;
    // Tokens nobody used are cleared as new ones are issued: the table holds a minute's worth at most.
    await queries.deleteExpiredTokens(db, now.toISOString());
    await queries.insertToken(db, { id: hashToken(token), session_id: session.sessionId, username: session.username, created_at: now.toISOString(), expires_at: expires });
    return { token, expires, username: session.username };
  }

  /** Uses the token up; returns whom it admits, or null when it is unknown, used, expired, or its session has ended. */
  async redeem(token: string): Promise<WatchGrant | null> {
    if (!token) return null;
    const row = await queries.takeToken(this.#database.db, hashToken(token));
    if (!row || Date.parse(row.expires_at) <= this.#clock.now().getTime()) return null;
    if (!(await this.#liveSessions([row.session_id])).has(row.session_id)) return null;
    return { sessionId: row.session_id, username: row.username };
  }
}
