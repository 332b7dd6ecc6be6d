import { createHash, randomBytes } from 'node:crypto';
import type { LoginRequest, SetupRequest } from '@concierge/contract';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import { insertSettingOnce } from '../db/app-settings.ts';
import type { Database } from '../db/database.ts';
import type { EventBus } from '../events.ts';
import { AppError, conflict, notFound, tooManyRequests, unauthorized } from '../errors.ts';
import {
  clearThrottle,
  countAdmins,
  deleteExpiredSessions,
  deleteSession,
  deleteSessionsOfAdmin,
  deleteStaleThrottleRows,
  findAdminByUsername,
  findLiveSessionIds,
  findSession,
  findThrottleRows,
  insertAdmin,
  insertSession,
  recordLoginFailure,
  touchSession,
  updateAdminPassword,
} from './auth.queries.ts';
import { hashPassword, verifyAgainstDummy, verifyPassword } from './password.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export const SESSION_POLICY = {
  /** A session unused for this long ends. */
  idleMs: 24 * HOUR,
  /** No session lives longer than this, however busy. */
  absoluteMs: 14 * 24 * HOUR,
  /** The sliding expiry is written back at most this often. */
  touchEveryMs: 5 * MINUTE,
  /**
   * A session found valid is trusted again without reading the database for
   * this long. Signing out ends it at once in this process; another process
   * sharing the database may accept it for up to this long.
   */
  recheckEveryMs: 5_000,
};

/** Sessions remembered as valid at most; the oldest is forgotten first. */
const RECENT_SESSIONS_MAX = 1_000;

interface RecentSession {
  session: Omit<AdminSession, 'renewed'>;
  lastSeenAt: number;
  checkedAt: number;
}

/**
 * Sign-in throttling. Failures count per client IP and per username+IP, so a
 * stranger guessing passwords is slowed down without ever locking out an
 * admin who signs in from another address.
 */
export const THROTTLE_POLICY = {
  windowMs: 15 * MINUTE,
  maxFailuresPerIp: 20,
  maxFailuresPerUserAndIp: 5,
};

export interface ClientInfo {
  ip: string;
  userAgent: string | undefined;
}

export interface AdminSession {
  sessionId: string;
  adminUserId: number;
  username: string;
  expiresAt: Date;
  /** True when the sliding expiry moved, so the cookie should be re-sent. */
  renewed: boolean;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');
const SETUP_MARKER = 'admin_setup_completed';

export class AuthService {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #events: EventBus | undefined;
  #setupDone = false;
  readonly #recent = new Map<string, RecentSession>();

  /** `events` hears of every ended session (the Watch feed closes its connections, in every process). */
  constructor(options: { database: Database; clock: Clock; logger: Logger; events?: EventBus }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#events = options.events;
  }

  /** Setup is required until the first admin exists; that never reverts. */
  async setupRequired(): Promise<boolean> {
    if (this.#setupDone) return false;
    this.#setupDone = (await countAdmins(this.#database.db)) > 0;
    return !this.#setupDone;
  }

  /** Creates the first admin. Refused once any admin exists, even under concurrent requests. */
  async createFirstAdmin(request: SetupRequest): Promise<{ username: string }> {
    if (request.password !== request.confirm_password) {
      throw new AppError(400, 'passwords_mismatch', "Passwords don't match", { field: 'confirm_password' });
    }
    if (!(await this.setupRequired())) throw conflict('Setup has already been completed', 'setup_complete');
    const passwordHash = await hashPassword(request.password);
    const now = this.#clock.now().toISOString();
    const admin = await this.#database.transaction(async (trx) => {
      // The marker row's primary key makes a second, concurrent setup fail here.
      if (!(await insertSettingOnce(trx, SETUP_MARKER, now, now))) return undefined;
      return insertAdmin(trx, { username: request.username, password_hash: passwordHash, now });
    });
    if (!admin) throw conflict('Setup has already been completed', 'setup_complete');
    this.#setupDone = true;
    this.#logger.info({ username: admin.username }, 'first admin created');
    return { username: admin.username };
  }

