import { FEEDBACK_TYPES, type FeedbackType, type RuntimeConfig } from '@concierge/contract';
import { ActionRowBuilder, ButtonBuilder, ButtonStyle, LabelBuilder, ModalBuilder, TextInputBuilder, TextInputStyle } from 'discord.js';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database } from '../db/database.ts';
import * as queries from './discord.queries.ts';

/** The buttons' words (the Discord side of SPEC §4's feedback labels); each carries its count, "Good (2)". */
export const FEEDBACK_BUTTON_LABELS: Record<FeedbackType, string> = { good: 'Good', outdated: 'Outdated', hallucinated: 'Incorrect', other: 'Other' };
const STYLES: Record<FeedbackType, ButtonStyle> = { good: ButtonStyle.Success, outdated: ButtonStyle.Secondary, hallucinated: ButtonStyle.Danger, other: ButtonStyle.Secondary };
/** The text box of the Other form. */
export const OTHER_DESCRIPTION_INPUT = 'description';

/** Component ids, exactly as DESIGN §9 says: `fb:<type>:<id>`, `fb:undo:<id>`, the Other form `fbm:other:<id>`. */
export const feedbackCustomId = (type: FeedbackType | 'undo', askCommandId: number) => `fb:${type}:${askCommandId}`;
export const otherModalId = (askCommandId: number) => `fbm:other:${askCommandId}`;

export type FeedbackAction = { kind: 'vote'; type: FeedbackType; askCommandId: number } | { kind: 'undo'; askCommandId: number } | { kind: 'other_form'; askCommandId: number };

/** What a component or modal id asks for, or null when it is not the bot's. */
export function parseFeedbackId(customId: string): FeedbackAction | null {
  const match = /^(fb|fbm):([a-z]+):(\d{1,15})$/.exec(customId);
  if (!match) return null;
  const [, prefix, action, id] = match;
  const askCommandId = Number(id);
  if (prefix === 'fbm') return action === 'other' ? { kind: 'other_form', askCommandId } : null;
  if (action === 'undo') return { kind: 'undo', askCommandId };
  return (FEEDBACK_TYPES as readonly string[]).includes(action!) ? { kind: 'vote', type: action as FeedbackType, askCommandId } : null;
}

/**
 * The row of feedback buttons under an answer: Good / Outdated / Incorrect /
 * Other with their counts, and Undo once there is something to take back.
 * `disabled` greys out the types the only viewer already gave (a whisper).
 */
export function feedbackRow(askCommandId: number, counts: Record<string, number>, options: { undo: boolean; disabled?: ReadonlySet<string> }): ActionRowBuilder<ButtonBuilder> {
  const row = new ActionRowBuilder<ButtonBuilder>();
  for (const type of FEEDBACK_TYPES) {
    row.addComponents(
      new ButtonBuilder()
        .setCustomId(feedbackCustomId(type, askCommandId))
        .setLabel(`${FEEDBACK_BUTTON_LABELS[type]} (${counts[type] ?? 0})`)
        .setStyle(STYLES[type])
        .setDisabled(options.disabled?.has(type) ?? false),
    );
  }
  if (options.undo) row.addComponents(new ButtonBuilder().setCustomId(feedbackCustomId('undo', askCommandId)).setLabel('Undo').setStyle(ButtonStyle.Secondary));
  return row;
}

/** The Other form, with the operator's title, label, placeholder and lengths. */
export function otherModal(askCommandId: number, config: RuntimeConfig): ModalBuilder {
  const input = new TextInputBuilder()
    .setCustomId(OTHER_DESCRIPTION_INPUT)
    .setStyle(TextInputStyle.Paragraph)
    .setMinLength(config.feedback_modal_min_length)
    .setMaxLength(config.feedback_modal_max_length)
    .setRequired(config.feedback_modal_min_length > 0);
  if (config.feedback_modal_placeholder) input.setPlaceholder(config.feedback_modal_placeholder);
  return new ModalBuilder()
    .setCustomId(otherModalId(askCommandId))
    .setTitle(config.feedback_modal_title)
    .addLabelComponents(new LabelBuilder().setLabel(config.feedback_modal_input_label).setTextInputComponent(input));
}

export type VoteOutcome = { status: 'recorded' | 'already'; counts: Record<string, number> };
export type UndoOutcome = { status: 'undone'; type: string; counts: Record<string, number> } | { status: 'nothing' } | { status: 'limit'; max: number };

/**
 * Feedback on ask command answers (stored per command, shown in the user's
 * history): one vote per user and type; a user may take back their latest
 * vote on an answer `feedback_max_undo` times.
 */
export class FeedbackService {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #config: ConfigService;

  constructor(options: { database: Database; clock: Clock; config: ConfigService }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#config = options.config;
  }

  counts(askCommandId: number): Promise<Record<string, number>> {
    return queries.voteCounts(this.#database.db, askCommandId);
  }

  /** The types a user gave on an answer. */
  async votesOf(askCommandId: number, userId: string): Promise<Set<string>> {
    return new Set((await queries.userVotes(this.#database.db, askCommandId, userId)).map((vote) => vote.type));
  }

  vote(askCommandId: number, userId: string, type: FeedbackType, description: string | null = null): Promise<VoteOutcome> {
    const now = this.#clock.now().toISOString();
    return this.#database.transaction(async (trx) => {
      const recorded = await queries.insertVote(trx, { ask_command_id: askCommandId, user_id: userId, type, description: description?.trim() || null }, now);
      return { status: recorded ? 'recorded' : 'already', counts: await queries.voteCounts(trx, askCommandId) };
    });
  }

  undo(askCommandId: number, userId: string): Promise<UndoOutcome> {
    const max = this.#config.get().feedback_max_undo;
    const now = this.#clock.now().toISOString();
    return this.#database.transaction(async (trx): Promise<UndoOutcome> => {
      if ((await queries.undoCount(trx, askCommandId, userId)) >= max) return { status: 'limit', max };
      const [latest] = await queries.userVotes(trx, askCommandId, userId);
      if (!latest) return { status: 'nothing' };
      await queries.deleteVote(trx, latest.id);
      await queries.countUndo(trx, askCommandId, userId, now);
      return { status: 'undone', type: latest.type, counts: await queries.voteCounts(trx, askCommandId) };
    });
  }
}
