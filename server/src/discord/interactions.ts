import { discordIdList, type FeedbackType, type RuntimeConfig } from '@concierge/contract';
import {
  MessageFlags,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type GuildMember,
  type APIInteractionGuildMember,
  type Interaction,
  type Message,
  type ModalSubmitInteraction,
  type RepliableInteraction,
  type User,
} from 'discord.js';
import type { Logger } from 'pino';
import type { AskCommandService } from '../ask/ask-commands.service.ts';
import type { AskCommandRow } from '../ask/ask-commands.queries.ts';
import type { SeenUser, UsersService } from '../users/users.service.ts';
import { QUESTION_OPTION } from './commands.ts';
import { FEEDBACK_BUTTON_LABELS, feedbackRow, OTHER_DESCRIPTION_INPUT, otherModal, parseFeedbackId, type FeedbackService } from './feedback.ts';
import type { Notifier } from './notifier.ts';

/** How long an interaction token lives (Discord's 15 minutes). */
export const INTERACTION_TOKEN_MS = 15 * 60_000;

export const BOT_TEXTS = {
  forgot: 'Done! Your next question starts a new conversation.',
  wrongChannel: (channels: string[]) =>
    `Sorry, I only answer questions in ${channels.slice(0, 10).map((id) => `<#${id}>`).join(', ')}${channels.length > 10 ? ' and a few other channels' : ''}. Ask me there (/whisper for a private answer), or in a direct message to me.`,
  length: (min: number, max: number, length: number) => `Please ask in ${min} to ${max} characters (yours has ${length}).`,
  feedbackGone: 'This answer no longer takes feedback.',
  feedbackClosed: 'Feedback is closed for now. Thank you all the same!',
  alreadyVoted: (label: string) => `You already marked this answer as ${label}.`,
  nothingToUndo: 'You have no feedback on this answer to undo.',
  undoLimit: (max: number) => (max === 0 ? 'Feedback cannot be taken back.' : `You can take back feedback ${max === 1 ? 'once' : `${max} times`} per answer.`),
  thanks: 'Thank you for the feedback!',
  donate: (url: string) => `Enjoying the concierge? Support it: ${url}`,
} as const;

export interface InteractionHandlerOptions {
  config: () => RuntimeConfig;
  logger: Logger;
  askCommands: AskCommandService;
  users: UsersService;
  feedback: FeedbackService;
  notifier: Notifier;
  /** Counts an interaction or message handled (the Status screen's messages_handled). */
  handled(): Promise<void>;
  /** The bot's own user id, once connected. */
  botUserId(): string | null;
  /** Stores a mention of or reply to the bot (SPEC §3 "Discord message"). */
  storeMessage(message: Message): Promise<void>;
  /** With recover_panic off, an error in a handler stops the bot. */
  halt(reason: string): void;
}

const memberRoles = (member: GuildMember | APIInteractionGuildMember | null): string[] => {
  if (!member) return [];
  return Array.isArray(member.roles) ? member.roles : [...(member as GuildMember).roles.cache.keys()];
};

/**
 * What the bot does with each interaction: /ask and /whisper become ask
 * commands (acknowledged within Discord's 3 s, the deferral ephemeral for a
 * whisper), /forget starts a new conversation, the feedback buttons and the
 * Other form record votes. Rules live in the services; this only reads the
 * interaction, calls them and answers. An error in one interaction is
 * caught (recover_panic), logged, reported and told to the user.
 */
export class InteractionHandler {
  readonly #options: InteractionHandlerOptions;
  /** Deferrals made after the command was stored (ack_early off): a delivery waits for its interaction's. */
  readonly pendingAcks = new Map<string, Promise<unknown>>();

  constructor(options: InteractionHandlerOptions) {
    this.#options = options;
  }

  async handle(interaction: Interaction): Promise<void> {
    try {
      if (interaction.isChatInputCommand()) {
        await this.#options.handled();
        if (interaction.commandName === 'ask') return await this.#ask(interaction, false);
        if (interaction.commandName === 'whisper') return await this.#ask(interaction, true);
        if (interaction.commandName === 'forget') return await this.#forget(interaction);
        this.#options.logger.warn({ command: interaction.commandName }, 'unknown command (registered by something else?)');
      } else if (interaction.isButton()) {
        await this.#options.handled();
        return await this.#button(interaction);
      } else if (interaction.isModalSubmit()) {
        await this.#options.handled();
        return await this.#modal(interaction);
      }
    } catch (error) {
      await this.#failed(interaction, error);
    }
  }