  /** Checks the credentials and opens a session; returns the cookie token. */
  async login(request: LoginRequest, client: ClientInfo): Promise<{ token: string; username: string; expiresAt: Date }> {
    const now = this.#clock.now();
    const cutoff = new Date(now.getTime() - THROTTLE_POLICY.windowMs).toISOString();
    const ipKey = `ip:${client.ip}`;
    const userKey = `user:${request.username.toLowerCase()}|ip:${client.ip}`;
    const db = this.#database.db;

    const rows = await findThrottleRows(db, [ipKey, userKey], cutoff);
    const blocked = rows.find(
      (row) => row.failures >= (row.key === ipKey ? THROTTLE_POLICY.maxFailuresPerIp : THROTTLE_POLICY.maxFailuresPerUserAndIp),
    );
    if (blocked) {
      const retryAfterMs = Date.parse(blocked.window_start) + THROTTLE_POLICY.windowMs - now.getTime();
      this.#logger.warn({ ip: client.ip, username: request.username }, 'sign-in throttled');
      throw tooManyRequests('Too many failed sign-in attempts. Please try again later.', retryAfterMs / 1000, 'login_throttled');
    }

    const admin = await findAdminByUsername(db, request.username);
    const valid = admin ? await verifyPassword(admin.password_hash, request.password) : await verifyAgainstDummy(request.password);
    if (!admin || !valid) {
      const nowIso = now.toISOString();
      await recordLoginFailure(db, ipKey, nowIso, cutoff);
      await recordLoginFailure(db, userKey, nowIso, cutoff);
      this.#logger.info({ ip: client.ip, username: request.username }, 'sign-in failed');
      throw unauthorized('Invalid username or password', 'invalid_credentials');
    }

    await clearThrottle(db, userKey);
    const token = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + SESSION_POLICY.idleMs);
    await insertSession(db, {
      id: hashToken(token),
      admin_user_id: admin.id,
      client_ip: client.ip,
      user_agent: client.userAgent?.slice(0, 512) ?? null,
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: expiresAt.toISOString(),
      absolute_expires_at: new Date(now.getTime() + SESSION_POLICY.absoluteMs).toISOString(),
    });
    this.#logger.info({ username: admin.username, ip: client.ip }, 'signed in');
    return { token, username: admin.username, expiresAt };
  }

  /**
   * The session behind a cookie token, or null when it is unknown or expired.
   * Slides the expiry. Every console request comes through here, so a session
   * checked moments ago is answered from memory (SESSION_POLICY.recheckEveryMs).
   */
  async authenticate(token: string): Promise<AdminSession | null> {
    const id = hashToken(token);
    const now = this.#clock.now().getTime();
    const recent = this.#recent.get(id);
    if (
      recent &&
      now - recent.checkedAt < SESSION_POLICY.recheckEveryMs &&
      now - recent.lastSeenAt < SESSION_POLICY.touchEveryMs &&
      now < recent.session.expiresAt.getTime()
    ) {
      return { ...recent.session, renewed: false };
    }
    this.#recent.delete(id);

    const db = this.#database.db;
    const session = await findSession(db, id);
    if (!session) return null;
    if (Date.parse(session.expires_at) <= now || Date.parse(session.absolute_expires_at) <= now) {
      await deleteSession(db, id);
      return null;
    }
    let expiresAt = new Date(session.expires_at);
    let lastSeenAt = Date.parse(session.last_seen_at);
    let renewed = false;
    if (now - lastSeenAt >= SESSION_POLICY.touchEveryMs) {
      expiresAt = new Date(Math.min(now + SESSION_POLICY.idleMs, Date.parse(session.absolute_expires_at)));
      await touchSession(db, id, new Date(now).toISOString(), expiresAt.toISOString());
      lastSeenAt = now;
      renewed = true;
    }
    const found = { sessionId: id, adminUserId: session.admin_user_id, username: session.username, expiresAt };
    if (this.#recent.size >= RECENT_SESSIONS_MAX) this.#recent.delete(this.#recent.keys().next().value!);
    this.#recent.set(id, { session: found, lastSeenAt, checkedAt: now });
    return { ...found, renewed };
  }

  /** Ends the session behind a token; unknown tokens are fine (logout is idempotent). */
  async logout(token: string): Promise<void> {
    const id = hashToken(token);
    this.#recent.delete(id);
    await deleteSession(this.#database.db, id);
    this.#events?.publish('admin_session_ended', { session_id: id });
  }

  /**
   * Which of these sessions (by id) still exist and have not expired, read
   * from the database (not this process's memory): a session signed out
   * through another process, or ended by a password reset, is gone here too.
   */
  async liveSessions(ids: readonly string[]): Promise<Set<string>> {
    return new Set(await findLiveSessionIds(this.#database.db, [...new Set(ids)], this.#clock.now().toISOString()));
  }

  /** Sets a new password from the server's shell and ends every session of that admin. */
  async resetPassword(username: string, password: string): Promise<void> {
    const admin = await findAdminByUsername(this.#database.db, username);
    if (!admin) throw notFound(`No admin named ${username}`, 'admin_not_found');
    const passwordHash = await hashPassword(password);
    await this.#database.transaction(async (trx) => {
      await updateAdminPassword(trx, admin.id, passwordHash, this.#clock.now().toISOString());
      await deleteSessionsOfAdmin(trx, admin.id);
    });
    for (const [id, recent] of this.#recent) if (recent.session.adminUserId === admin.id) this.#recent.delete(id);
    this.#logger.info({ username }, 'password reset from the command line');
  }

  /** Drops expired sessions and stale throttle windows. */
  async cleanup(): Promise<void> {
    const now = this.#clock.now();
    await deleteExpiredSessions(this.#database.db, now.toISOString());
    await deleteStaleThrottleRows(this.#database.db, new Date(now.getTime() - THROTTLE_POLICY.windowMs).toISOString());
  }
}
