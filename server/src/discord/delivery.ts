import type { RuntimeConfig } from '@concierge/contract';
import { DiscordAPIError, MessageFlags, RESTJSONErrorCodes, Routes, makeURLSearchParams, type REST, type RESTPatchAPIWebhookWithTokenMessageJSONBody, type APIMessage } from 'discord.js';
import type { Logger } from 'pino';
import type { AskCommandRow } from '../ask/ask-commands.queries.ts';
import type { AskCommandService } from '../ask/ask-commands.service.ts';
import type { AskCommandFront, Delivery } from '../ask/ask-worker.ts';
import type { UsersService } from '../users/users.service.ts';
import { answerParts } from './answer-format.ts';
import { feedbackRow } from './feedback.ts';
import type { Notifier } from './notifier.ts';

export const DELIVERY_TEXTS = {
  expired: 'Sorry, I could not get to your question in time. Please ask again.',
} as const;

/** Nobody is pinged by what the assistant writes. */
const NO_PINGS = { parse: [] as never[] };

/**
 * Tells an asker how their command ended, through the interaction's webhook
 * (its stored token, so it works after a restart and whatever process
 * answered): the answer in as many messages as it takes, never cut, with its
 * sources, the usage footer and the feedback buttons under the last part;
 * every part of a /whisper ephemeral. The first part replaces the deferral's
 * "thinking…" message; later ones are follow-ups, each flagged ephemeral for
 * a whisper (only the first follow-up of a deferral would inherit it).
 */
export class AnswerDelivery implements AskCommandFront {
  readonly #rest: () => REST | null;
  readonly #config: () => RuntimeConfig;
  readonly #logger: Logger;
  readonly #askCommands: AskCommandService;
  readonly #users: UsersService;
  readonly #notifier: Notifier;
  readonly #timeZone: () => string;
  readonly #pendingAck: (interactionId: string) => Promise<unknown> | undefined;

  constructor(options: {
    rest: () => REST | null;
    config: () => RuntimeConfig;
    logger: Logger;
    askCommands: AskCommandService;
    users: UsersService;
    notifier: Notifier;
    timeZone: () => string;
    pendingAck: (interactionId: string) => Promise<unknown> | undefined;
  }) {
    this.#rest = options.rest;
    this.#config = options.config;
    this.#logger = options.logger;
    this.#askCommands = options.askCommands;
    this.#users = options.users;
    this.#notifier = options.notifier;
    this.#timeZone = options.timeZone;
    this.#pendingAck = options.pendingAck;
  }

  async deliver(command: AskCommandRow, delivery: Delivery): Promise<void> {
    const rest = this.#rest();
    if (!rest || !command.token || !command.application_id) return;
    // A deferral made after the command was stored (ack_early off) comes first.
    if (command.interaction_id) await this.#pendingAck(command.interaction_id)?.catch(() => {});
    const webhook = { rest, applicationId: command.application_id, token: command.token };
    try {
      if (delivery.kind === 'answered') await this.#answer(webhook, command, delivery);
      else if (delivery.kind === 'failed') {
        await editOriginal(webhook, { content: delivery.message, components: [] });
        void this.#reportFailure(command);
      } else await editOriginal(webhook, { content: DELIVERY_TEXTS.expired, components: [] });
    } catch (error) {
      if (error instanceof DiscordAPIError && error.code === RESTJSONErrorCodes.InvalidWebhookToken) {
        this.#logger.info({ askCommandId: command.id }, 'the interaction expired before its outcome could be sent');
        return;
      }
      throw error;
    }
  }

  async #answer(webhook: Webhook, command: AskCommandRow, delivery: Extract<Delivery, { kind: 'answered' }>): Promise<void> {
    const config = this.#config();
    const parts = answerParts(delivery.answer, { timeZone: this.#timeZone(), quota: delivery.quota });
    const feedback = config.feedback_enabled;
    const buttons = feedback ? [feedbackRow(command.id, {}, { undo: false }).toJSON()] : [];
    let first: APIMessage | null = null;
    for (const [index, content] of parts.entries()) {
      const components = index === parts.length - 1 ? buttons : [];
      if (index === 0) first = await editOriginal(webhook, { content, components, allowed_mentions: NO_PINGS });
      else {
        await webhook.rest.post(Routes.webhook(webhook.applicationId, webhook.token), {
          body: { content, components, allowed_mentions: NO_PINGS, ...(command.whisper ? { flags: MessageFlags.Ephemeral } : {}) },
          query: makeURLSearchParams({ wait: true }),
          auth: false,
        });
      }
    }
    await this.#askCommands.markDelivered(command.id, {
      discord_message_id: first?.id ?? null,
      // show_undo is the clicks' to set: a vote may already have come in.
      ...(feedback ? { step: 'feedback_open', show_good: true, show_outdated: true, show_hallucinated: true, show_other: true } : {}),
    });
    this.#logger.info({ askCommandId: command.id, parts: parts.length, whisper: command.whisper }, 'answer delivered');
  }

  async #reportFailure(command: AskCommandRow): Promise<void> {
    const user = await this.#users.find(command.user_id);
    if (!user) return;
    const stored = await this.#askCommands.find(command.id);
    await this.#notifier.commandError({
      user,
      command: command.type,
      askCommandId: command.id,
      error: stored?.error ?? command.error ?? 'failed',
      prompt: command.prompt,
      whisper: command.whisper,
    });
  }
}

interface Webhook {
  rest: REST;
  applicationId: string;
  token: string;
}

/** Edits the interaction's original response (the deferral's message); webhooks carry no bot token. */
const editOriginal = (webhook: Webhook, body: RESTPatchAPIWebhookWithTokenMessageJSONBody) =>
  webhook.rest.patch(Routes.webhookMessage(webhook.applicationId, webhook.token, '@original'), { body, auth: false }) as Promise<APIMessage>;
