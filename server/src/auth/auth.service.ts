import { createHash, randomBytes } from 'node:crypto';
import type { LoginRequest, SetupRequest } from '@concierge/contract';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import { insertSettingOnce } from '../db/app-settings.ts';
import type { Database } from '../db/database.ts';
import type { EventBus } from '../events.ts';
import { AppError, conflict, notFound, tooManyRequests, unauthorized } from '../errors.ts';
import {
  clearAllThrottles,
  clearThrottle,
  countAdmins,
  deleteExpiredSessions,
  deleteSession,
  deleteSessionsOfAdmin,
  deleteStaleThrottleRows,
  findAdminByUsername,
  findLiveSessionIds,
  findSession,
  findThrottleRow,
  findThrottleRows,
  insertAdmin,
  insertSession,
  recordLoginFailure,
  releaseAccountAttempt,
  takeAccountAttempt,
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
 * Sign-in throttling, after OWASP's authentication cheat sheet:
 *
 * - per address: 5 failures for one username, or 20 for any, lock that
 *   address out for the rest of a 15-minute window;
 * - per account, from every address together: after 5 failures in the
 *   window each further attempt waits a growing delay (1 s, 2 s, 4 s, then
 *   5 s), so guesses spread over many addresses are slowed down, while the
 *   real admin signing in from another address waits a few seconds at most;
 * - a browser that has signed in to the account before carries a signed
 *   device cookie and skips both: an attack on the account or from its
 *   network never locks it out. A device that fails 5 times in the window
 *   loses that trust until the window ends.
 *
 * `npm run admin -- reset-password` clears every limit.
 */
export const THROTTLE_POLICY = {
  windowMs: 15 * MINUTE,
  maxFailuresPerIp: 20,
  maxFailuresPerUserAndIp: 5,
  freeFailuresPerAccount: 5,
  firstAccountDelayMs: 1_000,
  maxAccountDelayMs: 5_000,
  maxFailuresPerDevice: 5,
  /** How long a browser stays a known device for an account after signing in. */
  deviceTrustMs: 180 * 24 * HOUR,
};

/** The wait before the next attempt once an account has `failures` in the window (0 while under the free count). */
export function accountDelayMs(failures: number): number {
  const over = failures - THROTTLE_POLICY.freeFailuresPerAccount;
  if (over < 0) return 0;
  return Math.min(THROTTLE_POLICY.firstAccountDelayMs * 2 ** over, THROTTLE_POLICY.maxAccountDelayMs);
}

/** Attempts to take an account's next slot before giving up on contention (many addresses at the same instant). */
const ACCOUNT_ATTEMPT_TRIES = 20;

export interface ClientInfo {
  ip: string;
  userAgent: string | undefined;
  /** The device cookie's value (already verified as signed by this server), if the browser sent one. */
  device?: string | undefined;
}

/** A device cookie names the account it signed in to and a random id: `<id>.<username, base64url>`. */
const deviceValue = (username: string) => `${randomBytes(18).toString('base64url')}.${Buffer.from(username.toLowerCase()).toString('base64url')}`;

function parseDevice(value: string | undefined): { id: string; username: string } | null {
  const match = value?.match(/^([\w-]{24})\.([\w-]+)$/);
  return match ? { id: match[1]!, username: Buffer.from(match[2]!, 'base64url').toString() } : null;
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

  /**
   * Checks the credentials and opens a session; returns the cookie token and
   * the device cookie value to (re)send. Throttled as THROTTLE_POLICY says.
   */
  async login(request: LoginRequest, client: ClientInfo): Promise<{ token: string; username: string; expiresAt: Date; device: string }> {
    const now = this.#clock.now();
    const cutoff = new Date(now.getTime() - THROTTLE_POLICY.windowMs).toISOString();
    const account = request.username.toLowerCase();
    const ipKey = `ip:${client.ip}`;
    const userKey = `user:${account}|ip:${client.ip}`;
    const accountKey = `account:${account}`;
    const db = this.#database.db;

    const device = parseDevice(client.device);
    const deviceKey = device && device.username === account ? `device:${device.id}` : null;
    const trusted = deviceKey !== null && !(await this.#deviceLocked(deviceKey, cutoff));

    if (!trusted) {
      const rows = await findThrottleRows(db, [ipKey, userKey], cutoff);
      const blocked = rows.find(
        (row) => row.failures >= (row.key === ipKey ? THROTTLE_POLICY.maxFailuresPerIp : THROTTLE_POLICY.maxFailuresPerUserAndIp),
      );
      if (blocked) {
        const retryAfterMs = Date.parse(blocked.window_start) + THROTTLE_POLICY.windowMs - now.getTime();
        this.#logger.warn({ ip: client.ip, username: request.username }, 'sign-in throttled');
        throw tooManyRequests('Too many failed sign-in attempts. Please try again later.', retryAfterMs / 1000, 'login_throttled');
      }
      await this.#takeAccountAttempt(accountKey, now, cutoff, client.ip, request.username);
    }

    const admin = await findAdminByUsername(db, request.username);
    const valid = admin ? await verifyPassword(admin.password_hash, request.password) : await verifyAgainstDummy(request.password);
    if (!admin || !valid) {
      const nowIso = now.toISOString();
      if (trusted) {
        await recordLoginFailure(db, deviceKey, nowIso, cutoff);
      } else {
        await recordLoginFailure(db, ipKey, nowIso, cutoff);
        await recordLoginFailure(db, userKey, nowIso, cutoff);
      }
      this.#logger.info({ ip: client.ip, username: request.username, knownDevice: trusted }, 'sign-in failed');
      throw unauthorized('Invalid username or password', 'invalid_credentials');
    }

    await clearThrottle(db, userKey);
    if (trusted) await clearThrottle(db, deviceKey);
    else await releaseAccountAttempt(db, accountKey);
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
    this.#logger.info({ username: admin.username, ip: client.ip, knownDevice: trusted }, 'signed in');
    return { token, username: admin.username, expiresAt, device: trusted ? client.device! : deviceValue(admin.username) };
  }

  async #deviceLocked(deviceKey: string, cutoff: string): Promise<boolean> {
    const [row] = await findThrottleRows(this.#database.db, [deviceKey], cutoff);
    return row !== undefined && row.failures >= THROTTLE_POLICY.maxFailuresPerDevice;
  }

  /**
   * Counts an attempt on the account before the password is checked, so
   * concurrent guesses cannot all pass before the first failure is written,
   * and refuses it while the account's delay runs. A right password gives
   * the attempt back (releaseAccountAttempt).
   */
  async #takeAccountAttempt(key: string, now: Date, cutoff: string, ip: string, username: string): Promise<void> {
    const db = this.#database.db;
    for (let tries = 0; tries < ACCOUNT_ATTEMPT_TRIES; tries++) {
      const row = await findThrottleRow(db, key);
      const blockedUntil = row?.blocked_until ? Date.parse(row.blocked_until) : 0;
      if (blockedUntil > now.getTime()) {
        const seconds = Math.max(1, Math.ceil((blockedUntil - now.getTime()) / 1000));
        this.#logger.warn({ ip, username }, 'sign-in delayed: too many failures on this account');
        throw tooManyRequests(
          `Too many failed sign-in attempts for this account. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`,
          seconds,
          'login_throttled',
        );
      }
      const fresh = !row || row.window_start <= cutoff;
      const failures = fresh ? 1 : row.failures + 1;
      const delay = accountDelayMs(failures);
      const next = {
        failures,
        window_start: fresh ? now.toISOString() : row.window_start,
        blocked_until: delay > 0 ? new Date(now.getTime() + delay).toISOString() : null,
      };
      if (await takeAccountAttempt(db, key, row, next)) return;
    }
    throw tooManyRequests('Too many sign-in attempts at once for this account. Try again in a second.', 1, 'login_throttled');
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

  /**
   * Sets a new password from the server's shell, ends every session of that
   * admin and clears every sign-in limit (addresses, accounts, devices);
   * answers how many limits were cleared.
   */
  async resetPassword(username: string, password: string): Promise<{ throttlesCleared: number }> {
    const admin = await findAdminByUsername(this.#database.db, username);
    if (!admin) throw notFound(`No admin named ${username}`, 'admin_not_found');
    const passwordHash = await hashPassword(password);
    const throttlesCleared = await this.#database.transaction(async (trx) => {
      await updateAdminPassword(trx, admin.id, passwordHash, this.#clock.now().toISOString());
      await deleteSessionsOfAdmin(trx, admin.id);
      return clearAllThrottles(trx);
    });
    for (const [id, recent] of this.#recent) if (recent.session.adminUserId === admin.id) this.#recent.delete(id);
    this.#logger.info({ username, throttlesCleared }, 'password reset from the command line');
    return { throttlesCleared };
  }

  /** Drops expired sessions and stale throttle windows. */
  async cleanup(): Promise<void> {
    const now = this.#clock.now();
    await deleteExpiredSessions(this.#database.db, now.toISOString());
    await deleteStaleThrottleRows(this.#database.db, new Date(now.getTime() - THROTTLE_POLICY.windowMs).toISOString());
  }
}
