import { formatPeopleTime, type RuntimeConfig } from '@concierge/contract';
import { Routes, type REST } from 'discord.js';
import type { Logger } from 'pino';
import type { ScheduleChange } from '../crawler/parse/diff.ts';
import { MESSAGE_LIMIT } from './answer-format.ts';

/** Changes listed in one notification; the rest are counted. */
const MAX_CHANGES = 10;

/** Who a notification is about. */
export interface NotifiedUser {
  id: string;
  username: string;
  global_name: string | null;
}

const who = (user: NotifiedUser) => `**${escape(user.global_name ?? user.username)}** (${escape(user.username)}, <@${user.id}>)`;
/** Discord markdown in names and texts is shown as typed. */
const escape = (text: string) => text.replace(/([\\*_~`|])/g, '\\$1');
const quote = (text: string, max = 300) => `“${text.length > max ? `${text.slice(0, max - 1)}…` : text}”`;

/**
 * Posts operator notifications to `discord_notification_channel_id` (empty:
 * none): the bot connected, a new user, a user at their limit, a command that
 * failed, feedback on an answer, and the schedule changes attendees must hear
 * about. A whisper's text never appears here: only the asker sees it.
 * Mentions in notifications never ping anyone. Failures are logged, never thrown.
 */
export class Notifier {
  readonly #rest: () => REST | null;
  readonly #config: () => RuntimeConfig;
  readonly #logger: Logger;
  readonly #timeZone: () => string;
  readonly #productName: string;

  constructor(options: { rest: () => REST | null; config: () => RuntimeConfig; logger: Logger; timeZone: () => string; productName: string }) {
    this.#rest = options.rest;
    this.#config = options.config;
    this.#logger = options.logger;
    this.#timeZone = options.timeZone;
    this.#productName = options.productName;
  }

  /** Sends one notification; resolves when it was posted (or could not be). */
  async send(text: string): Promise<void> {
    const channelId = this.#config().discord_notification_channel_id;
    const rest = this.#rest();
    if (!channelId || !rest) return;
    const content = text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT - 1)}…` : text;
    try {
      await rest.post(Routes.channelMessages(channelId), { body: { content, allowed_mentions: { parse: [] } } });
      this.#logger.debug({ channelId }, 'notification sent');
    } catch (error) {
      this.#logger.warn({ err: error, channelId }, 'could not post a notification to the Discord notification channel');
    }
  }

  connected(botName: string): Promise<void> {
    return this.send(`🟢 ${escape(this.#productName)} is connected to Discord as **${escape(botName)}**.`);
  }

  newUser(user: NotifiedUser): Promise<void> {
    return this.send(`👋 New user: ${who(user)}`);
  }

  limitHit(user: NotifiedUser, limit: { count: number; window: '6 h' | '24 h'; availableAt: string | null }): Promise<void> {
    const again = limit.availableAt ? ` They can ask again at ${formatPeopleTime(limit.availableAt, this.#timeZone())}.` : '';
    return this.send(`⏳ ${who(user)} reached the limit of ${limit.count} questions in ${limit.window}.${again}`);
  }

  /** A command that failed; the question is quoted only for a public /ask. */
  commandError(failure: { user: NotifiedUser; command: string; askCommandId: number | null; error: string; prompt: string | null; whisper: boolean }): Promise<void> {
    const id = failure.askCommandId ? ` (ask command ${failure.askCommandId})` : '';
    const question = !failure.whisper && failure.prompt ? `\nQuestion: ${quote(failure.prompt)}` : '';
    return this.send(`⚠️ /${failure.command} by ${who(failure.user)} failed${id}: ${quote(failure.error, 500)}${question}`);
  }

  feedback(report: { user: NotifiedUser; askCommandId: number; label: string; description: string | null; whisper: boolean }): Promise<void> {
    const what = report.whisper ? 'a /whisper answer' : 'an /ask answer';
    const description = report.description ? `: ${quote(report.description, 1000)}` : '';
    return this.send(`📝 ${who(report.user)} marked ${what} (ask command ${report.askCommandId}) as **${report.label}**${description}`);
  }

  /** The day's token budget is spent (published once a day, by one process). */
  budgetSpent(event: { spent: number; budget: number; action: 'offline' | 'pause' }): Promise<void> {
    const then = event.action === 'offline' ? 'the offline assistant answers until midnight' : 'nobody is answered until midnight';
    return this.send(`💸 Today's token budget is spent (${event.spent.toLocaleString('en-US')} of ${event.budget.toLocaleString('en-US')} tokens): ${then} (convention time), or until the budget is raised on the Config screen.`);
  }

  /** The crawler's moved and cancelled events, a few listed and the rest counted. */
  scheduleChanges(changes: ScheduleChange[]): Promise<void> {
    const zone = this.#timeZone();
    const relevant = changes.filter((change) => change.kind === 'cancelled' || change.kind === 'moved_time' || change.kind === 'moved_room');
    if (relevant.length === 0) return Promise.resolve();
    const time = (iso: string | undefined) => (iso ? formatPeopleTime(iso, zone) : '?');
    const lines = relevant.slice(0, MAX_CHANGES).map((change) => {
      const title = `**${escape(change.title)}**`;
      if (change.kind === 'cancelled') return `• Cancelled: ${title} (${time(change.before?.start)}${change.before?.location ? `, ${escape(change.before.location)}` : ''})`;
      if (change.kind === 'moved_time') return `• Moved: ${title} ${time(change.before?.start)} → ${time(change.after?.start)}`;
      return `• Moved: ${title} ${escape(change.before?.location ?? '?')} → ${escape(change.after?.location ?? '?')}`;
    });
    if (relevant.length > MAX_CHANGES) lines.push(`…and ${relevant.length - MAX_CHANGES} more (Crawler Runs in the console lists them all)`);
    return this.send(`📅 Schedule changes\n${lines.join('\n')}`);
  }
}