  async handleMessage(message: Message): Promise<void> {
    try {
      const botId = this.#options.botUserId();
      if (!botId || message.author.bot || message.author.id === botId) return;
      // Addressed to the bot: a mention, a reply to one of its messages, or a direct message.
      const mentioned = message.mentions.users.has(botId);
      const repliedTo = message.mentions.repliedUser?.id === botId;
      if (!mentioned && !repliedTo && message.inGuild()) return;
      await this.#options.handled();
      await this.#seen(message.author, message.member);
      await this.#options.storeMessage(message);
    } catch (error) {
      this.#options.logger.error({ err: error, messageId: message.id }, 'could not store a message to the bot');
    }
  }

  async #seen(user: User, member: GuildMember | APIInteractionGuildMember | null): Promise<SeenUser> {
    const donorRole = this.#options.config().donated_role_id;
    const seen: SeenUser = { id: user.id, username: user.username, global_name: user.globalName, bot: user.bot, donated: donorRole ? memberRoles(member).includes(donorRole) : false };
    const { created } = await this.#options.users.seen(seen);
    if (created) void this.#options.notifier.newUser(seen);
    return seen;
  }

  #asSeen(interaction: Interaction): SeenUser {
    const donorRole = this.#options.config().donated_role_id;
    const { user } = interaction;
    return { id: user.id, username: user.username, global_name: user.globalName, bot: user.bot, donated: donorRole ? memberRoles(interaction.member).includes(donorRole) : false };
  }

  /**
   * The allowed channels when this interaction is outside them, else null.
   * The list is about the guild's channels (where public answers may
   * appear); a direct message with the bot is no channel of the guild and
   * private by nature, so it is always answered.
   */
  #channelAllowed(interaction: Interaction, config: RuntimeConfig): string[] | null {
    const allowed = discordIdList(config.discord_allowed_channel_ids);
    if (allowed.length === 0 || !interaction.inGuild()) return null;
    const channel = interaction.channel;
    const parentId = channel && 'parentId' in channel ? channel.parentId : null;
    return [interaction.channelId, parentId].some((id) => id && allowed.includes(id)) ? null : allowed;
  }

  async #ask(interaction: ChatInputCommandInteraction, whisper: boolean): Promise<void> {
    const config = this.#options.config();
    const refusedBy = this.#channelAllowed(interaction, config);
    if (refusedBy) {
      await interaction.reply({ content: BOT_TEXTS.wrongChannel(refusedBy), flags: MessageFlags.Ephemeral });
      return;
    }
    const prompt = interaction.options.getString(QUESTION_OPTION, true).trim();
    if (prompt.length < config.ask_command_min_length || prompt.length > config.ask_command_max_length) {
      await interaction.reply({ content: BOT_TEXTS.length(config.ask_command_min_length, config.ask_command_max_length, prompt.length), flags: MessageFlags.Ephemeral });
      return;
    }
    const flags = whisper ? MessageFlags.Ephemeral : undefined;
    // ack_early: acknowledge before anything touches the database, so a slow moment never costs the 3 s.
    let acknowledged = false;
    if (config.ack_early) {
      await interaction.deferReply({ flags });
      acknowledged = true;
    }
    const user = this.#asSeen(interaction);
    const outcome = await this.#options.askCommands.submit({
      user,
      prompt,
      whisper,
      type: whisper ? 'whisper' : 'ask',
      acknowledged,
      interaction: {
        id: interaction.id,
        token: interaction.token,
        expiresAt: new Date(interaction.createdTimestamp + INTERACTION_TOKEN_MS).toISOString(),
        applicationId: interaction.applicationId,
        guildId: interaction.guildId,
        channelId: interaction.channelId,
        context: interaction.inGuild() ? 'guild' : 'dm',
        content: null,
      },
    });
    if (outcome.userCreated) void this.#options.notifier.newUser(user);
    switch (outcome.status) {
      case 'queued': {
        if (acknowledged) return;
        const ack = interaction.deferReply({ flags });
        this.pendingAcks.set(interaction.id, ack);
        try {
          await ack;
          await this.#options.askCommands.markAcknowledged(outcome.command.id);
        } finally {
          this.pendingAcks.delete(interaction.id);
        }
        return;
      }
      case 'ignored':
        // Ignored users get nothing: not even the "thinking…" of the deferral stays.
        if (acknowledged) await interaction.deleteReply();
        return;
      case 'limited': {
        const { quota } = outcome;
        const window = quota.used6h >= quota.limit6h ? '6 h' : '24 h';
        void this.#options.notifier.limitHit(user, { count: window === '6 h' ? quota.limit6h : quota.limit24h, window, availableAt: quota.availableAt });
        await this.#refuse(interaction, acknowledged, whisper, config.donation_url ? `${outcome.message}\n${BOT_TEXTS.donate(config.donation_url)}` : outcome.message);
        return;
      }
      default:
        await this.#refuse(interaction, acknowledged, whisper, outcome.message);
    }
  }

  /** A refusal only the asker sees, whether or not the command was deferred (publicly) already. */
  async #refuse(interaction: ChatInputCommandInteraction, acknowledged: boolean, whisper: boolean, content: string): Promise<void> {
    if (!acknowledged) {
      await interaction.reply({ content, flags: MessageFlags.Ephemeral });
    } else if (whisper) {
      await interaction.editReply({ content });
    } else {
      // A public deferral cannot turn private: it goes, and the refusal follows privately.
      await interaction.deleteReply();
      await interaction.followUp({ content, flags: MessageFlags.Ephemeral });
    }
  }

  async #forget(interaction: ChatInputCommandInteraction): Promise<void> {
    const user = await this.#seen(interaction.user, interaction.member);
    await this.#options.users.forget(user.id);
    await interaction.reply({ content: BOT_TEXTS.forgot, flags: MessageFlags.Ephemeral });
  }

  /** The feedback row as the voter sees it: on a whisper (only the asker sees it) their own votes are greyed out. */
  async #row(command: AskCommandRow, counts: Record<string, number>, voterId: string) {
    const disabled = command.whisper ? await this.#options.feedback.votesOf(command.id, voterId) : undefined;
    const undo = this.#options.config().feedback_max_undo > 0 && Object.values(counts).some((count) => count > 0);
    return { row: feedbackRow(command.id, counts, { undo, disabled }), undo, disabled };
  }

  async #recordButtons(command: AskCommandRow, customId: string, undo: boolean, disabled: Set<string> | undefined): Promise<void> {
    await this.#options.askCommands.markDelivered(command.id, {
      custom_id: customId,
      show_undo: undo,
      disable_good: disabled?.has('good') ?? false,
      disable_outdated: disabled?.has('outdated') ?? false,
      disable_hallucinated: disabled?.has('hallucinated') ?? false,
      disable_other: disabled?.has('other') ?? false,
    });
  }

  async #feedbackTarget(interaction: ButtonInteraction | ModalSubmitInteraction, askCommandId: number): Promise<AskCommandRow | null> {
    const command = await this.#options.askCommands.find(askCommandId);
    if (!command || command.state !== 'completed') {
      await interaction.reply({ content: BOT_TEXTS.feedbackGone, flags: MessageFlags.Ephemeral });
      return null;
    }
    if (!this.#options.config().feedback_enabled) {
      if (interaction.isButton()) await interaction.update({ components: [] });
      else await interaction.reply({ content: BOT_TEXTS.feedbackClosed, flags: MessageFlags.Ephemeral });
      await this.#options.askCommands.markDelivered(command.id, { step: 'feedback_closed', show_good: false, show_outdated: false, show_hallucinated: false, show_other: false, show_undo: false });
      return null;
    }
    return command;
  }

  async #button(interaction: ButtonInteraction): Promise<void> {
    const action = parseFeedbackId(interaction.customId);
    if (!action || action.kind === 'other_form') {
      await interaction.reply({ content: BOT_TEXTS.feedbackGone, flags: MessageFlags.Ephemeral });
      return;
    }
    const command = await this.#feedbackTarget(interaction, action.askCommandId);
    if (!command) return;
    const user = await this.#seen(interaction.user, interaction.member);
    const { feedback } = this.#options;

    if (action.kind === 'vote' && action.type === 'other') {
      if ((await feedback.votesOf(command.id, user.id)).has('other')) {
        await interaction.reply({ content: BOT_TEXTS.alreadyVoted(FEEDBACK_BUTTON_LABELS.other), flags: MessageFlags.Ephemeral });
        return;
      }
      await interaction.showModal(otherModal(command.id, this.#options.config()));
      return;
    }
    if (action.kind === 'vote') {
      const outcome = await feedback.vote(command.id, user.id, action.type);
      if (outcome.status === 'already') {
        await interaction.reply({ content: BOT_TEXTS.alreadyVoted(FEEDBACK_BUTTON_LABELS[action.type]), flags: MessageFlags.Ephemeral });
        return;
      }
      const { row, undo, disabled } = await this.#row(command, outcome.counts, user.id);
      await interaction.update({ components: [row] });
      await this.#recordButtons(command, interaction.customId, undo, disabled);
      this.#reportFeedback(user, command, action.type, null);
      return;
    }
    const outcome = await feedback.undo(command.id, user.id);
    if (outcome.status === 'nothing') {
      await interaction.reply({ content: BOT_TEXTS.nothingToUndo, flags: MessageFlags.Ephemeral });
      return;
    }
    if (outcome.status === 'limit') {
      await interaction.reply({ content: BOT_TEXTS.undoLimit(outcome.max), flags: MessageFlags.Ephemeral });
      return;
    }
    const { row, undo, disabled } = await this.#row(command, outcome.counts, user.id);
    await interaction.update({ components: [row] });
    await this.#recordButtons(command, interaction.customId, undo, disabled);
  }

  async #modal(interaction: ModalSubmitInteraction): Promise<void> {
    const action = parseFeedbackId(interaction.customId);
    if (!action || action.kind !== 'other_form') {
      await interaction.reply({ content: BOT_TEXTS.feedbackGone, flags: MessageFlags.Ephemeral });
      return;
    }
    const command = await this.#feedbackTarget(interaction, action.askCommandId);
    if (!command) return;
    const user = await this.#seen(interaction.user, interaction.member);
    const description = interaction.fields.getTextInputValue(OTHER_DESCRIPTION_INPUT).trim() || null;
    const outcome = await this.#options.feedback.vote(command.id, user.id, 'other', description);
    if (outcome.status === 'already') {
      await interaction.reply({ content: BOT_TEXTS.alreadyVoted(FEEDBACK_BUTTON_LABELS.other), flags: MessageFlags.Ephemeral });
      return;
    }
    const { row, undo, disabled } = await this.#row(command, outcome.counts, user.id);
    if (interaction.isFromMessage()) await interaction.update({ components: [row] });
    else await interaction.reply({ content: BOT_TEXTS.thanks, flags: MessageFlags.Ephemeral });
    await this.#recordButtons(command, interaction.customId, undo, disabled);
    this.#reportFeedback(user, command, 'other', description);
  }

  #reportFeedback(user: SeenUser, command: AskCommandRow, type: FeedbackType, description: string | null): void {
    if (type === 'good') return;
    void this.#options.notifier.feedback({ user, askCommandId: command.id, label: FEEDBACK_BUTTON_LABELS[type], description, whisper: command.whisper });
  }

  /**
   * recover_panic: one bad interaction is logged, reported to the
   * notification channel and answered with the error message; the bot goes on.
   * Without it, the bot stops (the rest of the server keeps running).
   */
  async #failed(interaction: Interaction, error: unknown): Promise<void> {
    const config = this.#options.config();
    const message = error instanceof Error ? error.message : String(error);
    const name = interaction.isChatInputCommand() ? interaction.commandName : interaction.isButton() || interaction.isModalSubmit() ? interaction.customId : `interaction type ${interaction.type}`;
    this.#options.logger.error({ err: error, interactionId: interaction.id, command: name, userId: interaction.user.id }, 'interaction failed');
    const whisper = interaction.isChatInputCommand() && interaction.commandName === 'whisper';
    const prompt = interaction.isChatInputCommand() ? interaction.options.getString(QUESTION_OPTION) : null;
    void this.#options.notifier.commandError({ user: this.#asSeen(interaction), command: name, askCommandId: null, error: message, prompt, whisper });
    if (interaction.isRepliable()) await this.#tell(interaction, config.discord_error_message);
    if (!config.recover_panic) this.#options.halt(`Stopped after an error in a command handler (recover_panic is off): ${message}`);
  }

  async #tell(interaction: RepliableInteraction, content: string): Promise<void> {
    try {
      if (interaction.deferred && !interaction.replied) await interaction.editReply({ content });
      else if (interaction.deferred || interaction.replied) await interaction.followUp({ content, flags: MessageFlags.Ephemeral });
      else await interaction.reply({ content, flags: MessageFlags.Ephemeral });
    } catch (error) {
      this.#options.logger.warn({ err: error, interactionId: interaction.id }, 'could not tell the user about the error');
    }
  }
}
